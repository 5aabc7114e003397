#!/usr/bin/env bash
# links.sh: a cluster link's throughput between two local weir clusters
# (issue 14's benchmark), against the same data produced into a normal
# topic of the destination and against `weir mirror` (the MM2-style
# path: consume, re-batch, produce).
#
# It starts a one-node weir cluster A and fills topic bench (--partitions
# partitions, --record-size records, --bytes of values) with `weir perf
# produce`: the backlog. Then, for each repetition, three ways of getting
# that data into a fresh one-node cluster B take turns:
#
#   produce  `weir perf produce` of as many records of the same size into
#            a normal topic of B (acks=1, the producer's defaults)
#   link     a cluster link B<-A and a mirror topic of bench: B's leader
#            fetches A's raw batches and appends them at A's offsets
#   mirror   weir mirror --config mm2.properties (A->B, at least once)
#
# Each is timed twice: catch-up, from the copier's start (the mirror
# topic's creation, weir mirror's launch, the producer's start) until the
# last record can be read on B; and throughput, by bench/mirrorbench
# --mode wait, which reads the copy on B (read_committed) and times its
# first record to its last. CPU: the user+system seconds, over the run, of
# every process doing the work: B, A (which serves the fetches of the link
# and of weir mirror), weir mirror, the producer (not the reader, which is
# the same for all three). The table shows medians: MB/s (MB = 2^20 bytes
# of values), catch-up seconds, CPU seconds and MB moved per CPU second,
# and the link's ratios to weir mirror; issue 14's target is a link at
# least 1.5x faster than the MM2-style path for the same CPU (MB per CPU
# second). results.csv in the work directory has every run.
#
# Everything shares this machine's cores (A, B, the copier and the reader),
# so the numbers compare the paths under the same conditions; they are not
# absolute capacity.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF'
usage: bench/links.sh [options]

  --reps N              repetitions (default 3)
  --bytes S             bytes of record values in the backlog (default 2G;
                        suffixes K M G)
  --record-size N       bytes of each record's value (default 1024)
  --partitions N        partitions of the topics (default 3)
  --modes LIST          paths to run, comma-separated (default produce,link,mirror)
  --link-config K=V     a property of the link besides bootstrap.servers
                        (repeatable)
  --weir BINARY         run this weir binary instead of building one
  --workdir DIR         keep logs, data and results here (default: a temp dir,
                        removed at the end unless --keep)
  --keep                keep the temp work dir
  -h, --help            this text

Environment: GO (default go) builds the binaries.
EOF
}

reps=3
bytes=2G
size=1024
partitions=3
modes=produce,link,mirror
link_config=()
weir_bin=""
workdir=""
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--reps) reps=$2; shift 2 ;;
	--bytes) bytes=$2; shift 2 ;;
	--record-size) size=$2; shift 2 ;;
	--partitions) partitions=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	--link-config) link_config+=("$2"); shift 2 ;;
	--weir) weir_bin=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "links: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

die() { echo "links: $*" >&2; exit 1; }

to_bytes() {
	local v=$1
	case "$v" in
	*[kK]) echo $(( ${v%?} * 1024 )) ;;
	*[mM]) echo $(( ${v%?} * 1024 * 1024 )) ;;
	*[gG]) echo $(( ${v%?} * 1024 * 1024 * 1024 )) ;;
	*) echo $(( v )) ;;
	esac
}
(( reps >= 1 )) || die "--reps must be at least 1"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $workdir ]]; then
	workdir=$(mktemp -d "${TMPDIR:-/tmp}/links.XXXXXX")
	[[ $keep == 1 ]] || trap_rm=$workdir
else
	mkdir -p "$workdir"
fi
workdir=$(cd "$workdir" && pwd)
bin=$workdir/bin
logs=$workdir/logs
mkdir -p "$bin" "$logs"
results=$workdir/results.csv

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n ${trap_rm:-} ]]; then rm -rf "$trap_rm"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "links: building into $bin"
if [[ -n $weir_bin ]]; then
	cp "$weir_bin" "$bin/weir"
