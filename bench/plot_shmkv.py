#!/usr/bin/env python3
"""Bar chart (SVG, no dependencies) of shmkv_bench.sh's CSV
(DIR/shmkv_bench.csv): each target's server CPU per request against
redis-server's in the same run, per test and pipeline depth (bars: the
mean of the runs' ratios; dots: each run's), with a line at 1.0 (as
redis) and at 0.5.

usage: plot_shmkv.py shmkv_bench.csv out.svg
"""
import csv
import sys
from collections import defaultdict


TEST_ORDER = ["get", "set", "incr", "mget", "hget", "hset", "lpush", "rpop",
              "sadd", "zadd"]
PALETTE = ["#2b6cb0", "#2f855a", "#b7791f", "#6b46c1", "#718096"]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    cpu = {}
    targets = []
    for row in csv.DictReader(open(src)):
        cpu[(row["test"], int(row["pipeline"]), row["target"], row["run"])] = \
            float(row["server_cpu_us_per_req"])
        if row["target"] != "redis" and row["target"] not in targets:
            targets.append(row["target"])
    ratios = defaultdict(list)
    for (test, pipe, target, run), v in cpu.items():
        base = cpu.get((test, pipe, "redis", run))
        if target != "redis" and base:
            ratios[((test, pipe), target)].append(v / base)
    if not ratios:
        return

    def order(g):
        test, pipe = g
        rank = TEST_ORDER.index(test) if test in TEST_ORDER else len(TEST_ORDER)
        return (pipe, rank, test)

    groups = sorted({k[0] for k in ratios}, key=order)
    colors = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(targets)}
    top = max(1.2, max(max(v) for v in ratios.values()) * 1.1)
    gw = 16 * (len(targets) + 1)
    left, bottom = 50, 70
    w, h = left + gw * len(groups) + 160, 380
    bw = gw / (len(targets) + 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="16">server CPU per request / redis-server\'s, '
           'same run (redis-benchmark -c 50 -r 100000; bars: mean of runs; '
           'dots: runs)</text>']
    plot_h = h - bottom - 30

    def y(v):
        return h - bottom - v / top * plot_h

    for v, color in ((0.5, "#48bb78"), (1.0, "#c53030")):
        out.append(f'<line x1="{left}" x2="{left + gw * len(groups)}" '
                   f'y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="{color}" '
                   'stroke-dasharray="4 3"/>')
    for i in range(5):
        v = top * i / 4
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" '
                   f'text-anchor="end">{v:.2f}</text>')
    for gi, g in enumerate(groups):
        x0 = left + gi * gw + bw / 2
        for ti, t in enumerate(targets):
            vals = ratios.get((g, t), [])
            if not vals:
                continue
            mean = sum(vals) / len(vals)
            x = x0 + ti * bw
            out.append(f'<rect x="{x:.1f}" y="{y(mean):.1f}" '
                       f'width="{bw * 0.9:.1f}" '
                       f'height="{h - bottom - y(mean):.1f}" '
                       f'fill="{colors[t]}"/>')
            for v in vals:
                out.append(f'<circle cx="{x + bw * 0.45:.1f}" cy="{y(v):.1f}" '
                           'r="2" fill="#000"/>')
        tx, ty = x0 + bw * len(targets) / 2, h - bottom + 8
        out.append(f'<text x="{tx:.1f}" y="{ty}" text-anchor="end" '
                   f'transform="rotate(-60 {tx:.1f} {ty})">'
                   f'{g[0]} -P {g[1]}</text>')
    for ti, t in enumerate(targets):
        out.append(f'<rect x="{w - 140}" y="{30 + ti * 16}" width="10" '
                   f'height="10" fill="{colors[t]}"/><text x="{w - 125}" '
                   f'y="{39 + ti * 16}">{t}</text>')
    out.append("</svg>")
    open(dst, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
