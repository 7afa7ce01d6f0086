"""bench/scan's library: the library scan benchmark of issue 29, MPD (and ffprobe) over a
podfs mount of many shows, cold, after a remount and offline.

- `library`: the MP3 library and its feeds, made once with ffmpeg and kept in /tmp;
- `mount`: podfs mounted as a daemon, every show listed before a scan, and unmounted;
- `scanners`: MPD building a new database, ffprobe over every file;
- `report`: the table beside issue 29's targets, results-scan-latest.md;
- `runner`: one run, from the origin to the cleanup.
"""
