"""What the benchmarks share (bench/run, bench/player, bench/scan, bench/keep,
bench/first-byte, bench/far-read, bench/mixed-hosts): the processes they start, each stopped by PID, the
mounts they check (and a fresh mount of a feed), the podfs binary they measure, and the
test origin (its command line, its delay proxy's, its control calls).
Standard library only.

The benchmarks' own parts live beside this module: `readpath` is bench/run's library,
`scan` is bench/scan's."""
import contextlib, json, os, shlex, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

BENCH = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # bench/
REPO = os.path.dirname(BENCH)
MiB = 1 << 20
PROCS = []  # every process a benchmark started, stopped by PID on the way out


def spawn(cmd, **kw):
    """Start a process in its own session (Ctrl-C reaches only us; cleanup stops it by PID)."""
    p = subprocess.Popen(cmd, start_new_session=True, **kw)
    PROCS.append(p)
    return p


def stop(p, timeout=10):
    """SIGTERM, then SIGKILL after `timeout` seconds; a process already gone is fine."""
    if p.poll() is not None:
        return
    try:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            print(f"warning: pid {p.pid} does not die", file=sys.stderr)
    except ProcessLookupError:
        pass


def stop_all():
    """Every process started, newest first."""
    for p in reversed(PROCS):
        stop(p)


def run(cmd, timeout=120, **kw):
    """Run a command to completion (registered, killed on timeout); (rc, stdout, stderr)."""
    p = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(p, 2)
        raise RuntimeError(f"timed out after {timeout:.0f} s: {shlex.join(cmd)}")
    return p.returncode, out, err


def alive(pid):
    """Whether a process runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def tree(pid):
    """pid and all its descendants."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    kids.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(d))
            except (OSError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def mounted(path):
    with open("/proc/mounts") as f:
        return any(line.split()[1] == path for line in f)


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.02)
    raise RuntimeError(f"timed out waiting for {what}")


def http_ok(url):
    try:
        urllib.request.urlopen(url, timeout=2).read()
        return True
    except OSError:
        return False


def podfs_binary(path):
    """`path` (--podfs), else this tree's release build, else its debug build; exits
    with what to do when there is none."""
    podfs = path or next((p for p in (f"{REPO}/.build/release/podfs", f"{REPO}/.build/debug/podfs")
                          if os.path.exists(p)), None)
    if not podfs:
        sys.exit("no podfs binary: run swift build -c release --product podfs, or pass --podfs PATH")
    return podfs


@contextlib.contextmanager
def fresh_mount(work, podfs, feed_url, show, files):
    """podfs mounting `feed_url` (or a list of them) with a new cache under `work`: yields the show's folder
    once it lists `files` entries and 1 s passed. Afterwards unmounted, the daemon stopped
    by PID and the cache removed (many mounts' dirty pages would make the kernel throttle
    the later ones' cache writes)."""
    mnt, cache = tempfile.mkdtemp(dir=work), tempfile.mkdtemp(dir=work)
    log = open(f"{cache}.log", "w")
    feeds = [feed_url] if isinstance(feed_url, str) else list(feed_url)
    daemon = spawn([podfs, "mount", "-f", "--cache-dir", cache, *feeds, mnt], stdout=log, stderr=log)
    try:
        folder = f"{mnt}/{show}"
        wait_for(lambda: daemon.poll() is not None or (os.path.isdir(folder) and len(os.listdir(folder)) >= files),
                 30, "the show's listing")
        if daemon.poll() is not None:
            with open(f"{cache}.log") as f:
                raise RuntimeError(f"podfs exited with {daemon.returncode}: {f.read()[-2000:]}")
        time.sleep(1)
        yield folder
    finally:
        if mounted(mnt):
            subprocess.run(["fusermount3", "-u", mnt], stderr=subprocess.DEVNULL)
        stop(daemon)
        if mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt], stderr=subprocess.DEVNULL)
        log.close()
        shutil.rmtree(cache, ignore_errors=True)
        os.unlink(f"{cache}.log")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def origin_call(port, path, method="GET", body=None):
    """A control call of the test origin (Tests/Origin/origin.py): /_origin/`path`."""
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(f"http://127.0.0.1:{port}/_origin/{path}", data=data, method=method)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.read()


def origin_argv(root, port, log=None):
    """The test origin, Tests/Origin/origin.py, serving `root` on 127.0.0.1:`port`."""
    return ([sys.executable, f"{REPO}/Tests/Origin/origin.py", "--root", root, "--port", str(port)]
            + (["--log", log] if log else []))


def delayproxy_argv(port, upstream, delay_ms, rate_mb=None):
    """bench/delayproxy.py on `port` in front of `upstream`: `delay_ms` per request and
    new connection, and one `rate_mb` MB/s cap shared by all connections when given."""
    return ([sys.executable, f"{BENCH}/delayproxy.py", str(port), str(upstream), str(delay_ms)]
            + ([str(rate_mb)] if rate_mb is not None else []))
