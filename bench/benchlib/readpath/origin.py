"""Origin: nginx (access log with start time, bytes sent, request and Range) or origin.py
(counters via its control API), plus the optional delay proxy in front of either."""
import dataclasses, json, os, re, shutil, subprocess, time, urllib.request

from benchlib import delayproxy_argv, free_port, http_ok, origin_argv, spawn, stop, wait_for
from benchlib.readpath import FILE

NGINX_CONF = """worker_processes 1; daemon off; pid {w}/nginx/nginx.pid;
error_log {w}/nginx/error.log warn;
events {{ worker_connections 1024; }}
http {{
  log_format bench '$msec $request_time $status $bytes_sent $body_bytes_sent $connection_requests "$request" "$http_range"';
  access_log {w}/nginx/access.log bench;
  client_body_temp_path {w}/nginx/tmp; proxy_temp_path {w}/nginx/tmp; fastcgi_temp_path {w}/nginx/tmp;
  uwsgi_temp_path {w}/nginx/tmp; scgi_temp_path {w}/nginx/tmp;
  sendfile on; tcp_nopush on; keepalive_timeout 300s; keepalive_requests 1000000;
  default_type application/octet-stream;
  types {{ audio/mpeg mp3; application/rss+xml xml; }}
  # nginx omits Accept-Ranges on 206 replies; httpdirfs refuses to work without it.
  map $http_range $accept_ranges {{ "" ""; default bytes; }}
  server {{
    listen 127.0.0.1:{port}; root {w}/www; autoindex on; autoindex_exact_size on;
    add_header Accept-Ranges $accept_ranges;
    location = /nginx_status {{ stub_status; access_log off; }}
  }}
}}
"""
LOG_RE = re.compile(r'^(\S+) (\S+) (\S+) (\d+) (\d+) (\d+) "([^"]*)" "([^"]*)"')


@dataclasses.dataclass(frozen=True)
class Traffic:
    """What the origin served for the episode: over a phase, or up to a moment (a snapshot)."""
    requests: int = 0
    sent: int = 0  # bytes sent
    connections: int = 0  # new connections
    body: int = 0  # body bytes

    def __sub__(self, earlier):
        return Traffic(*(a - b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(earlier))))


class Origin:
    def __init__(self, work, delay_ms, force_python=False, rate_mb=None):
        self.work, self.delay_ms, self.proxy = work, delay_ms, None
        self.port = free_port()
        nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
        self.kind = "nginx" if nginx and not force_python else "origin.py"
        if self.kind == "nginx":
            os.makedirs(f"{work}/nginx/tmp")
            with open(f"{work}/nginx/nginx.conf", "w") as f:
                f.write(NGINX_CONF.format(w=work, port=self.port))
            self.log = f"{work}/nginx/access.log"
            self.proc = spawn([nginx, "-e", f"{work}/nginx/error.log", "-p", f"{work}/nginx",
                               "-c", f"{work}/nginx/nginx.conf"], stderr=subprocess.DEVNULL)
            self.ping = "/nginx_status"  # not logged
        else:
            self.proc = spawn(origin_argv(f"{work}/www", self.port), stderr=subprocess.DEVNULL)
            self.ping = "/_origin/health"  # not counted
        self.direct = f"http://127.0.0.1:{self.port}"
        wait_for(lambda: self.proc.poll() is not None or http_ok(self.direct + self.ping), 15, self.kind)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.kind} did not start (see {work}/nginx/error.log)")
        port = self.port
        if delay_ms or rate_mb:
            port = free_port()
            self.proxy = spawn(delayproxy_argv(port, self.port, delay_ms, rate_mb))
            wait_for(lambda: http_ok(f"http://127.0.0.1:{port}{self.ping}"), 15, "delay proxy")
        self.url = f"http://127.0.0.1:{port}/"  # what clients use

    def configure(self, faults):
        """origin.py: merges a fault config (Tests/Origin/origin.py's POST /_origin/config)."""
        if self.kind == "nginx":
            raise RuntimeError("nginx takes no fault config")
        request = urllib.request.Request(self.direct + "/_origin/config", data=json.dumps(faults).encode(),
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=5).read()

    def busy(self):
        """Responses in flight (nginx), or None when unknown."""
        if self.kind != "nginx":
            return None
        try:
            s = urllib.request.urlopen(self.direct + "/nginx_status", timeout=2).read()
            return int(re.search(rb"Writing: (\d+)", s).group(1)) - 1
        except (OSError, AttributeError):
            return None

    def snapshot(self):
        """origin.py: its counters for the episode, so far (all connections, not only the episode's)."""
        if self.kind == "nginx":
            return None
        st = json.loads(urllib.request.urlopen(self.direct + "/_origin/stats", timeout=5).read())
        p = st["paths"].get("/" + FILE, {})
        return Traffic(p.get("requests", 0), p.get("bytes", 0), st.get("connections", 0), p.get("bytes", 0))

    def quiesce(self, timeout=15):
        """Wait until no response is in flight, so every request is accounted for."""
        end = time.time() + timeout
        if self.kind == "nginx":
            while time.time() < end and self.busy() not in (0, None):
                time.sleep(0.02)
        else:
            last = None
            while time.time() < end:
                s = self.snapshot()
                if s == last:
                    return
                last = s
                time.sleep(0.3)

    def split(self, marks):
        """marks: [(label, t, snapshot)], the last one is the end. {label: Traffic} for requests of the
        episode, credited to the phase in which they started."""
        out = {}
        if self.kind == "nginx":
            reqs = []
            with open(self.log) as f:
                for line in f:
                    m = LOG_RE.match(line)
                    if m and m.group(7).split()[1:2] == ["/" + FILE]:
                        start = float(m.group(1)) - float(m.group(2))
                        reqs.append((start, int(m.group(4)), m.group(6) == "1", int(m.group(5))))
            bounds = marks[:-1] + [(marks[-1][0], marks[-1][1] + 3600, None)]  # late requests: last phase
            for (label, t0, _), (_, t1, _) in zip(bounds, bounds[1:]):
                sel = [r for r in reqs if t0 <= r[0] < t1]
                out[label] = Traffic(len(sel), sum(r[1] for r in sel), sum(r[2] for r in sel), sum(r[3] for r in sel))
        else:
            for (label, _, a), (_, _, b) in zip(marks, marks[1:]):
                out[label] = b - a
        return out

    def stop(self):
        if self.proxy:
            stop(self.proxy)
        stop(self.proc)
