#!/usr/bin/env python3
"""The server CPU a push costs while many clients wait on its list.

    bench/shmkv_blocked_herd.py [--binary build/release/server/shmkv]
                                [--baseline OTHER_SHMKV] [--waiters 100]

100 connections wait in BRPOP on one list; a client pushes one element
at a time (20 rounds of 100 pushes, each waiter blocking again once
served), and 3,000 pushes to a list nobody waits on come first for
comparison. Each server (shmkv with one worker, redis-server without
persistence, and an optional second shmkv build) runs the same sequence
on its own; its CPU ticks (/proc/PID/stat, user + system) are divided by
the pushes. Both servers answer the waiters in the order they blocked;
what differs is how much work finding the next one costs.

Then timeouts: 20 BLPOPs with a 50 ms timeout on an empty list, one
after another; how late each answer came past its timeout, as the
client sees it (mean and worst, ms).
"""
import argparse
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "support"))
from ports import free_port  # noqa: E402

BRPOP = b"*3\r\n$5\r\nBRPOP\r\n$1\r\nq\r\n$1\r\n0\r\n"


def ticks(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def run(port, pid, waiters):
    ws = []
    for _ in range(waiters):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(BRPOP)
        ws.append(s)
    time.sleep(0.5)
    p = socket.create_connection(("127.0.0.1", port))
    t0 = ticks(pid)
    for _ in range(3000):
        p.sendall(b"*3\r\n$5\r\nLPUSH\r\n$2\r\nqq\r\n$1\r\nx\r\n")
        p.recv(100)
    t1 = ticks(pid)
    for _ in range(20):
        for _ in range(waiters):
            p.sendall(b"*3\r\n$5\r\nLPUSH\r\n$1\r\nq\r\n$1\r\nx\r\n")
            p.recv(100)
        for s in ws:
            s.recv(100)
            s.sendall(BRPOP)
        time.sleep(0.05)
    t2 = ticks(pid)
    hz = os.sysconf("SC_CLK_TCK")
    late = []
    q = socket.create_connection(("127.0.0.1", port))
    for _ in range(20):
        start = time.monotonic()
        q.sendall(b"*3\r\n$5\r\nBLPOP\r\n$4\r\nnone\r\n$4\r\n0.05\r\n")
        if q.recv(100) != b"*-1\r\n":
            raise SystemExit("unexpected timeout reply")
        late.append((time.monotonic() - start - 0.05) * 1e3)
    return ((t1 - t0) / hz * 1e6 / 3000, (t2 - t1) / hz * 1e6 / (20 * waiters),
            sum(late) / len(late), max(late))


def shmkv(binary, waiters):
    port = free_port()
    name = "posix:/herd_bench_%d_%d" % (os.getpid(), port)
    srv = subprocess.Popen([binary, "--port", str(port), "--http-port", "0",
                            "--workers", "1", "--name", name],
                           stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.8)
        out = subprocess.check_output(["pgrep", "-P", str(srv.pid)])
        return run(port, int(out.split()[0]), waiters)
    finally:
        srv.terminate()
        srv.wait()
        subprocess.run([binary, "--name", name, "--remove"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def redis(waiters):
    port = free_port()
    srv = subprocess.Popen(["redis-server", "--port", str(port), "--save", "",
                            "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        return run(port, srv.pid, waiters)
    finally:
        srv.terminate()
        srv.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/release/server/shmkv")
    ap.add_argument("--baseline")
    ap.add_argument("--waiters", type=int, default=100)
    a = ap.parse_args()
    rows = [("redis-server", redis(a.waiters)),
            ("shmkv " + a.binary, shmkv(a.binary, a.waiters))]
    if a.baseline:
        rows.append(("shmkv " + a.baseline, shmkv(a.baseline, a.waiters)))
    print("# server CPU per push, us: to a list nobody waits on; to a list "
          "up to %d clients wait on; a 50 ms timeout's lateness, ms: mean, "
          "worst" % a.waiters)
    for name, (idle, herd, late, worst) in rows:
        print("%-40s %8.1f %8.1f %8.1f %8.1f" % (name, idle, herd, late,
                                                  worst))


if __name__ == "__main__":
    sys.exit(main())
