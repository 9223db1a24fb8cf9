#!/usr/bin/python3
"""One request with a million arguments, sent in one write and in 8 KiB
pieces (as a slow link delivers it), to shmkv and to redis-server (the
baseline) in the same run: the time from the first byte to the reply, and
the server's CPU time for it (from /proc). A parser that starts again from
the request's first byte on every read does quadratic work in pieces; one
that resumes where it stopped costs the same either way.

  bench/partial_request_bench.py SHMKV_BINARY [--args N] [--piece BYTES]
                                 [--gap SECONDS] [--runs R]

The pieces go out --gap apart (0.2 ms) so the server reads them one at a
time; the time to the reply then includes those gaps, and the server's CPU
time is the measure to compare.

Needs redis-server (apt-get install redis-server) for the baseline; without
it only shmkv is measured.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "support"))
from ports import free_port  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime
        except OSError:
            pass
    return total / TICK


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(d))
        except OSError:
            pass
    return out


def wait_port(port):
    for _ in range(500):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.01)
    sys.exit(f"no server on port {port}")


def request(nargs):
    # EXISTS k0 k1 ...: a read of every argument, the same on both servers.
    parts = [b"*%d\r\n$6\r\nEXISTS\r\n" % (nargs + 1)]
    for i in range(nargs):
        k = b"k%d" % i
        parts.append(b"$%d\r\n%s\r\n" % (len(k), k))
    return b"".join(parts)


def one_run(port, pids, req, piece, gap):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        cpu0 = cpu_seconds(pids)
        t0 = time.monotonic()
        if piece <= 0:
            s.sendall(req)
        else:
            for off in range(0, len(req), piece):
                s.sendall(req[off:off + piece])
                time.sleep(gap)  # the server reads each piece alone
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = s.recv(4096)
            if not chunk:
                sys.exit("connection closed")
            reply += chunk
        elapsed = time.monotonic() - t0
        time.sleep(0.05)
        cpu = cpu_seconds(pids) - cpu0
    if not reply.startswith(b":"):
        sys.exit(f"unexpected reply {reply[:80]!r}")
    return elapsed, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shmkv")
    ap.add_argument("--args", type=int, default=1000000)
    ap.add_argument("--piece", type=int, default=8192)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--gap", type=float, default=0.0002,
                    help="seconds between pieces")
    o = ap.parse_args()
    req = request(o.args)
    tmp = tempfile.mkdtemp(prefix="partial_bench_")
    servers = []
    try:
        port = free_port()
        name = f"/partial_bench_{os.getpid()}"
        shmkv = subprocess.Popen(
            [o.shmkv, "--port", str(port), "--http-port", "0", "--name", name,
             "--workers", "1", "--capacity", "1000", "--memory", "16M"],
            stderr=subprocess.DEVNULL)
        servers.append(("shmkv", shmkv, port, lambda: children(shmkv.pid)))
        redis = shutil.which("redis-server")
        if redis:
            rport = free_port()
            rs = subprocess.Popen(
                [redis, "--port", str(rport), "--save", "", "--appendonly",
                 "no", "--dir", tmp], stdout=subprocess.DEVNULL)
            servers.append(("redis-server", rs, rport, lambda: [rs.pid]))
        for _, _, p, _ in servers:
            wait_port(p)
        print(f"{o.args} arguments ({len(req) / 1048576:.1f} MiB), "
              f"pieces of {o.piece} bytes, {o.runs} runs; median seconds")
        print(f"{'server':14} {'time whole':>10} {'time pieces':>11} "
              f"{'cpu whole':>9} {'cpu pieces':>10} {'cpu ratio':>9}")
        for label, _, p, pids in servers:
            whole, pieces = [], []
            for _ in range(o.runs):
                whole.append(one_run(p, pids(), req, 0, 0))
                pieces.append(one_run(p, pids(), req, o.piece, o.gap))
            med = lambda xs, i: sorted(x[i] for x in xs)[len(xs) // 2]
            cw, cp = med(whole, 1), med(pieces, 1)
            print(f"{label:14} {med(whole, 0):10.3f} {med(pieces, 0):11.3f} "
                  f"{cw:9.2f} {cp:10.2f} {cp / max(cw, 0.01):9.2f}")
    finally:
        for _, proc, _, _ in servers:
            proc.terminate()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        for suffix in ("0", "1", ".ctl", ".ctl.stats", ".ctl.journal",
                       ".ctl.waits"):
            try:
                os.unlink(f"/dev/shm/partial_bench_{os.getpid()}{suffix}")
            except OSError:
                pass


if __name__ == "__main__":
    main()
