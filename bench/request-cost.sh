#!/usr/bin/env bash
# request-cost.sh: the broker CPU a small request costs, weir beside Apache
# Kafka 4.4.0 (issue 33). Kafka is resolved through Maven from
# bench/kafka/pom.xml and run with `java -cp` as bench/vs-kafka.sh runs it
# (KRaft combined mode, its stock server.properties settings and
# kafka-server-start.sh's JVM options); weir runs with its defaults. Each
# broker is a fresh single node pinned to its own core with taskset (core
# 0, the clients on the other cores), and both are driven by the same
# franz-go client, `weir perf produce` at a fixed rate with linger.ms=0.
#
# Loads (each system in turn, on fresh brokers):
#   - fixed: 1 KiB records at each of --rates records/s, acks=1 and
#     acks=all, 3 partitions, for --seconds each;
#   - small: 100 B records at 50,000 records/s from 100 producers (100
#     `weir perf produce` processes at 500 records/s each), acks=1.
# Figures: the broker's CPU (user+system, from /proc) per produce request
# (the requests counted by the broker: weir's
# kafka_network_requestmetrics_requests_total on /metrics, Kafka's
# RequestMetrics RequestsPerSec Count read over JMX with JmxTool), per GB
# of values, and the client's p99 latency (the median of the producers'
# for the small load). The 200 long-polling consumers and the 10,000 idle
# connections of issue 33 are not measured here yet.
#
# Take the figures on a quiet machine: on a shared one the CPU per request
# moves with the other load's cache and scheduler pressure.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF'
usage: bench/request-cost.sh [options]

  --rates LIST     records/s of the fixed load (default 5000,20000,50000)
  --acks LIST      acks of the fixed load (default 1,all)
  --seconds N      length of each run (default 15)
  --loads LIST     fixed,small (default both)
  --systems LIST   weir,kafka (default)
  --kafka-heap SZ  Kafka's -Xmx and -Xms (default 1G)
  --workdir DIR    keep logs and results here (default: a temp dir, removed)
  -h, --help       this text

Environment: GO (default go), JAVA (default java), MVN (default mvn).
EOF
}

rates=5000,20000,50000
acks_list=1,all
seconds=15
loads=fixed,small
systems=weir,kafka
kafka_heap=1G
workdir=""
while [[ $# -gt 0 ]]; do
	case "$1" in
	--rates) rates=$2; shift 2 ;;
	--acks) acks_list=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--loads) loads=$2; shift 2 ;;
	--systems) systems=$2; shift 2 ;;
	--kafka-heap) kafka_heap=$2; shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "request-cost: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
die() { echo "request-cost: $*" >&2; exit 1; }
IFS=, read -r -a rate_list <<<"$rates"
IFS=, read -r -a acks_values <<<"$acks_list"
IFS=, read -r -a system_list <<<"$systems"
for s in "${system_list[@]}"; do [[ $s == weir || $s == kafka ]] || die "unknown system $s"; done
wants() { [[ ",$loads," == *",$1,"* ]]; }
(( $(nproc) >= 2 )) || die "needs 2 cores: one for the broker, the rest for the clients"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
single_node_setup request-cost
results=$workdir/results.csv
echo "load,system,rate,acks,requests,cpu_s,cpu_us_per_request,cpu_s_per_gb,p99_ms" >"$results"
client_cores=1-$(( $(nproc) - 1 ))
java=${JAVA:-java}
if [[ " ${system_list[*]} " == *" kafka "* ]]; then
	echo "request-cost: resolving Apache Kafka 4.4.0 with Maven (bench/kafka/pom.xml)"
	(cd "$repo/bench/kafka" && ${MVN:-mvn} -B -ntp -q -Dstyle.color=never \
		org.apache.maven.plugins:maven-dependency-plugin:2.8:build-classpath \
		-Dmdep.outputFile="$workdir/kafka.classpath") >"$workdir/logs/mvn.log" 2>&1 ||
		{ tail -n 30 "$workdir/logs/mvn.log" >&2; die "resolving Kafka failed"; }
	kafka_cp=$(cat "$workdir/kafka.classpath")
