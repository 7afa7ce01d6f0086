#!/usr/bin/env python3
"""podfs test origin: a small, fast HTTP/1.1 file server with fault injection.

Python 3 standard library only. Used by the integration tests, the demo
command and the benchmarks.

    python3 Tests/Origin/origin.py --root DIR [--bind 127.0.0.1] [--port 0]
                                   [--port-file PATH] [--log PATH]

Serves GET/HEAD of files under --root with keep-alive, single byte ranges
(206 / 416), If-Range, conditional GET (304), strong ETags and Last-Modified.
Files ending in .xml, .rss or .opml are templates: "{{BASE}}" becomes
"http://HOST:PORT" (the Host the request came in on).

Control API (same port, never counted in the stats):
  GET  /_origin/stats          counters as JSON (per path: "ranges" asked, in order, and
                               "finished": each response's Range header and body bytes sent,
                               once it ended or was cut short; "user_agents": each
                               User-Agent it was asked with, once; "in_progress": the
                               responses begun and not yet ended; "open_connections":
                               the connections accepted and not yet closed that sent no
                               control request, a request not yet read included; a
                               reset leaves these two alone)
  POST /_origin/reset          zero all counters
  POST /_origin/config         merge a JSON fault config, answer the result
  GET  /_origin/config         current fault config
  POST /_origin/config/clear   remove all faults
  POST /_origin/put?path=/x    atomically replace a file with the request body
  POST /_origin/release        let every held response go on (see "hold")
  GET  /_origin/health         "ok"

Fault config keys:
  latency_ms: N                 sleep before each request and on each new connection
  drop: {"path", "after_bytes", "count"}   close after N body bytes (list allowed); the
                                stats count drops, in all and per path, and list each
                                dropped request's Range header and bytes sent ("dropped")
  ignore_range: ["/x.mp3"|"*"]  always answer 200 with the full body
  redirects: {"/a": "/b"}       302 to the target (relative or absolute)
  status: {"/x": {"code", "count", "retry_after", "location"}}  answer that status
                                (with that Location header when given); "retry_after_in": N
                                sends Retry-After as the HTTP date N seconds after the answer
  hold_head: {"path", "seconds", "count"}  hold the request before any byte of the answer
                                until POST /_origin/release (at most "seconds", default 60;
                                counted in "held" and "holds" too) (list allowed)
  stall: {"path", "after_bytes", "seconds", "count"}  pause mid-body (list allowed)
  hold: {"path", "after_bytes", "seconds", "count"}  pause mid-body until POST
                                /_origin/release (or config/clear), at most "seconds"
                                (default 60); the stats say how many responses are
                                "held" now and how many "holds" there were (list allowed)
  length_mismatch: {"path", "delta", "count"}  a 206 whose Content-Length is the
                                range's length + delta: delta > 0 sends the range and then
                                delta bytes of 0xEE (a body longer than its Content-Range),
                                delta < 0 ends the body |delta| bytes early, cleanly framed
                                (shorter than its Content-Range) (list allowed)
  range_cap: {"path", "bytes", "count"}  a 206 that sends at most N bytes of the range
                                asked, with an honest Content-Range (a host that caps
                                its answers) (list allowed)
  range_shift: {"path", "by", "count"}  a 206 whose Content-Range starts N bytes later
                                than the bytes it sends (a lying host) (list allowed)
  fail_all: true                close every non-control connection without answering
  no_length: ["/x"|"*"]         send a 200 without Content-Length, ending the body by
                                closing the connection (a client cannot know the size)
  endless: ["/x"|"*"]           answer GETs with a 200 without Content-Length whose body of
                                0xEE bytes never ends (until the client hangs up)
  gzip_encoded: ["/x"]          the file is already gzip data: send it as is with
                                "Content-Encoding: gzip" (e.g. a decompression bomb)
  stitch: {"/x.mp3": {"mode": "redirect", "ad_bytes": N, "expires_after": S}}  a host that
                                stitches ads per request (Megaphone-like): each request of
                                /x.mp3 gets a 302 to a fresh signed link of a new variant n
                                (1, 2, ...), /_variants/x.mp3.vN?sig=...&exp=..., whose bytes
                                are ad_bytes * (1 + n % 3) bytes of value (0x40 + n) & 0xff
                                followed by the file, served with Range, If-Range and an
                                ETag of its own; with expires_after, a link answers 403 once
                                that many seconds passed since it was issued. Merged per
                                path; the stats' "variants" count what was issued per path
                                (kept across reset, so numbers are never reused).
                                "mode": "same_url" stitches at the URL itself: each request
                                gets variant n's bytes there, with "etag": "per_request" (a
                                strong ETag per variant, the default), "weak" (W/"n"),
                                "weak_fixed" (W/"episode" for every variant, with the
                                variant's fresh Last-Modified: a host whose validator says
                                nothing) or "none" (no ETag, no Last-Modified); "same_length": true
                                gives every byte XOR that value instead (new bytes
                                everywhere, every variant as long as the file)
                                "ads": "midroll" (either mode) stitches as real hosts do:
                                variant n is a pre-roll at byte 0 and two mid-rolls put in
                                at 40 % and 70 % of the file (at byte L*40//100 and
                                L*70//100 of its L bytes); the file's bytes between the ads
                                are the same in every variant. Ad k (0, 1, 2) of variant n
                                is ad_stream(n, k, length): splitmix64 words seeded with
                                n * 2^8 + k, little-endian (noise, like audio frames).
                                Each ad is ad_bytes * (1 + (n - 1) % 3) long (1, 2, 3, 1, ...
                                times: each variant longer than the one before, but every
                                third; consecutive variants always differ in length), or
                                ad_bytes in every variant with "same_length": true (only
                                the ads' bytes differ).
                                TestOrigin.midrollVariant (Swift) makes the same bytes.
  pace: {"/x"|"*": N}            send bodies of that path at N bytes per second, in 16 KiB slices
                                (a slow host: a client's reads come in small pieces)
  no_etag: ["/x"|"*"]           send no ETag (Last-Modified only): an origin that drops its
                                validator
  no_validator: ["/x"|"*"]      send no ETag and no Last-Modified (the same bytes every time):
                                an honest origin nothing can prove honest
  if_range_200: ["/x"|"*"]      a CDN that answers any Range with If-Range by a 200 with
                                the whole body, even when the validator matches
  gzip: true                    templates go gzip-compressed to clients that accept it
                                (whole-body GETs only; the path's "encodings" stat counts them)
"count" is the number of requests the fault applies to; -1 or missing = always.
A body fault (drop, stall, hold) applies only to a body longer than its "after_bytes",
so a shorter response never uses up its count: a count of 0 left means it happened.
For "redirects" and "status" a POST merges per path (a null value removes one
entry); any other key is replaced, and a top-level null removes the key.
"""

