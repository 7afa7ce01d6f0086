"""One run of bench/run: the build, the test file, the origin and its feed, the rounds of
reps, the report, and the cleanup (also after an error, Ctrl-C or SIGTERM)."""
import argparse, dataclasses, hashlib, os, shutil, signal, subprocess, sys, tempfile, time

from benchlib import BENCH, PROCS, REPO, MiB, mounted, run, stop
from benchlib.readpath import CONTESTANTS, FEED, FILE
from benchlib.readpath.contestants import MOUNTS, make_contestants
from benchlib.readpath.cpu import cpu_snapshot, foreign_pct, wait_quiet
from benchlib.readpath.measure import bench_baseline, bench_fuse
from benchlib.readpath.origin import Origin
from benchlib.readpath.report import figures, report


@dataclasses.dataclass
class Ctx:
    """What one run's steps share."""
    args: argparse.Namespace
    podfs: str | None = None  # the podfs binary measured
    podfs_b: str | None = None  # a second binary, measured beside it (--podfs-b)
    work: str | None = None  # this run's /tmp/podfs-bench-* folder
    local: str | None = None  # the test file on the local disk
    size: int = 0  # its bytes
    sha: str = ""  # its sha256
    passthru: str | None = None  # the C passthrough baseline, built
    origin: "Origin | None" = None
    reps: list = dataclasses.field(default_factory=list)  # the reps of the current round


def build(ctx, args):
    if args.podfs:
        return os.path.realpath(args.podfs)
    print("== building podfs (release)", file=sys.stderr)
    for attempt in range(args.build_retries + 1):
        p = subprocess.run(["swift", "build", "-c", "release", "--product", "podfs"], cwd=REPO,
                           capture_output=True, text=True)
        if p.returncode == 0:
            break
        print(p.stdout[-3000:] + p.stderr[-2000:], file=sys.stderr)
        if attempt == args.build_retries:
            raise RuntimeError("swift build failed")
        print("  build failed; retrying in 60 s", file=sys.stderr)
        time.sleep(60)
    binpath = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.strip()
    return f"{binpath}/podfs"


def make_file(ctx):
    os.makedirs(f"{ctx.work}/www")
    h = hashlib.sha256()
    with open(ctx.local, "wb") as f:
        for _ in range(ctx.args.size_mib):
            b = os.urandom(MiB)
            h.update(b)
            f.write(b)
        f.flush()
        os.fsync(f.fileno())  # no writeback competing with the first measurements
    with open(ctx.local, "rb") as f:  # and every byte in the page cache (origin and local baseline)
        while f.read(MiB):
            pass
    ctx.sha = h.hexdigest()
    ctx.size = ctx.args.size_mib * MiB


def write_feed(ctx):
    """A one-item RSS 2.0 feed for the test file, as ../shared/bench/contestants/podfs.sh writes it."""
    u = ctx.origin.url
    xml = f"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>
