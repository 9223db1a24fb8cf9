#!/usr/bin/env python3
"""Summary of shmkv_bench.sh's CSV: per test and pipeline depth, each
target's server CPU per request and requests/s against redis-server's in
the same run (paired by run: median, min-max over runs), and p99.

usage: shmkv_bench_summary.py shmkv_bench.csv
"""
import csv
import statistics
import sys
from collections import defaultdict

TEST_ORDER = ["get", "set", "incr", "mget", "hget", "hset", "lpush", "rpop",
              "sadd", "zadd"]


def main():
    rows = defaultdict(list)
    targets = []
    for r in csv.DictReader(open(sys.argv[1])):
        rows[(r["test"], int(r["pipeline"]), r["target"])].append(r)
        if r["target"] not in targets:
            targets.append(r["target"])
    others = [t for t in targets if t != "redis"]

    def med(rs, k):
        return statistics.median(float(r[k]) for r in rs)

    def paired(rs, base, k):
        bv = {x["run"]: float(x[k]) for x in base}
        return [float(x[k]) / bv[x["run"]] for x in rs if bv.get(x["run"])]

    def order(key):
        test, pipe = key
        known = test in TEST_ORDER
        rank = TEST_ORDER.index(test) if known else len(TEST_ORDER)
        return (pipe, rank, test)

    print(f"{'test':14} {'target':12} {'cpu us/req':>10} {'x redis':>8} "
          f"{'range':>11} {'req/s':>10} {'x redis':>8} {'p99 ms':>7}")
    for test, pipe in sorted({(k[0], k[1]) for k in rows}, key=order):
        base = rows.get((test, pipe, "redis"), [])
        if not base:
            continue
        name = f"{test} -P {pipe}"
        cpu = med(base, 'server_cpu_us_per_req')
        print(f"{name:14} {'redis':12} {cpu:10.3f} "
              f"{'':>8} {'':>11} {med(base, 'rps'):10.0f} {'':>8} "
              f"{med(base, 'p99_ms'):7.3f}")
        for tg in others:
            rs = rows.get((test, pipe, tg), [])
            if not rs:
                continue
            cpu = paired(rs, base, "server_cpu_us_per_req")
            rps = paired(rs, base, "rps")
            cpu_text = (f"{statistics.median(cpu):8.2f} "
                        f"{min(cpu):5.2f}-{max(cpu):5.2f}") if cpu else \
                f"{'-':>8} {'-':>11}"
            rps_text = f"{statistics.median(rps):8.2f}" if rps else f"{'-':>8}"
            print(f"{'':14} {tg:12} {med(rs, 'server_cpu_us_per_req'):10.3f} "
                  f"{cpu_text} {med(rs, 'rps'):10.0f} {rps_text} "
                  f"{med(rs, 'p99_ms'):7.3f}")


if __name__ == "__main__":
    main()
