#!/usr/bin/env bash
# Regenerates the bundled demo podcast: three short spoken episodes (MP3, mono,
# 22 kHz) with ID3 tags, a cover image and feed.xml with exact enclosure
# lengths. The results are committed; run this only to change them.
# Needs: espeak-ng, lame (or ffmpeg), python3.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p episodes
texts=(
  "Welcome to podfs Demo Radio, episode one. You are listening to a plain file on a FUSE mount. The bytes you hear were fetched from a local web server with HTTP range requests, written to a sparse cache file, and then read back from disk. Read this episode again and it comes from the cache, with no network at all."
  "This is episode two of podfs Demo Radio. Try seeking. Jump to the middle of this file with your player, and podfs fetches only the bytes around that point. The rest of the file stays a hole in the cache until somebody asks for it. Every byte crosses the network at most once."
  "Episode three of podfs Demo Radio, the last one. Unmount the folder, stop the server, and mount it again. Everything you already listened to still plays. Whatever was never read fails with an input output error instead of pretending to be silence. That is the whole idea. Thank you for listening."
)
titles=("Welcome to podfs" "Seeking without waiting" "Offline, honestly")
for i in 0 1 2; do
  n=$((i + 1))
  espeak-ng -v en-us -s 150 -w "episodes/ep$n.wav" "${texts[$i]}"
  lame --quiet -m m -b 48 --resample 22.05 \
    --tt "${titles[$i]}" --ta "podfs" --tl "podfs Demo Radio" --tn "$n" --ty 2026 \
    "episodes/ep$n.wav" "episodes/ep$n.mp3"
  rm "episodes/ep$n.wav"
done
ffmpeg -loglevel error -y -f lavfi -i "gradients=s=600x600:c0=0x1e3a5f:c1=0xf2a541:seed=7" -frames:v 1 cover.png
python3 - <<'PY'
import os
titles = ["Welcome to podfs", "Seeking without waiting", "Offline, honestly"]
dates = ["Mon, 02 Nov 2026 08:00:00 GMT", "Mon, 09 Nov 2026 08:00:00 GMT", "Mon, 16 Nov 2026 08:00:00 GMT"]
items = []
for n in (3, 2, 1):
    size = os.path.getsize("episodes/ep%d.mp3" % n)
    items.append("""    <item>
      <title>%s</title>
      <guid isPermaLink="false">podfs-demo-%d</guid>
      <pubDate>%s</pubDate>
      <itunes:episode>%d</itunes:episode>
      <description>Episode %d of the podfs demo podcast.</description>
      <enclosure url="{{BASE}}/episodes/ep%d.mp3" length="%d" type="audio/mpeg"/>
    </item>""" % (titles[n - 1], n, dates[n - 1], n, n, n, size))
feed = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
  <channel>
    <title>podfs Demo Radio</title>
    <link>{{BASE}}/</link>
    <description>Three short spoken episodes bundled with podfs, served by a local origin.</description>
    <language>en</language>
    <itunes:author>podfs</itunes:author>
    <itunes:image href="{{BASE}}/cover.png"/>
%s
  </channel>
</rss>
""" % "\n".join(items)
open("feed.xml", "w").write(feed)
PY
ls -l episodes cover.png feed.xml
