#!/usr/bin/env bash
# vs-kafka.sh: weir against Apache Kafka 4.4.0, same loads, same box, both
# clients.
#
# Kafka (kafka_2.13 and kafka-tools, pinned in bench/kafka/pom.xml) is
# resolved through Maven only and run with `java -cp`: storage formatted
# with kafka.tools.StorageTool, then kafka.Kafka in KRaft combined mode
# (broker and controller in one process) with the settings of Kafka's
# stock config/server.properties and kafka-server-start.sh's JVM options
# (heap 1 GiB, G1 with its pause target). weir runs with its defaults.
#
# Loads, each against a fresh broker of each system, the systems taking
# turns (which one goes first alternates):
#   - throughput: {1 KiB, 100 B} records x {1, 3} partitions x acks {1, all},
#     produced at full speed by `weir perf produce` and by Kafka's
#     ProducerPerformance (kafka-producer-perf-test), each into its own
#     topic; after the acks=1 runs each topic is read back by the client
#     that wrote it (`weir perf consume`, ConsumerPerformance /
#     kafka-consumer-perf-test);
#   - latency: 1 KiB records, 3 partitions, acks=all, at a fixed 50 MB/s
#     (--rate-mb), p50/p99/p99.9 as both tools print them;
#   - RF 3: three local brokers of each system, a 3-partition topic with
#     replication factor 3 and min.insync.replicas=2, acks=all, full speed
#     and at the fixed rate.
# For each load: MB/s (values, MB = 1024*1024 bytes, as Kafka's tools
# count), the brokers' CPU seconds per GB of values written or read (from
# /proc, summed over the brokers) and the brokers' peak RSS (VmHWM, summed
# over the brokers). Every figure goes to results.csv in the work
# directory, and a table of both systems with ratios is printed at the end.
#
# --security runs every load over each listed protocol: PLAINTEXT, SSL
# (TLS with one throwaway self-signed certificate for 127.0.0.1 made with
# openssl, given to both systems as the same PEM key store, the clients
# trusting it as a PEM trust store) and SASL_SSL (the same TLS, then a SASL
# PLAIN login). Each broker serves the protocol on a CLIENT listener beside
# PLAINTEXT INTERNAL (inter-broker, topic creation) and CONTROLLER ones;
# the perf clients get security.protocol, the trust store and the login in
# a properties file (--producer.config/--consumer.config for weir perf,
# --command-config for Kafka's tools). Loads over SSL or SASL_SSL are
# labelled with the protocol.
#
# The clients and the brokers share this machine's cores, so the figures
# compare the brokers under the same conditions, not absolute capacity.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF'
usage: bench/vs-kafka.sh [options]

  --bytes N           record-value bytes per produce with 1 KiB records
                      (default 512M; suffixes K M G allowed)
  --small-bytes N     the same for 100 B records (default 128M)
  --scenarios LIST    comma-separated SIZExPARTITIONS (default 1024x1,1024x3,100x1,100x3)
  --acks LIST         comma-separated acks of the throughput runs (default 1,all)
  --clients LIST      weir,kafka (default): the perf tools used
  --systems LIST      weir,kafka (default)
  --loads LIST        throughput,latency,rf3 (default all three)
  --rate-mb N         MB/s of the latency runs (default 50)
  --latency-seconds N length of each latency run (default 15)
  --security LIST     comma-separated PLAINTEXT, SSL, SASL_SSL (default PLAINTEXT)
  --kafka-heap SIZE   Kafka's -Xmx and -Xms (default 1G)
  --workdir DIR       keep logs, data and results here (default: a temp dir,
                      removed at the end unless --keep)
  --keep              keep the temp work dir
  -h, --help          this text

Environment: GO (default go), JAVA (default java), MVN (default mvn).
EOF
}

