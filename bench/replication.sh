#!/usr/bin/env bash
# replication.sh: what replication costs a producer (issue 5's benchmark).
#
# It formats and starts a three-node weir cluster on localhost (every node
# broker and controller), creates two topics with the same partition count,
# one with three replicas and min.insync.replicas=2 and one with a single
# replica, and produces the same records to each with `weir perf produce`
# and acks=all (-1), in the same run, alternating which goes first between
# repetitions. With one replica acks=all answers as soon as the leader has
# the batch; with three it waits until both followers have fetched it.
#
# It prints, per topic, the median throughput (MB/s of record values,
# records/s), the median p50 and p99 produce latency, the median CPU
# seconds of the three brokers and of the producer per run, and how many
# of the machine's cores were busy and in I/O wait during the run (so a run
# that left cores idle shows it), then the median ratio RF=3 / RF=1 of the
# throughputs, checks issue 5's target (RF=3 at least 0.4x the RF=1
# throughput) and exits 1 if it is missed. Every run is in results.csv in
# the work directory, with the nodes' and producers' logs.
#
# With --profile, the brokers are sampled with perf(1) during each run and
# the hottest functions (all three brokers together) go to
# profile-<topic>-r<rep>.txt in the work directory.
#
# --page-cache-limit: on a virtual machine that hands free memory back to
# its host (free page reporting), growing the page cache into memory never
# used before costs the kernel several times more than reusing pages it
# reclaimed (measured here: about 3.4 s of system time per GiB written
# against 0.2-0.3 s), and RF=3 writes three times the bytes. A broker in
# steady state has a full page cache and reuses reclaimed pages; bounding
# the brokers' memory with a cgroup (v1 or v2, needs root) measures that
# state on a machine whose memory is mostly free; a warm-up produce fills
# the cgroup first so that no measured run pays for fresh memory.
#
# The three brokers and the producer share this machine's cores, so the
# numbers compare the two topics under the same conditions; they are not
# absolute capacity.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF'
usage: bench/replication.sh [options]

  --reps N              repetitions (default 1)
  --records N           records per run (default 5000000)
  --record-size N       bytes per record value (default 100, as in Kafka's
                        classic producer benchmark; see docs/BENCHMARKS.md
                        for larger records)
  --partitions N        partitions of each topic (default 3)
  --producer-props P    extra producer properties, space-separated k=v
  --weir-override K=V   extra server.properties key of every node (repeatable)
  --page-cache-limit S  run the brokers in a memory cgroup of S bytes (e.g. 4G)
                        so that their page cache is bounded, as on a broker
                        that has run long enough to fill memory (why: the
                        comment at the top of this script)
  --warmup N            records produced to an RF=3 topic, not measured,
                        before the first run (default with --page-cache-limit:
                        enough to fill the cgroup, so that every measured run
                        reuses reclaimed pages; else 0)
  --profile             sample the brokers with perf(1) during each run
  --workdir DIR         keep logs, data and results here (default: a temp dir,
                        removed at the end unless --keep)
  --keep                keep the temp work dir
  -h, --help            this text

Environment: GO (default go) builds the binaries.
EOF
}

reps=1
page_cache_limit=""
warmup=""
records=5000000
record_size=100
partitions=3
extra_props=""
weir_overrides=()
profile=0
workdir=""
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--reps) reps=$2; shift 2 ;;
	--records) records=$2; shift 2 ;;
	--record-size) record_size=$2; shift 2 ;;
	--partitions) partitions=$2; shift 2 ;;
	--producer-props) extra_props=$2; shift 2 ;;
	--weir-override) weir_overrides+=("$2"); shift 2 ;;
	--page-cache-limit) page_cache_limit=$2; shift 2 ;;
	--warmup) warmup=$2; shift 2 ;;
	--profile) profile=1; shift ;;
	--workdir) workdir=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "replication: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

die() { echo "replication: $*" >&2; exit 1; }
for v in reps records record_size partitions; do
	[[ ${!v} =~ ^[0-9]+$ && ${!v} -ge 1 ]] || die "--${v//_/-} must be a positive number"
