"""Measurements: one contestant's reps, each from an empty cache, with the origin's
traffic split by phase."""
import http.client, json, os, random, re, select, shlex, subprocess, sys, time

from benchlib import BENCH, MiB, run, spawn, stop
from benchlib.readpath import FILE
from benchlib.readpath.cpu import machine_busy


class Session:
    """One mount (or none, for the baselines). Origin traffic is split by phase."""

    def __init__(self, ctx, fs=None, fresh=True):
        self.ctx, self.fs, self.fresh, self.marks = ctx, fs, fresh, []

    def __enter__(self):
        if self.fs:
            self.fs.mount(self.fresh)
        self.mark("setup")
        return self

    def mark(self, label):
        self.marks.append((label, time.time(), self.ctx.origin.snapshot()))
        time.sleep(0.005)  # nginx logs with ms resolution: keep requests clear of the boundary

    def phase(self, label, fn, *args):
        self.mark(label)
        return fn(*args)

    def __exit__(self, *exc):
        t_end = time.time()
        if self.fs:
            self.fs.unmount()
        self.ctx.origin.quiesce()
        self.traffic = self.ctx.origin.split(self.marks + [("end", t_end, self.ctx.origin.snapshot())])
        return False


def read_cmd(target):
    if target.startswith("http"):
        return ["curl", "-sS", "-o", "/dev/null", "-w", "%{size_download}\n", target]
    return ["dd", f"if={target}", "of=/dev/null", "bs=1M"]


def seq_read(ctx, target, n=1):
    """n whole-file readers started together; wall seconds, or None on error or short read."""
    t0 = time.perf_counter()
    procs = [spawn(read_cmd(target), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    ok = True
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1, ctx.args.timeout - (time.perf_counter() - t0)))
        except subprocess.TimeoutExpired:
            for q in procs:
                stop(q, 2)
            print(f"  timeout reading {target}", file=sys.stderr)
            return None
        text = out.strip() if target.startswith("http") else (err.strip().splitlines() or [""])[-1]
        got = re.match(r"(\d+)", text)  # curl: size_download; dd: "N bytes (...) copied, ..."
        if p.returncode != 0 or not got or int(got.group(1)) != ctx.size:
            print(f"  short or failed read of {target}: rc={p.returncode} {(out + err).strip()[-200:]}",
                  file=sys.stderr)
            ok = False
    wall = time.perf_counter() - t0
    return wall if ok else None


def cold_phase(ctx, s, target, r):
    """(a): one whole read; its wall seconds and the CPU the whole machine used meanwhile
    (origin, reader and daemon: what one cold read costs, whoever pays it)."""
    busy = machine_busy()
    r["cold_s"].append(s.phase("a", seq_read, ctx, target))
    r["cold_cpu"].append(machine_busy() - busy)


def sha_check(ctx, target, r):
    """sha256 of what target returns now (one whole read) vs the original."""
    if target.startswith("http"):
        rc, out, _ = run(["bash", "-c", 'curl -sS "$0" | sha256sum', target], ctx.args.timeout)
    else:
        rc, out, _ = run(["sha256sum", target], ctx.args.timeout)
    good = rc == 0 and out.split()[:1] == [ctx.sha]
    r["sha_ok"].append(good)
    if not good:
        print(f"  SHA256 MISMATCH reading {target}", file=sys.stderr)


