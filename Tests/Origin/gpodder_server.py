#!/usr/bin/env python3
"""podfs test sync server: the gpodder.net API v2 and Nextcloud GPodderSync
subscription calls, with HTTP Basic auth, on one port.

Python 3 standard library only. Used by podfs's sync tests and, as "the
phone", through the real mygpoclient library (Tests/Origin/test_gpodder_server.py).

    python3 Tests/Origin/gpodder_server.py [--bind 127.0.0.1] [--port 0]
        [--port-file PATH] [--user NAME:PASSWORD ...]   (default alice:secret)

gpodder.net API v2 (per user, per device):
  GET  /api/2/subscriptions/USER/DEVICE.json?since=T  {"add", "remove", "timestamp"};
                                                      404 for a device not made yet
  POST /api/2/subscriptions/USER/DEVICE.json          {"add", "remove"} ->
                                                      {"timestamp", "update_urls"}
  GET  /api/2/devices/USER.json                       the devices
  GET  /api/2/sync-devices/USER.json                  no sync groups: every device
                                                      "not-synchronized"
  POST /api/2/devices/USER/DEVICE.json                caption/type; empty answer
  POST /api/2/auth/USER/login.json, logout.json       a session cookie (accepted
                                                      instead of Basic afterwards)
Nextcloud GPodderSync (per user; ROOT may be "" or any prefix before /index.php):
  GET  ROOT/index.php/apps/gpoddersync/subscriptions?since=T
  POST ROOT/index.php/apps/gpoddersync/subscription_change/create  -> {"timestamp"}
  GET  /status.php     Nextcloud's status JSON, only with "nextcloud_status": true

Every change gets the next tick of a logical clock (whole seconds since the
epoch, but strictly increasing), so `since` is exact: a pull since T lists each
URL whose latest change is later than T once, in "add" or "remove" by that
change. Without `since`, gpodder answers everything and Nextcloud, like the
real app, only the last week. A request without valid credentials gets 401 with
a Basic challenge (what urllib, and so mygpoclient, waits for); a USER in the
path that is not the authenticated one gets 401 too.

Control (never counted, no auth):
  GET  /_stats           {"requests": {path: n}, "methods": {"GET path": n},
                          "auth_failures": n, "bodies": [last 50 POST bodies]}
  POST /_reset           zero the counters
  POST /_control         merge JSON: {"answer": {"mode": M, "count": N, "path": P}}
                         answers the next N (-1: all) sync requests (whose path
                         starts with P, default all) with mode M:
                           "401", "403", "404", "503"  that status
                           "garbage"       200, bytes that are not JSON
                           "not_object"    200, a JSON list
                           "huge"          200, 10,000 URLs in "add"
                           "bad_timestamp" 200, "timestamp": "soon"
                           "float_timestamp" 200, "timestamp": 1.5
                           "hostile"       200, non-http URLs, duplicates, a URL
                                           in both lists
                         {"nextcloud_status": true|false}
  POST /_control/clear   no faults, no status.php
  POST /_seed            {"user", "device" (or "nextcloud": true), "add", "remove"}
                         stores changes as if a client had uploaded them
  GET  /_state?user=U&device=D   the device's current subscriptions
"""

import argparse
import base64
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

NEXTCLOUD_DEVICE = "\0nextcloud"
WEEK = 7 * 24 * 3600


class Store:
    """Per user, per device: a log of (timestamp, url, "add"|"remove")."""

    def __init__(self, users):
        self.lock = threading.RLock()
        self.users = dict(users)
        self.logs = {}  # (user, device) -> list of (ts, url, action)
        self.devices = {}  # user -> {device: {"caption", "type"}}
        self.clock = 0
        self.sessions = {}  # cookie value -> user
        self.faults = {}
        self.nextcloud_status = False
        self.reset_stats()

    def reset_stats(self):
        self.requests = {}
        self.methods = {}
        self.auth_failures = 0
        self.bodies = []

    def tick(self):
        self.clock = max(int(time.time()), self.clock + 1)
        return self.clock

    def now(self):
        return max(int(time.time()), self.clock)

    def record(self, user, device, add, remove):
        ts = self.tick()
        if device != NEXTCLOUD_DEVICE:
            self.devices.setdefault(user, {}).setdefault(device, {"caption": device, "type": "other"})
        log = self.logs.setdefault((user, device), [])
        for url in add:
            log.append((ts, url, "add"))
        for url in remove:
            log.append((ts, url, "remove"))
        return ts

    def changes(self, user, device, since):
        latest = {}
        for ts, url, action in self.logs.get((user, device), []):
            if since is None or ts > since:
                latest.pop(url, None)
                latest[url] = action
        add = [u for u, a in latest.items() if a == "add"]
        remove = [u for u, a in latest.items() if a == "remove"]
        return add, remove

    def current(self, user, device):
        add, _ = self.changes(user, device, None)
        return add


