#!/usr/bin/env python3
"""Hostile clients for `snailtrail serve` on loopback (used by scripts/serve-bench.sh).

  serve-hostile.py http HTTP_PORT [SLOW] [IDLE]
      SLOW clients (default 200) send a request head one byte per second, reconnecting
      when dropped, and IDLE sockets (default 50) say nothing; meanwhile 500 GET /healthz
      and 200 GET /metrics, each on a fresh connection, are timed. Prints p50/p99/max.
  serve-hostile.py idle TCP_PORT N SECONDS
      opens N idle producer connections and holds them SECONDS.
  serve-hostile.py bombs TCP_PORT SECONDS
      a block header claiming 2^25 records; 10 connections sending 41 KB zstd frames that
      expand to 2^25 records each (block header: 1000 records); 50 connections announcing
      the largest block (16 MiB) and sending all but the last 64 KiB of it. Holds SECONDS.
Everything is bounded in count and time; only 127.0.0.1 is contacted.
"""
import socket
import struct
import sys
import threading
import time


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setblocking(True)
    return s


def snail_header():
    return b"SNAILTRC" + struct.pack("<II", 1, 0)


def block_header(kind, codec, count, stored):
    return struct.pack("<IIII", kind, codec, count, stored)


def rle_zero_frame(nbytes):
    """A zstd frame of `nbytes` zero bytes (all-zero records are valid .snail records),
    made of RLE blocks of 128 KiB: 4 bytes per 128 KiB."""
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    out += bytes([0x00, 0x38])  # no content size, no checksum; window 2^17
    left = nbytes
    while left:
        n = min(left, 1 << 17)
        left -= n
        header = (1 if left == 0 else 0) | (1 << 1) | (n << 3)
        out += struct.pack("<I", header)[:3] + b"\x00"
    return bytes(out)


def percentiles(xs):
    xs = sorted(xs)
    p = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]
    return "p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d requests)" % (
        p(0.5) * 1e3, p(0.99) * 1e3, xs[-1] * 1e3, len(xs))


def get(port, target):
    t0 = time.perf_counter()
    s = connect(port)
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % target).encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    dt = time.perf_counter() - t0
    if not data.startswith(b"HTTP/1.1 200"):
        raise SystemExit("GET %s failed: %r" % (target, data[:80]))
    return dt


def http(port, slow=200, idle=50):
    stop = threading.Event()
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 64

    def trickle():
        socks = [[connect(port), 0] for _ in range(slow)]
        while not stop.is_set():
            for entry in socks:
                try:
                    entry[0].send(head[entry[1] % len(head):][:1])
                    entry[1] += 1
                except OSError:  # dropped by the server: come back
                    entry[0].close()
                    entry[0], entry[1] = connect(port), 0
            stop.wait(1.0)
        for s, _ in socks:
            s.close()

    idlers = [connect(port) for _ in range(idle)]
    t = threading.Thread(target=trickle)
    t.start()
    time.sleep(1.5)
    health, metrics = [], []
    for i in range(700):  # over ~8 s, so that slow clients are dropped and come back
        (health if i < 500 else metrics).append(get(port, "/healthz" if i < 500 else "/metrics"))
        time.sleep(0.01)
    stop.set()
    t.join()
    for s in idlers:
        s.close()
    print("with %d slow and %d idle HTTP clients:" % (slow, idle))
    print("  /healthz: " + percentiles(health))
    print("  /metrics: " + percentiles(metrics))


def idle(port, n, seconds):
    socks = [connect(port) for _ in range(n)]
    print("%d idle producer connections open" % len(socks), flush=True)
    time.sleep(seconds)
    for s in socks:
        s.close()


def bombs(port, seconds):
    claim = connect(port)
    claim.sendall(snail_header() + block_header(1, 1, 1 << 25, 41000))
    frame = rle_zero_frame((1 << 25) * 40)
    bomb = block_header(1, 1, 1000, len(frame)) + frame
    print("zstd bomb: %d bytes expanding to %d records" % (len(frame), 1 << 25), flush=True)
    bombers = []
    for _ in range(10):
        s = connect(port)
        s.sendall(snail_header() + bomb * 20)
        bombers.append(s)
    holders = []
    for _ in range(50):
        s = connect(port)
        s.setblocking(False)
        s.send(snail_header() + block_header(1, 1, 1000, 1 << 24))
        holders.append(s)
    chunk = b"x" * (1 << 16)
    deadline = time.time() + seconds
    for _ in range(255):  # all but the last 64 KiB of each block, as far as sockets take it
        for s in holders:
            try:
                s.send(chunk)
            except (BlockingIOError, ConnectionError):
                pass  # full (not read: over the budget), or refused
        if time.time() > deadline:
            break
    print("bombs sent", flush=True)
    time.sleep(max(0, deadline - time.time()))
    for s in holders + bombers + [claim]:
        s.close()


if __name__ == "__main__":
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "http":
        http(port, *(int(a) for a in sys.argv[3:5]))
    elif mode == "idle":
        idle(port, int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "bombs":
        bombs(port, float(sys.argv[3]))
    else:
        raise SystemExit(__doc__)