bytes_big=512M
bytes_small=128M
scenarios=1024x1,1024x3,100x1,100x3
acks_list=1,all
clients=weir,kafka
systems=weir,kafka
rate_mb=50
latency_seconds=15
loads=throughput,latency,rf3
kafka_heap=1G
security=PLAINTEXT
workdir=""
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--bytes) bytes_big=$2; shift 2 ;;
	--small-bytes) bytes_small=$2; shift 2 ;;
	--scenarios) scenarios=$2; shift 2 ;;
	--acks) acks_list=$2; shift 2 ;;
	--clients) clients=$2; shift 2 ;;
	--systems) systems=$2; shift 2 ;;
	--rate-mb) rate_mb=$2; shift 2 ;;
	--latency-seconds) latency_seconds=$2; shift 2 ;;
	--loads) loads=$2; shift 2 ;;
	--kafka-heap) kafka_heap=$2; shift 2 ;;
	--security) security=$2; shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "vs-kafka: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

die() { echo "vs-kafka: $*" >&2; exit 1; }

to_bytes() {
	local v=$1
	case "$v" in
	*[kK]) echo $(( ${v%?} * 1024 )) ;;
	*[mM]) echo $(( ${v%?} * 1024 * 1024 )) ;;
	*[gG]) echo $(( ${v%?} * 1024 * 1024 * 1024 )) ;;
	*) echo $(( v )) ;;
	esac
}
bytes_big=$(to_bytes "$bytes_big")
bytes_small=$(to_bytes "$bytes_small")
IFS=, read -r -a scenario_list <<<"$scenarios"
IFS=, read -r -a acks_values <<<"$acks_list"
IFS=, read -r -a client_list <<<"$clients"
IFS=, read -r -a system_list <<<"$systems"
for s in "${system_list[@]}" "${client_list[@]}"; do
	[[ $s == weir || $s == kafka ]] || die "unknown system or client $s (want weir and/or kafka)"
done
IFS=, read -r -a load_list <<<"$loads"
for s in "${load_list[@]}"; do
	[[ $s == throughput || $s == latency || $s == rf3 ]] || die "unknown load $s (want throughput, latency, rf3)"
done
IFS=, read -r -a security_list <<<"$security"
for s in "${security_list[@]}"; do
	[[ $s == PLAINTEXT || $s == SSL || $s == SASL_SSL ]] || die "unknown security protocol $s (want PLAINTEXT, SSL or SASL_SSL)"
done
wants() { [[ ",$loads," == *",$1,"* ]]; }
(( rate_mb > 0 )) || die "--rate-mb must be positive"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $workdir ]]; then
	workdir=$(mktemp -d "${TMPDIR:-/tmp}/vs-kafka.XXXXXX")
	[[ $keep == 1 ]] || trap_rm=$workdir
else
	mkdir -p "$workdir"
fi
workdir=$(cd "$workdir" && pwd)
bin=$workdir/bin
mkdir -p "$bin" "$workdir/logs"
results=$workdir/results.csv
pending=$workdir/pending.csv
: >"$pending"