import argparse
import email.utils
import gzip
import json
import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import urllib.parse
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TEMPLATE_EXTS = (".xml", ".rss", ".opml")
CONTENT_TYPES = {
    ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4",
    ".ogg": "audio/ogg",
    ".xml": "application/rss+xml",
    ".rss": "application/rss+xml",
    ".opml": "text/x-opml",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".webp": "image/webp",
    ".vtt": "text/vtt",
    ".srt": "application/x-subrip",
    ".json": "application/json",
}
CHUNK = 256 * 1024
PACE_SLICE = 16 * 1024
SENDFILE_MAX = 1 << 30


class Origin:
    """Shared state: root, counters, fault config, log."""

    def __init__(self, root, log_path=None):
        self.root = os.path.realpath(root)
        self.lock = threading.Lock()
        # Held responses wait on this until the release generation moves.
        self.released = threading.Condition(self.lock)
        self.release_generation = 0
        self.held = 0
        # Non-control responses begun and not yet ended (a level, like
        # held: a reset leaves it alone).
        self.in_progress = 0
        # Connections accepted and not closed, but for those that turned
        # out to be control connections (a level too).
        self.open_connections = 0
        self.config = {}
        self.log_file = open(log_path, "a", buffering=1) if log_path else None
        self.log_lock = threading.Lock()
        # Variants issued per stitched path (never reset: names stay unique).
        self.variants = {}
        # Which reset the counters are in: a response records its end only
        # in the generation it began in (`count_finished`).
        self.generation = 0
        self.reset()

    # ---- counters -------------------------------------------------------
    def reset(self):
        with self.lock:
            self.requests = 0
            self.bytes = 0
            self.connections = 0
            self.drops = 0
            self.holds = 0
            self.paths = {}
            # Responses begun before this reset end without a "finished"
            # record: their bytes belong to the counters just zeroed.
            self.generation += 1

    def _path_stats(self, path):
        st = self.paths.get(path)
        if st is None:
            st = {"requests": 0, "bytes": 0, "ranges": [], "statuses": [], "status_times": []}
            self.paths[path] = st
        return st

    def count_request(self, path, range_header, new_connection):
        with self.lock:
            self.requests += 1
            if new_connection:
                self.connections += 1
            st = self._path_stats(path)
            st["requests"] += 1
            if range_header is not None:
                st["ranges"].append(range_header)

    def count_user_agent(self, path, user_agent):
        """Each User-Agent a path was asked with, once (None: no header)."""
        with self.lock:
            agents = self._path_stats(path).setdefault("user_agents", [])
            if user_agent not in agents:
                agents.append(user_agent)

    def count_credentials(self, path, query, authorization):
        """Each request's query string and Authorization header (for tests
        that check a secret was sent to the origin and shown nowhere else)."""
        with self.lock:
            st = self._path_stats(path)
            st.setdefault("queries", []).append(query)
            st.setdefault("authorizations", []).append(authorization)

    def count_status(self, path, status):
        with self.lock:
            st = self._path_stats(path)
            st["statuses"].append(status)
            # Monotonic seconds, for checking how long a client waited.
            st["status_times"].append(round(time.monotonic(), 3))

    def count_bytes(self, path, n):
        """n body bytes sent for path; a negative n takes back bytes
        counted before a send that the client cut short."""
        if n == 0:
            return
        with self.lock:
            self.bytes += n
            self._path_stats(path)["bytes"] += n

    def begin_response(self):
        """A non-control request came in; `end_response` follows, whatever
        becomes of it. Returns the counters' generation it began in."""
        with self.lock:
            self.in_progress += 1
            return self.generation

    def end_response(self):
        """A response begun by `begin_response` ended: no byte more is sent
        for it."""
        with self.lock:
            self.in_progress -= 1

    def open_connection(self, delta):
        """A client connection was accepted (+1), or closed or found to be
        a control connection (-1)."""
        with self.lock:
            self.open_connections += delta

    def stats(self):
        with self.lock:
            return {
                "requests": self.requests,
                "bytes": self.bytes,
                "connections": self.connections,
                "drops": self.drops,
                "held": self.held,
                "holds": self.holds,
                "in_progress": self.in_progress,
                "open_connections": self.open_connections,
                "paths": json.loads(json.dumps(self.paths)),
                "variants": dict(self.variants),
            }

    # ---- fault config ---------------------------------------------------
    def merge_config(self, update):
        if not isinstance(update, dict):
            raise ValueError("config must be a JSON object")
        with self.lock:
            for key, value in update.items():
                if value is None:
                    self.config.pop(key, None)
                elif key in ("redirects", "status", "stitch") and isinstance(value, dict):
                    cur = dict(self.config.get(key) or {})
                    for p, v in value.items():
                        if v is None:
                            cur.pop(p, None)
                        else:
                            cur[p] = v
                    self.config[key] = cur
                elif key in ("drop", "stall", "hold", "hold_head", "length_mismatch", "range_cap", "range_shift"):
                    items = value if isinstance(value, list) else [value]
                    self.config[key] = [dict(i) for i in items if isinstance(i, dict)]
                else:
                    self.config[key] = value
            return json.loads(json.dumps(self.config))

    def clear_config(self):
        with self.lock:
            self.config = {}
            self._release()

    def release(self):
        """Lets every held response go on."""
        with self.lock:
            self._release()

    def _release(self):
        self.release_generation += 1
        self.released.notify_all()

    def hold(self, path, seconds):
        """Pauses the calling response until a release (or `seconds`)."""
        with self.lock:
            generation = self.release_generation
            self.held += 1
            self.holds += 1
            st = self._path_stats(path)
            st["holds"] = st.get("holds", 0) + 1
            try:
                self.released.wait_for(lambda: self.release_generation != generation, timeout=seconds)
            finally:
                self.held -= 1

    def get_config(self):
        with self.lock:
            return json.loads(json.dumps(self.config))

    def latency(self):
        with self.lock:
            v = self.config.get("latency_ms") or 0
        try:
            return max(0.0, float(v) / 1000.0)
        except (TypeError, ValueError):
            return 0.0

    def no_length(self, path):
        with self.lock:
            paths = self.config.get("no_length") or []
            if isinstance(paths, str):
                paths = [paths]
            return "*" in paths or path in paths

    def endless(self, path):
        with self.lock:
            paths = self.config.get("endless") or []
            if isinstance(paths, str):
                paths = [paths]
            return "*" in paths or path in paths

    def no_etag(self, path):
        with self.lock:
            paths = self.config.get("no_etag") or []
            return "*" in paths or path in paths

    def no_validator(self, path):
        with self.lock:
            paths = self.config.get("no_validator") or []
            return "*" in paths or path in paths

    def gzip_encoded(self, path):
        with self.lock:
            paths = self.config.get("gzip_encoded") or []
            if isinstance(paths, str):
                paths = [paths]
            return path in paths
    def gzip_templates(self):
        with self.lock:
            return bool(self.config.get("gzip"))

    def count_encoding(self, path, encoding):
        with self.lock:
            self._path_stats(path).setdefault("encodings", []).append(encoding)

    def fail_all(self):
        with self.lock:
            return bool(self.config.get("fail_all"))

    def stitch_for(self, path):
        with self.lock:
            entry = (self.config.get("stitch") or {}).get(path)
            return dict(entry) if isinstance(entry, dict) else None

    def new_variant(self, path, fs, ad_bytes, same_length=False, ads=None):
        """Writes variant n of the file at fs; returns its URL path and n."""
        with self.lock:
            n = self.variants.get(path, 0) + 1
            self.variants[path] = n
        with open(fs, "rb") as f:
            data = f.read()
        ad = bytes([(0x40 + n) & 0xFF]) * (ad_bytes * (1 + n % 3))
        if ads == "midroll":
            ad, data = b"", midroll_variant(n, data, ad_bytes, same_length)
        elif same_length:
            # New bytes everywhere at the same length: every byte XOR the
            # variant's ad byte.
            ad, data = b"", bytes(b ^ ((0x40 + n) & 0xFF) for b in data)
        name = "/_variants%s.v%d" % (path, n)
        target = os.path.join(self.root, *name.split("/")[1:])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = target + ".tmp"
        with open(tmp, "wb") as f:
            f.write(ad + data)
        os.replace(tmp, target)
        return name, n

    def if_range_200(self, path):
        with self.lock:
            paths = self.config.get("if_range_200") or []
            return "*" in paths or path in paths

    def redirect_for(self, path):
        with self.lock:
            return (self.config.get("redirects") or {}).get(path)

    def ignore_range(self, path):
        with self.lock:
            ig = self.config.get("ignore_range") or []
            if isinstance(ig, str):
                ig = [ig]
            return "*" in ig or path in ig

    @staticmethod
    def _take(entry):
        """Consume one use of a counted fault; return True if it applies."""
        count = entry.get("count", -1)
        try:
            count = int(count)
        except (TypeError, ValueError):
            count = -1
        if count < 0:
            return True
        if count == 0:
            return False
        entry["count"] = count - 1
        return True

    def status_for(self, path):
        with self.lock:
            table = self.config.get("status") or {}
            entry = table.get(path) or table.get("*")
            if not isinstance(entry, dict):
                return None
            if not self._take(entry):
                return None
            return dict(entry)

    def _body_fault(self, key, path, length=None):
        """The first entry of `key` for `path` that applies, consuming a
        count; a body fault (`length` given) applies only to a body longer
        than its after_bytes, so a short response leaves its count alone."""
        for entry in self.config.get(key) or []:
            if entry.get("path") not in (path, "*"):
                continue
            if length is not None:
                try:
                    after = max(0, int(entry.get("after_bytes", 0)))
                except (TypeError, ValueError):
                    after = 0
                if after >= length:
                    continue
            if self._take(entry):
                return dict(entry)
        return None

    def count_drop(self, path, range_header, sent):
        """One connection closed mid-body: the request's Range header (None
        without one) and the body bytes sent before the close."""
        with self.lock:
            self.drops += 1
            st = self._path_stats(path)
            st["drops"] = st.get("drops", 0) + 1
            st.setdefault("dropped", []).append({"range": range_header, "sent": sent})

    def pace(self, path):
        """Bytes per second the bodies of path are sent at, or None."""
        with self.lock:
            table = self.config.get("pace") or {}
            value = table.get(path, table.get("*"))
        try:
            return float(value) if value and float(value) > 0 else None
        except (TypeError, ValueError):
            return None

    def head_hold(self, path):
        """The hold_head entry applying to this request of path, consuming a count."""
        with self.lock:
            return self._body_fault("hold_head", path)

    def length_mismatch(self, path):
        """The length_mismatch entry applying to this 206 of path, consuming a count."""
        with self.lock:
            return self._body_fault("length_mismatch", path)

    def range_fault(self, key, path):
        """The range_cap or range_shift entry applying to this 206 of path,
        consuming a count."""
        with self.lock:
            return self._body_fault(key, path)

    def body_faults(self, path, length):
        """(drop, stall, hold) entries applying to this GET of path with a
        body of `length` bytes, consuming counts."""
        with self.lock:
            return (self._body_fault("drop", path, length), self._body_fault("stall", path, length),
                    self._body_fault("hold", path, length))

    # ---- log ------------------------------------------------------------
    def count_finished(self, path, range_header, nbytes, generation):
        """A response of path ended (done or cut short): its Range header
        (None without one) and the body bytes it sent. A response begun
        before the last reset is not recorded (a client may have read it
        whole and asked for the reset before this thread got here)."""
        with self.lock:
            if generation != self.generation:
                return
            self._path_stats(path).setdefault("finished", []).append({"range": range_header, "sent": nbytes})

    def log(self, method, path, rng, status, nbytes, started=None):
        """One line per request, when it ended: the wall-clock time it came
        in (with milliseconds, to lay beside a client's trace), how long it
        took, the request and the body bytes sent."""
        if self.log_file is None:
            return
        if started is None:
            started = time.time()
        stamp = time.strftime("%H:%M:%S", time.localtime(started)) + ".%03d" % int(started % 1 * 1000)
        line = "%s +%.3fs %s %s %s %s %d\n" % (stamp, time.time() - started, method, path, rng or "-", status,
                                              nbytes)
        with self.log_lock:
            try:
                self.log_file.write(line)
            except OSError:
                pass


