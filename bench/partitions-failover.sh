#!/usr/bin/env bash
# partitions-failover.sh: leader failover with many partitions on three
# nodes (issue 16's three-node goal).
#
# It formats and starts three combined weir nodes on localhost, creates
# TOPICS topics of PARTITIONS partitions with three replicas and
# min.insync.replicas=2 (bench/mkpartitions, CreateTopics of BATCH
# topics), waits until every ISR is whole, times Metadata for all topics,
# then SIGKILLs one node (by default one that is not the active
# controller, --victim-controller for the active controller) and reports
# the time until every partition has a leader other than it (Metadata from
# the two others, polled every 100 ms), restarts it and reports the time
# until it says "weir started" and until every partition's ISR is whole
# again, with the restarted node's and the other two nodes' CPU seconds
# until then.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF2'
usage: bench/partitions-failover.sh [options]

  --topics N            topics to create (default 100)
  --partitions N        partitions per topic (default 100)
  --batch N             topics per CreateTopics request (default 50)
  --victim-controller   kill the active controller (default: another node)
  --weir-override K=V   extra server property (repeatable)
  --workdir DIR         keep logs and data here (default: a temp dir,
                        removed at the end unless --keep)
  --keep                keep the temp work dir
  -h, --help            this text

The open-file limit of the shell (ulimit -n) applies to the nodes.
Environment: GO (default go) builds the binaries.
EOF2
}

topics=100
partitions=100
batch=50
victim_controller=0
weir_overrides=()
workdir=""
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--topics) topics=$2; shift 2 ;;
	--partitions) partitions=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--victim-controller) victim_controller=1; shift ;;
	--weir-override) weir_overrides+=("$2"); shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "partitions-failover: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

die() { echo "partitions-failover: $*" >&2; exit 1; }
for v in "$topics" "$partitions" "$batch"; do
	[[ $v =~ ^[0-9]+$ && $v -ge 1 ]] || die "--topics, --partitions and --batch must be positive numbers"
done
total=$(( topics * partitions ))

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $workdir ]]; then
	workdir=$(mktemp -d "${TMPDIR:-/tmp}/partitions-failover.XXXXXX")
	[[ $keep == 1 ]] || trap_rm=$workdir
else
	mkdir -p "$workdir"
fi
workdir=$(cd "$workdir" && pwd)
bin=$workdir/bin
mkdir -p "$bin" "$workdir/logs"

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

node_pids=(0 0 0)
cleanup() {
	for p in "${node_pids[@]}"; do
		if [[ $p != 0 ]]; then kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
	done
	if [[ -n ${trap_rm:-} ]]; then rm -rf "$trap_rm"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "partitions-failover: building into $bin"
(cd "$repo" && ${GO:-go} build -o "$bin/weir" ./cmd/weir && ${GO:-go} build -o "$bin/mkpartitions" ./bench/mkpartitions) ||
	die "building failed"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

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
		for o in "${weir_overrides[@]}"; do echo "$o"; done
	} >"$dir/server.properties"
	"$bin/weir" storage format -t "$cluster_id" -c "$dir/server.properties" >"$workdir/logs/format-node$i.log" 2>&1 ||
		{ cat "$workdir/logs/format-node$i.log" >&2; die "formatting node $i failed"; }
	bootstrap+="${bootstrap:+,}127.0.0.1:${ports[i-1]}"
done

# start_node I: starts node I, its output appended to logs/nodeI.log.
start_node() {
	"$bin/weir" server --log-level info -c "$workdir/node$1/server.properties" >>"$workdir/logs/node$1.log" 2>&1 &
	node_pids[$1 - 1]=$!
}

# wait_started I FROM SECONDS: waits until node I logs "weir started"
# after line FROM of its log.
wait_started() {
	local deadline=$(( SECONDS + $3 )) f=$workdir/logs/node$1.log
	until tail -n +"$(( $2 + 1 ))" "$f" | grep -q "weir started"; do
		kill -0 "${node_pids[$1 - 1]}" 2>/dev/null || { tail -n 30 "$f" >&2; die "node $1 exited"; }
		(( SECONDS < deadline )) || { tail -n 30 "$f" >&2; die "node $1 did not start within $3 s"; }
		sleep 0.05
	done
}

for i in 1 2 3; do : >"$workdir/logs/node$i.log"; start_node "$i"; done
for i in 1 2 3; do wait_started "$i" 0 120; done
echo "partitions-failover: cluster up at $bootstrap (load $(load))"

mk() { "$bin/mkpartitions" --topics "$topics" --partitions "$partitions" "$@"; }