broker_pids=()
sampler_pids=()
cleanup() {
	local p
	for p in "${sampler_pids[@]}" "${broker_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${broker_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n ${trap_rm:-} ]]; then rm -rf "$trap_rm"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

echo "vs-kafka: building weir into $bin"
(cd "$repo" && ${GO:-go} build -o "$bin/weir" ./cmd/weir) || die "building weir failed"
echo "vs-kafka: resolving Apache Kafka 4.4.0 with Maven (bench/kafka/pom.xml)"
(cd "$repo/bench/kafka" && ${MVN:-mvn} -B -ntp -q -Dstyle.color=never \
	org.apache.maven.plugins:maven-dependency-plugin:2.8:build-classpath \
	-Dmdep.outputFile="$workdir/kafka.classpath") >"$workdir/logs/mvn.log" 2>&1 ||
	{ tail -n 30 "$workdir/logs/mvn.log" >&2; die "resolving Kafka failed"; }
kafka_cp=$(cat "$workdir/kafka.classpath")
java=${JAVA:-java}
# kafka-server-start.sh's JVM options (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS).
kafka_jvm=(-Xmx"$kafka_heap" -Xms"$kafka_heap" -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20
	-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15
	-Djava.awt.headless=true)
# kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh: -Xmx512M.
tool_jvm=(-Xmx512M -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
	-XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true)

# The TLS material of SSL and SASL_SSL: a self-signed certificate for
# 127.0.0.1 whose key (PKCS#8) and certificate make both systems' PEM key
# store, and which the clients trust.
tls_dir=$workdir/tls
sasl_user=bench sasl_pass=bench-secret
if [[ ,$security, != ,PLAINTEXT, ]]; then
	mkdir -p "$tls_dir"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$tls_dir/key.pem" -out "$tls_dir/cert.pem" 2>"$tls_dir/openssl.log" || die "openssl failed (see $tls_dir/openssl.log)"
	cat "$tls_dir/key.pem" "$tls_dir/cert.pem" >"$tls_dir/broker.pem"
fi
# client_props SECURITY: writes the perf clients' properties of SECURITY
# and prints their file's path.
client_props() {
	local f=$workdir/client-$1.properties
	: >"$f"
	if [[ $1 != PLAINTEXT ]]; then
		printf 'security.protocol=%s\nssl.truststore.type=PEM\nssl.truststore.location=%s\n' "$1" "$tls_dir/cert.pem" >>"$f"
	fi
	if [[ $1 == SASL_SSL ]]; then
		printf 'sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s";\n' \
			"$sasl_user" "$sasl_pass" >>"$f"
	fi
	echo "$f"
}

status_kb() { awk -v f="$2:" '$1 == f { print $2; found = 1 } END { if (!found) print 0 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# sample_rss PID FILE: every 0.2 s, keep the largest VmRSS and VmHWM seen.
sample_rss() {
	local pid=$1 file=$2 peak=0 v f
	while kill -0 "$pid" 2>/dev/null; do
		for f in VmRSS VmHWM; do
			v=$(status_kb "$pid" "$f")
			if (( v > peak )); then peak=$v; echo "$peak" >"$file"; fi
		done
		sleep 0.2
	done
}

# start_brokers SYSTEM TAG N SECURITY: starts N fresh brokers (one
# combined broker+controller node each, one quorum), sets broker_pids,
# bootstrap (the clients' listeners, of SECURITY), admin_bootstrap (a
# PLAINTEXT listener) and props (the clients' properties file), and waits
# until all accept connections and the cluster takes a topic of
# replication factor N.
start_brokers() {
	local system=$1 tag=$2 n=$3 sec=$4 i ports=() iports=() cports=() voters=() id dir
	for (( i = 1; i <= n; i++ )); do
		free_port; ports+=("$REPLY")
		if [[ $sec == PLAINTEXT ]]; then iports+=("$REPLY"); else free_port; iports+=("$REPLY"); fi
		free_port; cports+=("$REPLY")
		voters+=("$i@127.0.0.1:$REPLY")
	done
	bootstrap=$(printf '127.0.0.1:%s,' "${ports[@]}")
	bootstrap=${bootstrap%,}
	admin_bootstrap=$(printf '127.0.0.1:%s,' "${iports[@]}")
	admin_bootstrap=${admin_bootstrap%,}
	props=$(client_props "$sec")
	if [[ $system == weir ]]; then id=$("$bin/weir" storage random-uuid); else
		id=$("$java" -cp "$kafka_cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
	fi
	broker_pids=()
	sampler_pids=()
	for (( i = 1; i <= n; i++ )); do
		dir=$workdir/data/$tag-$system-$i
		rm -rf "$dir"
		mkdir -p "$dir"
		{
			echo "process.roles=broker,controller"
			echo "node.id=$i"
			if [[ $sec == PLAINTEXT ]]; then
				echo "listeners=PLAINTEXT://127.0.0.1:${ports[i - 1]},CONTROLLER://127.0.0.1:${cports[i - 1]}"
				echo "advertised.listeners=PLAINTEXT://127.0.0.1:${ports[i - 1]}"
			else
				echo "listeners=CLIENT://127.0.0.1:${ports[i - 1]},INTERNAL://127.0.0.1:${iports[i - 1]},CONTROLLER://127.0.0.1:${cports[i - 1]}"
				echo "advertised.listeners=CLIENT://127.0.0.1:${ports[i - 1]},INTERNAL://127.0.0.1:${iports[i - 1]}"
				echo "listener.security.protocol.map=CLIENT:$sec,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
				echo "inter.broker.listener.name=INTERNAL"
				echo "ssl.keystore.type=PEM"
				echo "ssl.keystore.location=$tls_dir/broker.pem"
				if [[ $sec == SASL_SSL ]]; then
					echo "sasl.enabled.mechanisms=PLAIN"
					echo "listener.name.client.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$sasl_user=\"$sasl_pass\";"
				fi
			fi
			echo "controller.quorum.voters=$(IFS=,; echo "${voters[*]}")"
			echo "log.dirs=$dir/data"
			if [[ $system == kafka ]]; then
				# The rest of Kafka 4.4's config/server.properties.
				echo "controller.listener.names=CONTROLLER"
				if [[ $sec == PLAINTEXT ]]; then
					echo "inter.broker.listener.name=PLAINTEXT"
					echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
				fi
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
			else
				echo "metadata.log.dir=$dir/meta"
			fi
			if (( n == 1 )); then
				echo "offsets.topic.replication.factor=1"
				echo "transaction.state.log.replication.factor=1"
				echo "transaction.state.log.min.isr=1"
				[[ $system == kafka ]] && echo "share.coordinator.state.topic.replication.factor=1" && echo "share.coordinator.state.topic.min.isr=1"
			fi
			true
		} >"$dir/server.properties"
		if [[ $system == weir ]]; then
			"$bin/weir" storage format -t "$id" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
				{ cat "$dir/format.log" >&2; die "formatting weir failed"; }
			"$bin/weir" server --log-level warn -c "$dir/server.properties" >"$workdir/logs/$tag-$system-$i.log" 2>&1 &
		else
			"$java" -cp "$kafka_cp" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
				{ cat "$dir/format.log" >&2; die "formatting Kafka failed"; }
			"$java" "${kafka_jvm[@]}" -cp "$kafka_cp" kafka.Kafka "$dir/server.properties" >"$workdir/logs/$tag-$system-$i.log" 2>&1 &
		fi
		broker_pids+=($!)
		echo 0 >"$workdir/logs/$tag-$system-$i.rss"
		sample_rss "$!" "$workdir/logs/$tag-$system-$i.rss" &
		sampler_pids+=($!)
	done
	local deadline=$(( SECONDS + 60 )) p
	for p in "${ports[@]}" "${iports[@]}"; do
		until port_open "$p"; do
			for i in "${!broker_pids[@]}"; do
				kill -0 "${broker_pids[i]}" 2>/dev/null || { tail -n 30 "$workdir/logs/$tag-$system-$((i + 1)).log" >&2; die "$system node $((i + 1)) exited"; }
			done
			(( SECONDS < deadline )) || die "$system did not listen within 60 s"
			sleep 0.2
		done
	done
	# Brokers registered and unfenced: a topic of RF n can be created.
	until "$bin/weir" topics --bootstrap-server "$admin_bootstrap" --create --topic ready --partitions 1 \
		--replication-factor "$n" >/dev/null 2>&1; do
		(( SECONDS < deadline )) || die "$system: no RF $n topic within 60 s"
		sleep 0.5
	done
	cpu_at_start=$(brokers_cpu)
}

# brokers_cpu: the brokers' user+system CPU seconds so far, summed.
brokers_cpu() {
	local p sum=0
	for p in "${broker_pids[@]}"; do sum=$(awk -v a="$sum" -v b="$(cpu_seconds "$p")" 'BEGIN { printf "%.2f", a + b }'); done
	echo "$sum"
}

# stop_brokers TAG SYSTEM: sets peak_mb (peak RSS summed over the brokers,
# MiB), then stops them.
stop_brokers() {
	local tag=$1 system=$2 i hwm last sum=0 p
	for i in "${!broker_pids[@]}"; do
		hwm=$(status_kb "${broker_pids[i]}" VmHWM)
		last=$(cat "$workdir/logs/$tag-$system-$((i + 1)).rss")
		sum=$(( sum + (hwm > last ? hwm : last) ))
	done
	peak_mb=$(( sum / 1024 ))
	for p in "${sampler_pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	for p in "${broker_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	local deadline=$(( SECONDS + 30 ))
	for p in "${broker_pids[@]}"; do
		while kill -0 "$p" 2>/dev/null; do
			if (( SECONDS >= deadline )); then kill -9 "$p" 2>/dev/null || true; break; fi
			sleep 0.1
		done
		wait "$p" 2>/dev/null || true
	done
	broker_pids=()
	sampler_pids=()
	rm -rf "$workdir/data"
	sed "s/\$/,$peak_mb/" "$pending" >>"$results"
	: >"$pending"
}

# record LOAD SYSTEM CLIENT MBS P50 P99 P999 CPU_DELTA GB: one results row,
# kept in $pending until the brokers stop and their peak RSS is known.
record() {
	local cpu_gb
	cpu_gb=$(awk -v c="$8" -v g="$9" 'BEGIN { if (g > 0) printf "%.1f", c / g; else print "-" }')
	printf '%s,%s,%s,%s,%s,%s,%s,%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$cpu_gb" >>"$pending"
	printf '  %-36s %-5s client %-5s %9s MB/s  p50 %4s p99 %5s p99.9 %5s ms  %6s CPU s/GB\n' \
		"$1" "$2" "$3" "$4" "$5" "$6" "$7" "$cpu_gb"
}

# produce CLIENT TOPIC SIZE RECORDS ACKS RATE LOG: runs one producer at RATE
# records/s (-1: full speed); sets mbs, p50, p99, p999 from its summary.
produce() {
	local client=$1 topic=$2 size=$3 records=$4 acks=$5 rate=$6 log=$7 line
	if [[ $client == weir ]]; then
		"$bin/weir" perf produce --bootstrap-server "$bootstrap" --topic "$topic" --num-records "$records" \
			--record-size "$size" --throughput "$rate" --producer.config "$props" --producer-props acks="$acks" >"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "produce failed ($log)"; }
	else
		"$java" "${tool_jvm[@]}" -cp "$kafka_cp" org.apache.kafka.tools.ProducerPerformance --topic "$topic" \
			--num-records "$records" --record-size "$size" --throughput "$rate" --command-config "$props" \
			--producer-props bootstrap.servers="$bootstrap" acks="$acks" >"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "produce failed ($log)"; }
	fi
	line=$(grep ' ms 99.9th\.$' "$log" | tail -n 1)
	[[ -n $line ]] || die "no summary line in $log"
	mbs=$(sed -E 's/.*\(([0-9.]+) MB\/sec\).*/\1/' <<<"$line")
	p50=$(sed -E 's/.* ([0-9]+) ms 50th.*/\1/' <<<"$line")
	p99=$(sed -E 's/.* ([0-9]+) ms 99th.*/\1/' <<<"$line")
	p999=$(sed -E 's/.* ([0-9]+) ms 99\.9th.*/\1/' <<<"$line")
}

# consume CLIENT TOPIC RECORDS LOG: reads RECORDS records; sets mbs
# (fetch.MB.sec: values consumed over the time spent fetching, without
# the group join).
consume() {
	local client=$1 topic=$2 records=$3 log=$4
	if [[ $client == weir ]]; then
		"$bin/weir" perf consume --bootstrap-server "$bootstrap" --topic "$topic" --messages "$records" \
			--hide-header --consumer.config "$props" >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "consume failed ($log)"; }
	else
		# --timeout: the first group join on a fresh Kafka creates
		# __consumer_offsets, which took over the default 10 s here.
		"$java" "${tool_jvm[@]}" -cp "$kafka_cp" org.apache.kafka.tools.ConsumerPerformance --topic "$topic" \
			--num-records "$records" --bootstrap-server "$bootstrap" --timeout 120000 --hide-header --command-config "$props" >"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "consume failed ($log)"; }
	fi
	if grep -q '^WARNING' "$log"; then cat "$log" >&2; die "consume read fewer than $records records ($log)"; fi
	mbs=$(awk -F', *' 'NF >= 10 && $1 ~ /^[0-9]/ { v = $9 } END { print v }' "$log")
	[[ -n $mbs ]] || die "no result row in $log"
}

create_topic() {
	"$bin/weir" topics --bootstrap-server "$admin_bootstrap" --create --topic "$1" --partitions "$2" \
		--replication-factor "$3" ${4:+--config "$4"} >/dev/null || die "creating topic $1 failed"
}

# phase LOAD SYSTEM CLIENT GB COMMAND...: runs COMMAND (produce or consume)
# and records it with the brokers' CPU spent meanwhile.
phase() {
	local load=$1 system=$2 client=$3 gb=$4 c0 c1
	shift 4
	c0=$(brokers_cpu)
	"$@"
	c1=$(brokers_cpu)
	record "$load" "$system" "$client" "$mbs" "${p50:--}" "${p99:--}" "${p999:--}" \
		"$(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')" "$gb"
	p50="" p99="" p999=""
}

# sec_suffix SECURITY: what a load's label gets for SECURITY (nothing for
# PLAINTEXT).
sec_suffix() { [[ $1 == PLAINTEXT ]] || echo " $1"; }

# run_throughput SYSTEM SIZE PARTS ACKS SECURITY
run_throughput() {
	local system=$1 size=$2 parts=$3 acks=$4 sec=$5 total records gb tag client topic sfx
	sfx=$(sec_suffix "$sec")
	total=$bytes_big
	(( size >= 1024 )) || total=$bytes_small
	records=$(( total / size ))
	gb=$(awk -v b="$(( records * size ))" 'BEGIN { print b / 1073741824 }')
	tag=${size}B-p$parts-acks$acks-$sec
	start_brokers "$system" "$tag" 1 "$sec"
	for client in "${client_list[@]}"; do
		topic=t-$client
		create_topic "$topic" "$parts" 1
		phase "produce ${size}B x${parts}p acks=$acks$sfx" "$system" "$client" "$gb" \
			produce "$client" "$topic" "$size" "$records" "$acks" -1 "$workdir/logs/$tag-$system-$client-produce.log"
	done
	if [[ $acks == 1 ]]; then
		for client in "${client_list[@]}"; do
			phase "consume ${size}B x${parts}p$sfx" "$system" "$client" "$gb" \
				consume "$client" "t-$client" "$records" "$workdir/logs/$tag-$system-$client-consume.log"
		done
	fi
	stop_brokers "$tag" "$system"
}

# run_rates SYSTEM N SECURITY: on N brokers (RF N, min.insync.replicas=2
# when N>1), 1 KiB records on 3 partitions with acks=all: full speed (when
# N>1) and at --rate-mb MB/s for --latency-seconds.
run_rates() {
	local system=$1 n=$2 sec=$3 tag client topic records rate gb label sfx
	sfx=$(sec_suffix "$sec")
	tag=rf$n-$sec
	start_brokers "$system" "$tag" "$n" "$sec"
	for client in "${client_list[@]}"; do
		if (( n > 1 )); then
			topic=full-$client
			create_topic "$topic" 3 "$n" min.insync.replicas=2
			records=$(( bytes_big / 1024 ))
			gb=$(awk -v b="$bytes_big" 'BEGIN { print b / 1073741824 }')
			phase "produce 1024B x3p RF3 acks=all$sfx" "$system" "$client" "$gb" \
				produce "$client" "$topic" 1024 "$records" all -1 "$workdir/logs/$tag-$system-$client-full.log"
		fi
		topic=rate-$client
		if (( n > 1 )); then create_topic "$topic" 3 "$n" min.insync.replicas=2; else create_topic "$topic" 3 1; fi
		rate=$(( rate_mb * 1024 ))
		records=$(( rate * latency_seconds ))
		gb=$(awk -v r="$records" 'BEGIN { print r * 1024 / 1073741824 }')
		label="latency 1024B x3p @${rate_mb}MB/s"
		(( n > 1 )) && label="$label RF3"
		label=$label$sfx
		phase "$label" "$system" "$client" "$gb" \
			produce "$client" "$topic" 1024 "$records" all "$rate" "$workdir/logs/$tag-$system-$client-rate.log"
	done
	stop_brokers "$tag" "$system"
}

echo "load,system,client,mb_s,p50_ms,p99_ms,p999_ms,broker_cpu_s_per_gb,broker_peak_rss_mib" >"$results"
start=$SECONDS
turn=0
# order: sets ordered to the systems, the first one rotating each call
# (not called in a subshell, so that turn advances).
order() {
	if (( turn++ % 2 == 0 )); then ordered=("${system_list[@]}"); else
		mapfile -t ordered < <(printf '%s\n' "${system_list[@]}" | tac)
	fi
}
wants throughput || scenario_list=()
for sc in "${scenario_list[@]}"; do
	size=${sc%x*}
	parts=${sc#*x}
	[[ $size =~ ^[0-9]+$ && $parts =~ ^[0-9]+$ ]] || die "bad scenario $sc"
	for acks in "${acks_values[@]}"; do
		for sec in "${security_list[@]}"; do
			echo "vs-kafka: ${size} B records, $parts partition(s), acks=$acks, $sec"
			order; for system in "${ordered[@]}"; do run_throughput "$system" "$size" "$parts" "$acks" "$sec"; done
		done
	done
done
if wants latency; then
	for sec in "${security_list[@]}"; do
		echo "vs-kafka: latency at $rate_mb MB/s, one broker, $sec"
		order; for system in "${ordered[@]}"; do run_rates "$system" 1 "$sec"; done
	done
fi
if wants rf3; then
	for sec in "${security_list[@]}"; do
		echo "vs-kafka: three brokers, RF 3, min.insync.replicas=2, acks=all, $sec"
		order; for system in "${ordered[@]}"; do run_rates "$system" 3 "$sec"; done
	done
fi

echo
echo "vs-kafka: $(( SECONDS - start )) s; all figures in $results"
# The table: per load and client, weir's and Kafka's figures and weir/Kafka.
awk -F, 'NR > 1 { key = $1 "|" $3; if (!(key in seen)) { seen[key] = 1; keys[++n] = key }
		v[key, $2] = $4; l[key, $2] = $5 "/" $6 "/" $7; c[key, $2] = $8; r[key, $2] = $9 }
	function ratio(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f", a / b) : "-" }
	END {
		printf "%-40s %-6s %9s %9s %6s %14s %14s %9s %9s %8s %8s\n", "load", "client", "weir MB/s", "kafka MB/s", "ratio",
			"weir p50/99/999", "kafka p50/99/999", "weir CPU/GB", "kafka CPU/GB", "weir RSS", "kafka RSS"
		for (i = 1; i <= n; i++) {
			k = keys[i]; split(k, kk, "|")
			printf "%-40s %-6s %9s %9s %6s %14s %14s %9s %9s %8s %8s\n", kk[1], kk[2], v[k, "weir"], v[k, "kafka"],
				ratio(v[k, "weir"], v[k, "kafka"]), l[k, "weir"], l[k, "kafka"], c[k, "weir"], c[k, "kafka"],
				r[k, "weir"], r[k, "kafka"]
		}
	}' "$results"
if [[ -n ${trap_rm:-} ]]; then
	echo "(work dir removed; rerun with --keep or --workdir to keep logs)"
fi