def sanitize(url):
    """gpodder.net's clean-up (mygpo's normalize_feed_url), reduced:
    trimmed, feed:// read as http://, the scheme and host lowercased, a
    user and password dropped; anything else that is no http(s) URL is
    refused ("")."""
    cleaned = url.strip()
    if cleaned.lower().startswith("feed://"):
        cleaned = "http://" + cleaned[len("feed://"):]
    if not cleaned.lower().startswith(("http://", "https://")):
        return ""
    scheme, rest = cleaned.split("://", 1)
    authority, slash, path = rest.partition("/")
    authority = authority.rpartition("@")[2].lower()
    return scheme.lower() + "://" + authority + slash + path


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "podfs-gpodder-test/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    # -- plumbing --------------------------------------------------------

    def reply(self, status, body=b"", content_type="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        user = getattr(self, "new_session", None)
        if user is not None and status < 400 and not any(n == "Set-Cookie" for n, _ in headers):
            # As gpodder.net (Django) does: a Basic login also opens a
            # session. mygpoclient depends on it: urllib sends Basic only
            # after a 401, and mygpoclient answers at most 3 of those.
            cookie = base64.b16encode(os.urandom(12)).decode().lower()
            with self.server.store.lock:
                self.server.store.sessions[cookie] = user
            self.send_header("Set-Cookie", "sessionid=%s; Path=/" % cookie)
        self.new_session = None
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def authenticated_user(self):
        store = self.server.store
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            try:
                user, _, password = base64.b64decode(header[6:]).decode("utf-8").partition(":")
            except Exception:
                return None
            if store.users.get(user) == password:
                self.new_session = user
                return user
            return None
        for part in self.headers.get("Cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == "sessionid" and value in store.sessions:
                return store.sessions[value]
        return None

    def refuse_auth(self):
        with self.server.store.lock:
            self.server.store.auth_failures += 1
        self.reply(401, {"message": "unauthorized"},
                   headers=[("WWW-Authenticate", 'Basic realm="gpodder test"')])

    def take_fault(self, path):
        store = self.server.store
        with store.lock:
            fault = store.faults.get("answer")
            if not fault or not path.startswith(fault.get("path", "")):
                return None
            count = fault.get("count", -1)
            if count == 0:
                return None
            if count > 0:
                fault["count"] = count - 1
            return fault["mode"]

    def answer_fault(self, mode):
        ts = self.server.store.now()
        if mode in ("401", "403", "404", "503"):
            headers = [("WWW-Authenticate", 'Basic realm="gpodder test"')] if mode == "401" else []
            return self.reply(int(mode), {"message": "fault " + mode}, headers=headers)
        if mode == "garbage":
            return self.reply(200, b"\x00\xffnot json at all {{{", content_type="text/html")
        if mode == "not_object":
            return self.reply(200, [1, 2, 3])
        if mode == "huge":
            urls = ["https://feeds.example.org/show/%d.xml" % i for i in range(10000)]
            return self.reply(200, {"add": urls, "remove": [], "timestamp": ts,
                                    "update_urls": [[u, u + "?x"] for u in urls]})
        if mode == "bad_timestamp":
            return self.reply(200, {"add": [], "remove": [], "timestamp": "soon"})
        if mode == "float_timestamp":
            return self.reply(200, {"add": [], "remove": [], "timestamp": 1.5})
        if mode == "hostile":
            return self.reply(200, {
                "add": ["https://ok.example/a.xml", "https://ok.example/a.xml", "javascript:alert(1)",
                        "ftp://old.example/feed", "file:///etc/passwd", "https://both.example/x.xml"],
                "remove": ["https://both.example/x.xml", "gopher://x"],
                "timestamp": ts})
        return self.reply(500, {"message": "unknown fault mode " + mode})

    def count(self, path):
        store = self.server.store
        with store.lock:
            store.requests[path] = store.requests.get(path, 0) + 1
            key = self.command + " " + path
            store.methods[key] = store.methods.get(key, 0) + 1

    # -- dispatch --------------------------------------------------------

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def dispatch(self):
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        query = parse_qs(parts.query)
        if path.startswith("/_"):
            return self.control(path, query)
        body = self.read_body() if self.command in ("POST", "PUT") else b""
        self.count(path)
        if body:
            with self.server.store.lock:
                self.server.store.bodies = (self.server.store.bodies + [body.decode("utf-8", "replace")])[-50:]
        if path == "/status.php":
            if self.server.store.nextcloud_status:
                return self.reply(200, {"installed": True, "maintenance": False, "needsDbUpgrade": False,
                                        "version": "28.0.0.0", "versionstring": "28.0.0",
                                        "edition": "", "productname": "Nextcloud"})
            return self.reply(404, "not found", content_type="text/plain")
        fault = self.take_fault(path)
        if fault:
            return self.answer_fault(fault)
        segments = path.split("/")
        if "/index.php/apps/gpoddersync/" in path:
            return self.nextcloud(path, query, body)
        if path.startswith("/api/2/"):
            return self.gpodder(segments[3:], query, body)
        self.reply(404, {"message": "no such path"})

    def since(self, query):
        if "since" not in query:
            return None
        try:
            return int(query["since"][0])
        except ValueError:
            return "bad"

    def gpodder(self, segments, query, body):
        # segments after /api/2/: e.g. ["subscriptions", "alice", "phone.json"]
        store = self.server.store
        if segments[:1] == ["auth"] and len(segments) == 3:
            user = self.authenticated_user()
            if user is None or user != segments[1]:
                return self.refuse_auth()
            if segments[2] == "login.json":
                cookie = base64.b16encode(os.urandom(12)).decode().lower()
                with store.lock:
                    store.sessions[cookie] = user
                return self.reply(200, b"", headers=[("Set-Cookie", "sessionid=%s; Path=/" % cookie)])
            return self.reply(200, b"")
        if len(segments) < 2:
            return self.reply(404, {"message": "no such path"})
        user = self.authenticated_user()
        owner = segments[1][:-5] if len(segments) == 2 and segments[1].endswith(".json") else segments[1]
        if user is None or user != owner:
            return self.refuse_auth()
        if segments[0] == "sync-devices" and len(segments) == 2:
            # No device is grouped here: every device keeps its own list.
            with store.lock:
                ids = list(store.devices.get(user, {}))
            return self.reply(200, {"synchronized": [], "not-synchronized": ids})
        if segments[0] == "devices":
            if len(segments) == 2 and self.command == "GET":
                with store.lock:
                    devices = store.devices.get(user, {})
                    listed = [{"id": d, "caption": v["caption"], "type": v["type"],
                               "subscriptions": len(store.current(user, d))} for d, v in devices.items()]
                return self.reply(200, listed)
            if len(segments) == 3 and segments[2].endswith(".json") and self.command == "POST":
                try:
                    settings = json.loads(body or b"{}")
                except ValueError:
                    return self.reply(400, {"message": "bad json"})
                with store.lock:
                    device = store.devices.setdefault(user, {}).setdefault(
                        segments[2][:-5], {"caption": segments[2][:-5], "type": "other"})
                    for key in ("caption", "type"):
                        if key in settings:
                            device[key] = settings[key]
                return self.reply(200, b"")
            return self.reply(404, {"message": "no such path"})
        if segments[0] != "subscriptions" or len(segments) != 3 or not segments[2].endswith(".json"):
            return self.reply(404, {"message": "no such path"})
        device = segments[2][:-5]
        if self.command == "GET":
            since = self.since(query)
            if since == "bad":
                return self.reply(400, {"message": "since must be a number"})
            with store.lock:
                # As gpodder.net (mygpo's get_object_or_404): a device is
                # made by an upload or a device call, never by a pull.
                if device not in store.devices.get(user, {}):
                    return self.reply(404, {"message": "no such device"})
                add, remove = store.changes(user, device, since)
                return self.reply(200, {"add": add, "remove": remove, "timestamp": store.now()})
        if self.command == "POST":
            change = self.change(body)
            if change is None:
                return self.reply(400, {"message": "expected {\"add\": [...], \"remove\": [...]}"})
            add, remove = change
            if set(add) & set(remove):
                return self.reply(400, {"message": "a URL is both in add and in remove"})
            updates = []
            clean_add, clean_remove = [], []
            for url in add:
                cleaned = sanitize(url)
                if cleaned != url:
                    updates.append([url, cleaned])
                if cleaned:
                    clean_add.append(cleaned)
            for url in remove:
                cleaned = sanitize(url)
                if cleaned != url:
                    updates.append([url, cleaned])
                if cleaned:
                    clean_remove.append(cleaned)
            with store.lock:
                ts = store.record(user, device, clean_add, clean_remove)
            return self.reply(200, {"timestamp": ts, "update_urls": updates})
        self.reply(405, {"message": "method not allowed"})

    @staticmethod
    def change(body):
        """An uploaded {"add": [...], "remove": [...]} as (add, remove); None when it is not one."""
        try:
            change = json.loads(body)
            add, remove = change.get("add", []), change.get("remove", [])
            assert all(isinstance(u, str) for u in add + remove)
            return add, remove
        except Exception:
            return None

    def nextcloud(self, path, query, body):
        store = self.server.store
        user = self.authenticated_user()
        if user is None:
            return self.refuse_auth()
        tail = path.split("/index.php/apps/gpoddersync/", 1)[1]
        if tail == "subscriptions" and self.command == "GET":
            since = self.since(query)
            if since == "bad":
                return self.reply(400, {"message": "since must be a number"})
            with store.lock:
                if since is None:
                    since = store.now() - WEEK
                add, remove = store.changes(user, NEXTCLOUD_DEVICE, since)
                return self.reply(200, {"add": add, "remove": remove, "timestamp": store.now()})
        if tail == "subscription_change/create" and self.command == "POST":
            change = self.change(body)
            if change is None:
                return self.reply(400, {"message": "expected {\"add\": [...], \"remove\": [...]}"})
            with store.lock:
                ts = store.record(user, NEXTCLOUD_DEVICE, *change)
            return self.reply(200, {"timestamp": ts})
        self.reply(404, {"message": "no such path"})

    def control(self, path, query):
        store = self.server.store
        body = self.read_body() if self.command == "POST" else b""
        if path == "/_stats":
            with store.lock:
                return self.reply(200, {"requests": store.requests, "methods": store.methods,
                                        "auth_failures": store.auth_failures, "bodies": store.bodies})
        if path == "/_reset" and self.command == "POST":
            with store.lock:
                store.reset_stats()
            return self.reply(200, {"ok": True})
        if path == "/_control" and self.command == "POST":
            config = json.loads(body or b"{}")
            with store.lock:
                if "answer" in config:
                    store.faults["answer"] = dict(config["answer"])
                if "nextcloud_status" in config:
                    store.nextcloud_status = bool(config["nextcloud_status"])
            return self.reply(200, {"ok": True})
        if path == "/_control/clear" and self.command == "POST":
            with store.lock:
                store.faults = {}
                store.nextcloud_status = False
            return self.reply(200, {"ok": True})
        if path == "/_seed" and self.command == "POST":
            seed = json.loads(body)
            device = NEXTCLOUD_DEVICE if seed.get("nextcloud") else seed["device"]
            with store.lock:
                ts = store.record(seed["user"], device, seed.get("add", []), seed.get("remove", []))
            return self.reply(200, {"timestamp": ts})
        if path == "/_state":
            user = query.get("user", [""])[0]
            device = NEXTCLOUD_DEVICE if "nextcloud" in query else query.get("device", [""])[0]
            with store.lock:
                return self.reply(200, {"subscriptions": store.current(user, device)})
        self.reply(404, {"message": "no such control path"})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, users):
        super().__init__(address, Handler)
        self.store = Store(users)


def start(bind="127.0.0.1", port=0, users=(("alice", "secret"),)):
    """Starts a server on a thread; returns it (`server.server_address`)."""
    server = Server((bind, port), users)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--user", action="append", help="NAME:PASSWORD (repeatable)")
    args = ap.parse_args(argv)
    # A parent that blocks SIGTERM in its threads (podfs's test process
    # does) passes the mask on; the server must still stop on SIGTERM.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    users = [tuple(u.split(":", 1)) for u in (args.user or ["alice:secret"])]
    server = Server((args.bind, args.port), users)
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    else:
        print(port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
