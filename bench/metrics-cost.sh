#!/usr/bin/env bash
# metrics-cost.sh: what the Prometheus metrics cost on the produce path
# (issue 26). Each run is a fresh single node (`weir server`, its defaults,
# data under --workdir) pinned to core 0 with taskset, and one
# `weir perf produce` on the other cores at full speed (--throughput -1,
# acks=1, one partition). Runs alternate metrics off (no
# weir.metrics.listener: nothing is counted) and on (the listener set:
# every series the broker exports is kept up), --rounds times per record
# size, so that a drift of the machine falls on both settings alike.
#
# Figures per run: the producer's MB/s and the broker's CPU (user+system
# from /proc) per GB produced; the table gives the median of the rounds
# and the change of "on" against "off". Take them on a quiet machine.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF'
usage: bench/metrics-cost.sh [options]

  --sizes LIST     record sizes in bytes (default 1024,100)
  --bytes N        bytes produced per run (default 536870912, 512 MiB)
  --rounds N       off/on pairs per size (default 5)
  --workdir DIR    keep logs and results here (default: a temp dir, removed)
  -h, --help       this text

Environment: GO (default go).
EOF
}

sizes=1024,100
bytes=536870912
rounds=5
workdir=""
while [[ $# -gt 0 ]]; do
	case "$1" in
	--sizes) sizes=$2; shift 2 ;;
	--bytes) bytes=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "metrics-cost: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
die() { echo "metrics-cost: $*" >&2; exit 1; }
IFS=, read -r -a size_list <<<"$sizes"
(( $(nproc) >= 2 )) || die "needs 2 cores: one for the broker, the rest for the client"

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
single_node_setup metrics-cost
results=$workdir/results.csv
echo "size,metrics,round,mb_per_s,cpu_s,cpu_s_per_gb,series" >"$results"
client_cores=1-$(( $(nproc) - 1 ))

# run SIZE METRICS ROUND: one fresh node, one produce run; appends a row.
run() {
	local size=$1 metrics=$2 round=$3 port cport stats="" dir=$workdir/data tag=$1-$2-$3 records cpu0 cpu1 line mbs series=0
	free_port; port=$REPLY
	free_port; cport=$REPLY
	rm -rf "$dir"
	mkdir -p "$dir"
	{
		echo "process.roles=broker,controller"
		echo "node.id=1"
		echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
		echo "controller.quorum.voters=1@127.0.0.1:$cport"
		echo "log.dirs=$dir/data"
		echo "metadata.log.dir=$dir/meta"
		echo "offsets.topic.replication.factor=1"
		if [[ $metrics == on ]]; then
			free_port; stats=$REPLY
			echo "weir.metrics.listener=http://127.0.0.1:$stats"
		fi
	} >"$dir/server.properties"
	"$bin/weir" storage format -t "$("$bin/weir" storage random-uuid)" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
		die "formatting weir failed"
	taskset -c 0 "$bin/weir" server --log-level warn -c "$dir/server.properties" >"$workdir/logs/$tag.log" 2>&1 &
	broker_pid=$!
	local deadline=$(( SECONDS + 60 ))
	until "$bin/weir" topics --bootstrap-server "127.0.0.1:$port" --create --topic bench --partitions 1 \
		--replication-factor 1 >/dev/null 2>&1; do
		kill -0 "$broker_pid" 2>/dev/null || { tail -n 30 "$workdir/logs/$tag.log" >&2; die "weir exited"; }
		(( SECONDS < deadline )) || die "weir did not take a topic within 60 s"
		sleep 0.2
	done
	records=$(( bytes / size ))
	cpu0=$(cpu_seconds "$broker_pid")
	taskset -c "$client_cores" "$bin/weir" perf produce --bootstrap-server "127.0.0.1:$port" --topic bench \
		--num-records "$records" --record-size "$size" --throughput -1 \
		--producer-props acks=1 >"$workdir/logs/$tag-produce.log" 2>&1 ||
		{ tail -n 20 "$workdir/logs/$tag-produce.log" >&2; die "produce failed"; }
	cpu1=$(cpu_seconds "$broker_pid")
	if [[ -n $stats ]]; then
		series=$(curl -fsS "http://127.0.0.1:$stats/metrics" | grep -c '^kafka_' || true)
	fi
	kill "$broker_pid" 2>/dev/null || true
	wait "$broker_pid" 2>/dev/null || true
	broker_pid=""
	line=$(grep ' records sent, ' "$workdir/logs/$tag-produce.log" | tail -n 1)
	mbs=$(sed -E 's/.*\(([0-9.]+) MB\/sec\).*/\1/' <<<"$line")
	awk -v size="$size" -v m="$metrics" -v r="$round" -v mbs="$mbs" -v c0="$cpu0" -v c1="$cpu1" \
		-v gb="$(awk -v b=$(( records * size )) 'BEGIN { print b / 1073741824 }')" -v series="$series" 'BEGIN {
			printf "%s,%s,%s,%s,%.2f,%.2f,%s\n", size, m, r, mbs, c1 - c0, (c1 - c0) / gb, series
		}' | tee -a "$results" | awk -F, '{ printf "  %5s B  metrics %-3s round %s: %8s MB/s %6s CPU s/GB (%s kafka_* series)\n", $1, $2, $3, $4, $6, $7 }'
	rm -rf "$dir"
}

for size in "${size_list[@]}"; do
	for (( r = 1; r <= rounds; r++ )); do
		# Alternate which setting goes first, so neither always runs on
		# the warmer machine.
		if (( r % 2 )); then run "$size" off "$r"; run "$size" on "$r"; else run "$size" on "$r"; run "$size" off "$r"; fi
	done
done

echo
echo "| record | metrics | median MB/s | median broker CPU s/GB |"
echo "|---|---|---:|---:|"
for size in "${size_list[@]}"; do
	for m in off on; do
		mb=$(awk -F, -v s="$size" -v m="$m" '$1 == s && $2 == m { print $4 }' "$results" | median %.1f)
		cpu=$(awk -F, -v s="$size" -v m="$m" '$1 == s && $2 == m { print $6 }' "$results" | median %.2f)
		echo "| $size B | $m | $mb | $cpu |"
	done
done
echo "metrics-cost: results in $results"
