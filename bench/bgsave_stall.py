#!/usr/bin/env python3
"""What a background save costs the writers of one server (shmkv or
redis-server), measured from a client (bench/shmkv_bgsave_bench.sh):

  bench/bgsave_stall.py PORT KEYS SECONDS PID

Fills KEYS string keys of 100 bytes (pipelined), then for SECONDS writes
SET key:<random> one request at a time, timing each, and starts BGSAVE
from another connection; the writes go on until the save has ended and
as long again. Prints one line of JSON: the save's time, BGSAVE's own reply time, the
slowest write pending while it was (how long starting the save held the
writers), every write's
latency before it, during it and after it (p50, p99, p99.9, max, in us),
the writes done during it, INFO's rdb_last_cow_size and the status, and
the server's memory (its processes' proportional set sizes, /proc)
before and at its peak during the save.
"""
import json
import os
import random
import socket
import sys
import threading
import time


def conn(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Reader:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.s.recv(1 << 16)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        if line[:1] == b"$":
            n = int(line[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 16)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if line[:1] == b"*":
            return [self.reply() for _ in range(int(line[1:]))]
        return line


def info(port, field):
    s = conn(port)
    r = Reader(s)
    s.sendall(enc("INFO", "persistence"))
    text = r.reply().decode()
    s.close()
    for ln in text.split("\r\n"):
        if ln.startswith(field + ":"):
            return ln.split(":", 1)[1]
    return ""


def tree_pss(pid):
    """Memory (bytes) of pid and every process below it: the sum of their
    proportional set sizes, so a page two of them map (a fork's pages not
    copied yet, a shared segment) counts once."""
    kids = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                st = f.read()
            ppid = int(st[st.rfind(")") + 2:].split()[1])
            kids.setdefault(ppid, []).append(int(p))
        except (OSError, ValueError):
            pass
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(kids.get(p, []))
        try:
            with open("/proc/%d/smaps_rollup" % p) as f:
                for ln in f:
                    if ln.startswith("Pss:"):
                        total += int(ln.split()[1]) * 1024
        except OSError:
            pass
    return total


def pct(xs, q):
    if not xs:
        return 0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summary(xs):
    return {"n": len(xs), "p50": pct(xs, 0.5), "p99": pct(xs, 0.99),
            "p999": pct(xs, 0.999), "max": max(xs) if xs else 0}


def main():
    port, keys, seconds, pid = (int(sys.argv[1]), int(sys.argv[2]),
                                float(sys.argv[3]), int(sys.argv[4]))
    s = conn(port)
    r = Reader(s)
    value = b"v" * 100
    for lo in range(0, keys, 2000):
        hi = min(keys, lo + 2000)
        s.sendall(b"".join(enc("SET", "key:%d" % i, value)
                           for i in range(lo, hi)))
        for _ in range(lo, hi):
            r.reply()
    pss_before = tree_pss(pid)
    lat = {"before": [], "during": [], "after": []}
    phase = ["before"]
    peak = [pss_before]
    saved = [0.0, 0.0, 0.0]
    window = [0.0, 0.0]
    timed = []  # (start, latency us) of every write

    def saver():
        time.sleep(seconds / 3)
        a = conn(port)
        ra = Reader(a)
        saved[0] = time.monotonic()
        window[0] = time.perf_counter()
        a.sendall(enc("BGSAVE"))
        ra.reply()
        window[1] = time.perf_counter()
        # The command's own time (Redis forks the whole server in it;
        # shmkv forks the worker, then holds the write lock only to
        # publish the save).
        saved[2] = (time.monotonic() - saved[0]) * 1e6
        phase[0] = "during"
        while info(port, "rdb_bgsave_in_progress") != "0":
            peak[0] = max(peak[0], tree_pss(pid))
            time.sleep(0.005)
        saved[1] = time.monotonic()
        phase[0] = "after"

    t = threading.Thread(target=saver)
    t.start()
    rng = random.Random(1)
    end = time.monotonic() + seconds
    while time.monotonic() < end or phase[0] != "after" or (
            time.monotonic() - saved[1] < saved[1] - saved[0]):
        req = enc("SET", "key:%d" % rng.randrange(keys), value)
        t0 = time.perf_counter()
        s.sendall(req)
        r.reply()
        us = (time.perf_counter() - t0) * 1e6
        lat[phase[0]].append(us)
        timed.append((t0, us))
    t.join()
    out = {"save_ms": round((saved[1] - saved[0]) * 1000, 1),
           "bgsave_us": round(saved[2], 1),
           # The slowest write that was pending while BGSAVE was: how long
           # starting the save held the writers.
           "held_us": round(max([us for t0, us in timed
                                 if t0 < window[1] and
                                 t0 + us / 1e6 > window[0]] or [0]), 1),
           "cow_bytes": int(info(port, "rdb_last_cow_size") or 0),
           "status": info(port, "rdb_last_bgsave_status"),
           "pss_before": pss_before, "pss_peak": peak[0]}
    for k, xs in lat.items():
        out[k] = {q: round(v, 1) if isinstance(v, float) else v
                  for q, v in summary(xs).items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
