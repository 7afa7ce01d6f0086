"""The scanners: MPD building a new database (a private mpd.conf, null audio output), and
ffprobe with Jellyfin's options over every file."""
import json, os, socket, subprocess, time

from benchlib import free_port, spawn, stop


class MPDClient:
    """The MPD protocol, enough for status and stats."""

    def __init__(self, port, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("MPD did not open its port")
                time.sleep(0.02)
        self.file = self.sock.makefile("rb")
        hello = self.file.readline()
        if not hello.startswith(b"OK MPD"):
            raise RuntimeError(f"not MPD: {hello!r}")

    def command(self, line):
        self.sock.sendall(line.encode() + b"\n")
        answer = {}
        while True:
            reply = self.file.readline().decode("utf-8", "replace").rstrip("\n")
            if reply == "OK":
                return answer
            if reply.startswith("ACK") or not reply:
                raise RuntimeError(f"MPD: {line}: {reply or 'connection closed'}")
            key, _, value = reply.partition(": ")
            answer[key] = value

    def close(self):
        self.sock.close()


def mpd_scan(name, music, work, timeout):
    """A new MPD database of `music`: seconds until the update ended, songs (files
    with a duration) and "recursive directory found" lines of MPD's log."""
    d = f"{work}/mpd-{name}"
    os.makedirs(f"{d}/playlists")
    port = free_port()
    with open(f"{d}/mpd.conf", "w") as f:
        f.write(f'music_directory "{music}"\nplaylist_directory "{d}/playlists"\ndb_file "{d}/db"\n'
                f'log_file "{d}/log"\npid_file "{d}/pid"\nbind_to_address "127.0.0.1"\nport "{port}"\n'
                'log_level "verbose"\nauto_update "no"\nzeroconf_enabled "no"\nrestore_paused "yes"\n'
                'audio_output {\n  type "null"\n  name "null"\n}\n')
    start = time.monotonic()
    mpd = spawn(["mpd", "--no-daemon", f"{d}/mpd.conf"], stdout=subprocess.DEVNULL,
                stderr=open(f"{d}/stderr", "w"))
    try:
        client = MPDClient(port)
        try:
            # A new database starts its update as MPD starts; if not, ask for one.
            status, stats = client.command("status"), client.command("stats")
            if "updating_db" not in status and int(stats.get("db_update", "0")) == 0:
                client.command("update")
            while True:
                if "updating_db" not in client.command("status") and \
                        int(client.command("stats").get("db_update", "0")) > 0:
                    break
                if mpd.poll() is not None:
                    raise RuntimeError(f"MPD exited ({mpd.returncode}): see {d}/log")
                if time.monotonic() - start > timeout:
                    raise RuntimeError(f"MPD's update did not end in {timeout} s")
                time.sleep(0.02)
            seconds = time.monotonic() - start
            songs = int(client.command("stats").get("songs", "0"))
        finally:
            client.close()
        listing = subprocess.run(["mpc", "-h", "127.0.0.1", "-p", str(port), "-f", "%file%\t%time%", "listall"],
                                 capture_output=True, text=True, timeout=60).stdout.splitlines()
        files = [line.split("\t") for line in listing if line.split("\t")[0].endswith(".mp3")]
        timed = sum(1 for f in files if len(f) > 1 and f[1].strip() not in ("", "0:00"))
    finally:
        stop(mpd)
    with open(f"{d}/log", errors="replace") as f:
        recursive = sum(1 for line in f if "recursive directory found" in line)
    return {"seconds": seconds, "songs": songs, "listed": len(files), "timed": timed, "recursive": recursive}


def ffprobe_scan(mnt):
    """ffprobe with Jellyfin's probe options over every file, one after another."""
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(mnt) for f in fs if f.endswith(".mp3"))
    start, timed = time.monotonic(), 0
    for path in files:
        out = subprocess.run(["ffprobe", "-v", "error", "-analyzeduration", "200M", "-probesize", "1G",
                              "-show_format", "-of", "json", path], capture_output=True, text=True, timeout=600)
        try:
            if float(json.loads(out.stdout)["format"]["duration"]) > 0:
                timed += 1
        except (ValueError, KeyError, TypeError):
            pass
    return {"seconds": time.monotonic() - start, "files": len(files), "timed": timed}
