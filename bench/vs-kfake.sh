#!/usr/bin/env bash
# vs-kfake.sh: weir against franz-go's in-memory kfake, same client, same box.
#
# For each scenario ({1 KiB, 100 B} records x {1, 3} partitions, acks=1) and
# each repetition, it starts a fresh broker of each system, produces with
# `weir perf produce`, reads everything back with `weir perf consume --raw`
# (which counts record batch headers, so the broker rather than the client is
# measured), samples the broker's resident memory from /proc, and stops the
# broker. The two systems take turns, alternating which goes first. At the
# end it prints medians:
#
#   scenario, weir MB/s, kfake MB/s, ratio (weir/kfake), weir peak RSS, kfake peak RSS
#
# MB is 1024*1024 bytes as in Kafka's tools: produce MB/s counts record
# values, consume MB/s counts whole record batches (fetch.MB.sec). Peak RSS is
# the broker's VmHWM. Every run's numbers go to results.csv in the work
# directory, with the logs.
#
# --security runs every scenario over each listed security protocol:
# PLAINTEXT, SSL (TLS with a self-signed certificate made with openssl, the
# client trusting it) and SASL_SSL (the same TLS, then a SASL PLAIN login),
# on both brokers (kfake with --tls-keystore and --sasl-plain; weir with an
# SSL or SASL_SSL client listener beside its PLAINTEXT inter-broker one).
#
# Both the load and the brokers share this machine's cores, so the numbers
# compare the brokers under the same conditions rather than give absolute
# capacity.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF'
usage: bench/vs-kfake.sh [options]

  --reps N            repetitions of every scenario (default 3)
  --bytes N           record-value bytes produced per run with 1 KiB records
                      (default 2147483648, 2 GiB; suffixes K M G allowed)
  --small-bytes N     the same for 100 B records (default 512M)
  --scenarios LIST    comma-separated SIZExPARTITIONS (default 1024x1,1024x3,100x1,100x3)
  --systems LIST      weir,kfake (default); "kfake" alone checks the harness
  --security LIST     comma-separated PLAINTEXT, SSL, SASL_SSL (default PLAINTEXT)
  --acks A            producer acks (default 1)
  --producer-props P  extra producer properties, space-separated k=v
  --raw-inflight N    fetch requests in flight per broker for the consume (default 1)
  --fetch-size N      partition max bytes of each consume fetch (default 8388608;
                      1048576 is kafka-consumer-perf-test.sh's, where the client
                      round trip rather than the broker sets the pace)
  --weir-override K=V extra `weir server --override` (repeatable)
  --workdir DIR       keep logs, data and results here (default: a temp dir,
                      removed at the end unless --keep)
  --keep              keep the temp work dir
  -h, --help          this text

Environment: GO (default go) builds the binaries.
EOF
}

reps=3
bytes_big=2G
bytes_small=512M
scenarios=1024x1,1024x3,100x1,100x3
systems=weir,kfake
security=PLAINTEXT
acks=1
extra_props=""
raw_inflight=1
fetch_size=8388608
weir_overrides=()
workdir=""
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--reps) reps=$2; shift 2 ;;
	--bytes) bytes_big=$2; shift 2 ;;
	--small-bytes) bytes_small=$2; shift 2 ;;
	--scenarios) scenarios=$2; shift 2 ;;
	--systems) systems=$2; shift 2 ;;
	--security) security=$2; shift 2 ;;
	--acks) acks=$2; shift 2 ;;
	--producer-props) extra_props=$2; shift 2 ;;
	--raw-inflight) raw_inflight=$2; shift 2 ;;
	--fetch-size) fetch_size=$2; shift 2 ;;
	--weir-override) weir_overrides+=("$2"); shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "vs-kfake: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

die() { echo "vs-kfake: $*" >&2; exit 1; }

to_bytes() {
	local v=$1 n
	case "$v" in
	*[kK]) n=$(( ${v%?} * 1024 )) ;;
	*[mM]) n=$(( ${v%?} * 1024 * 1024 )) ;;
	*[gG]) n=$(( ${v%?} * 1024 * 1024 * 1024 )) ;;
	*) n=$(( v )) ;;
	esac
	echo "$n"
}
bytes_big=$(to_bytes "$bytes_big")
bytes_small=$(to_bytes "$bytes_small")
[[ $reps -ge 1 ]] || die "--reps must be at least 1"