else
	(cd "$repo" && ${GO:-go} build -o "$bin/weir" ./cmd/weir) || die "building weir failed"
fi
(cd "$repo" && ${GO:-go} build -o "$bin/mirrorbench" ./bench/mirrorbench) || die "building bench/mirrorbench failed"

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# stop PID: ends a process started here.
stop() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# start_weir NAME: starts a one-node weir cluster with data in
# $workdir/NAME; sets REPLY to its address and PID to its process. A port
# taken meanwhile (by some client's ephemeral port) is tried again.
start_weir() {
	local try
	for try in 1 2 3; do
		start_weir_once "$1" && return 0
		grep -q 'address already in use' "$logs/$1.log" || break
	done
	tail -n 30 "$logs/$1.log" >&2
	die "weir $1 did not start"
}

start_weir_once() {
	local name=$1 port cport log
	free_port
	port=$REPLY
	free_port
	cport=$REPLY
	log=$logs/$name.log
	rm -rf "${workdir:?}/$name"
	"$bin/weir" server --log-level warn \
		--override "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport" \
		--override "controller.quorum.voters=1@127.0.0.1:$cport" \
		--override "log.dirs=$workdir/$name" >"$log" 2>&1 &
	PID=$!
	pids+=("$PID")
	local deadline=$(( SECONDS + 20 ))
	until port_open "$port"; do
		kill -0 "$PID" 2>/dev/null || return 1
		(( SECONDS < deadline )) || { stop "$PID"; return 1; }
		sleep 0.1
	done
	REPLY=127.0.0.1:$port
}

# add A B: A + B, two decimals.
add() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a + b }'; }

start_weir a
a=$REPLY
apid=$PID
count=$(( $(to_bytes "$bytes") / size ))
echo "links: producing $count records of $size B to bench on A ($partitions partitions)"
"$bin/weir" perf produce --bootstrap-server "$a" --topic bench --partitions "$partitions" \
	--replication-factor 1 --num-records "$count" --record-size "$size" --throughput -1 \
	--producer-props acks=1 >"$logs/backlog.log" 2>&1 || { tail -n 20 "$logs/backlog.log" >&2; die "producing the backlog failed"; }

# field NAME LINE: the value of NAME=... in a RESULT line.
field() { sed -nE "s/.* $1=([^ ]*).*/\1/p" <<<"$2"; }

# run MODE REP: one copy of the backlog (or its production) into a fresh B.
run() {
	local mode=$1 rep=$2 b bpid copier topic=bench log props line cpu0 cpu began
	start_weir "b-$mode"
	b=$REPLY
	bpid=$PID
	[[ $mode == mirror ]] && topic=A.bench
	log=$logs/r$rep-$mode
	"$bin/mirrorbench" --mode wait --target "$b" --topic "$topic" --records "$count" >"$log-wait.log" 2>&1 &
	local waiter=$!
	pids+=("$waiter")
	cpu0=$(add "$(cpu_seconds "$apid")" "$(cpu_seconds "$bpid")")
	began=$(date +%s.%N)
	copier=""
	case "$mode" in
	produce)
		# The subshell's `times` is the producer's CPU (its only child).
		( "$bin/weir" perf produce --bootstrap-server "$b" --topic "$topic" --partitions "$partitions" \
			--replication-factor 1 --num-records "$count" --record-size "$size" --throughput -1 \
			--producer-props acks=1 >"$log-copier.log" 2>&1; times >"$log-times" ) &
		copier=$!
		;;
	link)
		{ echo "bootstrap.servers=$a"; printf '%s\n' "${link_config[@]}"; } >"$log.properties"
		{ "$bin/weir" cluster-links --bootstrap-server "$b" --create --link bench --config-file "$log.properties" &&
			"$bin/weir" mirrors --bootstrap-server "$b" --create --mirror-topic "$topic" --link bench; } >"$log-copier.log" 2>&1 ||
			{ cat "$log-copier.log" >&2; die "creating the link failed"; }
		;;
	mirror)
		props=$log.properties
		cat >"$props" <<EOF
