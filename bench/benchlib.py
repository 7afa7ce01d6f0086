"""What the benchmarks share (bench/run, bench/player, bench/scan, bench/keep): the
processes they start, each stopped by PID, and the test origin's control calls.
Standard library only."""
import json, signal, socket, subprocess, sys, urllib.request

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
