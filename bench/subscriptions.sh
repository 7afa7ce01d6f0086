#!/usr/bin/env bash
# Subscriptions on a live mount (issue 38): how long `podfs subscribe` takes
# until the new show's folder is listed, beside `curl` fetching the same
# feed through the same delaying proxy (the floor: the feed must arrive);
# how long `unsubscribe` takes until the folder is gone; and how long an
# edit of the SOURCE file by hand takes to show. Medians and maxima of N
# rounds, from one run.
#
#   bench/subscriptions.sh [--rounds N] [--delay-ms MS] [--items K]
#       defaults: 10 rounds, 50 ms a request, 300 items in the feed
#
# Needs root for FUSE; runs itself inside `unshare -n` (loopback only) with
# the test origin. Not a test: it asserts nothing.
set -euo pipefail
if [ -z "${PODFS_BENCH_NETNS:-}" ]; then
  exec env PODFS_BENCH_NETNS=1 unshare -n sh -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
rounds=10; delay=50; items=300
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --delay-ms) delay="$2"; shift 2 ;;
    --items) items="$2"; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--delay-ms MS] [--items K]" >&2; exit 2 ;;
  esac
done
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/podfs-subs-XXXX)"
www="$work/www"; mnt="$work/mnt"; cache="$work/cache"
mkdir -p "$www" "$mnt"
pids=(); podfs=""
cleanup() {
  if [ -n "$podfs" ]; then "$podfs" unmount "$mnt" >/dev/null 2>&1 || fusermount3 -u -z "$mnt" 2>/dev/null || true; fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
cd "$repo"
swift build -c release --product podfs >/dev/null
podfs="$(swift build -c release --show-bin-path)/podfs"

# The home show and one feed per round, each of K items.
python3 - "$www" "$rounds" "$items" <<'PY'
import sys
root, rounds, items = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for n in range(rounds + 1):
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>Show %d</title>\n' % n]
    for i in range(items):
        out.append('<item><title>Episode %d</title><guid>s%d-%d</guid><pubDate>Mon, %d Nov 2026 10:00:00 GMT</pubDate>'
                   '<enclosure url="{{BASE}}/e/%d/%d.mp3" length="30000000" type="audio/mpeg"/></item>\n'
                   % (i, n, i, 1 + i % 28, n, i))
    out.append('</channel></rss>\n')
    open("%s/%d.xml" % (root, n), "w").write("".join(out))
PY
python3 Tests/Origin/origin.py --root "$www" --port 0 --port-file "$work/port" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
origin_port=$(cat "$work/port")
python3 bench/delayproxy.py 20100 "$origin_port" "$delay" >/dev/null 2>&1 &
pids+=($!)
sleep 0.3
base="http://127.0.0.1:20100"
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f (max %.3f)", m, a[NR]}'; }
listed() { [ -d "$mnt/Show $1" ]; }

list="$work/shows.txt"
printf '# bench list\n%s/0.xml\n' "$base" >"$list"
"$podfs" mount --cache-dir "$cache" "$list" "$mnt" >/dev/null
: >"$work/curl"; : >"$work/sub"; : >"$work/unsub"; : >"$work/edit"
for n in $(seq 1 "$rounds"); do
  start=$(now); curl -sf -o /dev/null "$base/$n.xml"; echo "$(now) - $start" | bc >>"$work/curl"
  start=$(now)
  "$podfs" subscribe --cache-dir "$cache" "$base/$n.xml" >/dev/null
  until listed "$n"; do sleep 0.005; done
  echo "$(now) - $start" | bc >>"$work/sub"
  start=$(now)
  "$podfs" unsubscribe --cache-dir "$cache" "Show $n" >/dev/null
  while listed "$n"; do sleep 0.005; done
  echo "$(now) - $start" | bc >>"$work/unsub"
  # By hand, as an editor saves: a new file renamed over the list.
  start=$(now)
  { cat "$list"; echo "$base/$n.xml"; } >"$list.new" && mv "$list.new" "$list"
  until listed "$n"; do sleep 0.01; done
  echo "$(now) - $start" | bc >>"$work/edit"
  grep -v "/$n.xml" "$list" >"$list.new" && mv "$list.new" "$list"
  while listed "$n"; do sleep 0.01; done
done
c=$(median <"$work/curl"); s=$(median <"$work/sub")
cm=$(sort -n "$work/curl" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
sm=$(sort -n "$work/sub" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "subscriptions on a live mount: $rounds rounds, feeds of $items items, +$delay ms a request"
echo "  curl fetching the feed (the floor)     s: $c"
echo "  podfs subscribe until the folder is listed s: $s   ($(echo "scale=2; $sm / $cm" | bc) x curl; target: listed <= 1 s after the feed arrives)"
echo "  podfs unsubscribe until it is gone      s: $(median <"$work/unsub")   (target <= 1 s)"
echo "  an edit of the SOURCE file until listed s: $(median <"$work/edit")   (target <= 5 s)"
