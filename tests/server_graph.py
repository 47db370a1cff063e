#!/usr/bin/env python3
"""server_graph.py — the include and call graph of the server's files, and
its circles (issue 24: "no circle").

  server_graph.py [--dot] [BUILD_DIR] [SRC_DIR]   (default: build src/server)

Calls are read from the objects (nm): file A calls file B when an object of
A refers to a global symbol that B's object defines (a call, or a function
or variable whose address it takes).  Includes are read from the sources:
A includes B when A includes B's header (NAME.h belongs to NAME.c) and A
implements none of that header's functions itself (serve.c defines the
config functions that server.h declares: that is no dependency on server.c).  Prints the edges, the strongly connected components of more than one
file (the circles) and the headers included by more than two files;
exit 1 when there is a circle.  --dot prints a Graphviz graph
instead."""
import os, re, subprocess, sys


def nm(path, undefined):
    args = ["nm", "-u" if undefined else "--defined-only", "-g", path]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if not parts:
            continue
        name = parts[-1]
        if undefined or (len(parts) >= 3 and parts[1] in "TDBRGSVW"):
            syms.add(name)
    return syms


def sccs(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    dot = "--dot" in sys.argv
    build = args[0] if args else "build"
    src = args[1] if len(args) > 1 else "src/server"
    files = sorted(f[:-2] for f in os.listdir(src) if f.endswith(".c"))
    defined, used = {}, {}
    for f in files:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        obj = os.path.join(build, os.path.relpath(os.path.abspath(src), root), f + ".o")
        if not os.path.exists(obj):
            sys.exit(f"server_graph: {obj} missing (build first: make)")
        defined[f] = nm(obj, False)
        used[f] = nm(obj, True)
    owner = {}
    for f in files:
        for s in defined[f]:
            owner[s] = f
    calls = {f: set() for f in files}
    for f in files:
        for s in used[f]:
            if s in owner and owner[s] != f:
                calls[f].add(owner[s])

    inc_re = re.compile(r'^\s*#\s*include\s+"(?:server/)?([^"/]+\.h)"', re.M)
    includes = {f: set() for f in files}
    includers = {}
    headers = sorted(h for h in os.listdir(src) if h.endswith(".h"))
    declared = {}
    for h in headers:
        text = open(os.path.join(src, h), encoding="utf-8", errors="replace").read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        declared[h] = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", text))
    for f in files:
        text = open(os.path.join(src, f + ".c"), encoding="utf-8", errors="replace").read()
        for h in inc_re.findall(text):
            if h not in headers or h == f + ".h":
                continue
            includers.setdefault(h, set()).add(f)
            target = h[:-2]
            if target in files and not (declared[h] & defined[f]):
                includes[f].add(target)

    if dot:
        print("digraph server {\n  rankdir=BT; node [shape=box, fontsize=10];")
        for f in files:
            for g in sorted(calls[f]):
                print(f'  "{f}" -> "{g}";')
            for g in sorted(includes[f] - calls[f]):
                print(f'  "{f}" -> "{g}" [style=dashed];')
        print("}")
        return 0
    print("calls (file -> files whose globals it uses):")
    for f in files:
        print(f"  {f:14} -> {' '.join(sorted(calls[f])) or '-'}")
    print("includes (file -> files whose header it includes):")
    for f in files:
        print(f"  {f:14} -> {' '.join(sorted(includes[f])) or '-'}")
    both = {f: calls[f] | includes[f] for f in files}
    circles = sccs(files, both)
    print(f"circles: {len(circles)}")
    for c in circles:
        print("  " + " <-> ".join(c))
    print("headers included by more than two files (server.h, the modules' interface, aside):")
    for h, v in sorted(includers.items()):
        if h != "server.h" and len(v) > 2:
            print(f"  {h}: {len(v)} files ({' '.join(sorted(v))})")
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
