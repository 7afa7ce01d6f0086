#!/usr/bin/env python3
"""(Copied from the team harness, ../shared/bench/delayproxy.py; used by bench/run --delay-ms.)

Loopback TCP proxy that makes an HTTP origin look far away (this kernel has no netem).

Every client->origin chunk (in practice: every HTTP request header) is held for DELAY
before it is forwarded, and so is every new connection (the TCP handshake), so each
request costs +DELAY of round trip. Responses flow back zero-copy (splice), optionally
capped to RATE MB/s shared by all connections. Capped responses go in slices of
SLICE bytes (or a millisecond's worth, when that is more: 16 KiB slices could not
carry more than about 90 MB/s through Python's sleeps), each waiting its turn on the
one link, so a capped link delivers bytes steadily, as a real one does, not in
1 MiB bursts.

usage: delayproxy.py LISTEN_PORT UPSTREAM_PORT DELAY_MS [RATE_MBPS]
"""
import fcntl, os, socket, sys, threading, time

F_SETPIPE_SZ = 1031
CHUNK = 1 << 20
SLICE = 16 << 10
rate_lock = threading.Lock()
next_free = 0.0  # monotonic time at which the capped link is free again


def throttle(nbytes, rate):
    global next_free
    with rate_lock:
        start = max(time.monotonic(), next_free)
        next_free = start + nbytes / rate
        wait = next_free - time.monotonic()
    if wait > 0:
        time.sleep(wait)


def responses(up, cl, rate):
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, CHUNK)
    step = min(CHUNK, max(SLICE, int(rate / 1000) // 4096 * 4096)) if rate else CHUNK
    try:
        while True:
            n = os.splice(up.fileno(), w, step)
            if n == 0:
                break
            if rate:
                throttle(n, rate)
            while n:
                n -= os.splice(r, cl.fileno(), n)
    except OSError:
        pass
    finally:
        os.close(r), os.close(w)
        try:
            cl.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def handle(cl, upstream_port, delay, rate):
    time.sleep(delay)  # connection setup costs one round trip too
    try:
        up = socket.create_connection(("127.0.0.1", upstream_port))
    except OSError:
        cl.close()
        return
    for s in (cl, up):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = threading.Thread(target=responses, args=(up, cl, rate), daemon=True)
    t.start()
    try:
        while data := cl.recv(65536):
            time.sleep(delay)
            up.sendall(data)
    except OSError:
        pass
    try:
        up.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    t.join()
    cl.close(), up.close()


def main():
    port, upstream, delay_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    rate = float(sys.argv[4]) * 1e6 if len(sys.argv) > 4 else 0
    srv = socket.create_server(("127.0.0.1", port), backlog=128)
    while True:
        cl, _ = srv.accept()
        threading.Thread(target=handle, args=(cl, upstream, delay_ms / 1000, rate), daemon=True).start()


if __name__ == "__main__":
    main()
