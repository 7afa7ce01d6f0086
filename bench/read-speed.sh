#!/usr/bin/env bash
# Sequential read speed of one episode through podfs, side by side with curl
# from the same origin and a local read of the same bytes, in one run.
#
#   bench/read-speed.sh [SIZE_MIB]        (default 256; needs root for FUSE)
#   PODFS_MOUNT_ARGS="--commit-interval 0" bench/read-speed.sh   (extra mount options)
#
# Origin: nginx on 127.0.0.1 when installed (apt-get install nginx-light),
# else the test origin (Python, slower: then every figure is capped by it).
# Prints MB/s (10^6 bytes/s) for: curl -> /dev/null; podfs cold (empty
# cache); podfs warm (same mount, second open); podfs after remount; dd of
# the local file; and each podfs figure as a ratio to curl.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
size_mib="${1:-256}"
work="$(mktemp -d /tmp/podfs-bench-XXXX)"
www="$work/www"; mnt="$work/mnt"; cache="$work/cache"
mkdir -p "$www" "$mnt"
chmod 755 "$work"  # nginx workers run unprivileged
origin_pid=""; nginx_conf=""
cleanup() {
  "$podfs" unmount "$mnt" >/dev/null 2>&1 || fusermount3 -u -z "$mnt" 2>/dev/null || true
  if [ -n "$nginx_conf" ]; then nginx -c "$nginx_conf" -s stop 2>/dev/null || true; fi
  if [ -n "$origin_pid" ]; then kill "$origin_pid" 2>/dev/null; wait "$origin_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cd "$repo"
swift build -c release --product podfs >/dev/null
podfs="$(swift build -c release --show-bin-path)/podfs"

head -c $((size_mib * 1024 * 1024)) /dev/urandom > "$www/episode.mp3"
bytes=$(stat -c %s "$www/episode.mp3")
port=48190
if command -v nginx >/dev/null; then
  nginx_conf="$work/nginx.conf"
  cat > "$nginx_conf" <<CONF
daemon on; worker_processes 2; pid $work/nginx.pid; error_log $work/nginx-error.log;
events { worker_connections 256; }
http { access_log off; sendfile on; tcp_nopush on; keepalive_requests 100000;
  server { listen 127.0.0.1:$port; root $www; default_type application/octet-stream;
    types { application/rss+xml xml; audio/mpeg mp3; } } }
CONF
  nginx -c "$nginx_conf"
  origin="nginx"
else
  python3 Tests/Origin/origin.py --root "$www" --port "$port" --port-file "$work/port" 2>/dev/null &
  origin_pid=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
  origin="origin.py"
fi
base="http://127.0.0.1:$port"
cat > "$www/feed.xml" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Bench</title>
<item><title>Episode</title><guid>bench-1</guid><pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate>
<enclosure url="$base/episode.mp3" length="$bytes" type="audio/mpeg"/></item></channel></rss>
XML
file="$mnt/Bench/2026-11-02 Episode.mp3"

# Seconds taken by a command, to the nanosecond.
seconds() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo "scale=4; ($e - $s) / 1000000000" | bc; }
mbps() { echo "scale=0; $bytes / $1 / 1000000" | bc; }
ratio() { echo "scale=2; $2 / $1" | bc; }

curl_s=$(seconds curl -sS -o /dev/null "$base/episode.mp3")
local_s=$(seconds dd if="$www/episode.mp3" of=/dev/null bs=1M status=none)
mount_args=(${PODFS_MOUNT_ARGS:-})
"$podfs" mount --cache-dir "$cache" "${mount_args[@]}" "$base/feed.xml" "$mnt" >/dev/null
cold_s=$(seconds dd if="$file" of=/dev/null bs=1M status=none)
warm_s=$(seconds dd if="$file" of=/dev/null bs=1M status=none)
"$podfs" unmount "$mnt" >/dev/null
"$podfs" mount --cache-dir "$cache" "${mount_args[@]}" "$base/feed.xml" "$mnt" >/dev/null
remount_s=$(seconds dd if="$file" of=/dev/null bs=1M status=none)
sha_mount=$(sha256sum < "$file" | cut -c1-64)
sha_origin=$(sha256sum < "$www/episode.mp3" | cut -c1-64)

printf '%s MiB episode, origin %s on 127.0.0.1, one run%s\n' "$size_mib" "$origin" "${PODFS_MOUNT_ARGS:+, mount options: $PODFS_MOUNT_ARGS}"
printf '%-28s %8s %14s\n' "read" "MB/s" "vs curl"
printf '%-28s %8s %14s\n' "curl from the origin" "$(mbps "$curl_s")" "1.00"
printf '%-28s %8s %14s\n' "podfs cold (empty cache)" "$(mbps "$cold_s")" "$(ratio "$curl_s" "$cold_s" | awk '{printf "%.2f", 1/$1}')"
printf '%-28s %8s %14s\n' "podfs warm (same mount)" "$(mbps "$warm_s")" "$(ratio "$curl_s" "$warm_s" | awk '{printf "%.2f", 1/$1}')"
printf '%-28s %8s %14s\n' "podfs after remount" "$(mbps "$remount_s")" "$(ratio "$curl_s" "$remount_s" | awk '{printf "%.2f", 1/$1}')"
printf '%-28s %8s %14s\n' "dd of the local file" "$(mbps "$local_s")" "$(ratio "$curl_s" "$local_s" | awk '{printf "%.2f", 1/$1}')"
[ "$sha_mount" = "$sha_origin" ] && echo "sha256 through the mount matches the origin" || { echo "sha256 MISMATCH"; exit 1; }
