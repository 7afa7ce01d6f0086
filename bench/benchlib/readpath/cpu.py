"""CPU used by other processes (another build on this box skews every figure)."""
import os, sys, time

from benchlib import tree


def cpu_snapshot():
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        busy = sum(int(x) for x in f.readline().split()[1:4])  # user nice system
    t = os.times()
    own = t.user + t.system + t.children_user + t.children_system
    for pid in tree(os.getpid())[1:]:
        try:
            with open(f"/proc/{pid}/stat") as f:
                own += sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:15]) / tick
        except OSError:
            pass
    return time.time(), busy / tick, own


def machine_busy():
    """Core-seconds the whole machine has been busy (user, nice, system, irq, softirq): a
    download's work on loopback is largely the kernel's, in softirq."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:8]]
    return (sum(fields[0:3]) + fields[5] + fields[6]) / os.sysconf("SC_CLK_TCK")


def foreign_pct(a, b):
    return max(0.0, 100 * ((b[1] - a[1]) - (b[2] - a[2])) / max(1e-3, b[0] - a[0]) / os.cpu_count())


def wait_quiet(ctx):
    end = time.time() + ctx.args.max_wait
    while True:
        a = cpu_snapshot()
        time.sleep(0.5)
        busy = foreign_pct(a, cpu_snapshot())
        if busy < ctx.args.max_busy or time.time() > end:
            return busy
        print(f"  other processes use {busy:.0f}% of the CPU; waiting", file=sys.stderr)