<title>podfs bench</title><link>{u}</link><description>bench/run</description>
<item><title>Bench episode</title><guid isPermaLink="false">bench-{FILE}</guid>
<pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate>
<enclosure url="{u}{FILE}" length="{ctx.size}" type="audio/mpeg"/></item>
</channel></rss>
"""
    with open(f"{ctx.work}/www/{FEED}", "w") as f:
        f.write(xml)


def main_run(args):
    """One whole run; its exit status (1 on a wrong byte or a contestant that failed)."""
    if os.geteuid() != 0:
        sys.exit("bench/run needs root (FUSE mounts): sudo bench/run ...")
    names = list(CONTESTANTS) if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONTESTANTS]
    if unknown:
        sys.exit(f"unknown contestant(s) {unknown}; choose from {','.join(CONTESTANTS)}")
    if args.podfs_b:
        # A second podfs binary, measured in the same rounds right after the
        # first: an A/B of two builds side by side.
        names.insert(names.index("podfs") + 1 if "podfs" in names else len(names), "podfs-b")
    skipped = []
    for n, tool in (("rclone", "rclone"), ("httpdirfs", "httpdirfs"), ("httpdirfs-tuned", "httpdirfs")):
        if n in names and not shutil.which(tool):
            names.remove(n)
            skipped.append(f"{n} (not installed)")
    t_start = time.time()
    ctx, work = Ctx(args), None
    os.umask(0o022)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        ctx.podfs = build(ctx, args) if "podfs" in names else None
        ctx.podfs_b = os.path.realpath(args.podfs_b) if args.podfs_b else None
        work = ctx.work = tempfile.mkdtemp(prefix="podfs-bench-", dir="/tmp")
        os.chmod(work, 0o755)  # nginx workers run unprivileged
        os.makedirs(f"{work}/logs")
        ctx.local = f"{work}/www/{FILE}"
        make_file(ctx)
        if "passthru" in names:
            rc, out, err = run(["bash", "-c", f'cc -O2 -Wall "{BENCH}/passthru.c" $(pkg-config --cflags --libs fuse3)'
                                f' -o "{work}/passthru"'])
            if rc:
                raise RuntimeError("building passthru.c failed: " + err)
            ctx.passthru = f"{work}/passthru"
        ctx.origin = Origin(work, args.delay_ms, args.python_origin)
        if ctx.origin.kind != "nginx" and not args.python_origin:
            # origin.py is slower than nginx and uneven (curl's cold rate
            # varied 1.9-5.3 GB/s over three reps), so ratios against curl
            # are not those of the tables measured with nginx.
            print("bench/run: WARNING: nginx is not installed; the origin is origin.py, whose figures are not "
                  "comparable with nginx's (apt-get install nginx-light)", file=sys.stderr, flush=True)
        write_feed(ctx)
        fuse = make_contestants(ctx, names)
        if args.python_origin or ctx.origin.kind != "nginx":
            for n in ("rclone", "httpdirfs", "httpdirfs-tuned"):  # need a directory listing
                if n in fuse:
                    del fuse[n]
                    names.remove(n)
                    skipped.append(f"{n} (needs nginx's directory listing)")
        results, F, notes = {}, {}, []
        # Interleaved (the default): every contestant's rep 1, then every
        # rep 2, ..., so a baseline and podfs are measured minutes apart at
        # most, and per-rep ratios compare runs made side by side.
        rounds = [[rep] for rep in range(args.reps)] if not args.no_interleave else [list(range(args.reps))]
        for reps in rounds:
            ctx.reps = reps
            for name in names:
                if name in results and results[name] is None:
                    continue
                busy_before = wait_quiet(ctx)
                print(f"== {name}" + (f" (rep {reps[0] + 1} of {args.reps})" if len(rounds) > 1 else ""),
                      file=sys.stderr)
                a = cpu_snapshot()
                try:
                    r = bench_fuse(ctx, fuse[name]) if name in fuse else bench_baseline(ctx, name)
                except RuntimeError as e:
                    print(f"  {name} failed: {e}", file=sys.stderr)
                    results[name] = None
                    notes.append(f"{name}: failed: {e}")
                    continue
                b = cpu_snapshot()
                results[name] = merge(results.get(name), r)
                notes.append(f"{name}" + (f" rep {reps[0] + 1}" if len(rounds) > 1 else "")
                             + f": {b[0] - a[0]:.0f} s, other processes used {foreign_pct(a, b):.0f}% of the CPU"
                             f" (before: {busy_before:.0f}%)")
        for name in names:
            if results.get(name) is not None:
                F[name] = figures(results[name], ctx.size)
        text = report(ctx, args, names, results, F, notes, skipped, t_start)
        print(text)
        with open(args.out, "w") as f:
            f.write(text)
        print(f"(written to {os.path.relpath(args.out)})", file=sys.stderr)
        bad = [n for n in F if not F[n]["correct"]]
        return 1 if bad or any(v is None for v in results.values()) else 0
    finally:
        cleanup(work, args.keep_work)


def merge(into, r):
    """One contestant's results over reps: lists are joined, the rest kept."""
    if into is None:
        return r
    for k, v in r.items():
        if isinstance(v, list):
            into.setdefault(k, []).extend(v)
    return into


def cleanup(work, keep):
    """Undo everything this run mounted and started (also after an error or Ctrl-C), and
    remove its work dir unless `keep` (--keep-work)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for m in reversed(MOUNTS):
        if mounted(m):
            subprocess.run(["fusermount3", "-u", "-z", m], stderr=subprocess.DEVNULL)
    for p in reversed(PROCS):  # daemons exit on unmount; readers, proxy and origin get SIGTERM
        stop(p)
    if work and not keep:
        shutil.rmtree(work, ignore_errors=True)
    elif work:
        print(f"kept {work}", file=sys.stderr)
    left = [m for m in MOUNTS if mounted(m)]
    if left:
        print(f"warning: still mounted: {left}", file=sys.stderr)


def on_signal(sig, _frame):
    raise SystemExit(128 + sig)