MASK64 = (1 << 64) - 1


def ad_stream(n, k, length):
    """The bytes of ad k of variant n: splitmix64 seeded with n * 256 + k,
    each word little-endian (TestOrigin.adStream in Swift)."""
    state = (n * 256 + k) & MASK64
    words = []
    for _ in range((length + 7) // 8):
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        words.append(z ^ (z >> 31))
    return struct.pack("<%dQ" % len(words), *words)[:length]


def midroll_ad_length(n, ad_bytes, same_length):
    """How long each ad of variant n is."""
    return ad_bytes if same_length else ad_bytes * (1 + (n - 1) % 3)


def midroll_variant(n, data, ad_bytes, same_length):
    """Variant n of data with "ads": "midroll": a pre-roll, then the file
    with a mid-roll at 40 % and one at 70 % of it."""
    length = midroll_ad_length(n, ad_bytes, same_length)
    cuts = [0, len(data) * 40 // 100, len(data) * 70 // 100, len(data)]
    parts = []
    for k in range(3):
        parts.append(ad_stream(n, k, length))
        parts.append(data[cuts[k]:cuts[k + 1]])
    return b"".join(parts)


def http_date(ts):
    return email.utils.formatdate(ts, usegmt=True)


def parse_http_date(value):
    try:
        dt = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if dt is None:
        return None
    return dt.timestamp()


def parse_range(header, size):
    """Return None (ignore, serve 200), "unsatisfiable", or (start, end) inclusive."""
    if not header:
        return None
    header = header.strip()
    if not header.lower().startswith("bytes="):
        return None
    spec = header[6:].strip()
    if "," in spec:
        return None  # multi-range: answer 200 with the full body
    if "-" not in spec:
        return None
    first, last = spec.split("-", 1)
    first, last = first.strip(), last.strip()
    try:
        if first == "":
            if last == "" or not last.isdigit():
                return None
            n = int(last)
            if n == 0 or size == 0:
                return "unsatisfiable"
            return (max(0, size - n), size - 1)
        if not first.isdigit() or (last and not last.isdigit()):
            return None
        a = int(first)
        if last and int(last) < a:
            return None  # syntactically invalid: ignore the header
        if a >= size:
            return "unsatisfiable"
        b = int(last) if last else size - 1
        return (a, min(b, size - 1))
    except ValueError:
        return None


def etag_matches(header, etag, weak):
    for tag in header.split(","):
        tag = tag.strip()
        if tag == "*":
            return True
        if weak:
            if tag.startswith("W/"):
                tag = tag[2:]
        if tag == etag:
            return True
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "podfs-origin/1"
    sys_version = ""

    def setup(self):
        super().setup()
        self.conn_counted = False
        # Counted open until it closes or sends a control request.
        self.conn_open = True
        self.server.origin.open_connection(1)
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        lat = self.server.origin.latency()
        if lat:
            time.sleep(lat)

    def finish(self):
        try:
            super().finish()
        finally:
            self._uncount_open()

    def _uncount_open(self):
        if self.conn_open:
            self.conn_open = False
            self.server.origin.open_connection(-1)

    def log_message(self, format, *args):  # never write to stderr per request
        pass

    def log_request(self, code="-", size="-"):
        pass

    # ---- helpers --------------------------------------------------------
    @property
    def origin(self):
        return self.server.origin

    def _req_path(self):
        parsed = urllib.parse.urlsplit(self.path)
        return urllib.parse.unquote(parsed.path or "/"), parsed.query

    def _read_body(self):
        n = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline(65537)
        if not n:
            return b""
        return self.rfile.read(int(n))

    def _base(self):
        host = (self.headers.get("Host") or "").strip()
        if not host or any(c in host for c in " /\\\"'<>"):
            host = "127.0.0.1:%d" % self.server.server_address[1]
        return "http://" + host

    def _simple(self, code, body=b"", ctype="text/plain; charset=utf-8", headers=None,
                path=None, head=False):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        sent = 0
        if body and not head and self.command != "HEAD":
            self.wfile.write(body)
            sent = len(body)
        if path is not None:
            self.origin.count_bytes(path, sent)
        return sent

    def _abort(self):
        """Close the connection abruptly (no response / truncated body)."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ---- methods --------------------------------------------------------
    def do_GET(self):
        self._dispatch()

    def do_HEAD(self):
        self._dispatch()

    def do_POST(self):
        self._dispatch()

    def do_PUT(self):
        self._dispatch()

    def do_DELETE(self):
        self._dispatch()

    def _dispatch(self):
        path, query = self._req_path()
        if path.startswith("/_origin/") or path == "/_origin":
            self._uncount_open()
            try:
                self._control(path, query)
            except (ConnectionError, BrokenPipeError):
                self.close_connection = True
            return
        status, nbytes = "-", 0
        rng = self.headers.get("Range")
        started = time.time()
        generation = self.origin.begin_response()
        try:
            status, nbytes = self._serve(path, rng)
        except (ConnectionError, BrokenPipeError, socket.timeout):
            self.close_connection = True
        finally:
            try:
                self.origin.count_finished(path, rng, nbytes, generation)
                self.origin.log(self.command, path, rng, status, nbytes, started)
            finally:
                self.origin.end_response()

    # ---- control API ----------------------------------------------------
    def _json(self, code, obj):
        return self._simple(code, json.dumps(obj, indent=1) + "\n", "application/json")

    def _control(self, path, query):
        body = self._read_body() if self.command in ("POST", "PUT") else b""
        o = self.origin
        cmd = self.command
        status = 200
        try:
            if path == "/_origin/stats" and cmd in ("GET", "HEAD"):
                self._json(200, o.stats())
            elif path == "/_origin/release" and cmd == "POST":
                o.release()
                self._json(200, {"ok": True})
            elif path == "/_origin/health":
                self._simple(200, "ok\n")
            elif path == "/_origin/reset" and cmd == "POST":
                o.reset()
                self._json(200, {"ok": True})
            elif path == "/_origin/config/clear" and cmd == "POST":
                o.clear_config()
                self._json(200, {})
            elif path == "/_origin/config" and cmd == "POST":
                try:
                    update = json.loads(body.decode() or "{}")
                    cfg = o.merge_config(update)
                except (ValueError, UnicodeDecodeError) as e:
                    status = 400
                    self._json(400, {"error": str(e)})
                else:
                    self._json(200, cfg)
            elif path == "/_origin/config" and cmd in ("GET", "HEAD"):
                self._json(200, o.get_config())
            elif path == "/_origin/put" and cmd in ("POST", "PUT"):
                target = urllib.parse.parse_qs(query).get("path", [None])[0]
                fs = self._fs_path(target) if target else None
                if fs is None:
                    status = 400
                    self._json(400, {"error": "bad or missing ?path="})
                else:
                    self._put(fs, body)
                    st = os.stat(fs)
                    self._json(200, {"ok": True, "path": target, "size": st.st_size,
                                     "etag": self._etag(st, None),
                                     "last_modified": http_date(st.st_mtime)})
            else:
                status = 404
                self._json(404, {"error": "unknown control request %s %s" % (cmd, path)})
        finally:
            o.log(cmd, path, None, status, 0)

    def _put(self, fs, data):
        d = os.path.dirname(fs)
        os.makedirs(d, exist_ok=True)
        try:
            old = os.stat(fs).st_mtime_ns
        except OSError:
            old = None
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".put-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, fs)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        if old is not None:
            new = os.stat(fs).st_mtime_ns
            # Last-Modified has one-second resolution: make sure it moves too.
            if new // 10**9 <= old // 10**9:
                bumped = (old // 10**9 + 1) * 10**9
                os.utime(fs, ns=(bumped, bumped))

    # ---- file serving ---------------------------------------------------
    def _fs_path(self, path):
        if not path or "\x00" in path:
            return None
        parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            return None
        fs = os.path.join(self.origin.root, *parts)
        real = os.path.realpath(fs)
        if real != self.origin.root and not real.startswith(self.origin.root + os.sep):
            return None
        return fs

    @staticmethod
    def _etag(st, base):
        tag = "%d-%x" % (st.st_size, st.st_mtime_ns)
        if base is not None:
            tag += "-%08x" % (zlib.crc32(base.encode()) & 0xFFFFFFFF)
        return '"%s"' % tag

    def _serve(self, path, rng):
        """Answer one non-control request. Returns (status, body bytes sent)."""
        o = self.origin
        new_conn = not self.conn_counted
        self.conn_counted = True
        o.count_request(path, rng, new_conn)
        o.count_credentials(path, urllib.parse.urlsplit(self.path).query, self.headers.get("Authorization"))
        o.count_user_agent(path, self.headers.get("User-Agent"))
        if self.command in ("POST", "PUT"):
            self._read_body()

        lat = o.latency()
        if lat:
            time.sleep(lat)

        head_hold = o.head_hold(path)
        if head_hold is not None:
            o.hold(path, float(head_hold.get("seconds", 60)))

        if o.fail_all():
            self._abort()
            o.count_status(path, 0)
            return 0, 0

        fault = o.status_for(path)
        if fault is not None:
            code = int(fault.get("code", 503))
            hdrs = {}
            if fault.get("retry_after") is not None:
                hdrs["Retry-After"] = str(fault["retry_after"])
            if fault.get("retry_after_in") is not None:
                hdrs["Retry-After"] = http_date(time.time() + float(fault["retry_after_in"]))
            if fault.get("location") is not None:
                hdrs["Location"] = str(fault["location"])
            o.count_status(path, code)
            return code, self._simple(code, "origin fault %d\n" % code, headers=hdrs, path=path)

        stitch = o.stitch_for(path)
        if stitch is not None and stitch.get("mode", "redirect") == "redirect" and self._fs_path(path):
            name, _ = o.new_variant(path, self._fs_path(path), int(stitch.get("ad_bytes", 65536)),
                                    bool(stitch.get("same_length")), stitch.get("ads"))
            query = "sig=%08x" % (zlib.crc32(name.encode()) & 0xFFFFFFFF)
            if stitch.get("expires_after") is not None:
                query += "&exp=%.3f" % (time.time() + float(stitch["expires_after"]))
            target = self._base() + urllib.parse.quote(name) + "?" + query
            o.count_status(path, 302)
            return 302, self._simple(302, "redirect to %s\n" % target,
                                     headers={"Location": target}, path=path)

        if stitch is not None and stitch.get("mode") == "same_url" and self._fs_path(path):
            name, n = o.new_variant(path, self._fs_path(path), int(stitch.get("ad_bytes", 65536)),
                                    bool(stitch.get("same_length")), stitch.get("ads"))
            kind = stitch.get("etag", "per_request")
            etag = {"none": None, "weak": 'W/"variant-%d"' % n, "weak_fixed": 'W/"episode"'}.get(
                kind, '"variant-%d"' % n)
            vfs = self._fs_path(name)
            fd = os.open(vfs, os.O_RDONLY)
            try:
                return self._serve_file(path, vfs, fd, os.fstat(fd), rng,
                                        validators={"etag": etag, "lastmod": kind != "none"})
            finally:
                os.close(fd)

        if path.startswith("/_variants/"):
            exp = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("exp")
            if exp and float(exp[0]) < time.time():
                o.count_status(path, 403)
                return 403, self._simple(403, "link expired\n", path=path)

        target = o.redirect_for(path)
        if target:
            if target.startswith("/"):
                target = self._base() + urllib.parse.quote(target)
            o.count_status(path, 302)
            return 302, self._simple(302, "redirect to %s\n" % target,
                                     headers={"Location": target}, path=path)

        if self.command not in ("GET", "HEAD"):
            o.count_status(path, 405)
            return 405, self._simple(405, "method not allowed\n",
                                     headers={"Allow": "GET, HEAD"}, path=path)

        if self.command == "GET" and o.endless(path):
            return 200, self._send_endless(path)

        fs = self._fs_path(path)
        fd = None
        try:
            if fs is not None:
                try:
                    fd = os.open(fs, os.O_RDONLY)
                    st = os.fstat(fd)
                    if not (st.st_mode & 0o170000 == 0o100000):  # regular file only
                        raise OSError("not a file")
                except OSError:
                    if fd is not None:
                        os.close(fd)
                    fd = None
            if fd is None:
                o.count_status(path, 404)
                return 404, self._simple(404, "not found\n", path=path)
            return self._serve_file(path, fs, fd, st, rng)
        finally:
            if fd is not None:
                os.close(fd)

    def _serve_file(self, path, fs, fd, st, rng, validators=None):
        o = self.origin
        head = self.command == "HEAD"
        ext = os.path.splitext(fs)[1].lower()
        ctype = CONTENT_TYPES.get(ext, "application/octet-stream")
        body = None  # bytes for templates, else served from fd
        base = None
        if ext in TEMPLATE_EXTS:
            base = self._base()
            raw = os.pread(fd, st.st_size, 0) if st.st_size else b""
            body = raw.replace(b"{{BASE}}", base.encode())
            size = len(body)
        else:
            size = st.st_size
        etag = self._etag(st, base)
        encoding = None
        if (body is not None and rng is None and o.gzip_templates()
                and "gzip" in (self.headers.get("Accept-Encoding") or "").lower()):
            body = gzip.compress(body, mtime=0)
            size = len(body)
            encoding = "gzip"
            etag = etag[:-1] + '-gz"'
        lastmod_ts = int(st.st_mtime)
        lastmod = http_date(lastmod_ts)
        common = {"ETag": etag, "Last-Modified": lastmod}
        if o.no_etag(path):
            etag = None
            common = {"Last-Modified": lastmod}
        if o.no_validator(path):
            etag = None
            common = {}
        if validators is not None:
            etag = validators.get("etag")
            common = {"ETag": etag} if etag else {}
            if validators.get("lastmod"):
                common["Last-Modified"] = lastmod

        # Conditional GET
        inm = self.headers.get("If-None-Match")
        ims = self.headers.get("If-Modified-Since")
        not_modified = False
        if inm is not None and etag is not None:
            not_modified = etag_matches(inm, etag, weak=True)
        elif ims is not None and "Last-Modified" in common:
            t = parse_http_date(ims)
            not_modified = t is not None and lastmod_ts <= int(t)
        if not_modified:
            self.send_response(304)
            for k, v in common.items():
                self.send_header(k, v)
            self.end_headers()
            o.count_status(path, 304)
            return 304, 0

        # Range / If-Range
        r = None
        if rng is not None and not o.ignore_range(path):
            r = parse_range(rng, size)
            if_range = self.headers.get("If-Range")
            if r is not None and if_range is not None and o.if_range_200(path):
                r = None
            elif r is not None and if_range is not None:
                if_range = if_range.strip()
                if if_range.startswith('"') or if_range.startswith("W/"):
                    # A weak validator never matches in If-Range (RFC 9110).
                    ok = etag is not None and if_range == etag and not etag.startswith("W/")
                else:
                    t = parse_http_date(if_range)
                    ok = t is not None and int(t) == lastmod_ts and "Last-Modified" in common
                if not ok:
                    r = None

        if r == "unsatisfiable":
            o.count_status(path, 416)
            hdrs = dict(common)
            hdrs["Content-Range"] = "bytes */%d" % size
            return 416, self._simple(416, "range not satisfiable\n", headers=hdrs, path=path)

        if r is None:
            code, start, length = 200, 0, size
        else:
            code, start, length = 206, r[0], r[1] - r[0] + 1
        shift = 0
        if code == 206 and not head:
            cap = o.range_fault("range_cap", path)
            if cap:
                length = max(1, min(length, int(cap.get("bytes", length))))
            lie = o.range_fault("range_shift", path)
            if lie:
                shift = int(lie.get("by", 0))
        unknown_length = code == 200 and o.no_length(path)
        mismatch = o.length_mismatch(path) if code == 206 and not head else None
        delta = int(mismatch.get("delta", 0)) if mismatch else 0
        delta = max(delta, 1 - length)  # at least one byte of body

        self.send_response(code)
        self.send_header("Content-Type", ctype)
        if o.gzip_encoded(path):
            self.send_header("Content-Encoding", "gzip")
        if unknown_length:
            # HTTP/1.1 body delimited by the end of the connection.
            self.close_connection = True
            self.send_header("Connection", "close")
        else:
            self.send_header("Content-Length", str(length + delta))
        if code == 206:
            self.send_header(
                "Content-Range", "bytes %d-%d/%d" % (start + shift, start + shift + length - 1, size))
        else:
            self.send_header("Accept-Ranges", "bytes")
        for k, v in common.items():
            self.send_header(k, v)
        if body is None:
            self.send_header("Cache-Control", "no-cache")
        if encoding is not None:
            self.send_header("Content-Encoding", encoding)
            self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        o.count_status(path, code)
        if body is not None:
            o.count_encoding(path, encoding or "identity")
        if head or length == 0:
            return code, 0

        body_length = length + delta if delta < 0 else length
        drop, stall, hold = o.body_faults(path, body_length)
        pace = o.pace(path)
        if delta < 0:
            return code, self._send_body(path, fd, body, start, length + delta, drop, stall, hold, pace)
        sent = self._send_body(path, fd, body, start, length, drop, stall, hold, pace)
        if delta > 0 and sent == length:
            try:
                self.connection.sendall(b"\xee" * delta)
                o.count_bytes(path, delta)
                sent += delta
            except OSError:
                self.close_connection = True
        return code, sent

    def _send_endless(self, path):
        """A 200 of unknown length whose body never ends."""
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "audio/mpeg")
        self.send_header("Connection", "close")
        self.end_headers()
        self.origin.count_status(path, 200)
        chunk = b"\xee" * CHUNK
        sent = 0
        try:
            while True:
                self.connection.sendall(chunk)
                sent += len(chunk)
                self.origin.count_bytes(path, len(chunk))
        except OSError:
            return sent

    def _send_body(self, path, fd, body, start, length, drop, stall, hold=None, pace=None):
        o = self.origin
        began = time.monotonic()
        sock = self.connection
        sent = 0
        drop_after = None
        if drop is not None:
            drop_after = max(0, int(drop.get("after_bytes", 0)))
            if drop_after >= length:
                drop_after = None
        stall_after = stall_secs = None
        if stall is not None:
            stall_after = max(0, int(stall.get("after_bytes", 0)))
            stall_secs = float(stall.get("seconds", 1))
            if stall_after >= length:
                stall_after = None
        hold_after = hold_secs = None
        if hold is not None:
            hold_after = max(0, int(hold.get("after_bytes", 0)))
            hold_secs = float(hold.get("seconds", 60))
            if hold_after >= length:
                hold_after = None
        try:
            if drop_after is None and stall_after is None and hold_after is None and not pace:
                # Count the body before sending it: a client that reads the
                # stats right after its response must see these bytes. What
                # is not sent after all is taken back below.
                o.count_bytes(path, length)
                try:
                    if body is None:
                        out = sock.fileno()
                        while sent < length:
                            n = os.sendfile(out, fd, start + sent, min(length - sent, SENDFILE_MAX))
                            if n == 0:
                                break  # file shrank under us
                            sent += n
                        if sent < length:
                            self._abort()
                        return sent
                    mv = memoryview(body)[start:start + length]
                    while sent < length:
                        sent += sock.send(mv[sent:sent + (1 << 20)])
                    return sent
                finally:
                    if sent < length:
                        o.count_bytes(path, sent - length)
            # Faulty path: manual chunked writes.
            while sent < length:
                if stall_after is not None and sent >= stall_after:
                    time.sleep(stall_secs)
                    stall_after = None
                if hold_after is not None and sent >= hold_after:
                    o.hold(path, hold_secs)
                    hold_after = None
                if drop_after is not None and sent >= drop_after:
                    o.count_drop(path, self.headers.get("Range"), sent)
                    self._abort()
                    return sent
                limit = length
                if stall_after is not None:
                    limit = min(limit, stall_after)
                if hold_after is not None:
                    limit = min(limit, hold_after)
                if drop_after is not None:
                    limit = min(limit, drop_after)
                n = min(CHUNK if not pace else PACE_SLICE, limit - sent)
                if pace:
                    wait = began + sent / pace - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                if body is None:
                    data = os.pread(fd, n, start + sent)
                    if not data:
                        self._abort()
                        return sent
                else:
                    data = body[start + sent:start + sent + n]
                sock.sendall(data)
                sent += len(data)
                o.count_bytes(path, len(data))
            return sent
        except (ConnectionError, BrokenPipeError, OSError):
            self.close_connection = True
            return sent


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        pass  # quiet: clients hang up all the time in tests


def write_port_file(path, port):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".port-")
    with os.fdopen(fd, "w") as f:
        f.write("%d\n" % port)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description="podfs test origin")
    ap.add_argument("--root", required=True)
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log")
    args = ap.parse_args(argv)

    sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)

    def _exit(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGINT, _exit)
    signal.signal(signal.SIGTERM, _exit)

    if not os.path.isdir(args.root):
        print("origin: --root %s is not a directory" % args.root, file=sys.stderr)
        return 2
    origin = Origin(args.root, args.log)
    server = Server((args.bind, args.port), Handler)
    server.origin = origin
    port = server.server_address[1]
    if args.port_file:
        write_port_file(args.port_file, port)
    try:
        server.serve_forever(poll_interval=0.2)
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
