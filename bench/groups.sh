#!/usr/bin/env bash
# groups.sh: a consumer group of 3 against one plain consumer, and the time a
# group takes to rebalance after a member leaves (issue 3's benchmark).
#
# It starts one weir broker with Kafka's group defaults
# (group.initial.rebalance.delay.ms=3000), fills a 3-partition topic with
# `weir perf produce` (1 GiB of 1 KiB records by default), and then, every
# repetition, reads the whole topic:
#
#   perf-consume  `weir perf consume` without a group (Kafka's tool's MB.sec),
#                 for reference
#   plain         one franz-go consumer, no group           (bench/groupbench)
#   group         3 franz-go consumers of one new group      (bench/groupbench)
#
# plain and group run in one groupbench process per repetition and balancer
# (plain first on odd repetitions, last on even ones) with the same consumer
# settings; their MB/s is bytes of keys and values over the time from the
# first Fetch request to the last record. After each group run, one member
# leaves and groupbench measures the time until the other two own its
# partition and have read from it (see bench/groupbench/main.go), with the
# members' heartbeat interval, session timeout and rebalance timeout at
# franz-go's defaults (3 s, 45 s, 60 s) unless given.
#
# At the end it prints medians, checks the two targets (median of the
# per-run ratio group / plain at least 1; every rebalance within the
# rebalance timeout) and exits 1 if one is missed.
# Every run is in results.csv in the work directory.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF'
usage: bench/groups.sh [options]

  --reps N              repetitions (default 3)
  --bytes N             record-value bytes to produce (default 1G; K M G suffixes)
  --record-size N       bytes per record (default 1024)
  --partitions N        partitions of the topic (default 3)
  --members N           members of the group (default 3)
  --balancers LIST      comma-separated (default cooperative-sticky,range)
  --fetch-size N        max.partition.fetch.bytes of every consumer (default 1048576)
  --heartbeat D         members' heartbeat interval (default 3s)
  --session-timeout D   members' session timeout (default 45s)
  --rebalance-timeout D members' rebalance timeout (default 60s)
  --weir-override K=V   extra `weir server --override` (repeatable)
  --workdir DIR         keep logs, data and results here (default: a temp dir,
                        removed at the end unless --keep)
  --keep                keep the temp work dir
  -h, --help            this text

Environment: GO (default go) builds the binaries.
EOF
}

reps=3
bytes=1G
record_size=1024
partitions=3
members=3
balancers=cooperative-sticky,range
fetch_size=1048576
heartbeat=3s
session_timeout=45s
rebalance_timeout=60s
weir_overrides=()
workdir=""
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--reps) reps=$2; shift 2 ;;
	--bytes) bytes=$2; shift 2 ;;
	--record-size) record_size=$2; shift 2 ;;
	--partitions) partitions=$2; shift 2 ;;
	--members) members=$2; shift 2 ;;
	--balancers) balancers=$2; shift 2 ;;
	--fetch-size) fetch_size=$2; shift 2 ;;
	--heartbeat) heartbeat=$2; shift 2 ;;
	--session-timeout) session_timeout=$2; shift 2 ;;
	--rebalance-timeout) rebalance_timeout=$2; shift 2 ;;
	--weir-override) weir_overrides+=("$2"); shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "groups: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

die() { echo "groups: $*" >&2; exit 1; }

to_bytes() {
	local v=$1
	case "$v" in
	*[kK]) echo $(( ${v%?} * 1024 )) ;;
	*[mM]) echo $(( ${v%?} * 1024 * 1024 )) ;;
	*[gG]) echo $(( ${v%?} * 1024 * 1024 * 1024 )) ;;
	*) echo $(( v )) ;;
	esac
}
bytes=$(to_bytes "$bytes")
(( reps >= 1 )) || die "--reps must be at least 1"
records=$(( bytes / record_size ))
(( records > 0 )) || die "--bytes is smaller than one record"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $workdir ]]; then
	workdir=$(mktemp -d "${TMPDIR:-/tmp}/groups.XXXXXX")
	[[ $keep == 1 ]] || trap_rm=$workdir
