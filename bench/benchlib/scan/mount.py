"""podfs mounted as a daemon over every show's feed, and unmounted; what is mounted and
which daemons run, for the cleanup."""
import os, signal, subprocess, time

from benchlib import alive

MOUNTS = []  # mount points mounted and not yet unmounted
DAEMONS = []  # podfs daemon PIDs


def mount(podfs, cache, sources, mnt, shows, episodes, work, name, options):
    """`podfs mount` of every feed in `sources` with -o `options` (--mount-option), and
    every show listed, with every episode, before the scanner starts."""
    level = os.environ.get("PODFS_SCAN_LOG_LEVEL")
    extra = (["--log-level", level] if level else []) + [arg for option in options for arg in ("-o", option)]
    out = subprocess.run([podfs, "mount", "--cache-dir", cache, "--log-file", f"{work}/logs/podfs-{name}.log"]
                         + extra + [sources, mnt], timeout=120, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"podfs mount failed ({out.returncode}): {out.stderr.strip()}")
    MOUNTS.append(mnt)
    if "pid " in out.stdout:
        digits = out.stdout.split("pid ", 1)[1].split()[0].strip(".,)")
        if digits.isdigit():
            DAEMONS.append(int(digits))
    # Every show listed, with every episode, before the scanner starts.
    deadline = time.monotonic() + 60
    while True:
        try:
            dirs = [d for d in os.listdir(mnt) if os.path.isdir(f"{mnt}/{d}")]
            listed = sum(len([f for f in os.listdir(f"{mnt}/{d}") if f.endswith(".mp3")]) for d in dirs)
        except OSError:
            dirs, listed = [], 0
        if len(dirs) >= shows and listed >= shows * episodes:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the mount lists {len(dirs)} shows and {listed} episodes after 60 s")
        time.sleep(0.1)


def unmount(podfs, mnt):
    subprocess.run([podfs, "unmount", mnt], timeout=120, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if subprocess.run(["mountpoint", "-q", mnt]).returncode == 0:
        subprocess.run(["fusermount3", "-u", "-z", mnt])
    if mnt in MOUNTS:
        MOUNTS.remove(mnt)
    deadline = time.monotonic() + 20
    for pid in list(DAEMONS):
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
        DAEMONS.remove(pid)
