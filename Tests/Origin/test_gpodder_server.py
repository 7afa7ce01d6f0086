#!/usr/bin/env python3
"""Self-test of gpodder_server.py with the real mygpoclient library as "the
phone" (pip install mygpoclient), and plain urllib for the Nextcloud layout
and the faults.

    python3 Tests/Origin/test_gpodder_server.py

mygpoclient reads a `host` without a scheme ("127.0.0.1:PORT") as
http://127.0.0.1:PORT (a full "http://..." or "https://..." URL is taken as
given), and it sends credentials only after a 401 with a Basic challenge.
"""

import base64
import json
import os
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpodder_server  # noqa: E402

try:
    from mygpoclient import api, http as mygpo_http
except ImportError:  # the Nextcloud and fault tests still run
    api = None


def request(base, method, path, body=None, user="alice", password="secret"):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if user is not None:
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        req.add_header("Authorization", "Basic " + token)
    try:
        with urllib.request.urlopen(req) as response:
            raw = response.read()
            return response.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as error:
        return error.code, error.read()


class ServerTests(unittest.TestCase):
    def setUp(self):
        self.server = gpodder_server.start()
        self.host = "127.0.0.1:%d" % self.server.server_address[1]
        self.base = "http://" + self.host

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    @unittest.skipIf(api is None, "pip install mygpoclient")
    def test_mygpoclient_uploads_and_downloads(self):
        phone = api.MygPodderClient("alice", "secret", self.host)
        result = phone.update_subscriptions(
            "phone", ["https://a.example/feed.xml", " https://b.example/feed.xml", "feed://c.example/rss"], [])
        self.assertGreater(result.since, 0)
        self.assertIn((" https://b.example/feed.xml", "https://b.example/feed.xml"), result.update_urls)
        self.assertIn(("feed://c.example/rss", "http://c.example/rss"), result.update_urls)
        changes = phone.pull_subscriptions("phone", since=0)
        self.assertEqual(
            sorted(changes.add),
            ["http://c.example/rss", "https://a.example/feed.xml", "https://b.example/feed.xml"])
        self.assertEqual(changes.remove, [])
        since = changes.since
        # Another client (podfs) removes one; the phone sees only that.
        status, _ = request(self.base, "POST", "/api/2/subscriptions/alice/phone.json",
                            {"add": [], "remove": ["https://a.example/feed.xml"]})
        self.assertEqual(status, 200)
        later = phone.pull_subscriptions("phone", since=since)
        self.assertEqual(later.add, [])
        self.assertEqual(later.remove, ["https://a.example/feed.xml"])
        self.assertEqual(phone.pull_subscriptions("phone", since=later.since).remove, [])
        self.assertTrue(phone.update_device_settings("phone", caption="Phone", type="mobile"))
        self.assertEqual([d.device_id for d in phone.get_devices()], ["phone"])
        stats = json.loads(urllib.request.urlopen(self.base + "/_stats").read())
        self.assertGreaterEqual(stats["requests"]["/api/2/subscriptions/alice/phone.json"], 4)

    @unittest.skipIf(api is None, "pip install mygpoclient")
    def test_mygpoclient_with_a_wrong_password_is_refused(self):
        phone = api.MygPodderClient("alice", "wrong", self.host)
        with self.assertRaises(mygpo_http.Unauthorized):
            phone.pull_subscriptions("phone", since=0)

    def test_nextcloud_layout(self):
        status, answer = request(self.base, "POST", "/index.php/apps/gpoddersync/subscription_change/create",
                                 {"add": ["https://n.example/a.xml"], "remove": []})
        self.assertEqual(status, 200)
        self.assertGreater(answer["timestamp"], 0)
        status, answer = request(self.base, "GET", "/cloud/index.php/apps/gpoddersync/subscriptions?since=0")
        self.assertEqual((status, answer["add"]), (200, ["https://n.example/a.xml"]))
        status, _ = request(self.base, "GET", "/index.php/apps/gpoddersync/subscriptions", password="no")
        self.assertEqual(status, 401)

    def test_faults_on_demand(self):
        request(self.base, "POST", "/_control", {"answer": {"mode": "503", "count": 1}}, user=None)
        status, _ = request(self.base, "GET", "/api/2/subscriptions/alice/x.json?since=0")
        self.assertEqual(status, 503)
        request(self.base, "POST", "/_control", {"answer": {"mode": "huge", "count": 1}}, user=None)
        status, answer = request(self.base, "GET", "/api/2/subscriptions/alice/x.json?since=0")
        self.assertEqual(len(answer["add"]), 10000)
        # As gpodder.net: a pull for a device never made is 404; a device
        # call makes it, and the pull then answers.
        status, _ = request(self.base, "GET", "/api/2/subscriptions/alice/x.json?since=0")
        self.assertEqual(status, 404)
        status, _ = request(self.base, "POST", "/api/2/devices/alice/x.json", {"caption": "X", "type": "server"})
        self.assertEqual(status, 200)
        status, answer = request(self.base, "GET", "/api/2/subscriptions/alice/x.json?since=0")
        self.assertEqual((status, answer["add"]), (200, []))
        self.assertEqual(request(self.base, "GET", "/status.php", user=None)[0], 404)
        request(self.base, "POST", "/_control", {"nextcloud_status": True}, user=None)
        status, answer = request(self.base, "GET", "/status.php", user=None)
        self.assertEqual(answer["productname"], "Nextcloud")


if __name__ == "__main__":
    unittest.main()
