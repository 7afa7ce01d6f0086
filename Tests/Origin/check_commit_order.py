#!/usr/bin/env python3
"""Checks guarantee 1 from a syscall trace of the podfs daemon: every byte
range the index commits was written to the episode's scratch file and
fdatasync'ed before the commit began, the scratch file's name was made
durable (an fsync of the data folder) between the file's creation and that
commit, and no byte leaves a scratch file (an unlink, a punched hole, a
shorter length) while a durable or pending commit still lists it. No
timing is involved, only order.

usage: check_commit_order.py TRACE SNAPSHOT_DIR CACHE_DIR FDS_JSON

  TRACE         strace -f -xx -s N -o TRACE -e trace=%desc,%file ... -p DAEMON
                (N at least the index's page size: WAL frames are read
                from the trace)
  SNAPSHOT_DIR  copies of index.sqlite and index.sqlite-wal taken after the
                trace began (a write seen twice is harmless: each pwrite
                carries its offset), and data-files: the names in
                CACHE_DIR/data then, one a line (a file not named there and
                opened with O_CREAT is created by the trace)
  CACHE_DIR     the cache directory the daemon uses
  FDS_JSON      {"fd": "path"} of the daemon's descriptors open when the
                trace began

How: the writes to index.sqlite and index.sqlite-wal are replayed onto the
snapshot. Each WAL frame is checked as SQLite checks it (salts and the
running checksum), so every commit is found where it became part of the
log; the database as of that commit is opened with sqlite3 and its ranges
read. For each episode, the ranges that were not committed already when
the trace began must lie inside what pwrite64 calls had written to
CACHE_DIR/data/KEY before the start of an fdatasync (or fsync) of that file
that returned before the first write of the commit's frames. When the trace
created that file (an open with O_CREAT of a name that was not there), an
fsync of CACHE_DIR/data must have begun after the creation and returned
before that first write.

A commit is durable once an fsync (or fdatasync) of the WAL that began
after its last frame was written has returned (synchronous=FULL). Before an
unlink, a punched hole or a shrinking ftruncate of CACHE_DIR/data/KEY
begins, neither the last durable commit nor a commit begun and not yet
durable may list a byte it removes. A name unlinked and made again is a
new file: writes and syncs through the old one's descriptors count for the
old one only.

Order comes from the trace's lines: strace handles one stop at a time, so a
call whose return is printed before another call's entry had finished
before that one started. Prints a summary as JSON on the last line and
exits 1 on any violation, 2 when the trace cannot be read as expected.
"""

import json
import os
import re
import shutil
import sqlite3
import struct
import sys
import tempfile

LINE = re.compile(r"^(\d+)\s+(.*)$")
RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")
CALL = re.compile(r"^(\w+)\((.*)$")
RESULT = re.compile(r"\)\s+=\s+(-?\d+|\?)")
STRING = re.compile(r'"((?:\\x[0-9a-f]{2})*)"(\.\.\.)?')

WRITES = {"pwrite64", "write", "pwritev", "pwritev2", "writev"}
UNLINKS = {"unlink", "unlinkat"}
RENAMES = {"rename", "renameat", "renameat2", "link", "linkat"}
EVERYTHING = 1 << 62
SYNCS = {"fdatasync", "fsync"}


class TraceError(Exception):
    pass


def decode(hexstring):
    return bytes(int(hexstring[i + 2:i + 4], 16) for i in range(0, len(hexstring), 4))


def calls(path):
    """Yields (entry_line, exit_line, pid, name, args, result) per syscall,
    in the order of their exits; args is the text between the parentheses
    (as printed at entry)."""
    pending = {}
    with open(path, encoding="ascii", errors="replace") as trace:
        for number, text in enumerate(trace):
            text = text.rstrip("\n")
            m = LINE.match(text)
            if not m:
                continue
            pid, rest = int(m.group(1)), m.group(2)
            if rest.startswith("+++") or rest.startswith("---"):
                continue
            r = RESUMED.match(rest)
            if r:
                name = r.group(1)
                if pid not in pending or pending[pid][1] != name:
                    continue  # resumed from before the trace began
                entry, _, args = pending.pop(pid)
                results = list(RESULT.finditer(r.group(2)))
                yield entry, number, pid, name, args, results[-1].group(1) if results else "?"
                continue
            c = CALL.match(rest)
            if not c:
                continue
            name, tail = c.group(1), c.group(2)
            if tail.endswith("<unfinished ...>"):
                pending[pid] = (number, name, tail[: -len("<unfinished ...>")].rstrip())
                continue
            # The last ") = RESULT" closes the arguments (strings are in hex).
            results = list(RESULT.finditer(tail))
            if not results:
                continue
            yield number, number, pid, name, tail[: results[-1].start()], results[-1].group(1)