clusters = A, B
A.bootstrap.servers = $a
B.bootstrap.servers = $b
A->B.enabled = true
topics = bench
replication.factor = 1
offset-syncs.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset.storage.replication.factor = 1
EOF
		"$bin/weir" mirror --config "$props" --log-level warn >"$log-copier.log" 2>&1 &
		copier=$!
		;;
	esac
	[[ -n $copier ]] && pids+=("$copier")
	wait "$waiter" || { tail -n 20 "$log-wait.log" "$log-copier.log" >&2; die "$mode did not deliver the records"; }
	local catchup
	catchup=$(awk -v a="$began" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	cpu=$(awk -v a="$(add "$(cpu_seconds "$apid")" "$(cpu_seconds "$bpid")")" -v b="$cpu0" 'BEGIN { printf "%.2f", a - b }')
	case "$mode" in
	produce)
		wait "$copier" || true
		# `times`' second line: the children's user and system time.
		cpu=$(add "$cpu" "$(sed -n 2p "$log-times" | awk '{
			s = 0
			for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2] }
			printf "%.2f", s }')")
		;;
	mirror)
		cpu=$(add "$cpu" "$(cpu_seconds "$copier")")
		stop "$copier"
		;;
	esac
	stop "$bpid"
	rm -rf "${workdir:?}/b-$mode"
	line=$(grep '^RESULT' "$log-wait.log")
	local mb per
	mb=$(field mb_s "$line")
	per=$(awk -v c="$cpu" -v n="$count" -v s="$size" 'BEGIN { printf "%.1f", n * s / 1048576 / c }')
	echo "$rep,$mode,$mb,$(field rec_s "$line"),$catchup,$cpu,$per" >>"$results"
	printf '  rep %d  %-7s %8.1f MB/s  catch-up %6.1f s  CPU %7.2f s  %7.1f MB/CPU-s\n' "$rep" "$mode" "$mb" "$catchup" "$cpu" "$per"
}

echo "rep,mode,mb_s,rec_s,catchup_s,cpu_s,mb_per_cpu_s" >"$results"
IFS=, read -r -a mode_list <<<"$modes"
start=$SECONDS
for rep in $(seq "$reps"); do
	# Take turns: the order rotates with the repetition.
	n=${#mode_list[@]}
	for i in $(seq 0 $(( n - 1 ))); do
		run "${mode_list[$(( (i + rep - 1) % n ))]}" "$rep"
	done
done

col() { awk -F, -v m="$1" -v c="$2" 'NR > 1 && $2 == m { print $c }' "$results"; }
echo
echo "links: medians of $reps run(s) of $count records of $size B ($partitions partitions), $(( SECONDS - start )) s; all runs in $results"
printf '| %-7s | %8s | %10s | %12s | %8s | %10s |\n' "path" "MB/s" "records/s" "catch-up (s)" "CPU (s)" "MB/CPU-s"
printf '|---|---:|---:|---:|---:|---:|\n'
for m in "${mode_list[@]}"; do
	printf '| %-7s | %8s | %10s | %12s | %8s | %10s |\n' "$m" "$(col "$m" 3 | median)" "$(col "$m" 4 | median %.0f)" \
		"$(col "$m" 5 | median)" "$(col "$m" 6 | median %.2f)" "$(col "$m" 7 | median)"
done
fail=0
if [[ ",$modes," == *,link,* && ",$modes," == *,mirror,* ]]; then
	ratio() { awk -v a="$(col link "$1" | median %.3f)" -v b="$(col mirror "$1" | median %.3f)" 'BEGIN { printf "%.2f", a / b }'; }
	echo "link / mirror: $(ratio 3)x the MB/s, $(ratio 7)x the MB per CPU second"
	if ! awk -v r="$(ratio 7)" 'BEGIN { exit !(r >= 1.5) }'; then
		echo "links: MISSED: the link moves $(ratio 7)x the MB per CPU second of weir mirror (target 1.5)" >&2
		fail=1
	fi
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n ${trap_rm:-} ]]; then
	echo "(work dir removed; rerun with --keep or --workdir to keep logs)"
fi
exit $fail
