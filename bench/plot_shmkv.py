#!/usr/bin/env python3
"""Bar chart (SVG, no dependencies) of shmkv_bench.sh's CSV (DIR/shmkv_bench.csv): mean requests/s
of shmkv and redis-server per test and pipeline depth, with each run's
value as a dot so the spread shows.

usage: plot_shmkv.py shmkv_bench.csv out.svg
"""
import csv
import sys
from collections import defaultdict


def main():
    src, dst = sys.argv[1], sys.argv[2]
    runs = defaultdict(list)
    for row in csv.DictReader(open(src)):
        key = (f"{row['test']} -P {row['pipeline']}", row["target"])
        runs[key].append(float(row["rps"]))
    groups = sorted({k[0] for k in runs})
    targets = ["shmkv", "redis"]
    colors = {"shmkv": "#2b6cb0", "redis": "#c53030"}
    top = max(max(v) for v in runs.values()) * 1.1
    w, h, left, bottom = 720, 360, 70, 40
    gw = (w - left - 20) / len(groups)
    bw = gw / 3
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           'font-family="sans-serif" font-size="12">',
           f'<text x="{left}" y="16">requests/s, redis-benchmark -c 50 '
           '(bars: mean; dots: runs)</text>']
    plot_h = h - bottom - 30

    def y(v):
        return h - bottom - v / top * plot_h

    for i in range(5):
        v = top * i / 4
        out.append(f'<line x1="{left}" x2="{w - 20}" y1="{y(v):.1f}" '
                   f'y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" '
                   f'text-anchor="end">{v / 1000:.0f}k</text>')
    for gi, g in enumerate(groups):
        x0 = left + gi * gw + bw / 2
        for ti, t in enumerate(targets):
            vals = runs.get((g, t), [])
            if not vals:
                continue
            mean = sum(vals) / len(vals)
            x = x0 + ti * bw
            out.append(f'<rect x="{x:.1f}" y="{y(mean):.1f}" width="{bw * 0.9:.1f}" '
                       f'height="{h - bottom - y(mean):.1f}" fill="{colors[t]}"/>')
            for v in vals:
                out.append(f'<circle cx="{x + bw * 0.45:.1f}" cy="{y(v):.1f}" '
                           'r="2.5" fill="#000"/>')
        out.append(f'<text x="{x0 + bw:.1f}" y="{h - bottom + 16}" '
                   f'text-anchor="middle">{g}</text>')
    for ti, t in enumerate(targets):
        out.append(f'<rect x="{w - 150}" y="{30 + ti * 16}" width="10" height="10" '
                   f'fill="{colors[t]}"/><text x="{w - 135}" y="{39 + ti * 16}">{t}</text>')
    out.append("</svg>")
    open(dst, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