declare -A res
res[load_create]=$(load)
cpu0=0
for p in "${node_pids[@]}"; do cpu0=$(awk -v a="$cpu0" -v b="$(cpu_seconds "$p")" 'BEGIN { print a + b }'); done
mk --bootstrap-server "$bootstrap" --batch "$batch" --replication-factor 3 --config min.insync.replicas=2 >"$workdir/create.out" ||
	die "creating failed: $(cat "$workdir/create.out")"
res[create_s]=$(awk '{ print $5 }' "$workdir/create.out")
t0=$(now)
mk --bootstrap-server "$bootstrap" --check --isr 3 >/dev/null || die "the ISRs did not fill after the creation"
res[isr_after_create_s]=$(since "$t0")
cpu1=0
for p in "${node_pids[@]}"; do cpu1=$(awk -v a="$cpu1" -v b="$(cpu_seconds "$p")" 'BEGIN { print a + b }'); done
res[create_cpu]=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.1f", b - a }')
res[metadata]=$("$bin/mkpartitions" --bootstrap-server "$bootstrap" --metadata-all 5)
res[leaders_before]=$("$bin/mkpartitions" --bootstrap-server "$bootstrap" --leaders)

active=$("$bin/weir" metadata-quorum --bootstrap-server "$bootstrap" describe --status | awk -F'[: \t]+' '$1 == "LeaderId" { print $2 }')
[[ $active =~ ^[123]$ ]] || die "cannot tell the active controller (got \"$active\")"
if [[ $victim_controller == 1 ]]; then
	victim=$active
else
	victim=$(( active % 3 + 1 ))
fi
survivors=""
for i in 1 2 3; do
	[[ $i == "$victim" ]] || survivors+="${survivors:+,}127.0.0.1:${ports[i-1]}"
done
res[load_kill]=$(load)
echo "partitions-failover: $total partitions, leaders${res[leaders_before]#leaders}; killing node $victim (active controller: $active; load $(load))"

t0=$(now)
kill -9 "${node_pids[victim - 1]}"
wait "${node_pids[victim - 1]}" 2>/dev/null || true
node_pids[victim - 1]=0
mk --bootstrap-server "$survivors" --check --not-led-by "$victim" --timeout 10m >/dev/null ||
	die "the partitions of node $victim did not all get new leaders"
res[moved_s]=$(since "$t0")
res[leaders_after]=$("$bin/mkpartitions" --bootstrap-server "$survivors" --leaders)

from=$(wc -l <"$workdir/logs/node$victim.log")
survivors_cpu() {
	local c=0 i
	for i in 1 2 3; do
		[[ $i == "$victim" ]] || c=$(awk -v a="$c" -v b="$(cpu_seconds "${node_pids[i - 1]}")" 'BEGIN { print a + b }')
	done
	echo "$c"
}
cpu0=$(survivors_cpu)
t0=$(now)
start_node "$victim"
wait_started "$victim" "$from" 600
res[restart_s]=$(since "$t0")
# Polled every second: Metadata for every partition costs the node that
# answers it CPU that the start-up being measured needs.
mk --bootstrap-server "$bootstrap" --check --isr 3 --interval 1s --timeout 10m >/dev/null || die "the ISRs were not whole again after the restart"
res[isr_s]=$(since "$t0")
res[restart_cpu]=$(cpu_seconds "${node_pids[victim - 1]}")
res[restart_cpu_others]=$(awk -v a="$cpu0" -v b="$(survivors_cpu)" 'BEGIN { printf "%.2f", b - a }')

v() { echo "${res[$1]:--}"; }
echo
echo "$total partitions ($topics topics x $partitions), three replicas, min.insync.replicas=2, on three combined nodes; ulimit -n $(ulimit -n)"
row() { printf '| %-58s | %s |\n' "$1" "$2"; }
row "measure" "value"
printf '|%s|%s|\n' "------------------------------------------------------------" "---:"
row "create (s), load average before" "$(v create_s), $(v load_create)"
row "  then until every ISR is whole (s)" "$(v isr_after_create_s)"
row "  nodes' CPU for both (s)" "$(v create_cpu)"
row "Metadata of all topics" "$(v metadata)"
row "leaders before the kill" "$(v leaders_before)"
row "victim (active controller: $active)" "node $victim, load average $(v load_kill)"
row "SIGKILL to every partition led by another node (s)" "$(v moved_s)"
row "leaders after" "$(v leaders_after)"
row "restart to \"weir started\" (s)" "$(v restart_s)"
row "restart to every ISR whole again (s)" "$(v isr_s)"
row "  restarted node's CPU until then (s)" "$(v restart_cpu)"
row "  the other two nodes' CPU meanwhile (s)" "$(v restart_cpu_others)"
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); commit $(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown); load average now $(load)"
