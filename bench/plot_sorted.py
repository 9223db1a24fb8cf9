#!/usr/bin/env python3
"""Line chart (SVG, no dependencies) of sorted_array_bench output: lookup
(hit) ns against the number of records, one line per structure, log-log,
the best of the runs in the file for each point.

usage: plot_sorted.py sorted_array_bench.txt out.svg
"""
import html
import math
import sys
from collections import defaultdict


def parse(path):
    best = defaultdict(dict)  # structure -> records -> hit ns
    for line in open(path):
        parts = line.split()
        if not parts or not parts[0].isdigit():
            continue
        records = int(parts[0])
        # "records  structure name...  bytes build hit x miss x [scan x]"
        first = next((i for i in range(1, len(parts))
                      if parts[i].replace('.', '', 1).isdigit()), None)
        if first is None or first + 2 >= len(parts):
            continue
        name = " ".join(parts[1:first])
        hit = float(parts[first + 2])
        old = best[name].get(records)
        best[name][records] = hit if old is None else min(old, hit)
    return best


def main():
    src, dst = sys.argv[1], sys.argv[2]
    best = parse(src)
    xs = sorted({r for v in best.values() for r in v})
    ys = [y for v in best.values() for y in v.values()]
    w, h, left, right, top, bottom = 760, 400, 70, 250, 30, 50
    lx0, lx1 = math.log10(xs[0]), math.log10(xs[-1])
    ly0, ly1 = math.log10(min(ys) / 1.5), math.log10(max(ys) * 1.5)

    def px(x):
        return left + (math.log10(x) - lx0) / (lx1 - lx0) * (w - left - right)

    def py(y):
        return h - bottom - (math.log10(y) - ly0) / (ly1 - ly0) * (
            h - top - bottom)

    colors = ["#4a5568", "#2b6cb0", "#2f855a", "#c53030", "#b7791f"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" '
           f'height="{h}" font-family="sans-serif" font-size="12">',
           f'<text x="{left}" y="18">lookup (hit) ns by records, log-log; '
           'lower is better</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" '
           f'y2="{h - bottom}" stroke="#000"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" '
           'stroke="#000"/>']
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{h - bottom + 16}" '
                   f'text-anchor="middle">{x:,}</text>')
    for e in range(int(math.floor(ly0)), int(math.ceil(ly1)) + 1):
        for m in (1, 3):
            y = m * 10 ** e
            if not (10 ** ly0 <= y <= 10 ** ly1):
                continue
            out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" '
                       f'text-anchor="end">{y:g}</text>')
            out.append(f'<line x1="{left}" y1="{py(y):.1f}" '
                       f'x2="{w - right}" y2="{py(y):.1f}" stroke="#ddd"/>')
    for i, (name, pts) in enumerate(sorted(best.items())):
        c = colors[i % len(colors)]
        path = " ".join(f"{px(x):.1f},{py(pts[x]):.1f}" for x in sorted(pts))
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" '
                   f'points="{path}"/>')
        ly = top + 20 + 18 * i
        out.append(f'<line x1="{w - right + 10}" y1="{ly - 4}" '
                   f'x2="{w - right + 30}" y2="{ly - 4}" stroke="{c}" '
                   'stroke-width="2"/>')
        out.append(f'<text x="{w - right + 36}" y="{ly}">{html.escape(name)}</text>')
    out.append(f'<text x="{(left + w - right) / 2:.0f}" y="{h - 12}" '
               'text-anchor="middle">records</text>')
    out.append('</svg>')
    open(dst, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