done
limit_bytes=""
if [[ -n $page_cache_limit ]]; then
	limit_bytes=$(numfmt --from=iec "$page_cache_limit") || die "--page-cache-limit: not a size: $page_cache_limit"
fi
if [[ -z $warmup ]]; then
	# RF=3 writes every record three times.
	if [[ -n $limit_bytes ]]; then warmup=$(( limit_bytes / (3 * record_size) )); else warmup=0; fi
fi
[[ $warmup =~ ^[0-9]+$ ]] || die "--warmup must be a number"
if (( profile )) && ! command -v perf >/dev/null; then
	die "--profile needs perf(1)"
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $workdir ]]; then
	workdir=$(mktemp -d "${TMPDIR:-/tmp}/replication.XXXXXX")
	[[ $keep == 1 ]] || trap_rm=$workdir
else
	mkdir -p "$workdir"
fi
workdir=$(cd "$workdir" && pwd)
bin=$workdir/bin
mkdir -p "$bin" "$workdir/logs"
results=$workdir/results.csv

node_pids=()
perf_pid=""
cleanup() {
	if [[ -n $perf_pid ]]; then kill -INT "$perf_pid" 2>/dev/null || true; fi
	for pid in "${node_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${node_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [[ -n ${trap_rm:-} ]]; then rm -rf "$trap_rm"; fi
	# The cgroup goes once its processes are gone.
	if [[ -n ${cgroup:-} ]]; then rmdir "$cgroup" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "replication: building into $bin"
(cd "$repo" && ${GO:-go} build -o "$bin/weir" ./cmd/weir) || die "building weir failed"
(cd "$repo" && ${GO:-go} build -o "$bin/mktopic" ./bench/mktopic) || die "building bench/mktopic failed"

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"


# brokers_cpu: the three nodes' CPU seconds together.
brokers_cpu() {
	local total=0 pid
	for pid in "${node_pids[@]}"; do
		total=$(awk -v a="$total" -v b="$(cpu_seconds "$pid")" 'BEGIN { printf "%.2f", a + b }')
	done
	echo "$total"
}

# machine_cpu: "busy iowait" CPU seconds of the whole machine so far (all
# cores; busy is user, nice, system, irq, softirq and steal), from /proc/stat.
machine_cpu() {
	awk -v t="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.2f %.2f\n", ($2 + $3 + $4 + $7 + $8 + $9) / t, $6 / t; exit }' /proc/stat
}

# The cluster: three combined nodes, formatted with one cluster id.
cluster_id=$("$bin/weir" storage random-uuid)
ports=() cports=() voters=""
for i in 1 2 3; do
	free_port; ports+=("$REPLY")
	free_port; cports+=("$REPLY")
	voters+="${voters:+,}$i@127.0.0.1:${cports[i-1]}"
done
bootstrap=""
for i in 1 2 3; do
	dir=$workdir/node$i
	mkdir -p "$dir"
	{
		echo "process.roles=broker,controller"
		echo "node.id=$i"
		echo "listeners=PLAINTEXT://127.0.0.1:${ports[i-1]},CONTROLLER://127.0.0.1:${cports[i-1]}"
		echo "controller.quorum.voters=$voters"
		echo "log.dirs=$dir/logs"
		echo "metadata.log.dir=$dir/meta"
		echo "offsets.topic.replication.factor=3"
		for o in "${weir_overrides[@]}"; do echo "$o"; done
	} >"$dir/server.properties"
	"$bin/weir" storage format -t "$cluster_id" -c "$dir/server.properties" >"$workdir/logs/format-node$i.log" 2>&1 ||
		{ cat "$workdir/logs/format-node$i.log" >&2; die "formatting node $i failed"; }
	bootstrap+="${bootstrap:+,}127.0.0.1:${ports[i-1]}"
