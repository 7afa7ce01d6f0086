#!/usr/bin/env bash
# Subscriptions at scale (issue 21): N feeds behind a proxy that adds a
# delay per request, plus one host that accepts and never answers and one
# port that refuses. Prints, from one run: cold ready time, time until every
# show is listed, warm remount ready time, peak RSS per listed file, and the
# time `curl --parallel` takes for the same feeds, each beside its target.
#
#   bench/many-feeds.sh [--feeds N] [--hosts H] [--delay-ms MS] [--seed S] [--covers KB] [--unsized N]
#       defaults: 1000 feeds (20-400 items each), 10 hosts, 50 ms, no covers, every length given
#   --covers KB  gives each show a cover of KB KiB (its own URL): the mount
#       keeps every cover, and the cold run also says when the last one is in
#   --unsized N  the first N feeds give no enclosure length, and their
#       episodes exist (64 KiB each): the cold run also says when `stat`
#       shows every one's real size, nothing opening them (at most 300 s)
#   PODFS_BENCH_BIN=PATH  runs that podfs instead of building this tree (before/after runs)
#   PODFS_BENCH_PERF=FILE bench/many-feeds.sh   also records where the daemon's
#       time goes until every show is listed (perf record -g; perf report -i FILE),
#       at PODFS_BENCH_PERF_HZ samples a second (499)
#   PODFS_BENCH_PERF_WARM=FILE  the same for the warm remount's find
#
# The feeds are spread over H hosts (H delaying proxies on their own
# ports, one origin behind them), as an OPML's feeds are spread over
# hosting services. Needs root for FUSE; runs itself inside `unshare -n`
# (loopback only) with the test origin. Not a test: it asserts nothing.
set -euo pipefail
if [ -z "${PODFS_BENCH_NETNS:-}" ]; then
  exec env PODFS_BENCH_NETNS=1 unshare -n sh -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
feeds=1000; hosts=10; delay=50; seed=21; covers=0; unsized=0
while [ $# -gt 0 ]; do
  case "$1" in
    --feeds) feeds="$2"; shift 2 ;;
    --hosts) hosts="$2"; shift 2 ;;
    --delay-ms) delay="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --covers) covers="$2"; shift 2 ;;
    --unsized) unsized="$2"; shift 2 ;;
    *) echo "usage: $0 [--feeds N] [--hosts H] [--delay-ms MS] [--seed S] [--covers KB] [--unsized N]" >&2; exit 2 ;;
  esac