def probe(ctx, mode, target, offsets=()):
    """Child process (bench/run _probe): timed 4 KiB reads, each checked against the original.
    It opens first, says 'ready', and reads after 'go', so the open's traffic is its own phase."""
    cmd = [sys.executable, f"{BENCH}/run", "_probe", mode, target, ctx.local,
           ",".join(map(str, offsets)) or "-", ctx.origin.ping]
    p = spawn(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        r, _, _ = select.select([p.stdout], [], [], ctx.args.timeout)
        if not r or p.stdout.readline().strip() != "ready":
            raise RuntimeError("probe did not open " + target)
        return p
    except BaseException:
        stop(p, 2)
        raise


def probe_finish(ctx, p):
    try:
        p.stdin.write("go\n")
        p.stdin.flush()
        out, err = p.communicate(timeout=ctx.args.timeout)
        return json.loads(out)
    except (subprocess.TimeoutExpired, ValueError, BrokenPipeError) as e:
        stop(p, 2)
        print(f"  probe failed: {e}", file=sys.stderr)
        return None


def probe_child(mode, target, local, offsets, ping):
    """The probe itself, in its own process: bench/run _probe MODE TARGET LOCAL OFFSETS PING."""
    lfd = os.open(local, os.O_RDONLY)
    offsets = [] if offsets == "-" else [int(o) for o in offsets.split(",")]
    if target.startswith("http"):
        host, port, path = re.match(r"http://([^:/]+):(\d+)(/.*)", target).groups()
        conn = http.client.HTTPConnection(host, int(port))
        conn.request("GET", ping)  # connected and warm, as a daemon's connection would be
        conn.getresponse().read()

        def read(off):
            conn.request("GET", path, headers={"Range": f"bytes={off}-{off + 4095}"})
            resp = conn.getresponse()
            return resp.read()
        opened = None
    else:
        t = time.perf_counter()
        fd = os.open(target, os.O_RDONLY) if mode == "rand" else None
        opened = (time.perf_counter() - t) * 1000

        def read(off):
            return os.pread(fd, 4096, off)
    print("ready", flush=True)
    sys.stdin.readline()
    lat, bad, out = [], 0, {}
    if mode == "ttfb":  # open + first 4 KiB of a cold file
        t = time.perf_counter()
        fd = os.open(target, os.O_RDONLY)
        t1 = time.perf_counter()
        data = os.pread(fd, 4096, 0)
        t2 = time.perf_counter()
        out = {"open_ms": (t1 - t) * 1000, "ttfb_ms": (t2 - t) * 1000, "bad": int(data != os.pread(lfd, 4096, 0))}
    else:
        for off in offsets:
            t = time.perf_counter()
            data = read(off)
            lat.append((time.perf_counter() - t) * 1000)
            bad += data != os.pread(lfd, 4096, off)
        out = {"lat_ms": lat, "bad": bad, "open_ms": opened}
    print(json.dumps(out), flush=True)


def rand_offsets(size, stripe, seed):
    """One 4 KiB-aligned offset per stripe, stripes visited backwards (read-ahead cannot help)."""
    rng, n = random.Random(seed), size // stripe
    return [(i * stripe + rng.randrange(0, stripe - 4096)) // 4096 * 4096 for i in reversed(range(n))]


def rand_phase(ctx, s, target, seed, r):
    offs = rand_offsets(ctx.size, ctx.args.stripe_mib * MiB, seed)
    s.mark("d-open")
    p = probe(ctx, "rand", target, offs)
    # podfs answers an uncached episode's open before its request reaches
    # the origin (the probe then answers the reads); behind --delay-ms that
    # request arrives after the open returned. Give it the time to arrive
    # and finish, so it counts for the open, not for the first random read.
    time.sleep(2 * ctx.args.delay_ms / 1000 + 0.05)
    ctx.origin.quiesce()
    s.mark("d")
    res = probe_finish(ctx, p)
    r["rand"].append(res)
    r["rand_n"].append(len(offs))


def ttfb_phase(ctx, s, target, r):
    if target.startswith("http"):  # curl: a fresh process and connection, first 4 KiB
        s.mark("f")
        rc, out, _ = run(["curl", "-sS", "-o", "/dev/null", "-r", "0-4095", "-w", "%{time_starttransfer}",
                          target], ctx.args.timeout)
        r["ttfb_ms"].append(float(out) * 1000 if rc == 0 else None)
        return
    p = probe(ctx, "ttfb", target)  # opens nothing before 'go'
    s.mark("f")
    res = probe_finish(ctx, p)
    r["ttfb_ms"].append(res["ttfb_ms"] if res else None)
    r["ttfb_open_ms"].append(res["open_ms"] if res else None)
    if res and res["bad"]:
        r["bad_ttfb"].append(1)


def bench_baseline(ctx, name):
    """curl from the origin, or dd / pread of the local file (page cache)."""
    r = {k: [] for k in ("cold_s", "cold_cpu", "cold_tr", "rand", "rand_n", "rand_tr", "conc_s", "conc_tr", "ttfb_ms",
                         "ttfb_open_ms", "sha_ok", "bad_ttfb")}
    target = ctx.origin.url + FILE if name == "curl" else ctx.local
    for rep in ctx.reps:
        with Session(ctx) as s:
            cold_phase(ctx, s, target, r)
            rand_phase(ctx, s, target, rep, r)
            r["conc_s"].append(s.phase("e", seq_read, ctx, target, ctx.args.readers))
            ttfb_phase(ctx, s, target, r)
        r["cold_tr"].append(s.traffic["a"])
        r["rand_tr"].append(s.traffic["d"])
        r["conc_tr"].append(s.traffic["e"])
    if name == "curl":
        sha_check(ctx, target, r)
    r["cmdline"] = shlex.join(read_cmd(target)).replace("\n", "\\n")
    r["local"] = name == "local"
    return r


def bench_fuse(ctx, fs):
    r = {k: [] for k in ("cold_s", "cold_cpu", "cold_tr", "warm_s", "warm_tr", "remount_s", "remount_tr", "rss", "rss_mount",
                         "rand", "rand_n", "rand_tr", "rand_open_tr", "conc_s", "conc_tr", "ttfb_ms",
                         "ttfb_open_ms", "ttfb_tr", "sha_ok", "bad_ttfb")}
    for rep in ctx.reps:
        with Session(ctx, fs) as s:                                     # (a) cold, (b) warm, (g) RSS
            r["rss_mount"].append(fs.rss_mib())
            cold_phase(ctx, s, fs.path, r)
            r["rss"].append(fs.rss_mib())
            r["warm_s"].append(s.phase("b", seq_read, ctx, fs.path))
            s.phase("sha", sha_check, ctx, fs.path, r)
        r["cold_tr"].append(s.traffic["a"])
        r["warm_tr"].append(s.traffic["b"])
        with Session(ctx, fs, fresh=False) as s:                        # (c) after remount
            r["remount_s"].append(s.phase("c", seq_read, ctx, fs.path))
            s.phase("sha", sha_check, ctx, fs.path, r)
        r["remount_tr"].append(s.traffic["c"])
        with Session(ctx, fs) as s:                                     # (d) random 4 KiB reads
            rand_phase(ctx, s, fs.path, rep, r)
        r["rand_open_tr"].append(s.traffic["d-open"])
        r["rand_tr"].append(s.traffic["d"])
        with Session(ctx, fs) as s:                                     # (e) 8 readers at once
            r["conc_s"].append(s.phase("e", seq_read, ctx, fs.path, ctx.args.readers))
            s.phase("sha", sha_check, ctx, fs.path, r)
        r["conc_tr"].append(s.traffic["e"])
        with Session(ctx, fs) as s:                                     # (f) time to first byte
            ttfb_phase(ctx, s, fs.path, r)
        r["ttfb_tr"].append(s.traffic["f"])
    r["cmdline"] = shlex.join(fs.argv)
    r["local"] = fs.local_only
    return r
