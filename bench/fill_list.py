#!/usr/bin/env python3
"""Prints the RESP that fills the list `mylist` (redis-benchmark's) with N
three-byte elements, 100 to an RPUSH, for redis-cli --pipe:
    python3 bench/fill_list.py 1100000 | redis-cli -p PORT --pipe"""
import sys

n = int(sys.argv[1])
out = sys.stdout.buffer
for i in range(0, n, 100):
    args = [b"RPUSH", b"mylist"] + [b"xxx"] * min(100, n - i)
    out.write(b"*%d\r\n" % len(args))
    for a in args:
        out.write(b"$%d\r\n%s\r\n" % (len(a), a))