def split_args(args):
    """Top-level comma-separated arguments, strings kept whole."""
    out, depth, current, quoted, i = [], 0, "", False, 0
    while i < len(args):
        ch = args[i]
        if quoted:
            current += ch
            if ch == "\\":
                current += args[i + 1]
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
            current += ch
        elif ch in "[{(":
            depth += 1
            current += ch
        elif ch in "]})":
            depth -= 1
            current += ch
        elif ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += ch
        i += 1
    if current.strip():
        out.append(current.strip())
    return out


def string_arg(arg):
    m = STRING.match(arg)
    if not m:
        raise TraceError("not a string argument: %s" % arg[:80])
    return decode(m.group(1)), m.group(2) is not None


class RangeList:
    """Half-open integer ranges, merged."""

    def __init__(self, ranges=()):
        self.ranges = []
        for lower, upper in ranges:
            self.add(lower, upper)

    def add(self, lower, upper):
        if upper <= lower:
            return
        merged = []
        for a, b in self.ranges:
            if b < lower or a > upper:
                merged.append((a, b))
            else:
                lower, upper = min(a, lower), max(b, upper)
        merged.append((lower, upper))
        self.ranges = sorted(merged)

    def remove(self, lower, upper):
        kept = []
        for a, b in self.ranges:
            if b <= lower or a >= upper:
                kept.append((a, b))
            else:
                if a < lower:
                    kept.append((a, lower))
                if b > upper:
                    kept.append((upper, b))
        self.ranges = kept

    def covers(self, lower, upper):
        return any(a <= lower and upper <= b for a, b in self.ranges)

    def overlap(self, lower, upper):
        """The parts of these ranges inside lower..<upper."""
        return [(max(a, lower), min(b, upper)) for a, b in self.ranges if a < upper and b > lower]

    def minus(self, other):
        result = RangeList(self.ranges)
        for a, b in other.ranges:
            result.remove(a, b)
        return result


