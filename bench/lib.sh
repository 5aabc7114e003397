# lib.sh: helpers the benchmark scripts share. Source it after defining
# die MESSAGE (which must exit).

# port_open PORT: something accepts connections on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port: sets REPLY to a port nobody listens on (and not one handed out
# already), below Linux's ephemeral range (32768-60999) so that no client
# connection takes it before the broker binds it.
used_ports=" "
free_port() {
	local p
	for _ in $(seq 200); do
		p=$(( 10000 + RANDOM % 22000 ))
		if [[ $used_ports != *" $p "* ]] && ! port_open "$p"; then
			used_ports+="$p "
			REPLY=$p
			return 0
		fi
	done
	die "no free port found"
}

# cpu_seconds PID: user+system CPU time of PID so far.
cpu_seconds() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
	stat=${stat##*) }
	# after the command name: state is field 1, utime 12, stime 13
	awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($12 + $13) / t }' <<<"$stat"
}

# median [FORMAT]: the median of the numbers on stdin, printed with the
# printf FORMAT (default %.1f), or "-" if there are none.
median() {
	sort -g | awk -v f="${1:-%.1f}\n" '{ v[NR] = $1 } END {
		if (NR == 0) print "-"
		else if (NR % 2) printf f, v[(NR + 1) / 2]
		else printf f, (v[NR / 2] + v[NR / 2 + 1]) / 2
	}'
}

# single_node_setup NAME: for a script that runs one broker at a time
# (broker_pid). Makes $workdir (a temp dir removed at exit when it is
# empty) with bin/ and logs/, makes it absolute, sets bin, stops
# $broker_pid at exit, and builds weir into $bin.
single_node_setup() {
	local name=$1
	trap_rm=""
	if [[ -z $workdir ]]; then
		workdir=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
		trap_rm=$workdir
	fi
	mkdir -p "$workdir/bin" "$workdir/logs"
	workdir=$(cd "$workdir" && pwd)
	bin=$workdir/bin
	broker_pid=""
	trap single_node_cleanup EXIT
	trap 'exit 130' INT TERM
	echo "$name: building weir into $bin"
	(cd "$(dirname "${BASH_SOURCE[0]}")/.." && ${GO:-go} build -o "$bin/weir" ./cmd/weir) || die "building weir failed"
}

single_node_cleanup() {
	if [[ -n $broker_pid ]]; then kill "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
	if [[ -n $trap_rm ]]; then rm -rf "$trap_rm"; fi
}
