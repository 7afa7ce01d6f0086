"""Checks guarantee 1 after a crash: every byte range the podfs index lists
is on disk in the scratch file with the origin's bytes.

usage: check_index.py CACHE_DIR ORIGIN_FILE  (the cache holds that one episode)
"""
import os
import sqlite3
import sys

cache, origin_file = sys.argv[1], sys.argv[2]
original = open(origin_file, "rb").read()
db = sqlite3.connect("file:%s/index.sqlite?mode=ro" % cache, uri=True)
rows = db.execute("SELECT e.key, r.lower, r.upper FROM ranges r JOIN episodes e ON e.id = r.episode_id").fetchall()
claimed = 0
for key, lower, upper in rows:
    path = os.path.join(cache, "data", key)
    with open(path, "rb") as data:
        data.seek(lower)
        got = data.read(upper - lower)
    if got != original[lower:upper]:
        print("index claims %d-%d of %s but the bytes on disk differ" % (lower, upper, key))
        sys.exit(1)
    claimed += upper - lower
print("index claims %d bytes, all on disk and correct" % claimed)
