#!/usr/bin/env python3
"""check_layers.py — rejects an #include that goes up jobscope's layers.

  check_layers.py [SRC_DIR]      (default: src)

The monitor side, lowest first (docs/hacking.md):
  0 util     src/util, the JSON writer src/event/json.[ch]
  1 model    src/model (the catalogue, an event's value set), src/event (the
             job's annotations and the event handed to the outputs)
  2 sources  src/source.h, src/proc, src/bpf, src/cgroup, src/gpu,
             src/limits, src/metrics: where numbers come from
  2 outputs  src/sink (formats, delivery, network backends): where events go;
             beside the sources, and neither includes the other
  3 monitor  src/monitor: the engine, which opens the outputs, runs the
             sources and hands their events to the outputs (the emitter)
  4 front    src/kickstart (pegasus-kickstart's record and job chain on top
             of the monitor)
  5 cli      src/cli, src/slurm (the SPANK plugin: a front end that starts
             `jobscope attach`; it links nothing of jobscope's)
A file may include its own layer and those below, never one above, nor
the other column of its own layer; no file is exempt.  The
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
    """rel: path under src/ -> (layer number, name) or None."""
    top = rel.split("/")[0]
    if top == "util" or rel in ("event/json.h", "event/json.c"):
        return (0, "util")
    if top in ("model", "event"):
        return (1, "model")
    if top in ("proc", "bpf", "cgroup", "gpu", "limits", "metrics") or rel == "source.h":
        return (2, "sources")
    if top == "sink":
        return (2, "outputs")
    if top == "monitor":
        return (3, "monitor")
    if top == "kickstart":
        return (4, "front ends")
    if top in ("cli", "slurm"):
        return (5, "cli")
    if top in SERVER:
        return ("S", "server side")
    return None


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
                if mine[0] == "S" and theirs[0] == "S":
                    a = server_layer(rel)
                    b = server_layer(target)
                    if b > a:
                        why = "%s (server layer %d) includes %s (server layer %d)" % (
                            SERVER_NAMES[a], a, SERVER_NAMES[b], b)
                elif mine[0] == "S":
                    if theirs[1] in ("monitor", "front ends", "cli"):
                        why = "the server side must not include %s" % theirs[1]
                elif theirs[0] == "S":
                    why = "the monitor side must not include the server side"
                elif theirs[0] > mine[0]:
                    why = "%s (layer %d) includes %s (layer %d)" % (mine[1], mine[0], theirs[1], theirs[0])
                elif theirs[0] == mine[0] and theirs[1] != mine[1]:
                    why = "%s and %s stand side by side (layer %d): neither includes the other" % (
                        mine[1], theirs[1], mine[0])
                if why:
                    print("%s:%d: includes %s: %s" % (path, n, target, why))
                    bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
