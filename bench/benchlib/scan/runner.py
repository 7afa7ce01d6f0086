"""One run of bench/scan: the library, the origin behind its delay proxy, the scans, and
the cleanup (also after an error, Ctrl-C or SIGTERM)."""
import json, os, shutil, signal, subprocess, sys, tempfile, time

from benchlib import alive, delayproxy_argv, free_port, origin_argv, origin_call, podfs_binary, spawn, stop, stop_all
from benchlib.scan.library import library_files, make_library
from benchlib.scan.mount import DAEMONS, MOUNTS, mount, unmount
from benchlib.scan.report import report
from benchlib.scan.scanners import ffprobe_scan, mpd_scan


def episode_traffic(port):
    """(bytes, requests, files asked for) the origin sent for episodes (.mp3) since its last reset."""
    stats = json.loads(origin_call(port, "stats"))
    paths = [v for k, v in stats["paths"].items() if k.endswith(".mp3")]
    return (sum(p["bytes"] for p in paths), sum(p["requests"] for p in paths),
            sum(1 for p in paths if p["requests"]))


def main_scan(args):
    """One whole run: the scans, then their table (printed and written to --output)."""
    if os.geteuid() != 0:
        sys.exit("bench/scan mounts: run it as root")
    tools = ["mpd", "mpc", "ffmpeg", "fusermount3"] + (["ffprobe"] if args.ffprobe else [])
    for tool in tools:
        if not shutil.which(tool):
            sys.exit(f"bench/scan needs {tool}: apt-get install mpd mpc ffmpeg fuse3")
    podfs = os.path.abspath(podfs_binary(args.podfs))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    www = make_library(args.shows, args.episodes)
    files = library_files(www)
    expected = args.shows * args.episodes
    if len(files) != expected:
        sys.exit(f"the library in {www} holds {len(files)} episodes, not {expected}: remove it and run again")
    library_bytes = sum(os.path.getsize(f) for f in files)

    work = tempfile.mkdtemp(prefix="podfs-scan-")
    os.makedirs(f"{work}/logs")
    mnt = f"{work}/mnt"
    os.makedirs(mnt)
    rows = []  # (scan, result dict, bytes at end, bytes until unmount, requests)
    proxy = None
    try:
        origin_port = free_port()
        spawn(origin_argv(www, origin_port, f"{work}/logs/origin.log"), stdout=subprocess.DEVNULL,
              stderr=subprocess.DEVNULL)
        proxy_port = free_port()
        proxy = spawn(delayproxy_argv(proxy_port, origin_port, args.delay_ms, args.rate_mb))
        deadline = time.monotonic() + 20
        while True:
            try:
                origin_call(origin_port, "health")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the origin did not start")
                time.sleep(0.05)
        sources = f"{work}/feeds.txt"
        with open(sources, "w") as f:
            f.writelines(f"http://127.0.0.1:{proxy_port}/show{s + 1:02d}.xml\n" for s in range(args.shows))

        def mpd_on_mount(name, cache):
            print(f"== {name}", file=sys.stderr)
            mount(podfs, cache, sources, mnt, args.shows, args.episodes, work, name, args.mount_option)
            try:
                origin_call(origin_port, "reset", "POST")
                result = mpd_scan(name, mnt, work, args.timeout)
                at_end = episode_traffic(origin_port)
            finally:
                unmount(podfs, mnt)
            total = episode_traffic(origin_port)
            rows.append((name, result, at_end[0], total[0], total[1:]))
            print(f"   {name}: {result}, origin {at_end[0]:,} / {total[0]:,} bytes, {total[1]} requests", file=sys.stderr)

        if not args.skip_local:
            print("== local", file=sys.stderr)
            rows.append(("local", mpd_scan("local", www, work, args.timeout), None, None, None))
        cache = f"{work}/cache"
        mpd_on_mount("cold", cache)
        mpd_on_mount("remount", cache)
        if args.ffprobe:
            print("== ffprobe", file=sys.stderr)
            mount(podfs, f"{work}/cache-ffprobe", sources, mnt, args.shows, args.episodes, work, "ffprobe",
                  args.mount_option)
            try:
                origin_call(origin_port, "reset", "POST")
                result = ffprobe_scan(mnt)
                at_end = episode_traffic(origin_port)
            finally:
                unmount(podfs, mnt)
            total = episode_traffic(origin_port)
            rows.append(("ffprobe", result, at_end[0], total[0], total[1:]))
            print(f"   ffprobe: {result}, origin {at_end[0]:,} / {total[0]:,} bytes, {total[1]} requests", file=sys.stderr)
        stop(proxy)  # the origin is unreachable from here on
        origin_call(origin_port, "reset", "POST")
        mpd_on_mount("offline", cache)
    finally:
        for m in list(MOUNTS):
            if subprocess.run(["mountpoint", "-q", m]).returncode == 0:
                subprocess.run(["fusermount3", "-u", "-z", m])
        for pid in DAEMONS:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        stop_all()
        if os.environ.get("PODFS_SCAN_KEEP"):
            print(f"kept {work} (PODFS_SCAN_KEEP)", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    report(args, podfs, rows, expected, library_bytes)