done
# The brokers' memory cgroup, when --page-cache-limit is given.
cgroup_procs=""
if [[ -n $page_cache_limit ]]; then
	bytes=$limit_bytes
	if [[ -d /sys/fs/cgroup/memory ]]; then
		cgroup=/sys/fs/cgroup/memory/weir-bench-$$
		mkdir "$cgroup" && echo "$bytes" >"$cgroup/memory.limit_in_bytes" || die "cannot make a memory cgroup (root?)"
	else
		cgroup=/sys/fs/cgroup/weir-bench-$$
		mkdir "$cgroup" && echo "$bytes" >"$cgroup/memory.max" || die "cannot make a memory cgroup (root?)"
	fi
	cgroup_procs=$cgroup/cgroup.procs
	echo "replication: brokers in memory cgroup $cgroup, limit $page_cache_limit"
fi
for i in 1 2 3; do
	(
		[[ -z $cgroup_procs ]] || echo "$BASHPID" >"$cgroup_procs"
		exec "$bin/weir" server --log-level warn -c "$workdir/node$i/server.properties"
	) >"$workdir/logs/node$i.log" 2>&1 &
	node_pids+=($!)
done
for i in 1 2 3; do
	deadline=$(( SECONDS + 30 ))
	until port_open "${ports[i-1]}"; do
		if ! kill -0 "${node_pids[i-1]}" 2>/dev/null || (( SECONDS >= deadline )); then
			echo "---- last lines of $workdir/logs/node$i.log" >&2
			tail -n 30 "$workdir/logs/node$i.log" >&2 || true
			die "node $i did not accept connections on 127.0.0.1:${ports[i-1]} within 30 s"
		fi
		sleep 0.1
	done
done
echo "replication: cluster $cluster_id up at $bootstrap"

# make_topic NAME RF [CONFIG...]: creates the topic and waits for a full ISR.
make_topic() {
	local name=$1 rf=$2 args=()
	shift 2
	for c in "$@"; do args+=(--config "$c"); done
	"$bin/mktopic" --bootstrap-server "$bootstrap" --topic "$name" --partitions "$partitions" \
		--replication-factor "$rf" "${args[@]}" || die "creating topic $name failed"
}

# run_one RF REP: one produce of $records records to a fresh topic.
run_one() {
	local rf=$1 rep=$2 topic plog line cpu0 cpu1 mbusy0 mwait0 mbusy1 mwait1 t0 t1
	topic=rf$rf-r$rep
	plog=$workdir/logs/produce-$topic.log
	if (( rf > 1 )); then
		make_topic "$topic" "$rf" min.insync.replicas=2
	else
		make_topic "$topic" "$rf"
	fi
	if (( profile )); then
		perf record -q -F 299 -g -o "$workdir/perf-$topic.data" -p "$(IFS=,; echo "${node_pids[*]}")" \
			>"$workdir/logs/perf-$topic.log" 2>&1 &
		perf_pid=$!
		sleep 0.5
	fi
	cpu0=$(brokers_cpu)
	read -r mbusy0 mwait0 < <(machine_cpu)
	t0=$EPOCHREALTIME
	# The producer's CPU seconds (user and system) go to $plog.time.
	# shellcheck disable=SC2086 # extra_props is a list of k=v words
	if ! { time "$bin/weir" perf produce --bootstrap-server "$bootstrap" --topic "$topic" \
		--num-records "$records" --record-size "$record_size" --throughput -1 \
		--producer-props acks=-1 $extra_props >"$plog" 2>&1; } 2>"$plog.time"; then
		tail -n 20 "$plog" >&2
		die "produce to $topic failed (log: $plog)"
	fi
	t1=$EPOCHREALTIME
	read -r mbusy1 mwait1 < <(machine_cpu)
	cpu1=$(brokers_cpu)
	if [[ -n $perf_pid ]]; then
		kill -INT "$perf_pid" 2>/dev/null || true
		wait "$perf_pid" 2>/dev/null || true
		perf_pid=""
		perf report -i "$workdir/perf-$topic.data" --no-children --sort symbol --stdio 2>/dev/null |
			grep -v '^$' | head -n 200 >"$workdir/profile-$topic.txt" || true
	fi
	# N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max
	# latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th.
	line=$(grep ' ms 99.9th\.$' "$plog" | tail -n 1)
	[[ -n $line ]] || die "no summary line in $plog"
	awk -v rf="$rf" -v rep="$rep" -v cpu="$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')" \
		-v pcpu="$(cat "$plog.time")" \
		-v busy="$(awk -v a="$mbusy0" -v b="$mbusy1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", (b - a) / (t1 - t0) }')" \
		-v wait="$(awk -v a="$mwait0" -v b="$mwait1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", (b - a) / (t1 - t0) }')" \
		-F', ' '{
		split($1, n, " "); split($2, r, " "); mb = $2; sub(/.*\(/, "", mb); sub(/ MB.*/, "", mb)
		split($5, p50, " "); split($7, p99, " "); split(pcpu, pc, " ")
		printf "%s,%s,%s,%s,%s,%s,%s,%s,%.2f,%s,%s\n", rf, rep, n[1], r[1], mb, p50[1], p99[1], cpu, pc[1] + pc[2], busy, wait
	}' <<<"$line" >>"$results"
	tail -n 1 "$results" | awk -F, '{ printf "  RF=%s rep %s: %10.1f records/s %8.1f MB/s   p50 %4s ms   p99 %5s ms   CPU s: brokers %5.1f, producer %5.1f   cores busy %4.2f, iowait %4.2f\n", $1, $2, $4, $5, $6, $7, $8, $9, $10, $11 }'
}

