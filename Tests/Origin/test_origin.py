#!/usr/bin/env python3
"""Self-test for the podfs test origin.

    python3 Tests/Origin/test_origin.py        (or: python3 -m unittest in Tests/Origin)
"""

import gzip
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ORIGIN = os.path.join(HERE, "origin.py")

BIG = bytes((i * 7 + i // 256) & 0xFF for i in range(300_000))
FEED = b'<rss><channel><enclosure url="{{BASE}}/ep.mp3"/><x>{{BASE}}</x></channel></rss>\n'


class OriginTest(unittest.TestCase):
    proc = None
    root = None

    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="origin-test-")
        try:
            with open(os.path.join(cls.root, "ep.mp3"), "wb") as f:
                f.write(BIG)
            with open(os.path.join(cls.root, "feed.xml"), "wb") as f:
                f.write(FEED)
            with open(os.path.join(cls.root, "other.mp3"), "wb") as f:
                f.write(b"other file bytes")
            with open(os.path.join(os.path.dirname(cls.root), "secret-%d.txt" % os.getpid()), "w") as f:
                f.write("secret")
            port_file = os.path.join(cls.root, ".port")
            cls.proc = subprocess.Popen(
                [sys.executable, ORIGIN, "--root", cls.root, "--port", "0", "--port-file", port_file],
                stdout=subprocess.DEVNULL)
            deadline = time.time() + 10
            while not os.path.exists(port_file):
                if cls.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("origin did not start")
                time.sleep(0.02)
            with open(port_file) as f:
                cls.port = int(f.read())
        except BaseException:
            cls._cleanup()
            raise

    @classmethod
    def _cleanup(cls):
        if cls.proc is not None:
            try:
                cls.proc.terminate()
                cls.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                cls.proc.kill()
                cls.proc.wait()
            finally:
                cls.proc = None
        try:
            os.unlink(os.path.join(os.path.dirname(cls.root), "secret-%d.txt" % os.getpid()))
        except OSError:
            pass
        shutil.rmtree(cls.root, ignore_errors=True)

    @classmethod
    def tearDownClass(cls):
        cls._cleanup()

    # ---- helpers ----
    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def request(self, method, path, headers=None, body=None):
        c = self.conn()
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            return r, data
        finally:
            c.close()

    def control(self, path, obj=None, method="POST"):
        body = json.dumps(obj).encode() if obj is not None else b""
        r, data = self.request(method, path, body=body)
        self.assertEqual(r.status, 200, data)
        return json.loads(data)

    def stats_until(self, ok, message):
        """The stats, polled until `ok` holds of them (10 s at most)."""
        deadline = time.time() + 10
        while not ok(s := self.control("/_origin/stats", method="GET")):
            self.assertLess(time.time(), deadline, message)
            time.sleep(0.01)
        return s

    def stats_when(self, key, value, message):
        """The stats, polled until `key` is `value` (10 s at most)."""
        return self.stats_until(lambda s: s[key] == value, message)

    def setUp(self):
        self.control("/_origin/config/clear")
        self.control("/_origin/reset")

    # ---- tests ----
    def test_full_get(self):
        r, data = self.request("GET", "/ep.mp3")
        self.assertEqual(r.status, 200)
        self.assertEqual(data, BIG)
        self.assertEqual(r.getheader("Content-Length"), str(len(BIG)))
        self.assertEqual(r.getheader("Content-Type"), "audio/mpeg")
        self.assertEqual(r.getheader("Accept-Ranges"), "bytes")
        self.assertTrue(r.getheader("ETag").startswith('"'))
        self.assertIsNotNone(r.getheader("Last-Modified"))
        r, data = self.request("HEAD", "/ep.mp3")
        self.assertEqual(r.status, 200)
        self.assertEqual(data, b"")
        self.assertEqual(r.getheader("Content-Length"), str(len(BIG)))

    def test_not_found_and_traversal(self):
        r, _ = self.request("GET", "/nope.mp3")
        self.assertEqual(r.status, 404)
        name = "secret-%d.txt" % os.getpid()
        for p in ("/../" + name, "/%2e%2e/" + name, "/x/../../" + name):
            r, data = self.request("GET", p)
            self.assertEqual(r.status, 404, p)
            self.assertNotIn(b"secret", data)

    def test_range(self):
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=100-199"})
        self.assertEqual(r.status, 206)
        self.assertEqual(data, BIG[100:200])
        self.assertEqual(r.getheader("Content-Range"), "bytes 100-199/%d" % len(BIG))
        self.assertIsNone(r.getheader("Accept-Ranges"))
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=299990-"})
        self.assertEqual((r.status, data), (206, BIG[299990:]))
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=-10"})
        self.assertEqual((r.status, data), (206, BIG[-10:]))
        self.assertEqual(r.getheader("Content-Range"), "bytes %d-%d/%d" % (len(BIG) - 10, len(BIG) - 1, len(BIG)))
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=299990-999999999"})
        self.assertEqual((r.status, data), (206, BIG[299990:]))

    def test_416(self):
        r, _ = self.request("GET", "/ep.mp3", {"Range": "bytes=%d-" % len(BIG)})
        self.assertEqual(r.status, 416)
        self.assertEqual(r.getheader("Content-Range"), "bytes */%d" % len(BIG))

    def test_if_range(self):
        r, _ = self.request("HEAD", "/ep.mp3")
        etag, lm = r.getheader("ETag"), r.getheader("Last-Modified")
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9", "If-Range": etag})
        self.assertEqual((r.status, data), (206, BIG[:10]))
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9", "If-Range": lm})
        self.assertEqual((r.status, data), (206, BIG[:10]))
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9", "If-Range": '"stale"'})
        self.assertEqual((r.status, data), (200, BIG))
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9",
                                                 "If-Range": "Mon, 01 Jan 2001 00:00:00 GMT"})
        self.assertEqual((r.status, data), (200, BIG))

    def test_template_and_conditional(self):
        r, data = self.request("GET", "/feed.xml")
        self.assertEqual(r.status, 200)
        base = "http://127.0.0.1:%d" % self.port
        expected = FEED.replace(b"{{BASE}}", base.encode())
        self.assertEqual(data, expected)
        self.assertEqual(r.getheader("Content-Length"), str(len(expected)))
        self.assertEqual(r.getheader("Content-Type"), "application/rss+xml")
        etag, lm = r.getheader("ETag"), r.getheader("Last-Modified")
        r, data = self.request("GET", "/feed.xml", {"If-None-Match": etag})
        self.assertEqual((r.status, data), (304, b""))
        r, data = self.request("GET", "/feed.xml", {"If-Modified-Since": lm})
        self.assertEqual((r.status, data), (304, b""))
        r, data = self.request("GET", "/feed.xml", {"If-None-Match": '"other"'})
        self.assertEqual(r.status, 200)
        r, data = self.request("GET", "/feed.xml", {"Host": "example.test:81"})
        self.assertIn(b"http://example.test:81/ep.mp3", data)

    def test_gzip_templates(self):
        self.control("/_origin/config", {"gzip": True})
        try:
            r, data = self.request("GET", "/feed.xml", {"Accept-Encoding": "gzip"})
            self.assertEqual((r.status, r.getheader("Content-Encoding")), (200, "gzip"))
            base = "http://127.0.0.1:%d" % self.port
            self.assertEqual(gzip.decompress(data), FEED.replace(b"{{BASE}}", base.encode()))
            etag = r.getheader("ETag")
            r, data = self.request("GET", "/feed.xml", {"Accept-Encoding": "gzip", "If-None-Match": etag})
            self.assertEqual((r.status, data), (304, b""))
            r, data = self.request("GET", "/feed.xml")
            self.assertEqual((r.status, r.getheader("Content-Encoding")), (200, None))
            r, data = self.request("GET", "/ep.mp3", {"Accept-Encoding": "gzip"})
            self.assertEqual((r.status, r.getheader("Content-Encoding"), data), (200, None, BIG))
            stats = json.loads(self.request("GET", "/_origin/stats")[1])
            self.assertIn("gzip", stats["paths"]["/feed.xml"]["encodings"])
        finally:
            self.control("/_origin/config/clear")

    def test_stats(self):
        self.request("GET", "/ep.mp3", {"Range": "bytes=0-99"})
        self.request("GET", "/ep.mp3", {"Range": "bytes=100-299"})
        self.request("GET", "/other.mp3")
        s = self.control("/_origin/stats", method="GET")
        self.assertEqual(s["requests"], 3)
        self.assertEqual(s["bytes"], 300 + 16)
        self.assertEqual(s["connections"], 3)
        self.assertEqual(s["paths"]["/ep.mp3"]["requests"], 2)
        self.assertEqual(s["paths"]["/ep.mp3"]["bytes"], 300)
        self.assertEqual(s["paths"]["/ep.mp3"]["ranges"], ["bytes=0-99", "bytes=100-299"])
        self.control("/_origin/reset")
        s = self.control("/_origin/stats", method="GET")
        self.assertEqual((s["requests"], s["bytes"], s["paths"]), (0, 0, {}))

    def test_a_response_begun_before_a_reset_leaves_no_finished_record(self):
        # A client can read a response whole and ask for a reset before the
        # origin's thread records the response's end. Forced here: the
        # response is held across the reset, then released.
        import threading
        self.control("/_origin/config", {"hold": {"path": "/other.mp3", "after_bytes": 4, "count": 1}})
        reader = threading.Thread(target=lambda: self.request("GET", "/other.mp3"))
        reader.start()
        try:
            self.stats_when("held", 1, "the response was never held")
            self.control("/_origin/reset")
        finally:
            self.control("/_origin/release")
            reader.join(10)
        s = self.stats_when("in_progress", 0, "the response never ended at the origin")
        self.assertNotIn("finished", s["paths"].get("/other.mp3", {}))
        # One begun after the reset is recorded.
        self.request("GET", "/other.mp3")
        s = self.stats_until(lambda s: "finished" in s["paths"].get("/other.mp3", {}),
                             "the response's end was never recorded")
        self.assertEqual(s["paths"]["/other.mp3"]["finished"], [{"range": None, "sent": 16}])

    def test_drop(self):
        self.control("/_origin/config", {"drop": {"path": "/ep.mp3", "after_bytes": 1000, "count": 1}})
        c = self.conn()
        try:
            c.request("GET", "/ep.mp3")
            r = c.getresponse()
            self.assertEqual(r.status, 200)
            with self.assertRaises(http.client.IncompleteRead) as cm:
                r.read()
            self.assertEqual(len(cm.exception.partial), 1000)
            self.assertEqual(cm.exception.partial, BIG[:1000])
        finally:
            c.close()
        s = self.control("/_origin/stats", method="GET")
        self.assertEqual(s["paths"]["/ep.mp3"]["bytes"], 1000)
        self.assertEqual(s["drops"], 1)
        # count exhausted: the next GET is whole
        r, data = self.request("GET", "/ep.mp3")
        self.assertEqual((r.status, data), (200, BIG))

    def test_a_short_body_leaves_the_drop_count_alone(self):
        # A response no longer than after_bytes cannot be dropped there: it
        # must not use up the count (else a probe would disarm the fault).
        self.control("/_origin/config", {"drop": {"path": "/ep.mp3", "after_bytes": 1000, "count": 1}})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-999"})
        self.assertEqual((r.status, data), (206, BIG[:1000]))
        cfg = self.control("/_origin/config", method="GET")
        self.assertEqual(cfg["drop"][0]["count"], 1)
        with self.assertRaises(http.client.IncompleteRead):
            self.request("GET", "/ep.mp3")
        s = self.control("/_origin/stats", method="GET")
        self.assertEqual(s["drops"], 1)
        self.assertEqual(s["paths"]["/ep.mp3"]["drops"], 1)
        self.assertEqual(s["paths"]["/ep.mp3"]["dropped"], [{"range": None, "sent": 1000}])
        self.assertEqual(self.control("/_origin/config", method="GET")["drop"][0]["count"], 0)

    def test_hold_until_released(self):
        import threading
        self.control("/_origin/config", {"hold": {"path": "/ep.mp3", "after_bytes": 100, "count": 1}})
        got = {}

        def fetch():
            got["response"] = self.request("GET", "/ep.mp3", {"Range": "bytes=0-999"})

        reader = threading.Thread(target=fetch)
        reader.start()
        try:
            s = self.stats_when("held", 1, "the response was never held")
            # Held (the origin says so): 100 bytes sent, the response not
            # ended at the origin nor complete at the reader.
            self.assertEqual((s["paths"]["/ep.mp3"]["bytes"], s["in_progress"]), (100, 1))
            self.assertNotIn("finished", s["paths"]["/ep.mp3"])
            self.assertTrue(reader.is_alive())
            self.assertNotIn("response", got)
        finally:
            self.control("/_origin/release")
            reader.join(10)
        # Released: the response completes.
        self.assertFalse(reader.is_alive(), "the response did not complete after the release")
        r, data = got["response"]
        self.assertEqual((r.status, data), (206, BIG[:1000]))
        s = self.stats_when("in_progress", 0, "the response never ended at the origin")
        self.assertEqual((s["held"], s["holds"], s["paths"]["/ep.mp3"]["holds"]), (0, 1, 1))
        self.assertEqual(s["paths"]["/ep.mp3"]["bytes"], 1000)
        self.assertEqual(s["paths"]["/ep.mp3"]["finished"], [{"range": "bytes=0-999", "sent": 1000}])
        # The count is used up: the next one is not held.
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-999"})
        self.assertEqual((r.status, data), (206, BIG[:1000]))

    def test_open_connections_count_a_client_until_it_closes(self):
        def wait_for_open(n, message):
            deadline = time.time() + 10
            while self.control("/_origin/stats", method="GET")["open_connections"] != n:
                self.assertLess(time.time(), deadline, message)
                time.sleep(0.01)

        # Control connections (these stats requests too) are not counted.
        wait_for_open(0, "the earlier tests' connections never closed")
        c = self.conn()
        try:
            c.connect()
            wait_for_open(1, "a connection that sent nothing yet is not counted")
            c.request("GET", "/other.mp3")
            r = c.getresponse()
            self.assertEqual((r.status, r.read()), (200, b"other file bytes"))
            # Kept alive after its response: still open.
            self.assertEqual(self.control("/_origin/stats", method="GET")["open_connections"], 1)
        finally:
            c.close()
        wait_for_open(0, "a closed connection is still counted")

    def test_hold_head_answers_nothing_until_released(self):
        import threading
        self.control("/_origin/config", {"hold_head": {"path": "/other.mp3", "count": 1}})
        got = {}
        reader = threading.Thread(target=lambda: got.update(response=self.request("GET", "/other.mp3")))
        reader.start()
        try:
            self.stats_when("held", 1, "the request was never held")
            s = self.control("/_origin/stats", method="GET")
            self.assertEqual(s["paths"]["/other.mp3"]["requests"], 1)
            self.assertEqual(s["paths"]["/other.mp3"]["statuses"], [])
        finally:
            self.control("/_origin/release")
            reader.join(10)
        r, data = got["response"]
        self.assertEqual((r.status, data), (200, b"other file bytes"))

    def test_retry_after_in_is_a_date_after_the_answer(self):
        self.control("/_origin/config", {"status": {"/other.mp3": {"code": 503, "count": 1, "retry_after_in": 30}}})
        r, _ = self.request("GET", "/other.mp3")
        self.assertEqual(r.status, 503)
        import email.utils
        when = email.utils.parsedate_to_datetime(r.getheader("Retry-After")).timestamp()
        self.assertGreater(when, time.time() + 25)
        self.assertLess(when, time.time() + 31)

    def test_a_hold_ends_after_its_seconds(self):
        self.control("/_origin/config", {"hold": {"path": "/ep.mp3", "after_bytes": 10, "seconds": 0.3}})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-99"})
        self.assertEqual((r.status, data), (206, BIG[:100]))

    def test_endless(self):
        self.control("/_origin/config", {"endless": ["/ep.mp3"]})
        c = self.conn()
        try:
            c.request("GET", "/ep.mp3", headers={"Range": "bytes=0-9"})
            r = c.getresponse()
            self.assertEqual(r.status, 200)
            self.assertIsNone(r.getheader("Content-Length"))
            self.assertEqual(r.read(3 * 1024 * 1024), b"\xee" * (3 * 1024 * 1024))
        finally:
            c.close()

    def test_length_mismatch_longer(self):
        self.control("/_origin/config", {"length_mismatch": {"path": "/ep.mp3", "delta": 7, "count": 1}})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=10-99"})
        self.assertEqual(r.status, 206)
        self.assertEqual(r.getheader("Content-Range"), "bytes 10-99/%d" % len(BIG))
        self.assertEqual(data, BIG[10:100] + b"\xee" * 7)
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=10-99"})
        self.assertEqual((r.status, data), (206, BIG[10:100]))

    def test_length_mismatch_shorter(self):
        self.control("/_origin/config", {"length_mismatch": {"path": "/ep.mp3", "delta": -40, "count": 1}})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=10-99"})
        self.assertEqual(r.status, 206)
        self.assertEqual(r.getheader("Content-Range"), "bytes 10-99/%d" % len(BIG))
        self.assertEqual(data, BIG[10:60])
        # a whole-body GET (200) is never affected
        self.control("/_origin/config", {"length_mismatch": {"path": "/ep.mp3", "delta": -40}})
        r, data = self.request("GET", "/ep.mp3")
        self.assertEqual((r.status, data), (200, BIG))

    def test_range_cap(self):
        self.control("/_origin/config", {"range_cap": {"path": "/ep.mp3", "bytes": 30, "count": 1}})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=10-99"})
        self.assertEqual(r.status, 206)
        self.assertEqual(r.getheader("Content-Range"), "bytes 10-39/%d" % len(BIG))
        self.assertEqual(data, BIG[10:40])
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=10-99"})
        self.assertEqual((r.status, data), (206, BIG[10:100]))

    def test_range_shift(self):
        self.control("/_origin/config", {"range_shift": {"path": "/ep.mp3", "by": 1, "count": 1}})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=10-99"})
        self.assertEqual(r.status, 206)
        self.assertEqual(r.getheader("Content-Range"), "bytes 11-100/%d" % len(BIG))
        self.assertEqual(data, BIG[10:100])

    def test_stall(self):
        self.control("/_origin/config", {"stall": {"path": "/ep.mp3", "after_bytes": 10, "seconds": 0.5}})
        t0 = time.time()
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-99"})
        self.assertEqual((r.status, data), (206, BIG[:100]))
        self.assertGreaterEqual(time.time() - t0, 0.45)

    def test_pace(self):
        self.control("/_origin/config", {"pace": {"/ep.mp3": 200000}})
        t0 = time.time()
        r, data = self.request("GET", "/ep.mp3")
        self.assertEqual((r.status, data), (200, BIG))
        # The last slice goes out once the ones before took their time.
        self.assertGreaterEqual(time.time() - t0, (len(BIG) - 16384) / 200000 * 0.9)
        r, data = self.request("GET", "/other.mp3")
        self.assertEqual(data, b"other file bytes")

    def test_ignore_range(self):
        self.control("/_origin/config", {"ignore_range": ["/ep.mp3"]})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9"})
        self.assertEqual((r.status, data), (200, BIG))
        r, data = self.request("GET", "/other.mp3", {"Range": "bytes=0-4"})
        self.assertEqual((r.status, data), (206, b"other"))

    def test_redirect_and_status(self):
        self.control("/_origin/config", {"redirects": {"/a.mp3": "/other.mp3", "/ftp.mp3": "ftp://x/y"}})
        r, _ = self.request("GET", "/a.mp3")
        self.assertEqual(r.status, 302)
        self.assertEqual(r.getheader("Location"), "http://127.0.0.1:%d/other.mp3" % self.port)
        r, _ = self.request("GET", "/ftp.mp3")
        self.assertEqual((r.status, r.getheader("Location")), (302, "ftp://x/y"))
        self.control("/_origin/config", {"status": {"/other.mp3": {"code": 503, "count": 1, "retry_after": 1}}})
        r, _ = self.request("GET", "/other.mp3")
        self.assertEqual((r.status, r.getheader("Retry-After")), (503, "1"))
        r, data = self.request("GET", "/other.mp3")
        self.assertEqual((r.status, data), (200, b"other file bytes"))

    def test_stitch_redirects_each_request_to_a_new_variant(self):
        # Variant numbers are never reused, also across tests.
        base = self.control("/_origin/stats", method="GET")["variants"].get("/ep.mp3", 0)
        self.control("/_origin/config", {"stitch": {"/ep.mp3": {"ad_bytes": 100, "expires_after": 0.5}}})
        links = []
        for _ in (1, 2):
            r, _ = self.request("GET", "/ep.mp3")
            self.assertEqual(r.status, 302)
            links.append(r.getheader("Location").split(str(self.port), 1)[1])
        one_n, two_n = base + 1, base + 2
        self.assertIn("/_variants/ep.mp3.v%d?sig=" % one_n, links[0])
        self.assertIn("/_variants/ep.mp3.v%d?sig=" % two_n, links[1])
        r1, one = self.request("GET", links[0])
        r2, two = self.request("GET", links[1])
        self.assertEqual(one, bytes([0x40 + one_n]) * (100 * (1 + one_n % 3)) + BIG)
        self.assertEqual(two, bytes([0x40 + two_n]) * (100 * (1 + two_n % 3)) + BIG)
        self.assertNotEqual(r1.getheader("ETag"), r2.getheader("ETag"))
        # If-Range with the variant's own ETag: a 206 of that variant.
        r, data = self.request("GET", links[0], {"Range": "bytes=0-9", "If-Range": r1.getheader("ETag")})
        self.assertEqual((r.status, data), (206, bytes([0x40 + one_n]) * 10))
        self.assertEqual(self.control("/_origin/stats", method="GET")["variants"], {"/ep.mp3": two_n})
        time.sleep(0.6)
        r, _ = self.request("GET", links[0])
        self.assertEqual(r.status, 403)

    def test_stitch_at_the_same_url(self):
        n = self.control("/_origin/stats", method="GET")["variants"].get("/ep.mp3", 0)
        self.control("/_origin/config", {"stitch": {"/ep.mp3": {"mode": "same_url", "ad_bytes": 100}}})
        r1, one = self.request("GET", "/ep.mp3")
        r2, two = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9", "If-Range": r1.getheader("ETag")})
        self.assertEqual(one[:100], bytes([0x41 + n]) * 100)
        self.assertEqual((r2.status, two[:10]), (200, bytes([0x42 + n]) * 10), "a new variant: If-Range fails")
        self.assertNotEqual(r1.getheader("ETag"), r2.getheader("ETag"))
        self.control("/_origin/config", {"stitch": {"/ep.mp3": {
            "mode": "same_url", "ad_bytes": 100, "etag": "none", "same_length": True}}})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9"})
        self.assertEqual((r.status, data), (206, bytes(b ^ (0x43 + n) for b in BIG[:10])))
        self.assertIsNone(r.getheader("ETag"))
        self.assertIsNone(r.getheader("Last-Modified"))
        r, data = self.request("GET", "/ep.mp3")
        self.assertEqual(data, bytes(b ^ (0x44 + n) for b in BIG))
        self.control("/_origin/config", {"stitch": {"/ep.mp3": {"mode": "same_url", "etag": "weak"}}})
        r, _ = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9"})
        self.assertTrue(r.getheader("ETag").startswith('W/"variant-'))
        self.control("/_origin/config", {"stitch": {"/ep.mp3": {"mode": "same_url", "etag": "weak_fixed"}}})
        r1, one = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9"})
        r2, two = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9"})
        self.assertEqual((r1.getheader("ETag"), r2.getheader("ETag")), ('W/"episode"', 'W/"episode"'))
        self.assertIsNotNone(r2.getheader("Last-Modified"))
        self.assertNotEqual(one, two)

    def test_midroll_ads_change_only_the_ads(self):
        """"ads": "midroll": a pre-roll and mid-rolls at 40 % and 70 %, the
        file's bytes between them the same in every variant, ads of noise,
        a new length per variant unless "same_length"."""
        sys.path.insert(0, HERE)
        import origin
        # Known answers, also checked by the Swift twin (TestOrigin.adStream,
        # StitchedAdsOriginTests): splitmix64 seeded with n * 256 + k.
        self.assertEqual(origin.ad_stream(0, 0, 8).hex(), "afcd1d7b39a820e2")
        self.assertEqual(origin.ad_stream(1, 0, 16).hex(), "3f6524e301d20266e08aca271a4248f6")
        self.assertEqual(origin.ad_stream(2, 1, 11), origin.ad_stream(2, 1, 16)[:11])
        cuts = [0, len(BIG) * 40 // 100, len(BIG) * 70 // 100, len(BIG)]
        for same_length in (False, True):
            self.control("/_origin/config", {"stitch": {"/ep.mp3": {
                "mode": "same_url", "ad_bytes": 1000, "etag": "none", "ads": "midroll",
                "same_length": same_length}}})
            bodies = []
            for _ in range(2):
                r, data = self.request("GET", "/ep.mp3")
                self.assertEqual(r.status, 200)
                self.assertIsNone(r.getheader("ETag"))
                self.assertIsNone(r.getheader("Last-Modified"))
                bodies.append(data)
            n = self.control("/_origin/stats", method="GET")["variants"]["/ep.mp3"]
            ads_of = []
            for number, body in zip((n - 1, n), bodies):
                length = 1000 if same_length else 1000 * (1 + (number - 1) % 3)
                self.assertEqual(len(body), len(BIG) + 3 * length)
                self.assertEqual(body, origin.midroll_variant(number, BIG, 1000, same_length))
                # Taken apart by hand: ad, content, ad, content, ad, content.
                ads, at = [], 0
                for k in range(3):
                    ad = body[at:at + length]
                    self.assertEqual(ad, origin.ad_stream(number, k, length))
                    self.assertGreater(len(set(ad)), 200, "noise, not one repeated byte")
                    ads.append(ad)
                    at += length
                    self.assertEqual(body[at:at + cuts[k + 1] - cuts[k]], BIG[cuts[k]:cuts[k + 1]])
                    at += cuts[k + 1] - cuts[k]
                self.assertEqual(at, len(body))
                self.assertEqual(len(set(ads)), 3)
                ads_of.append(ads)
            for k in range(3):
                self.assertNotEqual(ads_of[0][k][:1000], ads_of[1][k][:1000])
            if not same_length:
                self.assertNotEqual(len(bodies[0]), len(bodies[1]))
            # A range of a new variant: its own bytes at that place.
            r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=10-99"})
            self.assertEqual((r.status, data), (206, origin.midroll_variant(n + 1, BIG, 1000, same_length)[10:100]))
        # The redirect mode stitches the same way.
        self.control("/_origin/config", {"stitch": {"/ep.mp3": {"ad_bytes": 500, "ads": "midroll"}}})
        r, _ = self.request("GET", "/ep.mp3")
        link = r.getheader("Location").split(str(self.port), 1)[1]
        number = int(link.split(".v", 1)[1].split("?", 1)[0])
        r, data = self.request("GET", link)
        self.assertEqual(data, origin.midroll_variant(number, BIG, 500, False))

    def test_no_etag(self):
        self.control("/_origin/config", {"no_etag": ["/ep.mp3"]})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9"})
        self.assertEqual((r.status, data), (206, BIG[:10]))
        self.assertIsNone(r.getheader("ETag"))
        self.assertIsNotNone(r.getheader("Last-Modified"))

    def test_no_validator(self):
        self.control("/_origin/config", {"no_validator": ["/ep.mp3"]})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9"})
        self.assertEqual((r.status, data), (206, BIG[:10]))
        self.assertIsNone(r.getheader("ETag"))
        self.assertIsNone(r.getheader("Last-Modified"))
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=5-9"})
        self.assertEqual((r.status, data), (206, BIG[5:10]), "the same bytes every time")

    def test_if_range_200(self):
        r, _ = self.request("GET", "/ep.mp3")
        etag = r.getheader("ETag")
        self.control("/_origin/config", {"if_range_200": ["/ep.mp3"]})
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9", "If-Range": etag})
        self.assertEqual((r.status, len(data)), (200, len(BIG)))
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9"})
        self.assertEqual((r.status, data), (206, BIG[:10]))

    def test_fail_all(self):
        self.control("/_origin/config", {"fail_all": True})
        c = self.conn()
        try:
            c.request("GET", "/other.mp3")
            with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
                c.getresponse()
        finally:
            c.close()
        self.control("/_origin/config", {"fail_all": False})
        r, _ = self.request("GET", "/other.mp3")
        self.assertEqual(r.status, 200)

    def test_no_length(self):
        self.control("/_origin/config", {"no_length": ["/ep.mp3"]})
        r, data = self.request("GET", "/ep.mp3")
        self.assertEqual(r.status, 200)
        self.assertIsNone(r.getheader("Content-Length"))
        self.assertEqual(r.getheader("Connection"), "close")
        self.assertEqual(data, BIG)
        r, data = self.request("GET", "/ep.mp3", {"Range": "bytes=0-9"})
        self.assertEqual((r.status, data), (206, BIG[:10]))

    def test_gzip_encoded(self):
        self.control("/_origin/config", {"gzip_encoded": ["/other.mp3"]})
        r, data = self.request("GET", "/other.mp3")
        self.assertEqual(r.getheader("Content-Encoding"), "gzip")
        self.assertEqual(data, b"other file bytes")
        r, _ = self.request("GET", "/ep.mp3")
        self.assertIsNone(r.getheader("Content-Encoding"))

    def test_latency(self):
        self.control("/_origin/config", {"latency_ms": 200})
        t0 = time.time()
        r, _ = self.request("GET", "/other.mp3")
        self.assertEqual(r.status, 200)
        self.assertGreaterEqual(time.time() - t0, 0.35)  # connect + request

    def test_put_changes_etag(self):
        r, _ = self.request("HEAD", "/other.mp3")
        etag1, lm1 = r.getheader("ETag"), r.getheader("Last-Modified")
        r, data = self.request("POST", "/_origin/put?path=/other.mp3", body=b"replaced content!")
        self.assertEqual(r.status, 200, data)
        r, data = self.request("GET", "/other.mp3")
        self.assertEqual(data, b"replaced content!")
        self.assertNotEqual(r.getheader("ETag"), etag1)
        self.assertNotEqual(r.getheader("Last-Modified"), lm1)
        # and again within the same second
        etag2 = r.getheader("ETag")
        self.request("POST", "/_origin/put?path=/other.mp3", body=b"other file bytes")
        r, data = self.request("GET", "/other.mp3")
        self.assertEqual(data, b"other file bytes")
        self.assertNotEqual(r.getheader("ETag"), etag2)
        r, _ = self.request("POST", "/_origin/put?path=/../escape.mp3", body=b"x")
        self.assertEqual(r.status, 400)

    def test_keep_alive(self):
        c = self.conn()
        try:
            for i in range(5):
                c.request("GET", "/ep.mp3", headers={"Range": "bytes=%d-%d" % (i * 10, i * 10 + 9)})
                r = c.getresponse()
                self.assertEqual(r.read(), BIG[i * 10:i * 10 + 10])
                if i == 0:
                    sock = c.sock
                self.assertIs(c.sock, sock)
            c.request("HEAD", "/ep.mp3")
            r = c.getresponse()
            r.read()
            c.request("GET", "/nope")
            r = c.getresponse()
            r.read()
            c.request("GET", "/other.mp3")
            self.assertEqual(c.getresponse().read(), b"other file bytes")
            self.assertIs(c.sock, sock)
        finally:
            c.close()
        s = self.control("/_origin/stats", method="GET")
        self.assertEqual(s["connections"], 1)
        self.assertEqual(s["requests"], 8)

    def test_sigterm_exits(self):
        d = tempfile.mkdtemp()
        p = None
        try:
            pf = os.path.join(d, "port")
            p = subprocess.Popen([sys.executable, ORIGIN, "--root", d, "--port-file", pf])
            deadline = time.time() + 10
            while not os.path.exists(pf) and time.time() < deadline:
                time.sleep(0.02)
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(timeout=5), 0)
        finally:
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
            shutil.rmtree(d, ignore_errors=True)



