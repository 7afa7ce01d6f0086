#!/usr/bin/env python3
"""podfs stress reader: concurrent random and sequential reads, every byte checked.

Python 3 standard library only. Used by Tests/IntegrationTests/StressTests.swift
(short run) and scripts/stress (long run).

    python3 Tests/Stress/stress.py --duration SECONDS --seed N --readers N
        --file MOUNTED_PATH ORIGIN_FILE URL_PATH [--file ...]
        [--origin http://127.0.0.1:PORT] [--drop-every SECONDS] [--direct SHARE]
        [--kill-every SECONDS --pid-file PATH --remount COMMAND]

Each reader thread, until the deadline, opens a random episode (a third of the
time with O_DIRECT, so podfs and not the kernel's page cache answers) and
does a short session of random preads or a sequential run of reads, comparing
every byte with the origin's own file. With --origin, a fault thread keeps
arming the origin's "drop" fault (a connection closed after a random number
of body bytes, for a few requests) on random episodes, so reads cross
dropped connections that podfs has to resume.

With --kill-every, a killer thread SIGKILLs the daemon (its PID is in
--pid-file) at random moments about that often, runs --remount (a shell
command that mounts again and prints "pid N"), and writes the new PID back.
A read or open that fails (or, buffered, returns only the pages the kernel
already had) while the daemon is dead or being remounted, or on a file opened
before a kill, is counted as "interrupted", not as an error; a wrong byte is
a mismatch whenever it happens.

Prints one line (and exits 0 when mismatches == 0 and errors == 0):
  stress: seconds=S readers=N episodes=E reads=R bytes=B direct_reads=D
          errors=X mismatches=M drops_armed=A drops_fired=F
          origin_requests=Q origin_bytes=OB kills=K interrupted=I
followed by detail lines ("error: ...", "mismatch: ...") for the first few.
"""

import argparse
import errno
import json
import mmap
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

KIB = 1024
MIB = 1024 * KIB
PAGE = 4096