done
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/podfs-many-XXXX)"
www="$work/www"; mnt="$work/mnt"; cache="$work/cache"
mkdir -p "$www/f" "$mnt"
pids=(); podfs=""
cleanup() {
  if [ -n "$podfs" ]; then "$podfs" unmount "$mnt" >/dev/null 2>&1 || fusermount3 -u -z "$mnt" 2>/dev/null || true; fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
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

# N feeds of 20-400 items, with show notes (text no file shows).
python3 - "$www/f" "$feeds" "$seed" "$covers" "$unsized" <<'PY'
import os, random, sys, time, email.utils
root, n, seed, cover_kib, unsized = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
if unsized:
    # One file, a link to it per episode of the first shows.
    os.makedirs(root + "/../e", exist_ok=True)
    with open(root + "/../e/episode.bin", "wb") as fh:
        fh.write(random.Random(seed).randbytes(64 * 1024))
if cover_kib:
    # One file of random bytes, a link to it per show: each show's cover
    # has a URL (and a cache file) of its own.
    os.makedirs(root + "/../c", exist_ok=True)
    with open(root + "/../c/cover.bin", "wb") as fh:
        fh.write(random.Random(seed).randbytes(cover_kib * 1024))
    for f in range(n):
        os.symlink("cover.bin", "%s/../c/%d.jpg" % (root, f))
now = time.time()
rng = random.Random(seed)
months = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
notes = '<p>Show notes with <a href="https://example.org/">links</a> and a paragraph of text.</p>' * 3
total = 0
for f in range(n):
    items = rng.randint(20, 400)
    total += items
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" '
           'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>'
           '<title>Show %d</title><description>%s</description>\n' % (f, notes)]
    if cover_kib:
        out.append('<itunes:image href="{{BASE}}/c/%d.jpg"/>\n' % f)
    if f < unsized:
        os.makedirs("%s/../e/%d" % (root, f), exist_ok=True)
    for i in reversed(range(items)):
        if f < unsized:
            os.symlink("../episode.bin", "%s/../e/%d/%d.mp3" % (root, f, i))
        length = ' length="%d"' % (30000000 + i) if f >= unsized else ''
        # Each show's newest 13 are a day apart, as a daily show's (shows a
        # minute apart: no ties), so Latest.m3u has 13,000 to choose from;
        # the others are from 2000 on.
        rank = items - 1 - i
        date = (email.utils.formatdate(now - 60 * (f + 1) - 86400 * rank, usegmt=True) if rank < 13
                else 'Mon, %d %s %d 10:00:00 GMT' % (1 + i % 28, months[(i // 28) % 12], 2000 + i // 336))
        out.append(
            '<item><title>Episode %d of show %d</title><guid>s%d-e%d</guid>'
            '<pubDate>%s</pubDate><description><![CDATA[%s]]></description>'
            '<enclosure url="{{BASE}}/e/%d/%d.mp3"%s type="audio/mpeg"/></item>\n'
            % (i, f, f, i, date, notes, f, i, length))
    out.append('</channel></rss>\n')
    with open("%s/%d.xml" % (root, f), "w") as fh:
        fh.write("".join(out))
print(total, file=open(root + "/../items", "w"))
PY
items=$(cat "$www/items")

python3 Tests/Origin/origin.py --root "$www" --port 0 --port-file "$work/port" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
origin_port=$(cat "$work/port")
curl -sf -X POST -d '{"gzip": true}' "http://127.0.0.1:$origin_port/_origin/config" >/dev/null
# H delaying proxies: H hosts.
proxy_ports=()
for h in $(seq 0 $((hosts - 1))); do
  port=$((20000 + h))
  python3 bench/delayproxy.py "$port" "$origin_port" "$delay" &
  pids+=($!)
  proxy_ports+=("$port")
done
# A host that accepts and never answers; a port that refuses.
python3 -c '
import socket, time
s = socket.create_server(("127.0.0.1", 20999), backlog=64)
held = []
while True:
    c, _ = s.accept(); held.append(c)
' &
pids+=($!)
sleep 0.5
list="$work/feeds.txt"
for f in $(seq 0 $((feeds - 1))); do
  echo "http://127.0.0.1:${proxy_ports[$((f % hosts))]}/f/$f.xml"
done > "$list"
echo "http://127.0.0.1:20999/hanging.xml" >> "$list"
echo "http://127.0.0.1:1/refused.xml" >> "$list"

now() { date +%s.%N; }
# CPU seconds of a process, and of the origin with its proxies (the other
# side of every figure: on 2 cores it takes CPU from podfs as from curl).
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
origin_cpu() { local sum=0; for p in "${pids[@]}"; do sum=$(awk -v a="$sum" -v b="$(cpu_of "$p")" 'BEGIN {print a + b}'); done; echo "$sum"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# The network's reference: curl --parallel for the same feeds (gzip).
sed -n "1,${feeds}p" "$list" | sed 's/^/url = /; s/$/\noutput = \/dev\/null/' > "$work/curl.cfg"
origin_before=$(origin_cpu)
t=$(now); curl -s --no-progress-meter --parallel --parallel-max 50 --compressed -K "$work/curl.cfg" >/dev/null 2>&1 || true; curl_time=$(since "$t")
origin_curl=$(awk -v a="$origin_before" -v b="$(origin_cpu)" 'BEGIN {printf "%.2f", b - a}')
origin_before=$(origin_cpu)

# Cold: ready, then every show listed.
t=$(now)
out=$("$podfs" mount --cache-dir "$cache" --refresh off "$list" "$mnt" 2>"$work/mount.err")
cold=$(since "$t")
pid=$(sed -n 's/.*pid \([0-9]*\).*/\1/p' <<<"$out" | head -1)
perf_pid=""
if [ -n "${PODFS_BENCH_PERF:-}" ]; then
  # Where the daemon's time goes until every show is listed (perf report -i FILE).
  perf record -F ${PODFS_BENCH_PERF_HZ:-499} -g -p "$pid" -o "$PODFS_BENCH_PERF" >/dev/null 2>&1 &
  perf_pid=$!
fi
for _ in $(seq 6000); do
  [ "$(ls "$mnt" | wc -l)" -ge "$feeds" ] && break
  sleep 0.02
done
listed=$(since "$t")
listed_peak_kib=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
origin_listed=$(awk -v a="$origin_before" -v b="$(origin_cpu)" 'BEGIN {printf "%.2f", b - a}')
if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true; fi
cpu=$(cpu_of "$pid")
# One show's folder, looked into once every show is listed (a show listed
# on arrival and not built yet is built then).
one_show=$(ls "$mnt" | grep -v '^Latest.m3u$' | tail -1)
t1=$(now); one_files=$(ls -l "$mnt/$one_show" | grep -c '^-'); one_time=$(since "$t1")
# Every file listed: find builds every show still waiting.
files=$(find "$mnt" -mindepth 2 -type f | wc -l)
cold_all=$(since "$t")
# Every show's cover kept: stat shows its real size (nothing opens it).
covers_in="-"
if [ "$covers" -gt 0 ]; then
  # At most 120 s: a build that keeps no cover says "0 of N" then.
  for _ in $(seq 600); do
    [ "$(find "$mnt" -mindepth 2 -name 'cover.jpg' -size +0 | wc -l)" -ge "$feeds" ] && break
    [ "$(since "$t" | cut -d. -f1)" -ge 120 ] && break
    sleep 0.1
  done
  covers_in="$(since "$t") s, $(find "$mnt" -mindepth 2 -name 'cover.jpg' -size +0 | wc -l) of $feeds"
fi
# Every episode of the first N shows with its real size (nothing opens them).
sized_in="-"; unsized_items=0
if [ "$unsized" -gt 0 ]; then
  unsized_items=$(for f in $(seq 0 $((unsized - 1))); do ls "$mnt/Show $f" | grep -c 'mp3$' || true; done | awk '{s += $1} END {print s}')
  sized() { for f in $(seq 0 $((unsized - 1))); do find "$mnt/Show $f" -name '*.mp3' -size +0; done | wc -l; }
  for _ in $(seq 3000); do
    [ "$(sized)" -ge "$unsized_items" ] && break
    [ "$(since "$t" | cut -d. -f1)" -ge 300 ] && break
    sleep 0.1
  done
  sized_in="$(since "$t") s, $(sized) of $unsized_items"
fi
peak_kib=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
"$podfs" status --cache-dir "$cache" | sed -n 2p > "$work/summary"
"$podfs" unmount "$mnt" >/dev/null

# Warm remount: ready from the kept copies.
t=$(now)
out=$("$podfs" mount --cache-dir "$cache" --refresh off "$list" "$mnt" 2>>"$work/mount.err")
warm=$(since "$t")
pid=$(sed -n 's/.*pid \([0-9]*\).*/\1/p' <<<"$out" | head -1)
warm_shows=$(ls "$mnt" | wc -l)
warm_cpu=$(cpu_of "$pid")
# A show looked into while the background pass builds the others from
# their kept copies (the 500th, or the last of fewer).
warm_one=$(ls "$mnt" | grep -v '^Latest.m3u$' | awk 'NR <= 500 { last = $0 } END { print last }')
warm_one_time=0; warm_one_files=0
if [ -n "$warm_one" ]; then
  t1=$(now); warm_one_files=$(ls -l "$mnt/$warm_one" | grep -c '^-' || true); warm_one_time=$(since "$t1")
fi
perf_pid=""
if [ -n "${PODFS_BENCH_PERF_WARM:-}" ]; then
  # Where the daemon's time goes while the warm remount's find builds shows.
  perf record -F ${PODFS_BENCH_PERF_HZ:-499} -g -p "$pid" -o "$PODFS_BENCH_PERF_WARM" >/dev/null 2>&1 &
  perf_pid=$!
  sleep 0.5
fi
# Every file listed: builds every show that the background pass has not.
# Reported from the mount's start: the time until ready plus the find's own.
find_cpu=$(cpu_of "$pid"); t1=$(now)
warm_files=$(find "$mnt" -mindepth 2 -type f | wc -l)
warm_all=$(awk -v a="$warm" -v b="$(since "$t1")" 'BEGIN {printf "%.2f", a + b}')
warm_find_cpu=$(awk -v a="$(cpu_of "$pid")" -v b="$find_cpu" 'BEGIN {printf "%.2f", a - b}')
if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true; fi
warm_peak_kib=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
# The same find again, every show built and the kernel's caches dropped:
# what listing every file costs through FUSE alone, without the builds.
sync; echo 2 > /proc/sys/vm/drop_caches 2>/dev/null || echo "could not drop the kernel's caches: find again is from them" >&2
t=$(now); find "$mnt" -mindepth 2 -type f >/dev/null; again=$(since "$t")
cp "$mnt/Latest.m3u" "$work/latest-built.m3u" || : > "$work/latest-built.m3u"
latest_all=$(grep -c '^#EXTINF' "$work/latest-built.m3u" || true)
"$podfs" unmount "$mnt" >/dev/null
show_list_kib=$(( $(stat -c %s "$cache/shows.json" 2>/dev/null || echo 0) / 1024 ))

# Latest.m3u read the moment a warm remount is ready: every show listed
# and not built yet is built first (it lists the newest of each).
out=$("$podfs" mount --cache-dir "$cache" --refresh off "$list" "$mnt" 2>>"$work/mount.err")
t=$(now); cp "$mnt/Latest.m3u" "$work/latest-warm.m3u" || : > "$work/latest-warm.m3u"; latest_time=$(since "$t")
latest_warm=$(cmp -s "$work/latest-warm.m3u" "$work/latest-built.m3u" && echo same || echo differs)
latest_warm="$latest_warm, $(grep -c '^#EXTINF' "$work/latest-warm.m3u" || true) entries"
"$podfs" unmount "$mnt" >/dev/null
# The same the moment a cold mount (a cache of its own) is ready: the shows
# listed on arrival are built first.
out=$("$podfs" mount --cache-dir "$work/cache-cold" --refresh off "$list" "$mnt" 2>>"$work/mount.err")
t=$(now); cp "$mnt/Latest.m3u" "$work/latest-cold.m3u" || : > "$work/latest-cold.m3u"; latest_cold_time=$(since "$t")
latest_cold=$(cmp -s "$work/latest-cold.m3u" "$work/latest-built.m3u" && echo same || echo differs)
latest_cold="$latest_cold, $(grep -c '^#EXTINF' "$work/latest-cold.m3u" || true) entries"
"$podfs" unmount "$mnt" >/dev/null

awk -v feeds="$feeds" -v hosts="$hosts" -v delay="$delay" -v items="$items" -v curl="$curl_time" \
    -v cold="$cold" -v listed="$listed" -v warm="$warm" -v files="$files" -v peak="$peak_kib" \
    -v cpu="$cpu" -v wcpu="$warm_cpu" -v ocurl="$origin_curl" -v olisted="$origin_listed" -v cores="$(nproc)" -v wpeak="$warm_peak_kib" -v wshows="$warm_shows" -v wall="$warm_all" -v wfiles="$warm_files" -v call="$cold_all" -v lpeak="$listed_peak_kib" -v again="$again" -v wone="$warm_one_time" -v wonefiles="$warm_one_files" -v wfcpu="$warm_find_cpu" -v lnow="$latest_warm" -v lall="$latest_all" -v ltime="$latest_time" -v lcold="$latest_cold" -v slkib="$show_list_kib" -v lctime="$latest_cold_time" -v one="$one_time" -v onefiles="$one_files" -v coversin="$covers_in" -v coverkib="$covers" -v sizedin="$sized_in" -v unsized="$unsized" -v summary="$(cat "$work/summary")" 'BEGIN {
  allowed = 1.5 * curl; if (allowed < 3) allowed = 3
  target_kib = 64 * 1024 + files
  printf "podfs many-feeds bench: %d feeds (%d items) on %d hosts, +%d ms per request, plus a hanging host and a refusing port\n", feeds, items, hosts, delay
  printf "| figure | podfs | target |\n|---|---|---|\n"
  printf "| cold ready | %.2f s | <= 3 s |\n", cold
  printf "| every show listed | %.2f s (%.2f x curl) | <= 1.5 x curl, at least 3 s: %.2f s |\n", listed, listed / curl, allowed
  printf "| cold, ls -l of one show once every show was listed | %.3f s (%d files) | |\n", one, onefiles
  printf "| cold, every file listed (find, then) | %.2f s (%d files) | |\n", call, files
  if (coverkib > 0) printf "| cold, every cover kept (%d KiB each; stat shows its size) | %s | |\n", coverkib, coversin
  if (unsized > 0) printf "| cold, every episode of the %d shows with no length sized (stat shows it) | %s | |\n", unsized, sizedin
  printf "| warm remount ready | %.2f s (%d shows listed at once) | <= 0.5 s |\n", warm, wshows
  printf "| warm remount, ls -l of one show right after ready | %.3f s (%d files) | |\n", wone, wonefiles
  printf "| warm remount, every file listed (find) | %.2f s (%d files; daemon CPU %.2f s) | |\n", wall, wfiles, wfcpu
  printf "| find again, every show built, kernel caches dropped | %.2f s | |\n", again
  printf "| warm remount, cat Latest.m3u right after ready | %.2f s (%s; %d once every show is built) | the same |\n", ltime, lnow, lall
  printf "| cold (new cache), cat Latest.m3u right after ready | %.2f s (%s) | the same |\n", lctime, lcold
  printf "| shows.json (what a remount lists at once) | %d KiB | |\n", slkib
  printf "| peak RSS, cold, when every show was listed | %.1f MiB | |\n", lpeak / 1024
  printf "| peak RSS, cold | %.1f MiB for %d files: %.0f B/file over 64 MiB | <= 64 MiB + 1 KiB/file: %.1f MiB |\n", peak / 1024, files, (peak - 65536) * 1024 / files, target_kib / 1024
  printf "| peak RSS, warm remount, after every file was listed | %.1f MiB | %.1f MiB |\n", wpeak / 1024, target_kib / 1024
  printf "| curl --parallel (reference) | %.2f s | |\n", curl
  printf "daemon CPU until every show was listed: %.2f s (%d cores); until the warm remount was ready: %.2f s\n", cpu, cores, wcpu
  printf "origin and proxies CPU: %.2f s while podfs listed every show, %.2f s during curl --parallel\n", olisted, ocurl
  printf "status after the cold mount: %s\n", summary
}'
