#!/usr/bin/env bash
# partitions.sh: how a single node copes with many partitions (issue 16's
# benchmark).
#
# It starts one combined weir node, creates TOPICS topics of PARTITIONS
# partitions each (replication factor 1) with CreateTopics requests of
# BATCH topics (bench/mkpartitions), and reports the creation rate, the
# broker's CPU seconds, open files (/proc/PID/fd), RSS and the time of a
# Metadata request for all topics; then it
# SIGKILLs the node and restarts it (time to "weir started" and until
# Metadata shows every partition with a leader and ListOffsets answers for
# every one), stops it with SIGTERM
# (time to exit), and reports the metadata snapshot's write time (the
# node's log line after the creation) and load time (read plus apply at
# the restart). With --systems weir,kfake,kafka, franz-go's kfake (in
# memory) gets the same creation for comparison (creation rate, CPU, RSS),
# and Apache Kafka 4.4 (one KRaft node started from its jars by
# scripts/apache-kafka, with its stock server.properties) the same
# creation, SIGKILL, restart and SIGTERM. Kafka answers CreateTopics once
# the controller has committed the topics, before the broker has made
# their logs, so every system also gets "until served": from the first
# CreateTopics until ListOffsets answers for every partition.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF'
usage: bench/partitions.sh [options]

  --topics N            topics to create (default 100)
  --partitions N        partitions per topic (default 100)
  --batch N             topics per CreateTopics request (default 50)
  --systems LIST        weir, kfake and/or kafka, comma-separated
                        (default weir; kafka needs a JDK and Maven, and
                        keeps one file open per partition: ulimit -n)
  --weir-override K=V   extra `weir server --override` (repeatable)
  --workdir DIR         keep logs and data here (default: a temp dir,
                        removed at the end unless --keep)
  --keep                keep the temp work dir
  -h, --help            this text

The open-file limit of the shell (ulimit -n) applies to the broker.
Environment: GO (default go) builds the binaries.
EOF
}

topics=100
partitions=100
batch=50
systems=weir
weir_overrides=()
workdir=""
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--topics) topics=$2; shift 2 ;;
	--partitions) partitions=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--systems) systems=$2; shift 2 ;;
	--weir-override) weir_overrides+=("$2"); shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "partitions: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

die() { echo "partitions: $*" >&2; exit 1; }
for v in "$topics" "$partitions" "$batch"; do
	[[ $v =~ ^[0-9]+$ && $v -ge 1 ]] || die "--topics, --partitions and --batch must be positive numbers"
done
[[ $systems =~ ^(weir|kfake|kafka)(,(weir|kfake|kafka))*$ ]] || die "--systems: a comma-separated list of weir, kfake and kafka"
total=$(( topics * partitions ))

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $workdir ]]; then
	workdir=$(mktemp -d "${TMPDIR:-/tmp}/partitions.XXXXXX")
	[[ $keep == 1 ]] || trap_rm=$workdir
else
	mkdir -p "$workdir"
fi
workdir=$(cd "$workdir" && pwd)
bin=$workdir/bin
mkdir -p "$bin"

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