fi
kafka_jvm=(-Xmx"$kafka_heap" -Xms"$kafka_heap" -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20
	-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15
	-Djava.awt.headless=true)

# start_broker SYSTEM TAG: a fresh single node on core 0; sets broker_pid,
# bootstrap and stats (the port of weir's /metrics or of Kafka's JMX).
start_broker() {
	local system=$1 tag=$2 port cport dir=$workdir/data/$2-$1 id
	free_port; port=$REPLY
	free_port; cport=$REPLY
	free_port; stats=$REPLY
	bootstrap=127.0.0.1:$port
	rm -rf "$dir"
	mkdir -p "$dir"
	{
		echo "process.roles=broker,controller"
		echo "node.id=1"
		echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
		echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
		echo "controller.quorum.voters=1@127.0.0.1:$cport"
		echo "log.dirs=$dir/data"
		echo "offsets.topic.replication.factor=1"
		echo "transaction.state.log.replication.factor=1"
		echo "transaction.state.log.min.isr=1"
		if [[ $system == kafka ]]; then
			# The rest of Kafka 4.4's config/server.properties.
			echo "controller.listener.names=CONTROLLER"
			echo "inter.broker.listener.name=PLAINTEXT"
			echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
			echo "num.network.threads=3"
			echo "num.io.threads=8"
			echo "socket.send.buffer.bytes=102400"
			echo "socket.receive.buffer.bytes=102400"
			echo "socket.request.max.bytes=104857600"
			echo "num.partitions=1"
			echo "num.recovery.threads.per.data.dir=1"
			echo "log.retention.hours=168"
			echo "log.segment.bytes=1073741824"
			echo "log.retention.check.interval.ms=300000"
			echo "share.coordinator.state.topic.replication.factor=1"
			echo "share.coordinator.state.topic.min.isr=1"
		else
			echo "metadata.log.dir=$dir/meta"
			echo "weir.metrics.listener=http://127.0.0.1:$stats"
		fi
	} >"$dir/server.properties"
	if [[ $system == weir ]]; then
		id=$("$bin/weir" storage random-uuid)
		"$bin/weir" storage format -t "$id" -c "$dir/server.properties" >"$dir/format.log" 2>&1 || die "formatting weir failed"
		taskset -c 0 "$bin/weir" server --log-level warn -c "$dir/server.properties" >"$workdir/logs/$tag-$system.log" 2>&1 &
	else
		id=$("$java" -cp "$kafka_cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
		"$java" -cp "$kafka_cp" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
			die "formatting Kafka failed"
		taskset -c 0 "$java" "${kafka_jvm[@]}" -Dcom.sun.management.jmxremote -Dcom.sun.management.jmxremote.port="$stats" \
			-Dcom.sun.management.jmxremote.rmi.port="$stats" -Dcom.sun.management.jmxremote.authenticate=false \
			-Dcom.sun.management.jmxremote.ssl=false -Djava.rmi.server.hostname=127.0.0.1 \
			-cp "$kafka_cp" kafka.Kafka "$dir/server.properties" >"$workdir/logs/$tag-$system.log" 2>&1 &
	fi
	broker_pid=$!
	local deadline=$(( SECONDS + 90 ))
	until "$bin/weir" topics --bootstrap-server "$bootstrap" --create --topic ready --partitions 1 \
		--replication-factor 1 >/dev/null 2>&1; do
		kill -0 "$broker_pid" 2>/dev/null || { tail -n 30 "$workdir/logs/$tag-$system.log" >&2; die "$system exited"; }
		(( SECONDS < deadline )) || die "$system did not take a topic within 90 s"
		sleep 0.5
	done
}

stop_broker() {
	kill "$broker_pid" 2>/dev/null || true
	wait "$broker_pid" 2>/dev/null || true
	broker_pid=""
	rm -rf "$workdir/data"
}

# produce_requests SYSTEM: the Produce requests the broker has answered.
produce_requests() {
	if [[ $1 == weir ]]; then
		curl -fsS "http://127.0.0.1:$stats/metrics" |
			awk '/network_requestmetrics_requests_total\{/ && /request="Produce"/ { s += $NF } END { printf "%d\n", s }'
	else
		# Before the first Produce the metric does not exist: 0.
		local out
		out=$("$java" -cp "$kafka_cp" org.apache.kafka.tools.JmxTool --one-time true --report-format csv --attributes Count \
			--jmx-url "service:jmx:rmi:///jndi/rmi://127.0.0.1:$stats/jmxrmi" \
			--object-name 'kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,*' 2>"$workdir/logs/jmxtool.log") || out=""
		awk -F, 'NR > 1 { for (i = 2; i <= NF; i++) { gsub(/"/, "", $i); s += $i } } END { printf "%d\n", s }' <<<"$out"
	fi
}

# run_load LOAD SYSTEM RATE ACKS SIZE PRODUCERS: RATE records/s of SIZE
# bytes spread over PRODUCERS client processes for --seconds, into a new
# topic of 3 partitions; appends one results row and prints it.
run_load() {
	local load=$1 system=$2 rate=$3 acks=$4 size=$5 producers=$6 topic req0 req1 cpu0 cpu1 i pids=() per records p99
	topic=$load-$rate-$acks
	"$bin/weir" topics --bootstrap-server "$bootstrap" --create --topic "$topic" --partitions 3 \
		--replication-factor 1 >/dev/null || die "creating $topic failed"
	per=$(( rate / producers ))
	records=$(( per * seconds ))
	req0=$(produce_requests "$system")
	cpu0=$(cpu_seconds "$broker_pid")
	for (( i = 0; i < producers; i++ )); do
		taskset -c "$client_cores" "$bin/weir" perf produce --bootstrap-server "$bootstrap" --topic "$topic" \
			--num-records "$records" --record-size "$size" --throughput "$per" \
			--producer-props acks="$acks" linger.ms=0 >"$workdir/logs/$topic-$system-$i.log" 2>&1 &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[i]}" || { tail -n 20 "$workdir/logs/$topic-$system-$i.log" >&2; die "produce failed"; }
	done
	cpu1=$(cpu_seconds "$broker_pid")
	req1=$(produce_requests "$system")
	p99=$(for (( i = 0; i < producers; i++ )); do
		grep ' ms 99.9th\.$' "$workdir/logs/$topic-$system-$i.log" | tail -n 1 | sed -E 's/.* ([0-9]+) ms 99th.*/\1/'
	done | median %.0f)
	awk -v load="$load" -v sys="$system" -v rate="$rate" -v acks="$acks" -v n=$(( req1 - req0 )) \
		-v c0="$cpu0" -v c1="$cpu1" -v gb="$(awk -v r=$(( records * producers )) -v s="$size" 'BEGIN { print r * s / 1073741824 }')" \
		-v p99="$p99" 'BEGIN {
			cpu = c1 - c0
			us = n > 0 ? sprintf("%.1f", cpu * 1e6 / n) : "-"
			printf "%s,%s,%s,%s,%d,%.2f,%s,%.1f,%s\n", load, sys, rate, acks, n, cpu, us, cpu / gb, p99
		}' | tee -a "$results" | awk -F, '{ printf "  %-6s %-5s %6s rec/s acks=%-3s %8s requests %7s CPU s %7s us/request %7s CPU s/GB  p99 %s ms\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
}

for system in "${system_list[@]}"; do
	if wants fixed; then
		start_broker "$system" fixed
		for acks in "${acks_values[@]}"; do
			for rate in "${rate_list[@]}"; do run_load fixed "$system" "$rate" "$acks" 1024 1; done
		done
		stop_broker
	fi
	if wants small; then
		start_broker "$system" small
		run_load small "$system" 50000 1 100 100
		stop_broker
	fi
done
echo "request-cost: results in $results"
if [[ -n $trap_rm ]]; then cat "$results"; fi