run_weir=0 run_kfake=0
IFS=, read -r -a sys_list <<<"$systems"
for s in "${sys_list[@]}"; do
	case "$s" in
	weir) run_weir=1 ;;
	kfake) run_kfake=1 ;;
	*) die "unknown system $s (want weir and/or kfake)" ;;
	esac
done

IFS=, read -r -a security_list <<<"$security"
for sec in "${security_list[@]}"; do
	case "$sec" in
	PLAINTEXT | SSL | SASL_SSL) ;;
	*) die "unknown security protocol $sec (want PLAINTEXT, SSL or SASL_SSL)" ;;
	esac
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $workdir ]]; then
	workdir=$(mktemp -d "${TMPDIR:-/tmp}/vs-kfake.XXXXXX")
	[[ $keep == 1 ]] || trap_rm=$workdir
else
	mkdir -p "$workdir"
fi
workdir=$(cd "$workdir" && pwd)
bin=$workdir/bin
mkdir -p "$bin" "$workdir/logs"
results=$workdir/results.csv

broker_pid=""
sampler_pid=""
cleanup() {
	if [[ -n $sampler_pid ]]; then kill "$sampler_pid" 2>/dev/null || true; fi
	if [[ -n $broker_pid ]]; then
		kill "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
	if [[ -n ${trap_rm:-} ]]; then rm -rf "$trap_rm"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "vs-kfake: building into $bin"
(cd "$repo" && ${GO:-go} build -o "$bin/weir" ./cmd/weir) || die "building weir failed"
(cd "$repo" && ${GO:-go} build -o "$bin/kfake" ./bench/kfake) || die "building bench/kfake failed"

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The TLS material of SSL and SASL_SSL: a self-signed certificate for
# 127.0.0.1 (the broker's key store, both key and chain in one PEM file),
# which the client trusts; and the client properties of each protocol.
tls_dir=$workdir/tls
sasl_user=bench sasl_pass=bench-secret
if [[ $security != PLAINTEXT ]]; then
	mkdir -p "$tls_dir"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$tls_dir/key.pem" -out "$tls_dir/cert.pem" 2>"$tls_dir/openssl.log" || die "openssl failed (see $tls_dir/openssl.log)"
	cat "$tls_dir/key.pem" "$tls_dir/cert.pem" >"$tls_dir/broker.pem"
fi
# client_props SECURITY: writes the client properties of SECURITY and
# prints their file's path.
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

# status_kb PID FIELD: a VmXXX value of /proc/PID/status in kB (0 if gone).
status_kb() { awk -v f="$2:" '$1 == f { print $2; found = 1 } END { if (!found) print 0 }' "/proc/$1/status" 2>/dev/null || echo 0; }


# sample_rss PID FILE: every 0.2 s, keep the largest VmRSS and VmHWM seen.
sample_rss() {
	local pid=$1 file=$2 peak=0 v
	while kill -0 "$pid" 2>/dev/null; do
		for f in VmRSS VmHWM; do
			v=$(status_kb "$pid" "$f")
			if (( v > peak )); then peak=$v; echo "$peak" >"$file"; fi
		done
		sleep 0.2
	done
}

# start_broker SYSTEM TAG PARTITIONS SECURITY: starts a fresh broker, sets
# broker_pid, broker_addr and broker_log, and waits until it accepts
# connections.
start_broker() {
	local system=$1 tag=$2 partitions=$3 sec=$4 port cport iport
	free_port
	port=$REPLY
	broker_addr=127.0.0.1:$port
	broker_log=$workdir/logs/$tag-$system-broker.log
	case "$system" in
	weir)
		free_port
		cport=$REPLY
		local data=$workdir/data/$tag
		rm -rf "$data"
		mkdir -p "$data"
		local args=(server --log-level warn
			--override "controller.quorum.voters=1@127.0.0.1:$cport"
			--override "log.dirs=$data")
		if [[ $sec == PLAINTEXT ]]; then
			args+=(--override "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport")
		else
			free_port
			iport=$REPLY
			args+=(--override "listeners=CLIENT://127.0.0.1:$port,INTERNAL://127.0.0.1:$iport,CONTROLLER://127.0.0.1:$cport"
				--override "advertised.listeners=CLIENT://127.0.0.1:$port,INTERNAL://127.0.0.1:$iport"
				--override "listener.security.protocol.map=CLIENT:$sec,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
				--override "inter.broker.listener.name=INTERNAL"
				--override "ssl.keystore.type=PEM" --override "ssl.keystore.location=$tls_dir/broker.pem")
		fi
		if [[ $sec == SASL_SSL ]]; then
			args+=(--override "sasl.enabled.mechanisms=PLAIN"
				--override "listener.name.client.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$sasl_user=\"$sasl_pass\";")
		fi
		for o in "${weir_overrides[@]}"; do args+=(--override "$o"); done
		"$bin/weir" "${args[@]}" >"$broker_log" 2>&1 &
		;;
	kfake)
		local kargs=(--port "$port" --partitions "$partitions")
		[[ $sec == PLAINTEXT ]] || kargs+=(--tls-keystore "$tls_dir/broker.pem")
		[[ $sec == SASL_SSL ]] && kargs+=(--sasl-plain "$sasl_user:$sasl_pass")
		"$bin/kfake" "${kargs[@]}" >"$broker_log" 2>&1 &
		;;
	esac
	broker_pid=$!
	local deadline=$(( SECONDS + 20 ))
	until port_open "$port"; do
		if ! kill -0 "$broker_pid" 2>/dev/null; then
			echo "---- last lines of $broker_log" >&2
			tail -n 30 "$broker_log" >&2 || true
			broker_pid=""
			die "$system broker exited before listening on $broker_addr (see above)"
		fi
		if (( SECONDS >= deadline )); then
			echo "---- last lines of $broker_log" >&2
			tail -n 30 "$broker_log" >&2 || true
			die "$system broker did not accept connections on $broker_addr within 20 s"
		fi
		sleep 0.1
	done
	rss_file=$workdir/logs/$tag-$system-rss
	echo 0 >"$rss_file"
	sample_rss "$broker_pid" "$rss_file" &
	sampler_pid=$!
}

