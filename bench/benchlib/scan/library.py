"""The library: --shows feeds of --episodes MP3s each, 8-11 minutes at 128 kb/s, each with
an ID3v2.3 tag and an embedded 277 KB cover, made once with ffmpeg and kept in /tmp."""
import concurrent.futures, datetime, os, random, subprocess, sys

LIBRARY_VERSION = 1


def show_title(s):
    return f"Show {s + 1}"


def episode_seconds(s, e):
    """8 to 11 minutes, varied."""
    return 480 + (s * 37 + e * 53) % 181


def episode_date(e):
    return datetime.datetime(2026, 1, 1, 10, 0, tzinfo=datetime.timezone.utc) + datetime.timedelta(days=e)


def feed_xml(s, episodes, sizes):
    items = []
    for e in range(episodes):
        date = episode_date(e).strftime("%a, %d %b %Y %H:%M:%S GMT")
        items.append(f'<item><title>Episode {e + 1}</title><guid>show{s + 1}-ep{e + 1}</guid>'
                     f'<pubDate>{date}</pubDate>\n<enclosure url="{{{{BASE}}}}/show{s + 1:02d}/ep{e + 1:03d}.mp3" '
                     f'length="{sizes[e]}" type="audio/mpeg"/></item>\n')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" '
            'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>'
            f'<title>{show_title(s)}</title><link>http://example.org/</link>\n' + "".join(items) + "</channel></rss>\n")


def make_library(shows, episodes):
    """/tmp/podfs-scan-lib-v1-SxE/www: showNN/epMMM.mp3 and showNN.xml (feed templates),
    made once. Returns the www folder."""
    lib = f"/tmp/podfs-scan-lib-v{LIBRARY_VERSION}-{shows}x{episodes}"
    www = f"{lib}/www"
    if os.path.exists(f"{lib}/complete"):
        return www
    print(f"== generating the library: {shows} shows x {episodes} episodes in {lib}", file=sys.stderr)
    os.makedirs(www, exist_ok=True)
    cover = f"{lib}/cover.png"
    if not os.path.exists(cover):
        raw = f"{lib}/noise.raw"
        with open(raw, "wb") as f:  # noise: a PNG that does not compress (304 x 304 x 3 bytes)
            f.write(random.Random(29).randbytes(304 * 304 * 3))
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "304x304",
                        "-i", raw, "-frames:v", "1", cover + ".tmp.png"], check=True)
        os.rename(cover + ".tmp.png", cover)
        os.unlink(raw)
    base = f"{lib}/base.mp3"
    if not os.path.exists(base):  # 11 minutes of 128 kb/s stereo, cut to each episode's length
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=660",
                        "-ac", "2", "-ar", "44100", "-b:a", "128k", base + ".tmp.mp3"], check=True)
        os.rename(base + ".tmp.mp3", base)

    def one(s, e):
        path = f"{www}/show{s + 1:02d}/ep{e + 1:03d}.mp3"
        if not os.path.exists(path):
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", base, "-i", cover, "-map", "0:a", "-map", "1:v",
                            "-c", "copy", "-t", str(episode_seconds(s, e)), "-id3v2_version", "3",
                            "-metadata", f"title=Episode {e + 1}", "-metadata", f"artist={show_title(s)}",
                            "-metadata", f"album={show_title(s)}", "-metadata:s:v", "title=Album cover",
                            "-metadata:s:v", "comment=Cover (front)", "-disposition:v", "attached_pic",
                            path + ".tmp.mp3"], check=True)
            os.rename(path + ".tmp.mp3", path)
        return os.path.getsize(path)

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for s in range(shows):
            os.makedirs(f"{www}/show{s + 1:02d}", exist_ok=True)
            sizes = list(pool.map(lambda e: one(s, e), range(episodes)))
            with open(f"{www}/show{s + 1:02d}.xml", "w") as f:
                f.write(feed_xml(s, episodes, sizes))
    open(f"{lib}/complete", "w").close()
    return www


def library_files(www):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(www) for f in fs if f.endswith(".mp3"))
