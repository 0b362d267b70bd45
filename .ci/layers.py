#!/usr/bin/env python3
"""Fails when a top-level module of src/ uses one that is not below it, or when two files of
one module use each other in a cycle.

The order below is the architecture: a module may use only modules of earlier layers. It is
README's "Where code lives", as a check. Run from the repository root (`.ci/run` does).
"""
import os
import re
import sys

LAYERS = [
    ["digest"],
    ["i18n"],
    ["rules"],
    ["net"],
    ["config"],
    ["telemetry"],
    ["db"],
    ["analytics"],
    ["resolver"],
    ["state"],
    ["services"],
    ["charts"],
    ["public"],
    ["redirect", "api"],
    ["admin"],
    ["routes"],
    ["startup"],
    ["cli"],
]
ROOT = "src"
# lib.rs lists the modules and main.rs calls the CLI: both stand above everything.
OUTSIDE = {"lib", "main"}

layer_of = {name: index for index, names in enumerate(LAYERS) for name in names}
reference = re.compile(r"\bcrate::(?:\{([^}]*)\}|(\w+))")
sibling = re.compile(r"\bsuper::(\w+)")


def top_level(path):
    rel = os.path.relpath(path, ROOT)
    return rel.split(os.sep)[0].removesuffix(".rs")


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def main():
    problems = []
    files = []
    for folder, _, names in os.walk(ROOT):
        files += [os.path.join(folder, n) for n in names if n.endswith(".rs")]
    modules = {top_level(f) for f in files} - OUTSIDE
    for missing in sorted(modules - set(layer_of)):
        problems.append(f"src/{missing}: not in the layer list of .ci/layers.py; add it")
    # Which files of one module use which others (by file stem), for the cycle check.
    uses = {}
    for path in sorted(files):
        module = top_level(path)
        if module in OUTSIDE:
            continue
        text = strip_comments(open(path, encoding="utf-8").read())
        used = set()
        for match in reference.finditer(text):
            group = match.group(1)
            names = re.findall(r"(?:^|,)\s*(\w+)", group) if group else [match.group(2)]
            used.update(names)
        for other in sorted(used):
            if other == module or other not in layer_of:
                continue
            if module in layer_of and layer_of[other] >= layer_of[module]:
                problems.append(
                    f"{path}: `{module}` uses `{other}`, which is not below it "
                    f"(layer {layer_of[other]} >= {layer_of[module]})"
                )
        if os.path.dirname(path) != ROOT:
            stem = os.path.splitext(os.path.basename(path))[0]
            folder = os.path.dirname(path)
            same = set(sibling.findall(text))
            prefix = "crate::" + module + "::"
            same |= set(re.findall(re.escape(prefix) + r"(\w+)", text))
            uses[(folder, stem)] = {s for s in same if s != stem}
    # Cycles between the files of one folder.
    for (folder, stem), targets in sorted(uses.items()):
        for target in sorted(targets):
            back = uses.get((folder, target), set())
            if stem in back and stem < target:
                problems.append(f"{folder}: {stem}.rs and {target}.rs use each other")
    if problems:
        print("layering check failed:")
        print("\n".join("  " + p for p in problems))
        return 1
    print(f"layering check: {len(files)} files, {len(modules)} modules, no upward use, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
