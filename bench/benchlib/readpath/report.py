"""Report: the figures behind each row, the markdown table, podfs against the targets
of issue 3, the per-rep values and the notes, as results-latest.md holds them."""
import datetime, os, statistics, time

from benchlib import MiB


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, -(-p * len(xs) // 100) - 1))] if xs else None


def figures(r, size):
    """The numbers behind a row (None = not measured)."""
    f = {}
    mbps = lambda k: size / 1e6 / med(r[k]) if r.get(k) and med(r[k]) else None  # noqa: E731
    for k in ("cold", "warm", "remount", "conc"):
        f[k + "_fail"] = any(x is None for x in r.get(k + "_s", []))
    ratio = lambda k: med([t.sent / size for t in r[k]]) if r.get(k) and not r["local"] else None  # noqa
    f["cold"], f["warm"], f["remount"] = mbps("cold_s"), mbps("warm_s"), mbps("remount_s")
    f["cold_orig"] = ratio("cold_tr")
    f["cold_cpu"] = med([x / (size / 1e9) for x in r.get("cold_cpu", [])])
    f["remount_orig"] = med([t.sent for t in r["remount_tr"]]) if r.get("remount_tr") and not r["local"] else None
    lats = [x for rr in r["rand"] if rr for x in rr["lat_ms"]]
    f["p50"], f["p99"] = pct(lats, 50), pct(lats, 99)
    nreads = sum(len(rr["lat_ms"]) for rr in r["rand"] if rr)
    if nreads and not r["local"]:
        f["reqs_read"] = sum(t.requests for t in r["rand_tr"]) / nreads
        f["conns_read"] = sum(t.connections for t in r["rand_tr"]) / nreads
        f["kib_read"] = sum(t.sent for t in r["rand_tr"]) / nreads / 1024
        f["body_kib_read"] = sum(t.body for t in r["rand_tr"]) / nreads / 1024
    if r.get("rand_open_tr") and not r["local"]:
        f["open_reqs"] = sum(t.requests for t in r["rand_open_tr"]) / len(r["rand_open_tr"])
        f["open_kib"] = sum(t.sent for t in r["rand_open_tr"]) / len(r["rand_open_tr"]) / 1024
    f["conc"] = med(r["conc_s"])
    f["conc_vs_one"] = f["conc"] / med(r["cold_s"]) if f["conc"] and med(r["cold_s"]) else None
    f["conc_orig"] = ratio("conc_tr")
    f["ttfb"], f["ttfb_open"] = med(r["ttfb_ms"]), med(r["ttfb_open_ms"])
    if r.get("ttfb_tr") and not r["local"]:
        f["ttfb_reqs"] = med([t.requests for t in r["ttfb_tr"]])
        f["ttfb_kib"] = med([t.sent / 1024 for t in r["ttfb_tr"]])
    f["rss"] = med(r.get("rss", []))
    f["rss_mount"] = med(r.get("rss_mount", []))
    bad = sum(rr["bad"] for rr in r["rand"] if rr) + sum(rr is None for rr in r["rand"]) + len(r["bad_ttfb"])
    good, total = sum(r["sha_ok"]), len(r["sha_ok"])
    f["correct"] = good == total and not bad
    f["sha"] = (f"ok {good}/{total}" if total else "–") + ("" if not bad else f", {bad} bad 4k reads")
    if good != total:
        f["sha"] = f"FAIL {good}/{total}" + ("" if not bad else f", {bad} bad 4k reads")
    return f


def fmt(x, nd=0):
    return "–" if x is None else f"{x:,.{nd}f}"


def ms(x):
    return "–" if x is None else (f"{x:.3g}" if x < 100 else f"{x:.0f}")


def row(name, f, readers):
    mbs = lambda k: fmt(f[k]) + (" (fail)" if f[k + "_fail"] else "")  # noqa: E731
    b = f["remount_orig"]
    rem = "–" if b is None else f"{b / MiB:.1f} MiB" if b >= MiB else f"{b / 1024:.0f} KiB" if b >= 10240 \
        else f"{b:.0f} B"
    return [name, mbs("cold"), fmt(f["cold_orig"], 2), fmt(f["cold_cpu"], 2), mbs("warm"), mbs("remount"), rem,
            ms(f["p50"]), ms(f["p99"]), fmt(f.get("reqs_read"), 2), fmt(f.get("conns_read"), 2),
            fmt(f.get("kib_read"), 1), fmt(f["conc"], 2) + (" (fail)" if f["conc_fail"] else ""), fmt(f["conc_vs_one"], 2), fmt(f["conc_orig"], 2),
            ms(f["ttfb"]), fmt(f["rss"]), f["sha"]]


HEAD = ["contestant", "cold MB/s (a)", "cold origin/size", "cold CPU core-s/GB", "warm MB/s (b)", "remount MB/s (c)",
        "remount origin bytes", "rand 4k p50 ms (d)", "rand 4k p99 ms", "origin reqs/read", "new conns/read",
        "origin KiB/read", "{n}x wall s (e)", "{n}x wall / 1 reader", "{n}x origin/size", "TTFB ms (f)",
        "peak RSS MiB (g)", "sha256"]


def targets(F, args):
    """podfs against the issue's targets: [(what, value text, limit text, met or None)]."""
    p, c, t = F.get("podfs"), F.get("curl"), F.get("passthru")
    out = []

    def add(what, num, den, op, limit, unit="", nd=2):
        if num is None or den is None or den == 0:
            out.append((what, "not measured", f"{op} {limit}{unit}", None))
            return
        v = num / den
        met = v >= limit if op == "≥" else v <= limit
        out.append((what, f"{v:,.{nd}f}{unit}", f"{op} {limit}{unit}", met))
    if not p:
        return out
    one = 1.0
    add("cold sequential / curl", p["cold"], c and c["cold"], "≥", 0.8)
    if p["cold_cpu"] and c and c["cold_cpu"] and c["cold"]:
        # The fastest podfs could read at its CPU cost if every core did nothing else.
        ceiling = os.cpu_count() / p["cold_cpu"] * 1000 / c["cold"]
        parts = f"curl {c['cold_cpu']:.2f}" + (f", the passthrough {t['cold_cpu']:.2f}, the two together "
                                               f"{c['cold_cpu'] + t['cold_cpu']:.2f}" if t and t["cold_cpu"] else "")
        out.append(("cold sequential: the machine's CPU per GB (origin, reader and daemon)",
                     f"{p['cold_cpu']:.2f} core-s ({parts})", "none", None))
        out.append((f"cold sequential / curl at most, at that CPU cost on {os.cpu_count()} cores",
                     f"{ceiling:.2f}", "none", None))
    add("warm (same mount) / passthrough FUSE", p["warm"], t and t["warm"], "≥", 1.0)
    add("after remount / passthrough FUSE", p["remount"], t and t["remount"], "≥", 0.9)
    add("random 4 KiB: origin requests per read", p.get("reqs_read"), one, "≤", 1.0)
    if args.delay_ms:
        add(f"random 4 KiB p50 / curl p50 (one round trip at +{args.delay_ms} ms)", p["p50"], c and c["p50"],
            "≤", 1.3)
    else:
        add("random 4 KiB p50 / curl p50", p["p50"], c and c["p50"], "≤", 2.0)
    add("random 4 KiB: origin KiB per read (body bytes; with headers: "
        + fmt(p.get("kib_read"), 1) + ")", p.get("body_kib_read"), one, "≤", 256, nd=1)
    add(f"{args.readers} cold readers: origin bytes / size", p["conc_orig"], one, "≤", 1.02)
    add(f"{args.readers} cold readers: wall / one reader", p["conc_vs_one"], one, "≤", 1.2)
    add("time to first byte / curl's", p["ttfb"], c and c["ttfb"], "≤", 1.5)
    add(f"peak RSS after a {args.size_mib} MiB cold read (target is for 2 GiB)", p["rss"], one, "≤", 48,
        " MiB", 0)
    return out


def spread(name, r, size):
    mbs = lambda k: " / ".join("–" if x is None else f"{size / 1e6 / x:.0f}" for x in r.get(k, [])) or "–"  # noqa
    lat = " / ".join(f"{pct(rr['lat_ms'], 50):.3g}" if rr else "–" for rr in r["rand"]) or "–"
    conc = " / ".join("–" if x is None else f"{x:.2f}" for x in r["conc_s"])
    ttfb = " / ".join("–" if x is None else f"{x:.3g}" for x in r["ttfb_ms"]) or "–"
    return [name, mbs("cold_s"), mbs("warm_s"), mbs("remount_s"), lat, conc, ttfb]


def md_table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(x) + " |" for x in rows])


