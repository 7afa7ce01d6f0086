"""Checks guarantee 1 after a crash: every byte range the podfs index lists
is on disk in the scratch file with the origin's bytes.

usage: check_index.py CACHE_DIR ORIGIN_FILE [--key-url URL]
  Without --key-url the cache must hold that one episode; with it, only the
  episode whose enclosure URL is URL is checked.
Prints "index claims N bytes, all on disk and correct" or what is wrong, and
exits non-zero on any wrong byte, and when there is nothing to check: no
index, no episode with that URL (or, without --key-url, not exactly one
episode).
"""
import os
import sqlite3
import sys

cache, origin_file = sys.argv[1], sys.argv[2]
url = sys.argv[sys.argv.index("--key-url") + 1] if "--key-url" in sys.argv else None
original = open(origin_file, "rb").read()
index_path = os.path.join(cache, "index.sqlite")
if not os.path.exists(index_path):
    print("there is no index at %s" % index_path)
    sys.exit(1)
db = sqlite3.connect("file:%s?mode=ro" % index_path, uri=True)
episodes = db.execute("SELECT url FROM episodes" + (" WHERE url = ?" if url else ""),
                      (url,) if url else ()).fetchall()
if url and not episodes:
    print("the index has no episode with the URL %s" % url)
    sys.exit(1)
if not url and len(episodes) != 1:
    print("the index has %d episodes; name one with --key-url" % len(episodes))
    sys.exit(1)
query = "SELECT e.key, r.lower, r.upper FROM ranges r JOIN episodes e ON e.id = r.episode_id"
rows = db.execute(query + (" WHERE e.url = ?" if url else ""), (url,) if url else ()).fetchall()
claimed = 0
for key, lower, upper in rows:
    path = os.path.join(cache, "data", key)
    if upper > len(original):
        print("index claims %d-%d of %s beyond the episode's %d bytes" % (lower, upper, key, len(original)))
        sys.exit(1)
    with open(path, "rb") as data:
        data.seek(lower)
        got = data.read(upper - lower)
    if got != original[lower:upper]:
        first = next(i for i in range(len(got)) if i >= len(original[lower:upper]) or got[i] != original[lower + i])
        print("index claims %d-%d of %s but the bytes on disk differ (first at %d)" % (lower, upper, key, lower + first))
        sys.exit(1)
    claimed += upper - lower
print("index claims %d bytes, all on disk and correct" % claimed)