# stop_broker: records the broker's peak RSS (kB) in broker_peak_kb and CPU
# seconds in broker_cpu, then stops it (SIGTERM, SIGKILL after 30 s).
stop_broker() {
	local hwm last
	hwm=$(status_kb "$broker_pid" VmHWM)
	broker_cpu=$(cpu_seconds "$broker_pid")
	kill "$sampler_pid" 2>/dev/null || true
	wait "$sampler_pid" 2>/dev/null || true
	sampler_pid=""
	last=$(cat "$rss_file")
	broker_peak_kb=$(( hwm > last ? hwm : last ))
	kill "$broker_pid" 2>/dev/null || true
	local deadline=$(( SECONDS + 30 ))
	while kill -0 "$broker_pid" 2>/dev/null; do
		if (( SECONDS >= deadline )); then
			echo "vs-kfake: broker $broker_pid ignored SIGTERM for 30 s; killing it" >&2
			kill -9 "$broker_pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
	wait "$broker_pid" 2>/dev/null || true
	broker_pid=""
}

# run_pair SYSTEM SIZE PARTITIONS REP SECURITY: one produce and one raw
# consume.
run_pair() {
	local system=$1 size=$2 parts=$3 rep=$4 sec=$5 records tag topic plog clog line prod cons props
	local total=$bytes_big
	(( size >= 1024 )) || total=$bytes_small
	records=$(( total / size ))
	tag=${size}B-p${parts}-r${rep}-$sec
	topic=perf-${size}-${parts}
	props=$(client_props "$sec")
	plog=$workdir/logs/$tag-$system-produce.log
	clog=$workdir/logs/$tag-$system-consume.log

	start_broker "$system" "$tag" "$parts" "$sec"
	# shellcheck disable=SC2086 # extra_props is a list of k=v words
	if ! "$bin/weir" perf produce --bootstrap-server "$broker_addr" --topic "$topic" \
		--partitions "$parts" --replication-factor 1 --num-records "$records" \
		--record-size "$size" --throughput -1 --producer.config "$props" --producer-props acks="$acks" $extra_props \
		>"$plog" 2>&1; then
		tail -n 20 "$plog" >&2
		die "$system: produce failed for $tag (log: $plog)"
	fi
	line=$(grep ' ms 99.9th\.$' "$plog" | tail -n 1)
	prod=$(sed -E 's/.*\(([0-9.]+) MB\/sec\).*/\1/' <<<"$line")
	[[ -n $prod ]] || die "$system: no summary line in $plog"

	if ! "$bin/weir" perf consume --bootstrap-server "$broker_addr" --topic "$topic" \
		--messages "$records" --raw --raw-inflight "$raw_inflight" --fetch-size "$fetch_size" --hide-header --consumer.config "$props" \
		>"$clog" 2>&1; then
		tail -n 20 "$clog" >&2
		die "$system: consume failed for $tag (log: $clog)"
	fi
	if grep -q '^WARNING' "$clog"; then
		cat "$clog" >&2
		die "$system: consume read fewer than $records records for $tag"
	fi
	cons=$(awk -F', ' 'NF == 10 { v = $9 } END { print v }' "$clog")
	[[ -n $cons ]] || die "$system: no result row in $clog"
	stop_broker
	rm -rf "$workdir/data/$tag" # gigabytes per run; the logs stay

	printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$size" "$parts" "$rep" "$system" "$records" \
		"$prod" "$cons" "$broker_peak_kb" "$broker_cpu" "$sec" >>"$results"
	printf '  %-6s %-14s produce %8.1f MB/s   consume %8.1f MB/s   peak RSS %6d MiB   broker CPU %ss\n' \
		"$system" "$tag" "$prod" "$cons" $(( broker_peak_kb / 1024 )) "$broker_cpu"
}

