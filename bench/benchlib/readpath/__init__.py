"""bench/run's library: the read-path benchmark of issue 3, podfs beside curl, a local
read, a minimal C passthrough FUSE, rclone and httpdirfs.

- `origin`: nginx or origin.py on 127.0.0.1, the delay proxy, the origin's traffic by phase;
- `contestants`: the FUSE file systems, how each is mounted and unmounted;
- `measure`: the figures (a) to (g), one contestant's reps;
- `cpu`: what other processes use of the CPU meanwhile;
- `report`: the figures, the table, the targets, results-latest.md;
- `runner`: one run, from the build to the cleanup.
"""
FILE = "episode.mp3"
FEED = "feed.xml"
PODFS_REL = "podfs bench/2026-11-02 Bench episode.mp3"  # <channel>/<UTC date of pubDate> <title>.mp3
CONTESTANTS = ["curl", "local", "passthru", "podfs", "rclone", "httpdirfs", "httpdirfs-tuned"]
