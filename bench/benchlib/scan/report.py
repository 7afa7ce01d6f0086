"""The table of the scans beside issue 29's targets, printed and written to
bench/results-scan-latest.md."""
import datetime, subprocess

from benchlib import REPO, MiB


def report(args, podfs, rows, expected, library_bytes):
    rate, rtt = args.rate_mb * 1e6, args.delay_ms / 1000
    by = {name: (result, end, total, requests) for name, result, end, total, requests in rows}
    offline = by.get("offline", ({"seconds": None},))[0]["seconds"]
    commit = subprocess.run(["git", "-C", REPO, "log", "-1", "--format=%h %cs"], capture_output=True,
                            text=True).stdout.strip()
    lines = [f"Library scan benchmark ({datetime.date.today()}): {args.shows} shows x {args.episodes} episodes, "
             f"{library_bytes / 1e9:.2f} GB (8-11 min MP3s at 128 kb/s, ID3v2.3 tag, 277 KB embedded cover); "
             f"origin {args.delay_ms:.0f} ms away "
             + (f"behind one {args.rate_mb:g} MB/s link shared by all connections; " if rate else "with no rate cap; ")
             + f"podfs {podfs} (repository at {commit}).", "",
             "| scan | time | found | from the origin (scan end / until unmount) | requests | per library file | target | met |",
             "|---|---|---|---|---|---|---|---|"]
    for name, result, end, total, requests in rows:
        if name == "ffprobe":
            label = "ffprobe (Jellyfin's options), cold: new cache"
            found = f"{result['timed']} of {expected} durations"
        else:
            label = {"local": "MPD, local copy (the floor)", "cold": "MPD cold: new cache, new database",
                     "remount": "MPD remount: same cache, new database",
                     "offline": "MPD offline: same cache, origin gone"}[name]
            found = f"{result['songs']} of {expected}"
            if result["timed"] != result["songs"]:
                found += f" ({result['timed']} with a duration)"
            if result["recursive"]:
                found += f"; {result['recursive']} \"recursive directory found\""
        if end is None:
            rows_text = ["local disk", "-", "-"]
            target, met = "-", "-"
        else:
            per_file = total / expected
            rows_text = [f"{end / 1e6:,.1f} / {total / 1e6:,.1f} MB", f"{requests[0]:,} ({requests[1]} files)",
                         f"{per_file / 1024:,.0f} KiB"]
            if name in ("cold", "ffprobe"):
                limit = max(expected * rtt, total / rate if rate else 0)  # --rate-mb 0: no cap
                target = f"≤ {1.5 * limit:.1f} s; ≤ 1024 KiB/file"
                met = "yes" if result["seconds"] <= 1.5 * limit and per_file <= MiB else "no"
            elif name == "remount" and offline is not None:
                target = f"≤ {2 * offline + 2:.1f} s; ≤ 4 KiB/file"
                met = "yes" if result["seconds"] <= 2 * offline + 2 and per_file <= 4096 else "no"
            else:
                target, met = "0 bytes", "yes" if total == 0 else "no"
        lines.append(f"| {label} | {result['seconds']:.1f} s | {found} | " + " | ".join(rows_text)
                     + f" | {target} | {met} |")
    link = (f"the whole library ({library_bytes / 1e6:,.0f} MB) takes {library_bytes / rate:.0f} s at "
            f"{args.rate_mb:g} MB/s; one round trip per file {expected * rtt:.1f} s; the budget of 1 MiB a file "
            f"({expected} MiB) {expected * MiB / rate:.1f} s" if rate
            else f"no rate cap (--rate-mb 0); one round trip per file {expected * rtt:.1f} s")
    lines += ["", f"The link's limit: {link}. A cold scan's target is "
              "1.5 × the larger of one round trip per file and its fetched bytes at the link's rate, with at most "
              "1 MiB a file; a remount's, 2 × the offline scan + 2 s with validations only (issue 29)."]
    text = "\n".join(lines)
    print(text)
    with open(args.output, "w") as f:
        f.write(text + "\n")