pid=""
cleanup() {
	if [[ -n $pid ]]; then
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [[ -n ${trap_rm:-} ]]; then rm -rf "$trap_rm"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "partitions: building into $bin"
(cd "$repo" && ${GO:-go} build -o "$bin/weir" ./cmd/weir && ${GO:-go} build -o "$bin/mkpartitions" ./bench/mkpartitions &&
	${GO:-go} build -o "$bin/kfake" ./bench/kfake) || die "building failed"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
rss_mb() { awk '$1 == "VmRSS:" { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo -; }
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# wait_log FILE PATTERN PID SECONDS: waits until a line of FILE matches.
wait_log() {
	local deadline=$(( SECONDS + $4 ))
	until grep -q -- "$2" "$1"; do
		kill -0 "$3" 2>/dev/null || { tail -n 30 "$1" >&2; die "the broker exited (log $1)"; }
		(( SECONDS < deadline )) || { tail -n 30 "$1" >&2; die "no \"$2\" in $1 within $4 s"; }
		sleep 0.05
	done
}

# took PATTERN FILE: the "took" value of the last line matching PATTERN, in s.
took() {
	{ grep -- "$1" "$2" || true; } | tail -n 1 | sed -nE 's/.*took=([0-9.]+)(µs|ms|s|m[0-9.]+s)?.*/\1 \2/p' |
		awk '{ v = $1; if ($2 == "ms") v /= 1000; else if ($2 == "µs") v /= 1e6; printf "%.3f", v } END { if (NR == 0) print "-" }'
}

free_port
port=$REPLY
free_port
cport=$REPLY
data=$workdir/data
mk=("$bin/mkpartitions" --bootstrap-server "127.0.0.1:$port" --topics "$topics" --partitions "$partitions" --batch "$batch")

start_weir() {
	local args=(server --log-level info
		--override "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
		--override "controller.quorum.voters=1@127.0.0.1:$cport"
		--override "log.dirs=$data"
		--override "metadata.log.max.snapshot.interval.ms=3000")
	for o in "${weir_overrides[@]}"; do args+=(--override "$o"); done
	"$bin/weir" "${args[@]}" >>"$1" 2>&1 &
	pid=$!
}

declare -A res
if [[ ,$systems, == *,weir,* ]]; then
	rm -rf "$data"
	log=$workdir/weir.log
	: >"$log"
	echo "partitions: weir, $topics topics x $partitions partitions, CreateTopics of $batch topics (log $log)"
	start_weir "$log"
	wait_log "$log" "weir started" "$pid" 60
	cpu0=$(cpu_seconds "$pid")
	t0=$(now)
	"${mk[@]}" >"$workdir/create.out" || die "creating failed: $(cat "$workdir/create.out")"
	res[create_s]=$(awk '{ print $5 }' "$workdir/create.out")
	"${mk[@]}" --check --offsets >/dev/null || die "not every partition is served after creating"
	res[created_served_s]=$(since "$t0")
	res[cpu_s]=$(awk -v a="$cpu0" -v b="$(cpu_seconds "$pid")" 'BEGIN { printf "%.1f", b - a }')
	res[rate]=$(awk -v n="$total" -v s="${res[create_s]}" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }')
	res[fds]=$(fds "$pid")
	res[rss]=$(rss_mb "$pid")
	res[metadata]=$("$bin/mkpartitions" --bootstrap-server "127.0.0.1:$port" --metadata-all 5 | awk '{ print $6, "/", $9 }')
	# A snapshot of the whole state: metadata.log.max.snapshot.interval.ms
	# (3 s, below) after the last one, the next commit (a topic of one
	# partition) writes one.
	sleep 3.5
	marker=$(wc -l <"$log")
	"$bin/mkpartitions" --bootstrap-server "127.0.0.1:$port" --prefix snapshot-trigger --topics 1 --partitions 1 >/dev/null ||
		die "creating the snapshot trigger topic failed"
	deadline=$(( SECONDS + 30 ))
	until tail -n +"$((marker + 1))" "$log" | grep -q "wrote metadata snapshot"; do
		(( SECONDS < deadline )) || die "no metadata snapshot written within 30 s"
		sleep 0.1
	done
	res[snap_write]=$(took "wrote metadata snapshot" "$log")

	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	: >"$log.restart"
	t0=$(now)
	start_weir "$log.restart"
	wait_log "$log.restart" "weir started" "$pid" 600
	res[restart_s]=$(since "$t0")
	"${mk[@]}" --check --offsets >/dev/null || die "not every partition is served after the restart"
	res[served_s]=$(since "$t0")
	res[fds_restart]=$(fds "$pid")
	res[rss_restart]=$(rss_mb "$pid")
	res[snap_read]=$(took "read metadata snapshot" "$log.restart")
	res[snap_apply]=$(took "applied metadata snapshot" "$log.restart")
	res[load_logs]=$(took "loaded logs" "$log.restart")

	t0=$(now)
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	res[shutdown_s]=$(since "$t0")
	pid=""
fi

if [[ ,$systems, == *,kfake,* ]]; then
	echo "partitions: kfake, the same creation"
	"$bin/kfake" --port "$port" >"$workdir/kfake.log" 2>&1 &
	pid=$!
	until port_open "$port"; do
		kill -0 "$pid" 2>/dev/null || die "kfake exited"
		sleep 0.05
	done
	cpu0=$(cpu_seconds "$pid")
	t0=$(now)
	"${mk[@]}" >"$workdir/create-kfake.out" || die "creating on kfake failed: $(cat "$workdir/create-kfake.out")"
	res[k_create_s]=$(awk '{ print $5 }' "$workdir/create-kfake.out")
	"${mk[@]}" --check --offsets >/dev/null || die "not every partition is served by kfake after creating"
	res[k_created_served_s]=$(since "$t0")
	res[k_cpu_s]=$(awk -v a="$cpu0" -v b="$(cpu_seconds "$pid")" 'BEGIN { printf "%.1f", b - a }')
	res[k_rate]=$(awk -v n="$total" -v s="${res[k_create_s]}" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }')
	res[k_rss]=$(rss_mb "$pid")
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=""
fi

if [[ ,$systems, == *,kafka,* ]]; then
	kdir=$workdir/kafka
	echo "partitions: Apache Kafka, the same creation (log $kdir/kafka.log)"
	kbs=$("$repo/scripts/apache-kafka" start "$kdir") ||
		{ pid=$(cat "$kdir/pid" 2>/dev/null || true); die "starting Apache Kafka failed"; }
	pid=$(cat "$kdir/pid")
	kmk=("$bin/mkpartitions" --bootstrap-server "$kbs" --topics "$topics" --partitions "$partitions" --batch "$batch")
	cpu0=$(cpu_seconds "$pid")
	t0=$(now)
	"${kmk[@]}" >"$workdir/create-kafka.out" || die "creating on Kafka failed: $(cat "$workdir/create-kafka.out")"
	res[a_create_s]=$(awk '{ print $5 }' "$workdir/create-kafka.out")
	"${kmk[@]}" --check --offsets >/dev/null || die "not every partition is served by Kafka after creating"
	res[a_created_served_s]=$(since "$t0")
	res[a_cpu_s]=$(awk -v a="$cpu0" -v b="$(cpu_seconds "$pid")" 'BEGIN { printf "%.1f", b - a }')
	res[a_rate]=$(awk -v n="$total" -v s="${res[a_create_s]}" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }')
	res[a_fds]=$(fds "$pid")
	res[a_rss]=$(rss_mb "$pid")
	res[a_metadata]=$("$bin/mkpartitions" --bootstrap-server "$kbs" --metadata-all 5 | awk '{ print $6, "/", $9 }')

	kill -9 "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	t0=$(now)
	KAFKA_START_TIMEOUT=900 "$repo/scripts/apache-kafka" restart "$kdir" >/dev/null ||
		{ pid=$(cat "$kdir/pid" 2>/dev/null || true); die "restarting Apache Kafka failed"; }
	pid=$(cat "$kdir/pid")
	res[a_restart_s]=$(since "$t0")
	"${kmk[@]}" --check --offsets >/dev/null || die "not every partition is served by Kafka after the restart"
	res[a_served_s]=$(since "$t0")
	res[a_fds_restart]=$(fds "$pid")
	res[a_rss_restart]=$(rss_mb "$pid")

	t0=$(now)
	kill -TERM "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	res[a_shutdown_s]=$(since "$t0")
	pid=""
fi

v() { echo "${res[$1]:--}"; }
echo
echo "$total partitions ($topics topics x $partitions), CreateTopics of $batch topics, ulimit -n $(ulimit -n)"
printf '| %-46s | %12s | %12s | %12s |\n' "measure" "weir" "kfake" "Apache Kafka"
printf '|%s|%s|%s|%s|\n' "------------------------------------------------" "-------------:" "-------------:" "-------------:"
row() { printf '| %-46s | %12s | %12s | %12s |\n' "$1" "$2" "$3" "$4"; }
row "create: CreateTopics answered (s)" "$(v create_s)" "$(v k_create_s)" "$(v a_create_s)"
row "create rate (partitions/s)" "$(v rate)" "$(v k_rate)" "$(v a_rate)"
row "create, until every partition is served (s)" "$(v created_served_s)" "$(v k_created_served_s)" "$(v a_created_served_s)"
row "broker CPU while creating (s)" "$(v cpu_s)" "$(v k_cpu_s)" "$(v a_cpu_s)"
row "open files after creating" "$(v fds)" "-" "$(v a_fds)"
row "RSS after creating (MB)" "$(v rss)" "$(v k_rss)" "$(v a_rss)"
row "Metadata of all topics, median / max of 5 (s)" "$(v metadata)" "-" "$(v a_metadata)"
row "metadata snapshot write (s)" "$(v snap_write)" "-" "-"
row "restart after SIGKILL, to started/listening (s)" "$(v restart_s)" "-" "$(v a_restart_s)"
row "restart after SIGKILL, to all served (s)" "$(v served_s)" "-" "$(v a_served_s)"
row "  of which opening the logs (s)" "$(v load_logs)" "-" "-"
row "metadata snapshot read + apply (s)" "$(v snap_read) + $(v snap_apply)" "-" "-"
row "open files after the restart" "$(v fds_restart)" "-" "$(v a_fds_restart)"
row "RSS after the restart (MB)" "$(v rss_restart)" "-" "$(v a_rss_restart)"
row "clean shutdown (s)" "$(v shutdown_s)" "-" "$(v a_shutdown_s)"
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); commit $(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