class CheckIndexTest(unittest.TestCase):
    """check_index.py fails when it has nothing to check."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="check-index-")
        self.origin_file = os.path.join(self.dir, "ep.mp3")
        with open(self.origin_file, "wb") as f:
            f.write(BIG[:1000])

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_check(self, *extra):
        return subprocess.run(
            [sys.executable, os.path.join(HERE, "check_index.py"), self.dir, self.origin_file, *extra],
            capture_output=True, text=True)

    def make_index(self, episodes):
        import sqlite3
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        db = sqlite3.connect(os.path.join(self.dir, "index.sqlite"))
        db.execute("CREATE TABLE episodes (id INTEGER PRIMARY KEY, key TEXT, url TEXT)")
        db.execute("CREATE TABLE ranges (episode_id INTEGER, lower INTEGER, upper INTEGER)")
        for number, (key, url, ranges) in enumerate(episodes, 1):
            db.execute("INSERT INTO episodes VALUES (?, ?, ?)", (number, key, url))
            with open(os.path.join(self.dir, "data", key), "wb") as f:
                f.write(BIG[:1000])
            for lower, upper in ranges:
                db.execute("INSERT INTO ranges VALUES (?, ?, ?)", (number, lower, upper))
        db.commit()
        db.close()

    def test_no_index_fails(self):
        result = self.run_check()
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("no index", result.stdout)

    def test_no_matching_episode_fails(self):
        self.make_index([("k1", "http://x/ep.mp3", [(0, 100)])])
        result = self.run_check("--key-url", "http://x/other.mp3")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("no episode", result.stdout)

    def test_two_episodes_need_a_url(self):
        self.make_index([("k1", "http://x/a.mp3", []), ("k2", "http://x/b.mp3", [])])
        self.assertEqual(self.run_check().returncode, 1)
        result = self.run_check("--key-url", "http://x/b.mp3")
        self.assertEqual((result.returncode, result.stdout.strip()),
                         (0, "index claims 0 bytes, all on disk and correct"))

    def test_correct_and_wrong_bytes(self):
        self.make_index([("k1", "http://x/ep.mp3", [(0, 100), (200, 1000)])])
        result = self.run_check()
        self.assertEqual((result.returncode, result.stdout.strip()),
                         (0, "index claims 900 bytes, all on disk and correct"))
        with open(os.path.join(self.dir, "data", "k1"), "r+b") as f:
            f.seek(500)
            f.write(b"\0")
        self.assertEqual(self.run_check().returncode, 1)

if __name__ == "__main__":
    unittest.main(verbosity=2)
