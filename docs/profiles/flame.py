#!/usr/bin/env python3
"""A flame graph (SVG) of a folded-stack file: flame.py FILE.folded > FILE.svg. Each box is a frame, as wide as
its samples; hover a box for its name and count. No dependencies."""
import html, sys, zlib

W, H, MINW = 1200.0, 16, 0.3


def tree(path):
    root = {"n": 0, "c": {}}
    for line in open(path):
        stack, n = line.rsplit(" ", 1)
        node = root
        node["n"] += int(n)
        for f in stack.split(";"):
            node = node["c"].setdefault(f, {"n": 0, "c": {}})
            node["n"] += int(n)
    return root


def boxes(node, name, x, depth, scale, out):
    w = node["n"] * scale
    if w < MINW:
        return
    out.append((name, x, depth, w, node["n"]))
    for child_name, child in sorted(node["c"].items()):
        boxes(child, child_name, x, depth + 1, scale, out)
        x += child["n"] * scale


root = tree(sys.argv[1])
out = []
boxes(root, "all", 0.0, 0, W / max(1, root["n"]), out)
depth = max(b[2] for b in out) + 1
print('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="11">'
      % (W, depth * H + 20))
print('<text x="4" y="14">%s: %d samples</text>' % (html.escape(sys.argv[1].rsplit("/", 1)[-1]), root["n"]))
for name, x, d, w, n in out:
    y = 20 + (depth - 1 - d) * H
    hue = zlib.crc32(name.split(";")[0].encode()) % 60
    label = html.escape(name[: int(w / 7)]) if w > 21 else ""
    print('<g><title>%s (%d samples, %.1f%%)</title><rect x="%.1f" y="%d" width="%.1f" height="%d" '
          'fill="hsl(%d,80%%,60%%)" stroke="white" stroke-width="0.5"/><text x="%.1f" y="%d">%s</text></g>'
          % (html.escape(name), n, 100.0 * n / root["n"], x, y, w, H - 1, hue, x + 2, y + 11, label))
print("</svg>")