else
	mkdir -p "$workdir"
fi
workdir=$(cd "$workdir" && pwd)
bin=$workdir/bin
logs=$workdir/logs
mkdir -p "$bin" "$logs"
results=$workdir/results.csv

broker_pid=""
cleanup() {
	if [[ -n $broker_pid ]]; then
		kill "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
	if [[ -n ${trap_rm:-} ]]; then rm -rf "$trap_rm"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "groups: building into $bin"
(cd "$repo" && ${GO:-go} build -o "$bin/weir" ./cmd/weir) || die "building weir failed"
(cd "$repo" && ${GO:-go} build -o "$bin/groupbench" ./bench/groupbench) || die "building bench/groupbench failed"

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

free_port
port=$REPLY
free_port
cport=$REPLY
addr=127.0.0.1:$port
broker_log=$logs/broker.log
args=(server --log-level warn
	--override "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
	--override "controller.quorum.voters=1@127.0.0.1:$cport"
	--override "log.dirs=$workdir/data")
for o in "${weir_overrides[@]}"; do args+=(--override "$o"); done
echo "groups: starting weir on $addr (data in $workdir/data)"
"$bin/weir" "${args[@]}" >"$broker_log" 2>&1 &
broker_pid=$!
deadline=$(( SECONDS + 20 ))
until port_open "$port"; do
	kill -0 "$broker_pid" 2>/dev/null || { tail -n 30 "$broker_log" >&2; broker_pid=""; die "weir exited before listening"; }
	(( SECONDS < deadline )) || { tail -n 30 "$broker_log" >&2; die "weir did not listen within 20 s"; }
	sleep 0.1
done

topic=groups-bench
echo "groups: producing $records records of $record_size B to $topic ($partitions partitions)"
"$bin/weir" perf produce --bootstrap-server "$addr" --topic "$topic" --partitions "$partitions" \
	--replication-factor 1 --num-records "$records" --record-size "$record_size" --throughput -1 \
	--producer-props acks=1 >"$logs/produce.log" 2>&1 || { tail -n 20 "$logs/produce.log" >&2; die "produce failed"; }
tail -n 1 "$logs/produce.log"

# field NAME LINE: the value of NAME=... in a RESULT line.
field() { sed -nE "s/.* $1=([^ ]*).*/\1/p" <<<"$2"; }

echo "rep,run,balancer,mb_s,extra" >"$results"
gb=("$bin/groupbench" --bootstrap-server "$addr" --topic "$topic" --members "$members" --fetch-size "$fetch_size"
	--heartbeat "$heartbeat" --session-timeout "$session_timeout" --rebalance-timeout "$rebalance_timeout")

# perf_consume REP: Kafka's tool's figure, for reference.
perf_consume() {
	local rep=$1 log line
	log=$logs/r$rep-perf-consume.log
	"$bin/weir" perf consume --bootstrap-server "$addr" --topic "$topic" --messages "$records" \
		--fetch-size "$fetch_size" --hide-header >"$log" 2>&1 || { cat "$log" >&2; die "weir perf consume failed"; }
	grep -q '^WARNING' "$log" && { cat "$log" >&2; die "weir perf consume read too few records"; }
	line=$(awk -F', ' 'NF == 10 { print $4 }' "$log" | tail -n 1)
	echo "$rep,perf-consume,,$line," >>"$results"
	printf '  rep %d  weir perf consume, no group: %7.1f MB/s\n' "$rep" "$line"
}

# plain_and_group REP BALANCER: one groupbench run measuring the plain
# consumer and the group (plain first on odd reps, last on even ones), then
# the rebalance.
plain_and_group() {
	local rep=$1 bal=$2 log p g r modes=plain,group,rebalance
	(( rep % 2 == 1 )) || modes=group,rebalance,plain
	log=$logs/r$rep-$bal.log
	"${gb[@]}" --modes "$modes" --balancer "$bal" --group "bench-$rep-$bal" >"$log" 2>&1 || { cat "$log" >&2; die "groupbench ($bal) failed"; }
	p=$(grep '^RESULT mode=plain' "$log")
	g=$(grep '^RESULT mode=group' "$log")
	r=$(grep '^RESULT mode=rebalance' "$log")
	echo "$rep,plain,$bal,$(field mb_s "$p")," >>"$results"
	echo "$rep,group,$bal,$(field mb_s "$g"),assignment=$(field assignment "$g") join_ms=$(field join_ms "$g")" >>"$results"
	echo "$rep,ratio,$bal,$(awk -v g="$(field mb_s "$g")" -v p="$(field mb_s "$p")" 'BEGIN { printf "%.3f", g / p }')," >>"$results"
	echo "$rep,rebalance,$bal,,consumed_ms=$(field consumed_ms "$r") assigned_ms=$(field assigned_ms "$r") rejoin_ms=$(field rejoin_ms "$r") leave_ms=$(field leave_ms "$r") within=$(field within "$r")" >>"$results"
	printf '  rep %d  %-18s plain %7.1f MB/s, group of %d %7.1f MB/s (%s); after a leave: rejoin %s ms, assigned %s ms, consumed %s ms\n' \
		"$rep" "$bal" "$(field mb_s "$p")" "$members" "$(field mb_s "$g")" "$(field assignment "$g")" \
		"$(field rejoin_ms "$r")" "$(field assigned_ms "$r")" "$(field consumed_ms "$r")"
}

IFS=, read -r -a bal_list <<<"$balancers"
start=$SECONDS
for rep in $(seq "$reps"); do
	perf_consume "$rep"
	for b in "${bal_list[@]}"; do plain_and_group "$rep" "$b"; done
done

col() { awk -F, -v r="$1" -v b="$2" 'NR > 1 && $2 == r && $3 == b { print $4 }' "$results"; }
extra() { awk -F, -v r="$1" -v b="$2" -v k="$3" 'NR > 1 && $2 == r && $3 == b { n = split($5, f, " "); for (i = 1; i <= n; i++) { split(f[i], kv, "="); if (kv[1] == k) print kv[2] } }' "$results"; }
range() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s\n", lo, hi }'; }

echo
echo "groups: medians of $reps run(s), $(( SECONDS - start )) s; all runs in $results"
echo "topic: $records x $record_size B records in $partitions partitions; fetch-size $fetch_size; weir perf consume (no group): $(col perf-consume "" | median) MB/s"
printf '| %-20s | %12s | %14s | %13s | %17s |\n' "balancer" "plain MB/s" "group of $members MB/s" "group / plain" "ratio per run"
printf '|---|---:|---:|---:|---|\n'
fail=0
for b in "${bal_list[@]}"; do
	ratio=$(col ratio "$b" | median %.2f)
	printf '| %-20s | %12s | %14s | %13s | %17s |\n' "$b" "$(col plain "$b" | median)" "$(col group "$b" | median)" "$ratio" "$(col ratio "$b" | range)"
	awk -v r="$ratio" 'BEGIN { exit !(r >= 1) }' || { echo "groups: MISSED: the $b group's median is $ratio of the plain consumer's throughput" >&2; fail=1; }
done
echo
printf '| %-20s | %10s | %12s | %12s | %18s |\n' "rebalance after a leave" "rejoin ms" "assigned ms" "consumed ms" "rebalance timeout"
printf '|---|---:|---:|---:|---:|\n'
for b in "${bal_list[@]}"; do
	printf '| %-20s | %10s | %12s | %12s | %18s |\n' "$b" "$(extra rebalance "$b" rejoin_ms | median)" "$(extra rebalance "$b" assigned_ms | median)" \
		"$(extra rebalance "$b" consumed_ms | median) (max $(extra rebalance "$b" consumed_ms | sort -g | tail -n 1))" "$rebalance_timeout"
	if extra rebalance "$b" within | grep -qv yes; then echo "groups: MISSED: a $b rebalance exceeded $rebalance_timeout" >&2; fail=1; fi
done
if [[ -n ${trap_rm:-} ]]; then
	echo "(work dir removed; rerun with --keep or --workdir to keep logs)"
fi
exit $fail