def wal_checksum(data, s1, s2, big_endian):
    fmt = (">" if big_endian else "<") + "%dI" % (len(data) // 4)
    words = struct.unpack(fmt, data)
    for i in range(0, len(words), 2):
        s1 = (s1 + words[i] + s2) & 0xFFFFFFFF
        s2 = (s2 + words[i + 1] + s1) & 0xFFFFFFFF
    return s1, s2


def wal_commits(wal):
    """The valid commit frames of a WAL image, as SQLite's recovery finds
    them: (salts, [(frame index of the commit, end offset)])."""
    if len(wal) < 32:
        return None, []
    magic, version, page_size, _, salt1, salt2, c1, c2 = struct.unpack(">8I", wal[:32])
    if magic not in (0x377F0682, 0x377F0683) or page_size < 512:
        return None, []
    big = magic & 1 == 1
    s1, s2 = wal_checksum(wal[:24], 0, 0, big)
    if (s1, s2) != (c1, c2):
        return None, []
    frame_size = 24 + page_size
    commits, index, offset = [], 0, 32
    while offset + frame_size <= len(wal):
        header = wal[offset:offset + 24]
        _, size, fs1, fs2, fc1, fc2 = struct.unpack(">6I", header)
        if (fs1, fs2) != (salt1, salt2):
            break
        s1, s2 = wal_checksum(header[:8], s1, s2, big)
        s1, s2 = wal_checksum(wal[offset + 24:offset + frame_size], s1, s2, big)
        if (s1, s2) != (fc1, fc2):
            break
        if size != 0:
            commits.append((index, offset + frame_size))
        index += 1
        offset += frame_size
    return (salt1, salt2), commits


def committed_ranges(database, wal, scratch):
    """{key: RangeList} of the index made of these two images."""
    for name in os.listdir(scratch):
        os.unlink(os.path.join(scratch, name))
    with open(os.path.join(scratch, "index.sqlite"), "wb") as f:
        f.write(database)
    if wal:
        with open(os.path.join(scratch, "index.sqlite-wal"), "wb") as f:
            f.write(wal)
    db = sqlite3.connect(os.path.join(scratch, "index.sqlite"))
    try:
        rows = db.execute(
            "SELECT e.key, r.lower, r.upper FROM ranges r JOIN episodes e ON e.id = r.episode_id").fetchall()
    finally:
        db.close()
    result = {}
    for key, lower, upper in rows:
        result.setdefault(key, RangeList()).add(lower, upper)
    return result


def apply_write(image, offset, data):
    if len(image) < offset:
        image.extend(b"\0" * (offset - len(image)))
    image[offset:offset + len(data)] = data


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    trace_path, snapshot, cache, fds_json = argv[1:]
    cache = os.path.realpath(cache)
    index_path = os.path.join(cache, "index.sqlite")
    wal_path = index_path + "-wal"
    data_dir = os.path.join(cache, "data") + os.sep
    data_folder = os.path.join(cache, "data")
    fds = {int(fd): os.path.realpath(path) if path.startswith("/") else path
           for fd, path in json.loads(fds_json).items()}

    def read(name):
        path = os.path.join(snapshot, name)
        return bytearray(open(path, "rb").read()) if os.path.exists(path) else bytearray()

    database, wal = read("index.sqlite"), read("index.sqlite-wal")
    listing = os.path.join(snapshot, "data-files")
    # The scratch files that exist (None: unknown, no creation is judged).
    existing = None
    if os.path.exists(listing):
        existing = {data_dir + name for name in open(listing).read().split("\n") if name}
    work = tempfile.mkdtemp(prefix="commit-order-")
    try:
        baseline = committed_ranges(bytes(database), bytes(wal), work)
        salts, found = wal_commits(bytes(wal))
        seen = {(salts, frame) for frame, _ in found}
        page_size = struct.unpack(">I", bytes(wal[8:12]))[0] if len(wal) >= 32 else None
        # Per WAL frame: the trace line of the latest write that touched it;
        # and of the latest write of the WAL's header (a new generation).
        frame_writes, header_write = {}, None
        # Per scratch file: [(exit line, lower, upper)] written; syncs [(entry, exit)].
        written, syncs = {}, {}
        punched = {}
        commits, violations, scratch_writes = [], [], 0
        # Per scratch file: exit lines of its creations; the data folder's
        # and the WAL's syncs [(entry, exit)]; removals of scratch bytes
        # [(entry, path, lower, upper, kind)]; unlinked names so far.
        created, folder_syncs, wal_syncs, removals, generations = {}, [], [], [], {}
        retired = {}  # path: [(line unlinked, the name its file has since)]

        def retire(path, line):
            """An unlinked name's file lives on only through its open
            descriptors: give it, and what was done to it, a name of its own."""
            generations[path] = generations.get(path, 0) + 1
            gone = "%s (unlinked %d)" % (path, generations[path])
            retired.setdefault(path, []).append((line, gone))
            for fd, named in list(fds.items()):
                if named == path:
                    fds[fd] = gone
            for table in (written, syncs, punched, created):
                if path in table:
                    table[gone] = table.pop(path)
            if existing is not None:
                existing.discard(path)
        for entry, exit_, pid, name, args, result in calls(trace_path):
            if result == "?" or result.startswith("-"):
                continue  # failed or unfinished: nothing happened
            parts = split_args(args)
            if name in ("openat", "open", "creat"):
                path_arg = parts[1] if name == "openat" else parts[0]
                path, _ = string_arg(path_arg)
                path = os.path.realpath(path.decode(errors="replace"))
                fds[int(result)] = path
                flags = parts[2] if name == "openat" else (parts[1] if name == "open" else "O_CREAT")
                if path.startswith(data_dir) and "O_CREAT" in flags and existing is not None \
                        and path not in existing:
                    existing.add(path)
                    created.setdefault(path, []).append(exit_)
                continue
            if name in UNLINKS:
                path, _ = string_arg(parts[1] if name == "unlinkat" else parts[0])
                path = os.path.realpath(path.decode(errors="replace"))
                if path.startswith(data_dir):
                    removals.append((entry, path, 0, EVERYTHING, "unlink"))
                    retire(path, entry)
                continue
            if name in RENAMES:
                strings = [a for a in parts if a.startswith('"')]
                if len(strings) >= 2:
                    source = os.path.realpath(string_arg(strings[0])[0].decode(errors="replace"))
                    target = os.path.realpath(string_arg(strings[1])[0].decode(errors="replace"))
                    if source.startswith(data_dir) and name.startswith("rename"):
                        removals.append((entry, source, 0, EVERYTHING, "rename"))
                        retire(source, entry)
                    if target.startswith(data_dir):
                        if target in (existing or set()):
                            removals.append((entry, target, 0, EVERYTHING, "replaced by a rename"))
                            retire(target, entry)
                        if existing is not None:
                            existing.add(target)
                            created.setdefault(target, []).append(exit_)
                continue
            if name in ("dup", "dup2", "dup3"):
                old = int(parts[0])
                if old in fds:
                    fds[int(result)] = fds[old]
                continue
            if name == "close":
                fds.pop(int(parts[0]), None)
                continue
            if not parts or not parts[0].lstrip("-").isdigit():
                continue
            path = fds.get(int(parts[0]))
            if path is None:
                continue
            if name in SYNCS and path == data_folder:
                folder_syncs.append((entry, exit_))
                continue
            if name in SYNCS and path == wal_path:
                wal_syncs.append((entry, exit_))
                continue
            relevant = path in (index_path, wal_path) or path.startswith(data_dir)
            if not relevant:
                continue
            if name in WRITES and name != "pwrite64":
                raise TraceError("line %d: %s on %s: only pwrite64 is understood" % (entry + 1, name, path))
            if name == "pwrite64":
                count, offset = int(result), int(parts[3])
                if path.startswith(data_dir):
                    written.setdefault(path, []).append((exit_, offset, offset + count))
                    scratch_writes += 1
                    continue
                data, truncated = string_arg(parts[1])
                if truncated or len(data) < count:
                    raise TraceError("line %d: a write to %s is cut short in the trace: raise strace -s" % (
                        entry + 1, os.path.basename(path)))
                data = data[:count]
                if path == index_path:
                    apply_write(database, offset, data)
                    continue
                apply_write(wal, offset, data)
                if offset < 32:
                    header_write = entry
                    page_size = struct.unpack(">I", bytes(wal[8:12]))[0] if len(wal) >= 12 else None
                if page_size and offset + count > 32:
                    frame_size = 24 + page_size
                    first_byte = max(offset, 32)
                    for frame in range((first_byte - 32) // frame_size, (offset + count - 33) // frame_size + 1):
                        frame_writes[frame] = entry
                salts, found = wal_commits(bytes(wal))
                previous = -1
                for frame, end in found:
                    if (salts, frame) not in seen:
                        seen.add((salts, frame))
                        # The commit began with the first write of its frames
                        # (and of the WAL's header, for a generation's first).
                        lines = [frame_writes.get(f, entry) for f in range(previous + 1, frame + 1)]
                        if previous < 0 and header_write is not None:
                            lines.append(header_write)
                        state = committed_ranges(bytes(database), bytes(wal[:end]), work)
                        commits.append((min(lines), exit_, state))
                    previous = frame
                continue
            if name in SYNCS:
                if path.startswith(data_dir):
                    syncs.setdefault(path, []).append((entry, exit_))
                continue
            if name == "ftruncate":
                length = int(parts[1])
                if path == index_path:
                    del database[length:]
                elif path == wal_path:
                    del wal[length:]
                    if length == 0:
                        frame_writes.clear()
                else:
                    punched.setdefault(path, []).append((entry, length, EVERYTHING))
                    removals.append((entry, path, length, EVERYTHING, "ftruncate"))
                continue
            if name == "fallocate" and "PUNCH_HOLE" in parts[1] and path.startswith(data_dir):
                offset, length = int(parts[2]), int(parts[3])
                punched.setdefault(path, []).append((entry, offset, offset + length))
                removals.append((entry, path, offset, offset + length, "punched hole"))
                continue

        # Each commit against the writes synced before it began.
        episodes_checked, partial, unnamed = set(), 0, set()
        for number, (started, visible, state) in enumerate(commits):
            for key, ranges in state.items():
                new = ranges.minus(baseline.get(key, RangeList()))
                if not new.ranges:
                    continue
                episodes_checked.add(key)
                # The file that had the name when the commit began.
                path = os.path.realpath(data_dir + key)
                path = next((gone for line, gone in retired.get(path, []) if line > started), path)
                done = [s for s in syncs.get(path, []) if s[1] < started]
                if not done:
                    violations.append("commit %d (trace line %d) lists %s of %s, never fdatasync'ed before it" % (
                        number + 1, started + 1, new.ranges, key))
                    continue
                births = [line for line in created.get(path, []) if line < started]
                if births and (path, max(births)) not in unnamed:
                    born = max(births)
                    if not any(entry_ > born and exit_ < started for entry_, exit_ in folder_syncs):
                        unnamed.add((path, born))  # said once per file
                        violations.append(
                            "commit %d (trace line %d) lists %s of %s, whose file was created at line %d, but the "
                            "data folder was not fsync'ed between them" % (
                                number + 1, started + 1, new.ranges, key, born + 1))
                sync_entry = max(s[0] for s in done)
                durable = RangeList()
                events = [(line, "w", lo, hi) for line, lo, hi in written.get(path, []) if line < sync_entry]
                events += [(line, "p", lo, hi) for line, lo, hi in punched.get(path, []) if line < sync_entry]
                for line, kind, lo, hi in sorted(events):
                    if kind == "w":
                        durable.add(lo, hi)
                    else:
                        durable.remove(lo, hi)
                for lower, upper in new.ranges:
                    if not durable.covers(lower, upper):
                        violations.append(
                            "commit %d (trace line %d) lists %d-%d of %s, but before the fdatasync that ended "
                            "before it (line %d) only %s had been written" % (
                                number + 1, started + 1, lower, upper, key, sync_entry + 1, durable.ranges))
            if any(len(r.ranges) > 0 for r in state.values()):
                partial += 1
        # Each removal of scratch bytes against the commits in force.
        durable_at = []
        for started, visible, state in commits:
            after = [exit_ for entry_, exit_ in wal_syncs if entry_ > visible]
            durable_at.append(min(after) if after else None)
        removed = []
        for line, path, lower, upper, kind in removals:
            key = os.path.basename(path)
            durable = [n for n, at in enumerate(durable_at) if at is not None and at < line]
            in_force = [("the last durable commit %d" % (durable[-1] + 1), commits[durable[-1]][2])] if durable \
                else [("the index as the trace began", baseline)]
            in_force += [("commit %d, not yet durable" % (n + 1), commits[n][2]) for n, at in enumerate(durable_at)
                         if commits[n][0] < line and (at is None or at > line)]
            for what, state in in_force:
                listed = state.get(key, RangeList()).overlap(lower, upper)
                if listed:
                    violations.append("%s of %s at trace line %d removed %s while %s listed them" % (
                        kind, key, line + 1, listed, what))
            removed.append({"key": key, "kind": kind, "line": line + 1})
        final = commits[-1][2] if commits else baseline
        summary = {
            "commits": len(commits),
            "commits_with_ranges": partial,
            "scratch_writes": scratch_writes,
            "scratch_syncs": sum(len(s) for s in syncs.values()),
            "created": sum(len(c) for c in created.values()),
            "folder_syncs": len(folder_syncs),
            "wal_syncs": len(wal_syncs),
            "removals": removed,
            "episodes": sorted(episodes_checked),
            "per_commit": [{k: v.ranges for k, v in state.items()} for _, _, state in commits],
            "final": {k: v.ranges for k, v in final.items()},
            "violations": violations,
        }
        for line in violations:
            print("violation: " + line)
        print(json.dumps(summary))
        return 1 if violations else 0
    except TraceError as error:
        print("check_commit_order: %s" % error)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
