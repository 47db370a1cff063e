#!/usr/bin/env python3
"""check_layers.py — rejects an #include that goes up jobscope's layers.

  check_layers.py [SRC_DIR]      (default: src)

The monitor side, lowest first (docs/hacking.md):
  0 util     src/util, the JSON writer src/event/json.[ch]
  1 model    src/model
  2 sources  src/event, src/source.h, src/proc, src/bpf, src/cgroup, src/gpu,
             src/limits, src/metrics, and the output interface src/sink/sink.h
  3 monitor  src/monitor
  4 outputs  src/sink (formats, delivery, network backends), and src/kickstart
             (pegasus-kickstart's record and job chain on top of the monitor)
  5 cli      src/cli, src/slurm (the SPANK plugin: a front end that starts
             `jobscope attach`; it links nothing of jobscope's)
A file may include its own layer and those below, never one above.  The
server side (src/store, src/query, src/server, src/repo, src/report) may
include anything of the monitor side but src/cli and src/monitor, and
nothing on the monitor side may include the server side.  The server side
has its own layers, lowest first:
  S0 store   src/store
  S1 query   src/query
  S2 server  src/server
  S3 views   src/repo, src/report
  S4 main    src/server/main.c, src/server/server_main.h (the program's
             entry and its table of subcommands, as cli is the monitor's)
Prints one line per violation; exit 1 if any."""
import os, re, sys

SERVER = ("store", "query", "server", "repo", "report")
SERVER_LAYER = {"store": 0, "query": 1, "server": 2, "repo": 3, "report": 3}
SERVER_NAMES = {0: "store", 1: "query", 2: "server", 3: "views", 4: "main"}
SERVER_MAIN = ("server/main.c", "server/server_main.h")


def server_layer(rel):
    return 4 if rel in SERVER_MAIN else SERVER_LAYER[rel.split("/")[0]]


def layer(rel):
    """rel: path under src/ -> layer number, 'S' (server side) or None."""
    parts = rel.split("/")
    top = parts[0]
    if top == "util" or rel in ("event/json.h", "event/json.c"):
        return 0
    if top == "model":
        return 1
    if rel == "sink/sink.h":
        return 2
    if top in ("event", "proc", "bpf", "cgroup", "gpu", "limits", "metrics") or rel == "source.h":
        return 2
    if top == "monitor":
        return 3
    if top in ("sink", "kickstart"):
        return 4
    if top in ("cli", "slurm"):
        return 5
    if top in SERVER:
        return "S"
    return None


NAMES = {0: "util", 1: "model", 2: "sources", 3: "monitor", 4: "outputs", 5: "cli", "S": "server side"}


def main():
    src = os.path.normpath(sys.argv[1] if len(sys.argv) > 1 else "src")
    bad = 0
    for d, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, src)
            mine = layer(rel)
            if mine is None:
                continue
            for n, line in enumerate(open(path, errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                cand = os.path.normpath(os.path.join(d, inc))
                if not os.path.exists(cand):
                    cand = os.path.normpath(os.path.join(src, inc))
                if not os.path.exists(cand):
                    continue
                target = os.path.relpath(cand, src)
                theirs = layer(target)
                if theirs is None:
                    continue
                why = None
                if mine == "S" and theirs == "S":
                    a = server_layer(rel)
                    b = server_layer(target)
                    if b > a:
                        why = "%s (server layer %d) includes %s (server layer %d)" % (
                            SERVER_NAMES[a], a, SERVER_NAMES[b], b)
                elif mine == "S":
                    if theirs in (3, 5):
                        why = "the server side must not include %s" % NAMES[theirs]
                elif theirs == "S":
                    why = "the monitor side must not include the server side"
                elif theirs > mine:
                    why = "%s (layer %d) includes %s (layer %d)" % (NAMES[mine], mine, NAMES[theirs], theirs)
                if why:
                    print("%s:%d: includes %s: %s" % (path, n, target, why))
                    bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
