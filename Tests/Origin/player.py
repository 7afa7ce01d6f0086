#!/usr/bin/env python3
"""A podcast player's reads of one file, as one program (issue 28).

    python3 Tests/Origin/player.py FILE OUTDIR [--direct]

Opens FILE four times in a row, each time one read of a given size at a
given offset, then closes it: 64 KiB at 0, 512 KiB at 3 MiB, 1 MiB at
3.5 MiB, 256 KiB at 128 KiB. Then reads the whole file twice, each time with
a new open and read() calls of 256 KiB until EOF. Through the page cache,
or with --direct through O_DIRECT (page-aligned buffers).

The bytes each open read go to OUTDIR/openN.bin (N = 1...6), also when the
read failed part-way. Prints one JSON list on stdout, one object per open:
{"open", "offset", "size" (asked; null: until EOF), "bytes" (read),
"st_size" (fstat after the open), "errno" (null: no error), "error",
"short_reads" (reads that returned less than asked but not at EOF),
"reads" (read calls made)}. Exits 0 whatever the reads did.
"""

import json
import mmap
import os
import sys

KIB = 1024
MIB = 1024 * KIB
PARTIAL = [(0, 64 * KIB), (3 * MIB, 512 * KIB), (3 * MIB + 512 * KIB, MIB), (128 * KIB, 256 * KIB)]
WHOLE_READS = 2
CHUNK = 256 * KIB


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, outdir = argv[1], argv[2]
    direct = "--direct" in argv[3:]
    flags = os.O_RDONLY | (os.O_DIRECT if direct else 0)
    # One aligned buffer, big enough for any read (O_DIRECT wants alignment).
    buffer = mmap.mmap(-1, max(size for _, size in PARTIAL + [(0, CHUNK)]))
    view = memoryview(buffer)
    results = []
    plan = [(offset, size) for offset, size in PARTIAL] + [(None, None)] * WHOLE_READS
    for number, (offset, size) in enumerate(plan, 1):
        result = {"open": number, "offset": offset if offset is not None else 0, "size": size, "bytes": 0,
                  "st_size": None, "errno": None, "error": None, "short_reads": 0, "reads": 0}
        out_path = os.path.join(outdir, "open%d.bin" % number)
        with open(out_path, "wb") as out:
            fd = None
            try:
                fd = os.open(path, flags)
                result["st_size"] = os.fstat(fd).st_size
                if size is not None:
                    result["reads"] += 1
                    got = os.preadv(fd, [view[:size]], offset)
                    out.write(view[:got])
                    result["bytes"] = got
                    if got < size:
                        result["short_reads"] += 1
                else:
                    short_before = False
                    while True:
                        result["reads"] += 1
                        got = os.readv(fd, [view[:CHUNK]])
                        if got == 0:
                            break
                        if short_before:
                            result["short_reads"] += 1  # the last one was short, not at EOF
                        out.write(view[:got])
                        result["bytes"] += got
                        short_before = got < CHUNK
            except OSError as error:
                result["errno"] = error.errno
                result["error"] = "%s (%s)" % (os.strerror(error.errno or 0), error.errno)
            finally:
                if fd is not None:
                    os.close(fd)
        results.append(result)
    view.release()
    buffer.close()
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
