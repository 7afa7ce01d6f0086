#!/bin/sh
# Makes the schema-1 cache fixture (index-v1.sqlite) with a podfs of that schema:
# a two-episode feed on the test origin at 127.0.0.1:18080, 100 KiB read
# from the start of episode 1 (4 MiB) and 64 KiB from 3 MiB on, then unmounted
# (the index is checkpointed into one file). Run as root inside
# `unshare -n sh -c 'ip link set lo up && ...'` (the fixed port is then free):
#
#     PODFS=/path/to/old/podfs Tests/RangeCacheTests/Fixtures/make-index-v1.sh OUT-DIRECTORY
#
# The episodes' bytes are Harness.bytes(count:seed:) of the integration
# tests (seed 1 and 2), written here by python3 with the same generator, with
# the modification time 2026-11-01 10:00:00 UTC (the origin's ETag and
# Last-Modified come from it).
set -eu
PODFS=${PODFS:-.build/debug/podfs}
OUT=$1
ROOT=$(dirname "$0")/../../..
WORK=$(mktemp -d)
trap 'fusermount3 -u -z "$WORK/mnt" 2>/dev/null || true; [ -n "${ORIGIN:-}" ] && kill "$ORIGIN"; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/origin" "$WORK/mnt"
python3 - "$WORK/origin" <<'PY'
import sys
M = (1 << 64) - 1
def data(count, seed):
    state = (seed * 6364136223846793005 + 1442695040888963407) & M
    out = bytearray(count)
    words = count // 8
    for i in range(words):
        state = (state * 6364136223846793005 + 1442695040888963407) & M
        out[i * 8:i * 8 + 8] = (state ^ (state >> 29)).to_bytes(8, "little")
    for i in range(words * 8, count):
        out[i] = i & 0xff
    return bytes(out)
root = sys.argv[1]
items = ""
for n, size in ((1, 4194304), (2, 131072)):
    open(f"{root}/ep{n}.mp3", "wb").write(data(size, n))
    items += (f'<item><title>Episode {n}</title><guid>guid-ep{n}.mp3</guid>'
              f'<pubDate>Sun, 0{n} Nov 2026 10:00:00 GMT</pubDate>'
              f'<enclosure url="{{{{BASE}}}}/ep{n}.mp3" length="{size}" type="audio/mpeg"/></item>\n')
open(f"{root}/feed.xml", "w").write(
    '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>Test Show</title>'
    f'<link>http://example.org/</link>\n{items}</channel></rss>\n')
PY
touch -d "2026-11-01 10:00:00 UTC" "$WORK/origin/"*.mp3
python3 "$ROOT/Tests/Origin/origin.py" --root "$WORK/origin" --bind 127.0.0.1 --port 18080 \
    --port-file "$WORK/port" > "$WORK/origin.log" 2>&1 &
ORIGIN=$!
while [ ! -s "$WORK/port" ]; do sleep 0.05; done
# Each response of episode 1 stops after 256 KiB until unmounted, so the
# read-ahead leaves the episode partial.
curl -sf -X POST --data-binary '{"hold": {"path": "/ep1.mp3", "after_bytes": 262144, "seconds": 60}}' \
    http://127.0.0.1:18080/_origin/config > /dev/null
"$PODFS" mount --cache-dir "$WORK/cache" http://127.0.0.1:18080/feed.xml "$WORK/mnt"
EP="$WORK/mnt/Test Show/2026-11-01 Episode 1.mp3"
dd if="$EP" of=/dev/null bs=4096 count=25 iflag=direct 2>/dev/null
dd if="$EP" of=/dev/null bs=4096 skip=768 count=16 iflag=direct 2>/dev/null
"$PODFS" unmount "$WORK/mnt"
curl -sf -X POST http://127.0.0.1:18080/_origin/release > /dev/null
rm -rf "$OUT"
mkdir -p "$OUT"
cp "$WORK/cache/index.sqlite" "$OUT/"

sqlite3 "$OUT/index.sqlite" "SELECT key, length, etag FROM episodes; SELECT * FROM ranges" || true
