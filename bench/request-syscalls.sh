#!/usr/bin/env bash
# request-syscalls.sh: the system calls a weir broker makes per small
# request (issue 33). It starts one weir node (with the metrics listener
# with --metrics), runs internal/kafka's RequestCost benchmarks against it
# (WEIR_REQCOST_ADDR: one request at a time, or acks=0 bursts of 100, on
# one loopback connection) a fixed number of times each, under
# `strace -c -f` attached to the broker, and prints each syscall's count
# divided by the number of requests. Counts are exact and independent of
# the machine's load, apart from the scheduler's futex, nanosleep and
# epoll_pwait calls, which depend on how busy the cores are.
set -euo pipefail
export LC_ALL=C

requests=10000
metrics=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--requests) requests=$2; shift 2 ;;
	--metrics) metrics=1; shift ;;
	-h | --help) echo "usage: bench/request-syscalls.sh [--requests N] [--metrics]"; exit 0 ;;
	*) echo "request-syscalls: unknown argument $1" >&2; exit 2 ;;
	esac
done
die() { echo "request-syscalls: $*" >&2; exit 1; }
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v strace >/dev/null || die "strace is not installed"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/request-syscalls.XXXXXX")
pid=""
cleanup() {
	if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
(cd "$repo" && go build -o "$work/weir" ./cmd/weir && go test -c -o "$work/kafka.test" ./internal/kafka/) ||
	die "building failed"

free_port; port=$REPLY
free_port; cport=$REPLY
{
	echo "process.roles=broker,controller"
	echo "node.id=1"
	echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
	echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
	echo "controller.quorum.voters=1@127.0.0.1:$cport"
	echo "log.dirs=$work/data"
	echo "metadata.log.dir=$work/meta"
	if [[ $metrics == 1 ]]; then free_port; echo "weir.metrics.listener=http://127.0.0.1:$REPLY"; fi
} >"$work/server.properties"
"$work/weir" storage format -t "$("$work/weir" storage random-uuid)" -c "$work/server.properties" >/dev/null
"$work/weir" server --log-level warn -c "$work/server.properties" >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do port_open "$port" && break; sleep 0.2; done
port_open "$port" || { cat "$work/server.log" >&2; die "weir did not listen"; }

run() { WEIR_REQCOST_ADDR=127.0.0.1:$port "$work/kafka.test" -test.run '^$' -test.bench "^$1\$" -test.benchtime "$2x" >"$work/bench.log" 2>&1 ||
	{ cat "$work/bench.log" >&2; die "benchmark $1 failed"; }; }

echo "syscalls per request (weir, metrics listener $([[ $metrics == 1 ]] && echo on || echo off), $requests requests each)"
for b in 'BenchmarkRequestCostProduce/acks=0/metrics=false' 'BenchmarkRequestCostProduce/acks=1/metrics=false' \
	'BenchmarkRequestCostProduce/acks=-1/metrics=false' 'BenchmarkRequestCostFetch/metrics=false'; do
	run "$b" 100 # warm up: the topic, the connection's first buffers
	strace -c -f -q -p "$pid" -o "$work/strace.txt" &
	spid=$!
	sleep 1 # strace attaches to every thread
	run "$b" "$requests"
	kill -INT "$spid"; wait "$spid" 2>/dev/null || true
	# (metrics=false names the in-process case; against this broker its
	# own setting holds.)
	name=${b#Benchmark}; name=${name%/metrics=false}
	# The benchmark's own two requests per run (the topic's creation and
	# one produce) are counted too: 2 in $requests.
	# strace -c's rows: % time, seconds, usecs/call, calls, [errors,] syscall.
	awk -v n="$requests" -v name="$name" '$1 ~ /^[0-9.]+$/ && $NF ~ /^[a-z_0-9]+$/ && $NF != "total" {
		if ($4 / n >= 0.05) out = out sprintf(" %s %.2f", $NF, $4 / n); total += $4
	} END { printf "  %-22s total %.2f:%s\n", name, total / n, out }' "$work/strace.txt"
done