class Totals:
    """Counters shared by the readers, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reads = 0
        self.bytes = 0
        self.direct_reads = 0
        self.errors = 0
        self.mismatches = 0
        self.details = []
        self.start = time.monotonic()
        self.interrupted = 0
        # Kills so far, and whether the daemon is dead or being remounted
        # (with the time the last remount finished).
        self.kills = 0
        self.down = False
        self.up_since = 0.0

    def epoch(self):
        with self.lock:
            return self.kills

    def excused(self, opened_epoch):
        """Whether a failure now may be a kill's doing: the daemon is down,
        came back less than a second ago, or died since the file was opened."""
        with self.lock:
            if self.down or self.kills != opened_epoch or time.monotonic() - self.up_since < 1.0:
                self.interrupted += 1
                return True
            return False

    def add(self, reads, nbytes, direct):
        with self.lock:
            self.reads += reads
            self.bytes += nbytes
            if direct:
                self.direct_reads += reads

    def problem(self, kind, text):
        with self.lock:
            if kind == "error":
                self.errors += 1
            else:
                self.mismatches += 1
            if len(self.details) < 20:
                self.details.append("%s: %.1fs: %s" % (kind, time.monotonic() - self.start, text))


class Episode:
    def __init__(self, mounted, origin_file, url_path):
        self.mounted = mounted
        self.url_path = url_path
        with open(origin_file, "rb") as f:
            self.data = f.read()
        self.size = len(self.data)


def first_difference(got, want):
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return i
    return min(len(got), len(want))


def check(totals, episode, offset, got, direct):
    want = episode.data[offset:offset + len(got)]
    if got != want:
        at = offset + first_difference(got, want)
        totals.problem("mismatch", "%s: %d bytes at %d differ from byte %d on (%s)" % (
            episode.mounted, len(got), offset, at, "O_DIRECT" if direct else "buffered"))
        return False
    return True


def read_at(fd, buffer, offset, length, direct):
    """One pread of `length` bytes; with O_DIRECT into the page-aligned buffer."""
    if direct:
        view = memoryview(buffer)[:length]
        n = os.preadv(fd, [view], offset)
        return bytes(view[:n])
    return os.pread(fd, length, offset)


def session(rng, totals, episode, buffer, direct_share):
    """One open of one episode: random preads or a sequential run."""
    direct = rng.random() < direct_share
    flags = os.O_RDONLY | (os.O_DIRECT if direct else 0)
    opened_epoch = totals.epoch()
    try:
        fd = os.open(episode.mounted, flags)
    except OSError as e:
        if not totals.excused(opened_epoch):
            totals.problem("error", "open %s: %s" % (episode.mounted, e))
        else:
            time.sleep(0.05)
        return
    reads = nbytes = 0
    where = "first read"
    try:
        size = episode.size
        if rng.random() < 0.5:
            # Random preads anywhere (with O_DIRECT: page-aligned).
            for _ in range(rng.randint(4, 24)):
                length = rng.choice((1, 100, 4 * KIB, 64 * KIB, 200 * KIB, 1 * MIB))
                offset = rng.randrange(0, size)
                if direct:
                    offset -= offset % PAGE
                    length = max(PAGE, length - length % PAGE)
                length = min(length, len(buffer))
                where = "pread of %d at %d" % (length, offset)
                got = read_at(fd, buffer, offset, length, direct)
                expected = max(0, min(length, size - offset))
                reads += 1
                nbytes += len(got)
                if not check(totals, episode, offset, got, direct):
                    return
                if len(got) != expected:
                    # A buffered read cut by a kill returns the pages it
                    # already had (the bytes were checked above).
                    if totals.excused(opened_epoch):
                        return
                    totals.problem("mismatch", "%s: short read at %d: %d of %d bytes" % (
                        episode.mounted, offset, len(got), expected))
                    return
        else:
            # A sequential run from a random place (or the start), like a player.
            block = rng.choice((4 * KIB, 64 * KIB, 128 * KIB, 1 * MIB))
            offset = 0 if rng.random() < 0.2 else rng.randrange(0, size)
            if direct:
                offset -= offset % PAGE
            end = min(size, offset + rng.choice((1, 4, 8, 16)) * MIB)
            while offset < end:
                where = "sequential read of %d at %d" % (block, offset)
                got = read_at(fd, buffer, offset, min(block, len(buffer)), direct)
                reads += 1
                nbytes += len(got)
                if not got:
                    if totals.excused(opened_epoch):
                        return
                    totals.problem("mismatch", "%s: end of file at %d of %d" % (episode.mounted, offset, size))
                    return
                if not check(totals, episode, offset, got, direct):
                    return
                offset += len(got)
    except OSError as e:
        if not totals.excused(opened_epoch):
            totals.problem("error", "%s: %s (%s): %s (errno %s)" % (
                episode.mounted, where, "O_DIRECT" if direct else "buffered", e,
                errno.errorcode.get(e.errno, e.errno)))
    finally:
        totals.add(reads, nbytes, direct)
        try:
            os.close(fd)
        except OSError as e:
            if not totals.excused(opened_epoch):
                totals.problem("error", "close %s: %s" % (episode.mounted, e))


def reader(seed, deadline, episodes, totals, direct_share):
    rng = random.Random(seed)
    buffer = mmap.mmap(-1, 1 * MIB)  # page-aligned, for O_DIRECT
    try:
        while time.monotonic() < deadline:
            session(rng, totals, rng.choice(episodes), buffer, direct_share)
    finally:
        buffer.close()


def origin_call(base, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method="POST" if data is not None else "GET")
    with urllib.request.urlopen(req, timeout=10) as response:
        return json.loads(response.read().decode() or "{}")


def arm_first_drops(rng, base, episodes, armed):
    """A drop early in the first response for every episode, before any read."""
    drops = [{"path": e.url_path, "after_bytes": rng.randrange(1000, 60000), "count": 1} for e in episodes]
    armed[0] += len(drops)
    origin_call(base, "/_origin/config", {"drop": drops})


def fault_injector(rng, base, episodes, deadline, every, stop, armed):
    """Keeps arming counted drops at random points of random episodes."""
    while not stop.wait(every) and time.monotonic() < deadline:
        drops = []
        for episode in rng.sample(episodes, k=min(len(episodes), rng.randint(1, 2))):
            count = rng.randint(1, 3)
            drops.append({"path": episode.url_path, "after_bytes": rng.randrange(0, 512 * KIB), "count": count})
            armed[0] += count
        try:
            origin_call(base, "/_origin/config", {"drop": drops})
        except OSError as e:
            print("stress: cannot arm a drop at the origin: %s" % e, file=sys.stderr)


def killer(rng, totals, deadline, every, pid_file, remount, stop):
    """SIGKILLs the daemon at random moments and mounts again."""
    while not stop.wait(rng.uniform(0.5, 1.5) * every) and time.monotonic() < deadline - 1:
        with open(pid_file) as f:
            pid = int(f.read().strip())
        with totals.lock:
            totals.down = True
            totals.kills += 1
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        # Wait until it is gone (its cache lock is released with it).
        for _ in range(500):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.01)
        out = subprocess.run(remount, shell=True, capture_output=True, text=True, timeout=60)
        match = re.search(r"pid (\d+)", out.stdout + out.stderr)
        if out.returncode != 0 or not match:
            with totals.lock:
                totals.down = False
            totals.problem("error", "remount after kill %d failed (%d): %s" % (
                totals.kills, out.returncode, (out.stdout + out.stderr).strip()[-400:]))
            stop.set()
            return
        with open(pid_file, "w") as f:
            f.write(match.group(1) + "\n")
        with totals.lock:
            totals.down = False
            totals.up_since = time.monotonic()


def main(argv=None):
    ap = argparse.ArgumentParser(description="podfs stress reader")
    ap.add_argument("--duration", type=float, required=True, help="seconds of reading")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--file", nargs=3, action="append", required=True,
                    metavar=("MOUNTED", "ORIGIN_FILE", "URL_PATH"))
    ap.add_argument("--origin", help="the origin's base URL, to inject drops and read its stats")
    ap.add_argument("--direct", type=float, default=1 / 3, help="share of opens with O_DIRECT")
    ap.add_argument("--no-drops", action="store_true", help="read the origin's stats but inject no fault")
    ap.add_argument("--drop-every", type=float, default=0.5, help="seconds between drop faults")
    ap.add_argument("--kill-every", type=float, help="SIGKILL the daemon about this often (seconds)")
    ap.add_argument("--pid-file", help="with --kill-every: holds the daemon's PID (rewritten on remount)")
    ap.add_argument("--remount", help="with --kill-every: shell command that mounts again, printing 'pid N'")
    args = ap.parse_args(argv)
    if args.kill_every and not (args.pid_file and args.remount):
        ap.error("--kill-every needs --pid-file and --remount")

    episodes = [Episode(*f) for f in args.file]
    totals = Totals()
    start = time.monotonic()
    deadline = start + args.duration
    stop = threading.Event()
    armed = [0]
    before = origin_call(args.origin, "/_origin/stats") if args.origin else None
    injector = None
    if args.origin and not args.no_drops:
        arm_first_drops(random.Random(args.seed), args.origin, episodes, armed)
        injector = threading.Thread(
            target=fault_injector,
            args=(random.Random(args.seed ^ 0x5EED), args.origin, episodes, deadline, args.drop_every, stop, armed))
        injector.start()
    threads = [threading.Thread(target=reader, args=(args.seed * 1000 + i, deadline, episodes, totals, args.direct))
               for i in range(args.readers)]
    for t in threads:
        t.start()
    kill_thread = None
    if args.kill_every:
        kill_thread = threading.Thread(
            target=killer, args=(random.Random(args.seed ^ 0xD1E), totals, deadline, args.kill_every,
                                 args.pid_file, args.remount, stop))
        kill_thread.start()
    for t in threads:
        t.join()
    stop.set()
    if kill_thread is not None:
        kill_thread.join()
    requests = obytes = fired = -1
    if injector is not None:
        injector.join()
    if args.origin:
        origin_call(args.origin, "/_origin/config", {"drop": None})
        after = origin_call(args.origin, "/_origin/stats")
        requests = after["requests"] - before["requests"]
        obytes = after["bytes"] - before["bytes"]
        fired = after.get("drops", 0) - before.get("drops", 0)
    elapsed = time.monotonic() - start
    print("stress: seconds=%.1f readers=%d episodes=%d reads=%d bytes=%d direct_reads=%d errors=%d "
          "mismatches=%d drops_armed=%d drops_fired=%d origin_requests=%d origin_bytes=%d kills=%d "
          "interrupted=%d" % (
              elapsed, args.readers, len(episodes), totals.reads, totals.bytes, totals.direct_reads,
              totals.errors, totals.mismatches, armed[0], fired, requests, obytes, totals.kills,
              totals.interrupted))
    for line in totals.details:
        print(line)
    sys.stdout.flush()
    return 0 if totals.errors == 0 and totals.mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
