"""FUSE contestants: foreground daemons (their PID is the daemon's), unmounted with
fusermount3, and every mount point this run mounted, for the cleanup."""
import os, re, shutil, subprocess, sys, time

from benchlib import mounted, spawn, stop, tree
from benchlib.readpath import FEED, FILE, PODFS_REL

MOUNTS = []  # every mount point mounted, so that cleanup (also on error and Ctrl-C) undoes it


class Fuse:
    def __init__(self, ctx, name, argv, rel, local_only=False):
        self.ctx, self.name, self.argv_fn, self.local_only = ctx, name, argv, local_only
        self.mnt, self.cache = f"{ctx.work}/mnt/{name}", f"{ctx.work}/cache/{name}"
        self.path, self.proc, self.n = f"{self.mnt}/{rel}", None, 0
        os.makedirs(self.mnt, exist_ok=True)

    def mount(self, fresh):
        if fresh:
            shutil.rmtree(self.cache, ignore_errors=True)
        os.makedirs(self.cache, exist_ok=True)
        self.n += 1
        self.logfile = f"{self.ctx.work}/logs/{self.name}-{self.n}.log"
        self.argv = self.argv_fn(self)
        with open(self.logfile, "w") as log:
            self.proc = spawn(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        MOUNTS.append(self.mnt)
        end = time.time() + 60
        while not (mounted(self.mnt) and os.path.exists(self.path)):
            if self.proc.poll() is not None or time.time() > end:
                self.unmount()
                raise RuntimeError(f"{self.name} did not mount: {self.log_tail()}")
            time.sleep(0.01)

    def log_tail(self):
        try:
            with open(self.logfile) as f:
                return " | ".join(f.read().strip().splitlines()[-3:])
        except OSError:
            return ""

    def unmount(self):
        for _ in range(50):
            if not mounted(self.mnt):
                break
            if subprocess.run(["fusermount3", "-u", self.mnt], stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.1)  # busy: a reader is still closing
        else:
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], stderr=subprocess.DEVNULL)
        try:
            self.proc.wait(30)  # podfs commits its index before it exits
        except subprocess.TimeoutExpired:
            print(f"  warning: {self.name} did not exit after unmount; stopping it", file=sys.stderr)
            stop(self.proc)
        if mounted(self.mnt):
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], stderr=subprocess.DEVNULL)

    def rss_mib(self):
        total = 0
        for p in tree(self.proc.pid):
            try:
                with open(f"/proc/{p}/status") as f:
                    m = re.search(r"VmHWM:\s+(\d+)", f.read())
                total += int(m.group(1)) if m else 0
            except OSError:
                pass
        return total / 1024


def make_contestants(ctx, names):
    u = ctx.origin.url
    defs = {
        "passthru": (lambda c: [ctx.passthru, f"{ctx.work}/www", c.mnt, "-f", "-o", "ro"], FILE, True),
        "podfs": (lambda c: [ctx.podfs, "mount", "-f", "--cache-dir", c.cache, u + FEED, c.mnt], PODFS_REL, False),
        "podfs-b": (lambda c: [ctx.podfs_b, "mount", "-f", "--cache-dir", c.cache, u + FEED, c.mnt], PODFS_REL, False),
        "rclone": (lambda c: ["rclone", "mount", ":http:", c.mnt, "--http-url", u, "--read-only",
                              "--vfs-cache-mode", "full", "--cache-dir", c.cache, "--vfs-read-ahead", "128M",
                              "--attr-timeout", "1h", "--dir-cache-time", "1h"], FILE, False),
        "httpdirfs": (lambda c: ["httpdirfs", "-f", "--cache", "--cache-location", c.cache, u, c.mnt], FILE, False),
        "httpdirfs-tuned": (lambda c: ["httpdirfs", "-f", "--cache", "--cache-location", c.cache,
                                       "--dl-seg-size", "32", "-o", "kernel_cache", u, c.mnt], FILE, False),
    }
    return {n: Fuse(ctx, n, *defs[n]) for n in names if n in defs}
