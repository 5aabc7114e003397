#!/usr/bin/env bash
# partitions-produce.sh: the same produce load over a few partitions and
# over many, on one node (issue 16's produce goal: 10,000 partitions reach
# at least half the throughput of 3).
#
# It starts one combined weir node, creates a topic of BASE partitions and
# one of SPREAD partitions (bench/mkpartitions, which grows a topic past
# the 5,000 partitions one request may add), writes a few records to every
# partition of both (not measured: a partition's first append in a leader
# epoch writes its epoch checkpoint), then for each acks setting and
# repetition produces BYTES of RECORD_SIZE records to each topic with
# `weir perf produce` (the topics taking turns, alternating which goes
# first), the machine's dirty pages written back (sync) before each run.
# Records go to the partitions round robin (partitioner.class
# RoundRobinPartitioner: every partition gets the same share, as with
# keyed records) unless --partitioner sticky; the client keeps franz-go's
# linger and batch size. The table shows medians: MB/s, records/s, records
# per batch and batches (partitions) per Produce request as the client
# counted them, and the broker's and the producer's CPU seconds; then the
# ratio SPREAD / BASE of the throughputs. It exits 1 when a ratio is below
# --min-ratio.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF'
usage: bench/partitions-produce.sh [options]

  --base N              partitions of the base topic (default 3)
  --spread N            partitions of the spread topic (default 10000)
  --bytes B             record bytes per run, with k/M/G suffixes (default 512M)
  --record-size B       record size (default 1024)
  --acks LIST           acks settings, comma-separated: 1, all (default 1,all)
  --partitioner P       roundrobin (default) or sticky (Kafka's built-in)
  --reps N              repetitions (default 1)
  --min-ratio R         exit 1 if SPREAD/BASE MB/s is below R (default 0.5)
  --profile             perf(1) profile of the broker per run, in the work dir
  --weir-override K=V   extra `weir server --override` (repeatable)
  --workdir DIR         keep logs and data here (default: a temp dir,
                        removed at the end unless --keep)
  --keep                keep the temp work dir
  -h, --help            this text

acks=all runs use the idempotent producer (weir perf's default); acks=1 runs
are not idempotent (Kafka requires acks=all for idempotence).
The open-file limit of the shell (ulimit -n) applies to the broker.
Environment: GO (default go) builds the binaries.
EOF
}

base=3
spread=10000
bytes=512M
record_size=1024
acks_list=1,all
partitioner=roundrobin
reps=1
min_ratio=0.5
profile=0
weir_overrides=()
workdir=""
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--base) base=$2; shift 2 ;;
	--spread) spread=$2; shift 2 ;;
	--bytes) bytes=$2; shift 2 ;;
	--record-size) record_size=$2; shift 2 ;;
	--acks) acks_list=$2; shift 2 ;;
	--partitioner) partitioner=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--min-ratio) min_ratio=$2; shift 2 ;;
	--profile) profile=1; shift ;;
	--weir-override) weir_overrides+=("$2"); shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "partitions-produce: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

die() { echo "partitions-produce: $*" >&2; exit 1; }
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
for v in "$base" "$spread" "$record_size" "$reps"; do
	[[ $v =~ ^[0-9]+$ && $v -ge 1 ]] || die "--base, --spread, --record-size and --reps must be positive numbers"
done
[[ $acks_list =~ ^(1|all)(,(1|all))*$ ]] || die "--acks: a comma-separated list of 1 and all"
case "$partitioner" in
roundrobin) partitioner_props=(partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner) ;;
sticky) partitioner_props=() ;;
*) die "--partitioner: roundrobin or sticky" ;;
esac
records=$(( bytes / record_size ))
(( records >= 1 )) || die "--bytes is less than one record"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $workdir ]]; then
	workdir=$(mktemp -d "${TMPDIR:-/tmp}/partitions-produce.XXXXXX")
	[[ $keep == 1 ]] || trap_rm=$workdir
else
	mkdir -p "$workdir"
fi
workdir=$(cd "$workdir" && pwd)
bin=$workdir/bin
mkdir -p "$bin" "$workdir/logs"

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