if (( warmup > 0 )); then
	echo "replication: warming up with $warmup records (RF=3, not measured)"
	make_topic warmup 3 min.insync.replicas=2
	"$bin/weir" perf produce --bootstrap-server "$bootstrap" --topic warmup \
		--num-records "$warmup" --record-size "$record_size" --throughput -1 \
		--producer-props acks=-1 >"$workdir/logs/produce-warmup.log" 2>&1 ||
		{ tail -n 20 "$workdir/logs/produce-warmup.log" >&2; die "warm-up produce failed"; }
fi

echo "rf,rep,records,records_per_s,mb_per_s,p50_ms,p99_ms,brokers_cpu_s,producer_cpu_s,machine_busy_cores,machine_iowait_cores" >"$results"
TIMEFORMAT='%U %S'
echo "replication: $reps rep(s) of $records records of $record_size B, $partitions partitions, acks=all"
start=$SECONDS
for rep in $(seq "$reps"); do
	if (( rep % 2 == 1 )); then order=(1 3); else order=(3 1); fi
	for rf in "${order[@]}"; do
		run_one "$rf" "$rep"
	done
done

# col RF FIELD: the median of a results.csv column over the runs of RF.
col() { awk -F, -v rf="$1" -v c="$2" 'NR > 1 && $1 == rf { print $c }' "$results" | median %.10g; }
# ratios: RF=3 / RF=1 throughput of each repetition.
ratio=$(awk -F, 'NR > 1 { mb[$1, $2] = $5; reps[$2] = 1 } END { for (r in reps) if (mb[1, r] > 0) printf "%.3f\n", mb[3, r] / mb[1, r] }' "$results" | median %.3f)

echo
echo "replication: medians of $reps run(s), $(( SECONDS - start )) s; all runs in $results"
printf '%-8s %12s %9s %8s %8s %15s %16s %12s %8s\n' topic "records/s" "MB/s" "p50 ms" "p99 ms" "brokers CPU s" "producer CPU s" "cores busy" "iowait"
for rf in 1 3; do
	printf '%-8s %12.0f %9.1f %8s %8s %15s %16s %12s %8s\n' "RF=$rf" "$(col "$rf" 4)" "$(col "$rf" 5)" "$(col "$rf" 6)" "$(col "$rf" 7)" "$(col "$rf" 8)" "$(col "$rf" 9)" "$(col "$rf" 10)" "$(col "$rf" 11)"
done
printf 'ratio RF=3 / RF=1 throughput: %.2f (target >= 0.40)\n' "$ratio"
if (( profile )); then echo "profiles: $workdir/profile-*.txt"; fi
if [[ -n ${trap_rm:-} ]]; then
	echo "(work dir removed; rerun with --keep or --workdir to keep logs)"
fi
if awk -v r="$ratio" 'BEGIN { exit !(r < 0.4) }'; then
	echo "replication: RF=3 throughput is below 0.4x RF=1" >&2
	exit 1
fi
