#!/usr/bin/env bash
# console.sh: the web console's page times on a node with many partitions
# (issue 26's benchmark).
#
# It starts one combined weir node with weir.console.listener, creates
# TOPICS topics of PARTITIONS partitions each (bench/mkpartitions, RF 1),
# waits until every partition is served, then fetches each console page
# RUNS times with curl (one session, kept in a cookie jar) and prints per
# page the median and the maximum of curl's total time, and the time to
# the overview stream's first event.
set -euo pipefail
export LC_ALL=C

usage() {
	cat <<'EOF2'
usage: bench/console.sh [options]

  --topics N        topics to create (default 1000)
  --partitions N    partitions per topic (default 100)
  --runs N          fetches of each page (default 5)
  --workdir DIR     keep logs and data here (default: a temp dir, removed
                    at the end unless --keep)
  --keep            keep the temp work dir
  -h, --help        this text

The open-file limit of the shell (ulimit -n) applies to the broker.
Environment: GO (default go) builds the binaries.
EOF2
}

topics=1000
partitions=100
runs=5
workdir=""
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--topics) topics=$2; shift 2 ;;
	--partitions) partitions=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "console: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

die() { echo "console: $*" >&2; exit 1; }
for v in "$topics" "$partitions" "$runs"; do
	[[ $v =~ ^[0-9]+$ && $v -ge 1 ]] || die "--topics, --partitions and --runs must be positive numbers"
done
command -v curl >/dev/null || die "curl is needed"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $workdir ]]; then
	workdir=$(mktemp -d "${TMPDIR:-/tmp}/console.XXXXXX")
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
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [[ -n ${trap_rm:-} ]]; then rm -rf "$trap_rm"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "console: building into $bin"
(cd "$repo" && ${GO:-go} build -o "$bin/weir" ./cmd/weir && ${GO:-go} build -o "$bin/mkpartitions" ./bench/mkpartitions) ||
	die "building failed"

free_port
port=$REPLY
free_port
cport=$REPLY
free_port
hport=$REPLY
log=$workdir/weir.log
"$bin/weir" server --log-level info \
	--override "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport" \
	--override "controller.quorum.voters=1@127.0.0.1:$cport" \
	--override "log.dirs=$workdir/data" \
	--override "weir.console.listener=http://127.0.0.1:$hport" >"$log" 2>&1 &
pid=$!
deadline=$(( SECONDS + 60 ))
until grep -q "weir started" "$log"; do
	kill -0 "$pid" 2>/dev/null || { tail -n 30 "$log" >&2; die "the broker exited (log $log)"; }
	(( SECONDS < deadline )) || die "no \"weir started\" in $log within 60 s"
	sleep 0.1
done

total=$(( topics * partitions ))
echo "console: creating $topics topics x $partitions partitions ($total)"
mk=("$bin/mkpartitions" --bootstrap-server "127.0.0.1:$port" --topics "$topics" --partitions "$partitions")
"${mk[@]}" >"$workdir/create.out" || die "creating failed: $(cat "$workdir/create.out")"
"${mk[@]}" --check --offsets >/dev/null || die "not every partition is served after creating"

base=http://127.0.0.1:$hport
jar=$workdir/cookies
curl -sf -c "$jar" -b "$jar" -o /dev/null "$base/" || die "the console does not answer"

# page PATH: RUNS fetches of PATH; prints "median max" of the total times in ms.
page() {
	local i code t
	for (( i = 0; i < runs; i++ )); do
		read -r code t < <(curl -s -b "$jar" -c "$jar" -o /dev/null -w '%{http_code} %{time_total}\n' "$base$1")
		[[ $code == 200 ]] || die "GET $1 answered $code"
		awk -v t="$t" 'BEGIN { printf "%.1f\n", t * 1000 }'
	done | { mapfile -t ts; printf '%s\n' "${ts[@]}" | median "%.0f"; printf '%s\n' "${ts[@]}" | sort -g | tail -n 1; } | paste -sd' '
}

# first_event: ms from the request to the overview stream's first event.
first_event() {
	local i t0
	for (( i = 0; i < runs; i++ )); do
		t0=$(date +%s.%N)
		# bash's read, not awk: mawk reads its input in blocks.
		curl -sN -b "$jar" --max-time 30 "$base/events/overview" | {
			read -r _ && read -r _ && awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
		}
	done | { mapfile -t ts; printf '%s\n' "${ts[@]}" | median "%.0f"; printf '%s\n' "${ts[@]}" | sort -g | tail -n 1; } | paste -sd' '
}

printf '%s partitions, %s runs each, load %s\n' "$total" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %10s %8s\n' page median_ms max_ms
for p in / /topics "/topics?q=scale-99" "/topics?page=10" /topics/scale-1 "/topics/scale-1/messages?partition=0" \
	/groups /transactions /links /reassignments; do
	read -r med mx < <(page "$p")
	printf '%-44s %10s %8s\n' "$p" "$med" "$mx"
done
read -r med mx < <(first_event)
printf '%-44s %10s %8s\n' "/events/overview (first event)" "$med" "$mx"
printf 'load at the end %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
