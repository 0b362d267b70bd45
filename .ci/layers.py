#!/usr/bin/env python3
"""The architecture as a check. Fails when
- a top-level module of src/ uses one that is not in an earlier layer of LAYERS;
- the modules of any one folder use each other in a cycle, of any length (a strongly connected
  component of more than one module among the children of one module);
- a file has `unsafe` code or allows it without being listed in UNSAFE;
- README's "Where code lives" table names the top-level modules in another order than LAYERS.

LAYERS is the one written order: README's table follows it, and this script says so when it
does not. Run from the repository root (`.ci/run` does).
"""
import os
import re
import sys

LAYERS = [
    # The texts people read (`t!`) come before the rules, whose words the UI shows.
    ["digest", "i18n"],
    ["rules"],
    ["net"],
    ["config"],
    ["telemetry"],
    ["background", "metrics"],
    ["db"],
    # Only the click store names the click tables; ingest and statistics cannot use each other.
    ["clickstore"],
    ["clicks", "stats"],
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
# The modules that may hold `unsafe` code, each allowing it for itself with its invariants
# written at its top (Cargo.toml denies it everywhere else).
UNSAFE = {
    "src/db/sqlite_handle.rs",
    "src/clicks/journal/segment.rs",
    "src/background.rs",
    "src/main.rs",
}
ROOT = "src"
# lib.rs lists the modules and main.rs calls the CLI: both stand above everything.
OUTSIDE = {"lib", "main"}
README = "README.md"

layer_of = {name: index for index, names in enumerate(LAYERS) for name in names}
unsafe_use = re.compile(r"\bunsafe\s*(\{|fn\b|impl\b|extern\b)|allow\(\s*unsafe_code\s*\)")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def strip_strings(text):
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def module_of(path):
    """The module path of a file: src/a/b.rs and src/a/b/mod.rs are ("a", "b")."""
    rel = os.path.relpath(path, ROOT)[: -len(".rs")].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel in (["lib"], ["main"]):
        return ()
    return tuple(rel)


def expand(tree):
    """Expands a use tree (`a::{b, c::{d, e}}`) into its paths, as lists of segments."""
    tree = tree.strip()
    if not tree:
        return []
    if tree.startswith("{"):
        depth, start, parts = 0, 1, []
        for index, char in enumerate(tree):
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    parts.append(tree[start:index])
                    break
            elif char == "," and depth == 1:
                parts.append(tree[start:index])
                start = index + 1
        return [path for part in parts for path in expand(part)]
    head, sep, rest = tree.partition("::")
    head = head.split(" as ")[0].strip()
    if not re.fullmatch(r"\w+|\*", head):
        return []
    if not sep:
        return [[head]]
    return [[head] + path for path in expand(rest)] or [[head]]


def path_tree_at(text, start):
    """The use tree that starts at `start`: identifiers, `::` and balanced braces."""
    depth, index = 0, start
    while index < len(text):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and not (char.isalnum() or char in "_:*"):
            break
        index += 1
    return text[start:index]


def resolve(current, segments, modules):
    """The deepest known module a path from module `current` names, or None."""
    if not segments:
        return None
    if segments[0] == "crate":
        base, rest = (), segments[1:]
    elif segments[0] in ("super", "self"):
        base, rest = current, segments
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    elif current + (segments[0],) in modules:
        base, rest = current, segments
    else:
        return None
    found = base if base in modules or base == () else None
    for segment in rest:
        if base + (segment,) in modules:
            base = base + (segment,)
            found = base
        else:
            break
    return found


def strongly_connected(nodes, edges):
    """Tarjan's algorithm: the strongly connected components of a graph."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return components


def readme_order():
    """The top-level modules README's "Where code lives" table names, in its order."""
    text = open(README, encoding="utf-8").read()
    start = text.find("### Where code lives")
    if start < 0:
        return None
    order = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("| `src/"):
            first_cell = line.split("|")[1]
            for name in re.findall(r"`src/(\w+)", first_cell):
                if name not in order:
                    order.append(name)
    return order


def main():
    sys.setrecursionlimit(10000)
    problems = []
    files = []
    for folder, _, names in os.walk(ROOT):
        files += [os.path.join(folder, n) for n in names if n.endswith(".rs")]
    files.sort()
    modules = {module_of(f) for f in files}
    tops = {m[0] for m in modules if m} - OUTSIDE
    for missing in sorted(tops - set(layer_of)):
        problems.append(f"src/{missing}: not in the layer list of .ci/layers.py; add it")

    edges = {}  # module -> modules it uses
    for path in files:
        current = module_of(path)
        raw = strip_comments(open(path, encoding="utf-8").read())
        if unsafe_use.search(strip_strings(raw)) and path not in UNSAFE:
            problems.append(
                f"{path}: `unsafe` outside the modules listed in UNSAFE of .ci/layers.py"
            )
        if not current or current[0] in OUTSIDE:
            continue
        text = strip_strings(raw)
        used = set()
        for match in re.finditer(r"\b(crate|super|self)::", text):
            tree = path_tree_at(text, match.start())
            for segments in expand(tree):
                target = resolve(current, segments, modules)
                if target is not None:
                    used.add(target)
        # Paths relative to this module: `use child::Item;`, `child::call()`.
        for match in re.finditer(r"(?<![\w:])(\w+)::", text):
            if current + (match.group(1),) in modules:
                used.add(current + (match.group(1),))
        used.discard(current)
        edges[current] = used
        top = current[0]
        for other in sorted({m[0] for m in used if m} - {top}):
            if other in layer_of and top in layer_of and layer_of[other] >= layer_of[top]:
                problems.append(
                    f"{path}: `{top}` uses `{other}`, which is not below it "
                    f"(layer {layer_of[other]} >= {layer_of[top]})"
                )

    # Cycles among the children of every module (the files and folders of one folder): a use
    # anywhere inside a child counts as a use by that child.
    parents = {m[:-1] for m in modules if m}
    cycles = 0
    for parent in sorted(parents):
        depth = len(parent) + 1
        children = {m for m in modules if len(m) == depth and m[:-1] == parent}
        child_edges = {}
        for source, targets in edges.items():
            if len(source) < depth or source[: depth - 1] != parent:
                continue
            for target in targets:
                if len(target) >= depth and target[: depth - 1] == parent:
                    a, b = source[:depth], target[:depth]
                    if a != b:
                        child_edges.setdefault(a, set()).add(b)
        for component in strongly_connected(children, child_edges):
            if len(component) > 1:
                cycles += 1
                where = "src/" + "/".join(parent) if parent else "src"
                names = " -> ".join(c[-1] for c in component)
                problems.append(f"{where}: a cycle among {names}")

    order = readme_order()
    if order is None:
        problems.append(f'{README}: no "### Where code lives" section')
    else:
        for name in sorted(set(layer_of) - set(order)):
            problems.append(f'{README}: "Where code lives" does not name src/{name}')
        ranks = [layer_of[n] for n in order if n in layer_of]
        if ranks != sorted(ranks):
            expected = sorted((n for n in order if n in layer_of), key=lambda n: layer_of[n])
            problems.append(
                f'{README}: "Where code lives" names the modules in another order than '
                f"LAYERS: {', '.join(order)}; expected {', '.join(expected)}"
            )
        for name in order:
            if name not in layer_of and name not in OUTSIDE:
                problems.append(f'{README}: "Where code lives" names src/{name}, which is not in LAYERS')

    if problems:
        print("layering check failed:")
        print("\n".join("  " + p for p in problems))
        return 1
    print(
        f"layering check: {len(files)} files, {len(tops)} top-level modules, "
        f"{len(parents)} folders, no upward use, no cycle, unsafe only in {len(UNSAFE)} modules"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