def paired_ratios(results, args):
    """Medians over reps of podfs / baseline, each rep's pair measured side by side."""
    p, c, t = results.get("podfs"), results.get("curl"), results.get("passthru")
    out = []

    def add(what, num, den):
        pairs = [a / b for a, b in zip(num, den) if a is not None and b]
        if pairs:
            out.append(f"{what} {statistics.median(pairs):.2f} ({' / '.join(f'{x:.2f}' for x in pairs)})")
    if not p:
        return out
    inv = lambda xs: [None if x is None else 1 / x for x in xs]  # noqa: E731  seconds -> speed
    p50 = lambda r: [pct(rr["lat_ms"], 50) if rr else None for rr in r["rand"]]  # noqa: E731
    if c:
        add("cold / curl", inv(p["cold_s"]), inv(c["cold_s"]))
        add("random p50 / curl", p50(p), p50(c))
        add("TTFB / curl", p["ttfb_ms"], c["ttfb_ms"])
    if t:
        add("warm / passthrough", inv(p["warm_s"]), inv(t["warm_s"]))
        add("remount / passthrough", inv(p["remount_s"]), inv(t["remount_s"]))
    return out


def report(ctx, args, names, results, F, notes, skipped, t_start):
    label = {"curl": "baseline: curl from the origin", "local": "baseline: dd of the local file (page cache)",
             "passthru": "baseline: C passthrough FUSE (FUSE limit)"}
    if args.podfs_b:
        label["podfs"] = f"podfs ({args.podfs or 'this checkout'})"
        label["podfs-b"] = f"podfs-b ({args.podfs_b})"
    rows, spreads, cmds = [], [], []
    for n in names:
        if results.get(n) is None:
            rows.append([label.get(n, n), "failed"] + [""] * (len(HEAD) - 2))
            continue
        rows.append(row(label.get(n, n), F[n], args.readers))
        spreads.append(spread(label.get(n, n), results[n], ctx.size))
        cmds.append((label.get(n, n), results[n]["cmdline"]))
    o = ctx.origin
    out = [f"# podfs read-path benchmark (bench/run), {datetime.datetime.now():%Y-%m-%d %H:%M}", "",
           f"`bench/run --size-mib {args.size_mib} --delay-ms {args.delay_ms} --reps {args.reps}"
           + (f" --only {args.only}" if args.only else "") + (" --no-interleave" if args.no_interleave else "")
           + "`", "",
           f"Host: {os.cpu_count()} CPUs, Linux {os.uname().release}. Origin: {o.kind} on 127.0.0.1"
           + (f" behind a proxy adding {args.delay_ms} ms per request and per new connection" if args.delay_ms else "")
           + f". File: {args.size_mib} MiB of random bytes (sha256 {ctx.sha[:16]}…).",
           f"Medians of {args.reps} rep(s), each from an empty cache"
           + ("" if args.no_interleave or args.reps < 2 else ", interleaved (every contestant's rep 1, then rep 2, ...)")
           + ". MB = 10^6 bytes. Origin traffic counts "
           "requests for the episode, credited to the phase in which each started.",
           f"(d): one 4 KiB read per {args.stripe_mib} MiB stripe, stripes visited backwards, each checked against "
           "the original; p50/p99 pooled over reps. (e): wall / 1 reader compares with (a). "
           "(f): open + first 4 KiB of a cold file on a fresh mount (curl: `time_starttransfer` of a new "
           "`curl -r 0-4095`, so it includes a TCP connect; its warm-connection figure is the rand 4k p50). "
           "(g): VmHWM of the daemon after (a). Cold CPU: core-seconds the whole machine was busy during (a) "
           "(user, system, irq, softirq: origin, reader and daemon together), per GB read; /proc/stat counts "
           "in 10 ms ticks.", "",
           md_table([h.format(n=args.readers) for h in HEAD], rows), ""]
    if "podfs" in F:
        p = F["podfs"]
        out += [f"## podfs against the targets of issue 3 (+{args.delay_ms} ms, {args.size_mib} MiB)", ""]
        for what, v, limit, met in targets(F, args):
            if limit == "none":
                out.append(f"- {what}: {v}")
                continue
            out.append(f"- {what}: {v} (target {limit}): " + ("—" if met is None else "met" if met else "MISSED"))
        out.append(f"- correctness (sha256 of warm, remounted and {args.readers}-reader reads; every 4 KiB read "
                   f"checked): {'ok' if p['correct'] else 'FAILED'} ({p['sha']})")
        out.append("- not measured here: `ls -l` of a 10,000-episode feed; RSS flatness needs "
                   "`--size-mib 2048` (compare with this run)")
        extra = []
        if p["remount_orig"] is not None:
            extra.append(f"origin bytes after remount {p['remount_orig']:,} B")
        if p.get("open_reqs") is not None:
            extra.append(f"open before the random reads: {p['open_reqs']:.1f} origin requests, "
                         f"{p['open_kib']:.0f} KiB")
        if p.get("ttfb_reqs") is not None:
            extra.append(f"TTFB: open {p['ttfb_open']:.3g} ms of {p['ttfb']:.3g} ms, {p['ttfb_reqs']:.0f} origin "
                         f"request(s), {p['ttfb_kib']:.0f} KiB")
        if p["rss_mount"] is not None:
            extra.append(f"RSS right after mount {p['rss_mount']:.0f} MiB")
        if extra:
            out.append("- details: " + "; ".join(extra))
        paired = paired_ratios(results, args)
        if paired and not args.no_interleave and args.reps > 1:
            out.append("- the same ratios per rep (podfs and the baseline measured in the same round), median "
                       "(each rep): " + "; ".join(paired))
        out.append("")
    out += ["Commands:", ""] + [f"- {n}: `{c}`" for n, c in cmds]
    if skipped:
        out += ["", "Skipped: " + ", ".join(skipped)]
    out += ["", "Per-rep values:", "",
            md_table(["contestant", "cold MB/s", "warm MB/s", "remount MB/s", "rand p50 ms",
                      f"{args.readers}x wall s", "TTFB ms"], spreads),
            "", "Run time and CPU used by other processes meanwhile (figures are noisy above ~10 %):", ""]
    out += [f"- {n}" for n in notes]
    out += ["", f"Total run time: {time.time() - t_start:.0f} s"]
    return "\n".join(out) + "\n"
