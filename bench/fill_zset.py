#!/usr/bin/env python3
"""Prints the RESP that fills the sorted set `z` with N members named as
redis-benchmark's __rand_int__ makes them (m:000000000042), each scored
by its number, for redis-cli --pipe:
    python3 bench/fill_zset.py 1000000 | redis-cli -p PORT --pipe"""
import sys

n = int(sys.argv[1])
out = sys.stdout.buffer
for i in range(0, n, 100):
    args = [b"ZADD", b"z"]
    for j in range(i, min(n, i + 100)):
        args += [b"%d" % j, b"m:%012d" % j]
    out.write(b"*%d\r\n" % len(args))
    for a in args:
        out.write(b"$%d\r\n%s\r\n" % (len(a), a))
