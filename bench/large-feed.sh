#!/usr/bin/env bash
# A show with many episodes, each with a transcript and chapters, through a
# real mount: mount time, `ls -l` cold and warm, the playlist, a refresh that
# adds one episode, a remount from the kept copy (304), and the daemon's
# peak memory; then the same show mounted beside BESIDE other feeds that
# change every second and refresh every 2 s: how long a repeated `ls -l` of
# the big show takes while they are fetched, parsed, rebuilt and installed.
#
#   bench/large-feed.sh [EPISODES] [BESIDE]   (defaults 10000 and 38; needs root for FUSE)
#   PODFS_BENCH_BIN=PATH runs that podfs instead of building this tree (before/after runs)
#
# Runs itself inside `unshare -n` (loopback only) with the test origin.
set -euo pipefail
if [ -z "${PODFS_BENCH_NETNS:-}" ]; then
  exec env PODFS_BENCH_NETNS=1 unshare -n sh -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
count="${1:-10000}"
beside="${2:-38}"
work="$(mktemp -d /tmp/podfs-bench-XXXX)"
www="$work/www"; mnt="$work/mnt"; cache="$work/cache"
mkdir -p "$www" "$mnt"
origin_pid=""; podfs=""; churn_pid=""
cleanup() {
  if [ -n "$churn_pid" ]; then kill "$churn_pid" 2>/dev/null; wait "$churn_pid" 2>/dev/null || true; fi
  if [ -n "$podfs" ]; then "$podfs" unmount "$mnt" >/dev/null 2>&1 || fusermount3 -u -z "$mnt" 2>/dev/null || true; fi
  if [ -n "$origin_pid" ]; then kill "$origin_pid" 2>/dev/null; wait "$origin_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cd "$repo"
if [ -n "${PODFS_BENCH_BIN:-}" ]; then
  podfs="$PODFS_BENCH_BIN"   # another build, for before/after runs
else
  swift build -c release --product podfs >/dev/null
  podfs="$(swift build -c release --show-bin-path)/podfs"
fi

feed() {  # feed.xml with $1 episodes
  python3 - "$1" <<'PY'
import sys
n = int(sys.argv[1])
months = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
out = ['<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" '
       'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" '
       'xmlns:podcast="https://podcastindex.org/namespace/1.0"><channel>'
       '<title>Big Show</title><itunes:image href="{{BASE}}/cover.jpg"/>\n']
notes = '<p>Show notes with <a href="https://example.org/">links</a>.</p>' * 8
for i in reversed(range(n)):
    out.append(
        '<item><title>Episode %d: Guests &amp; Slashes / More</title><guid>g-%d</guid>'
        '<pubDate>Mon, %d %s %d 10:00:00 GMT</pubDate><description><![CDATA[%s]]></description>'
        '<enclosure url="{{BASE}}/e/%d.mp3" length="%d" type="audio/mpeg"/>'
        '<podcast:transcript url="{{BASE}}/e/%d.vtt" type="text/vtt"/>'
        '<podcast:chapters url="{{BASE}}/e/%d.json" type="application/json+chapters"/></item>\n'
        % (i // 2, i, 1 + i % 28, months[(i // 28) % 12], 1990 + i // 336, notes, i, 50000000 + i, i, i))
out.append('</channel></rss>\n')
sys.stdout.write(''.join(out))
PY
}
feed "$count" > "$www/feed.xml"
python3 Tests/Origin/origin.py --root "$www" --port 0 --port-file "$work/port" >/dev/null 2>&1 &
origin_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
base="http://127.0.0.1:$(cat "$work/port")"
curl -sf -X POST -d '{"gzip": true}' "$base/_origin/config" >/dev/null

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f s", b - a }'; }
show="$mnt/Big Show"

t=$(now); out=$("$podfs" mount --cache-dir "$cache" --refresh 2 "$base/feed.xml" "$mnt"); mount_time=$(since "$t")
pid=$(sed -n 's/.*pid \([0-9]*\).*/\1/p' <<<"$out" | head -1)
mounted_rss=$(awk '/VmRSS/ {print $2 " " $3}' "/proc/$pid/status" 2>/dev/null || echo unknown)
t=$(now); files=$(ls -l "$show" | wc -l); ls_cold=$(since "$t")
t=$(now); ls -l "$show" >/dev/null; ls_warm=$(since "$t")
t=$(now); m3u_lines=$(wc -l < "$show/Big Show.m3u"); m3u_time=$(since "$t")
# Requests for anything but the feed (listing must fetch nothing).
requests=$(curl -sf "$base/_origin/stats" | python3 -c 'import json,sys; p=json.load(sys.stdin)["paths"]; print(sum(v["requests"] for k, v in p.items() if k != "/feed.xml"))')

# One new episode at the top; time until it is listed.
feed $((count + 1)) > "$work/feed.new"
curl -sf -X POST --data-binary @"$work/feed.new" "$base/_origin/put?path=/feed.xml" >/dev/null
t=$(now)
for _ in $(seq 1200); do ls "$show" | grep -q "Episode $((count / 2)):" && break; sleep 0.05; done
refresh_time=$(since "$t")
peak=$(awk '/VmHWM/ {print $2 " " $3}' "/proc/$pid/status" 2>/dev/null || echo unknown)
rss=$(awk '/VmRSS/ {print $2 " " $3}' "/proc/$pid/status" 2>/dev/null || echo unknown)
"$podfs" unmount "$mnt" >/dev/null
t=$(now); "$podfs" mount --cache-dir "$cache" "$base/feed.xml" "$mnt" >/dev/null; remount_time=$(since "$t")
statuses=$(curl -sf "$base/_origin/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["/feed.xml"]["statuses"][-1])')

"$podfs" unmount "$mnt" >/dev/null

# Beside BESIDE feeds of 300 episodes that gain one every second (written
# to the origin's folder, atomically) and refresh every 2 s.
mkdir -p "$www/side"
python3 - "$www/side" "$beside" <<'PY' &
import os, sys, time
root, n = sys.argv[1], int(sys.argv[2])
notes = '<p>Show notes with <a href="https://example.org/">links</a>.</p>' * 4
def write(f, top):
    items = ''.join(
        '<item><title>Side %d episode %d</title><guid>s%d-%d</guid><pubDate>Mon, 1 Jan 2001 10:00:00 GMT</pubDate>'
        '<description><![CDATA[%s]]></description><enclosure url="{{BASE}}/s/%d/%d.mp3" length="1000" type="audio/mpeg"/></item>\n'
        % (f, i, f, i, notes, f, i) for i in range(top, top - 300, -1))
    tmp = '%s/.%d.tmp' % (root, f)
    with open(tmp, 'w') as fh:
        fh.write('<?xml version="1.0"?><rss version="2.0"><channel><title>Side %d</title>%s</channel></rss>\n' % (f, items))
    os.rename(tmp, '%s/%d.xml' % (root, f))
top = 300
while True:
    for f in range(n):
        write(f, top)
    top += 1
    time.sleep(1)
PY
churn_pid=$!
for _ in $(seq 100); do [ -s "$www/side/$((beside - 1)).xml" ] && break; sleep 0.05; done
{ echo "$base/feed.xml"; for f in $(seq 0 $((beside - 1))); do echo "$base/side/$f.xml"; done; } > "$work/beside.txt"
"$podfs" mount --cache-dir "$cache" --refresh 2 "$work/beside.txt" "$mnt" >/dev/null
for _ in $(seq 600); do [ "$(ls "$mnt" | wc -l)" -gt "$beside" ] && break; sleep 0.05; done
ls -l "$show" >/dev/null
side_before=$(curl -sf "$base/_origin/stats" | python3 -c 'import json,sys; p=json.load(sys.stdin)["paths"]; print(sum(v["requests"] for k, v in p.items() if k.startswith("/side/")))')
beside_times=()
for _ in $(seq 20); do
  t=$(now); ls -l "$show" >/dev/null; beside_times+=("$(awk -v a="$t" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')")
  sleep 0.25
done
side_after=$(curl -sf "$base/_origin/stats" | python3 -c 'import json,sys; p=json.load(sys.stdin)["paths"]; print(sum(v["requests"] for k, v in p.items() if k.startswith("/side/")))')
beside_summary=$(printf '%s\n' "${beside_times[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "median %.3f s, max %.3f s (%d runs)", v[int((NR + 1) / 2)], v[NR], NR }')
kill "$churn_pid"; wait "$churn_pid" 2>/dev/null || true; churn_pid=""

echo "podfs large-feed bench: $count episodes (+ transcript and chapters each), feed $(stat -c %s "$www/feed.xml") bytes"
echo "  mount (fetch, parse, register $((files - 1)) files):  $mount_time"
echo "  ls -l, first:                                      $ls_cold  ($((files - 1)) entries, $requests requests for files)"
echo "  ls -l, again:                                      $ls_warm"
echo "  cat the playlist ($m3u_lines lines):                   $m3u_time"
echo "  refresh to listed, new episode (2 s interval):     $refresh_time"
echo "  daemon RSS after mounting / after the refresh:     $mounted_rss / $rss (peak $peak)"
echo "  remount (conditional GET answered $statuses, kept copy):   $remount_time"
echo "  ls -l again, beside $beside feeds refreshing (2 s; $((side_after - side_before)) feed fetches meanwhile): $beside_summary"