pid=""
perf_pid=""
cleanup() {
	if [[ -n $perf_pid ]]; then kill -INT "$perf_pid" 2>/dev/null || true; fi
	if [[ -n $pid ]]; then
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [[ -n ${trap_rm:-} ]]; then rm -rf "$trap_rm"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "partitions-produce: building into $bin"
(cd "$repo" && ${GO:-go} build -o "$bin/weir" ./cmd/weir && ${GO:-go} build -o "$bin/mkpartitions" ./bench/mkpartitions) ||
	die "building failed"

free_port
port=$REPLY
free_port
cport=$REPLY
addr=127.0.0.1:$port
log=$workdir/logs/weir.log
args=(server --log-level warn
	--override "listeners=PLAINTEXT://$addr,CONTROLLER://127.0.0.1:$cport"
	--override "controller.quorum.voters=1@127.0.0.1:$cport"
	--override "log.dirs=$workdir/data")
for o in "${weir_overrides[@]}"; do args+=(--override "$o"); done
"$bin/weir" "${args[@]}" >"$log" 2>&1 &
pid=$!
deadline=$(( SECONDS + 60 ))
until port_open "$port"; do
	kill -0 "$pid" 2>/dev/null || { tail -n 30 "$log" >&2; die "the broker exited (log $log)"; }
	(( SECONDS < deadline )) || { tail -n 30 "$log" >&2; die "the broker did not listen within 60 s"; }
	sleep 0.05
done

topic_of() { echo "produce$1-0"; }
for n in "$base" "$spread"; do
	"$bin/mkpartitions" --bootstrap-server "$addr" --prefix "produce$n" --topics 1 --partitions "$n" --batch 1 >/dev/null ||
		die "creating a topic of $n partitions failed"
	"$bin/mkpartitions" --bootstrap-server "$addr" --prefix "produce$n" --topics 1 --partitions "$n" --check >/dev/null ||
		die "the topic of $n partitions is not served"
	# Two records per partition, round robin: every partition has had
	# its first append (and its segment files) before the measured runs.
	t0=$EPOCHREALTIME
	"$bin/weir" perf produce --bootstrap-server "$addr" --topic "$(topic_of "$n")" --num-records $(( 2 * n )) \
		--record-size "$record_size" --producer-props acks=all \
		partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner >"$workdir/logs/warmup-$n.log" 2>&1 ||
		{ tail -n 20 "$workdir/logs/warmup-$n.log" >&2; die "the warm-up produce to $n partitions failed"; }
	echo "partitions-produce: $n partitions created; a first append to each took $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
done

results=$workdir/results.csv
echo "partitions,acks,rep,records,records_per_s,mb_per_s,records_per_batch,batches_per_request,broker_cpu_s,producer_cpu_s,load1" >"$results"
TIMEFORMAT='%U %S'

# run_one PARTITIONS ACKS REP: one measured produce, a row of $results.
run_one() {
	local n=$1 acks=$2 rep=$3 plog cpu0 cpu1 line
	plog=$workdir/logs/produce-$n-acks$acks-$rep.log
	sync
	if (( profile )); then
		perf record -q -F 299 -g -o "$workdir/perf-$n-acks$acks-$rep.data" -p "$pid" >"$plog.perf" 2>&1 &
		perf_pid=$!
		sleep 0.5
	fi
	cpu0=$(cpu_seconds "$pid")
	if ! { time "$bin/weir" perf produce --bootstrap-server "$addr" --topic "$(topic_of "$n")" \
		--num-records "$records" --record-size "$record_size" --throughput -1 --print-metrics \
		--producer-props "acks=$acks" "${partitioner_props[@]}" >"$plog" 2>&1; } 2>"$plog.time"; then
		tail -n 20 "$plog" >&2
		die "produce to $n partitions failed (log: $plog)"
	fi
	cpu1=$(cpu_seconds "$pid")
	if [[ -n $perf_pid ]]; then
		kill -INT "$perf_pid" 2>/dev/null || true
		wait "$perf_pid" 2>/dev/null || true
		perf_pid=""
		perf report -i "$workdir/perf-$n-acks$acks-$rep.data" --no-children --sort symbol --stdio 2>/dev/null |
			grep -v '^$' | head -n 200 >"$workdir/profile-$n-acks$acks-$rep.txt" || true
	fi
	# N records sent, X records/sec (Y MB/sec), ...; then the client's
	# metrics, "producer-metrics:NAME:{client-id=...} : VALUE".
	line=$(grep ' ms 99.9th\.$' "$plog" | tail -n 1)
	[[ -n $line ]] || die "no summary line in $plog"
	metric() { awk -v m="producer-metrics:$1:" 'index($0, m) == 1 { print $NF }' "$plog"; }
	awk -v n="$n" -v acks="$acks" -v rep="$rep" -v cpu="$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')" \
		-v pcpu="$(cat "$plog.time")" -v rpb="$(metric records-per-batch-avg)" \
		-v batches="$(metric batch-total)" -v reqs="$(metric produce-request-total)" \
		-v load="$(cut -d' ' -f1 /proc/loadavg)" -F', ' '{
		split($1, c, " "); split($2, r, " "); mb = $2; sub(/.*\(/, "", mb); sub(/ MB.*/, "", mb)
		split(pcpu, pc, " ")
		printf "%s,%s,%s,%s,%s,%s,%.1f,%.1f,%s,%.2f,%s\n", n, acks, rep, c[1], r[1], mb, rpb, (reqs > 0 ? batches / reqs : 0), cpu, pc[1] + pc[2], load
	}' <<<"$line" >>"$results"
	tail -n 1 "$results" | awk -F, '{ printf "  %6s partitions acks=%-3s rep %s: %9.0f records/s %7.1f MB/s  %6.1f records/batch %7.1f batches/request  CPU s: broker %5.1f, producer %5.1f  load %s\n", $1, $2, $3, $5, $6, $7, $8, $9, $10, $11 }'
}

IFS=, read -r -a acks_all <<<"$acks_list"
echo "partitions-produce: $reps rep(s) of $records records of $record_size B per run, partitioner $partitioner"
for rep in $(seq "$reps"); do
	for acks in "${acks_all[@]}"; do
		if (( rep % 2 )); then order=("$base" "$spread"); else order=("$spread" "$base"); fi
		for n in "${order[@]}"; do run_one "$n" "$acks" "$rep"; done
	done
done

kill -TERM "$pid"
wait "$pid" 2>/dev/null || true
pid=""

col() { awk -F, -v n="$1" -v a="$2" -v c="$3" 'NR > 1 && $1 == n && $2 == a { print $c }' "$results" | median "${4:-%.1f}"; }
echo
echo "$records records of $record_size B per run ($(( bytes / 1048576 )) MiB), partitioner $partitioner, median of $reps, ulimit -n $(ulimit -n)"
printf '| %-10s | %-4s | %8s | %10s | %14s | %16s | %13s | %15s |\n' "partitions" "acks" "MB/s" "records/s" "records/batch" "batches/request" "broker CPU s" "producer CPU s"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' "-----------:" "------" "---------:" "-----------:" "---------------:" "-----------------:" "--------------:" "----------------:"
status=0
for acks in "${acks_all[@]}"; do
	for n in "$base" "$spread"; do
		printf '| %10s | %-4s | %8s | %10s | %14s | %16s | %13s | %15s |\n' "$n" "$acks" "$(col "$n" "$acks" 6)" \
			"$(col "$n" "$acks" 5 %.0f)" "$(col "$n" "$acks" 7)" "$(col "$n" "$acks" 8)" "$(col "$n" "$acks" 9 %.2f)" "$(col "$n" "$acks" 10 %.2f)"
	done
done
echo
for acks in "${acks_all[@]}"; do
	ratio=$(awk -v a="$(col "$spread" "$acks" 6 %.3f)" -v b="$(col "$base" "$acks" 6 %.3f)" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
	echo "acks=$acks: $spread / $base partitions MB/s = $ratio (goal: at least $min_ratio)"
	awk -v r="$ratio" -v m="$min_ratio" 'BEGIN { exit !(r != "-" && r >= m) }' || status=1
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); load average $(cut -d' ' -f1-3 /proc/loadavg); commit $(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
exit $status