echo "size,partitions,rep,system,records,produce_mb_s,consume_mb_s,peak_rss_kb,broker_cpu_s,security" >"$results"
IFS=, read -r -a scenario_list <<<"$scenarios"
start=$SECONDS
for sc in "${scenario_list[@]}"; do
	size=${sc%x*}
	parts=${sc#*x}
	[[ $size =~ ^[0-9]+$ && $parts =~ ^[0-9]+$ && $size -gt 0 && $parts -gt 0 ]] || die "bad scenario $sc (want SIZExPARTITIONS)"
	for sec in "${security_list[@]}"; do
		echo "vs-kfake: scenario ${size} B records, $parts partition(s), acks=$acks, $sec"
		for rep in $(seq "$reps"); do
			order=()
			if (( rep % 2 == 1 )); then
				(( run_weir )) && order+=(weir)
				(( run_kfake )) && order+=(kfake)
			else
				(( run_kfake )) && order+=(kfake)
				(( run_weir )) && order+=(weir)
			fi
			for system in "${order[@]}"; do
				run_pair "$system" "$size" "$parts" "$rep" "$sec"
			done
		done
	done
done

pick() { awk -F, -v s="$1" -v p="$2" -v y="$3" -v c="$4" -v x="$sec" 'NR > 1 && $1 == s && $2 == p && $4 == y && $10 == x { print $c }' "$results"; }
peak() { pick "$@" | sort -g | tail -n 1; }

echo
echo "vs-kfake: medians of $reps run(s), $(( SECONDS - start )) s; all runs in $results"
printf '%-34s %11s %11s %7s %14s %15s\n' scenario "weir MB/s" "kfake MB/s" ratio "weir peak RSS" "kfake peak RSS"
for sc_sec in $(for sc in "${scenario_list[@]}"; do for sec in "${security_list[@]}"; do echo "$sc/$sec"; done; done); do
	sc=${sc_sec%/*}
	sec=${sc_sec#*/}
	size=${sc%x*}
	parts=${sc#*x}
	wrss=$(peak "$size" "$parts" weir 8)
	krss=$(peak "$size" "$parts" kfake 8)
	wrss=${wrss:+$(( wrss / 1024 )) MiB}
	krss=${krss:+$(( krss / 1024 )) MiB}
	for load in produce consume; do
		col=6
		[[ $load == consume ]] && col=7
		w=$(pick "$size" "$parts" weir $col | median)
		k=$(pick "$size" "$parts" kfake $col | median)
		ratio=-
		if [[ $w != - && $k != - ]]; then ratio=$(awk -v w="$w" -v k="$k" 'BEGIN { if (k > 0) printf "%.2f", w / k; else print "-" }'); fi
		label="$load ${size}B x${parts}p $sec"
		[[ $load == consume ]] && label="consume(raw) ${size}B x${parts}p $sec"
		printf '%-34s %11s %11s %7s %14s %15s\n' "$label" "$w" "$k" "$ratio" "${wrss:--}" "${krss:--}"
	done
done
if [[ -n ${trap_rm:-} ]]; then
	echo "(work dir removed; rerun with --keep or --workdir to keep logs)"
fi
