#!/usr/bin/python3
"""psutil_sampler.py — the "psrecord --include-children" peer: what many
users script themselves with python3-psutil.  Every INTERVAL seconds it
walks root + root.children(recursive=True) and writes one JSON line: the
tree's CPU seconds (live members' user+system, plus the root's reaped
children), written bytes (write_chars), RSS, process and thread counts.
Like psrecord it stops when the root process is gone.

  psutil_sampler.py -i S -o FILE --pid PID      attach
  psutil_sampler.py -i S -o FILE -- CMD ARGS    run (spawns CMD)
"""
import argparse, json, subprocess, sys, time
import psutil

ap = argparse.ArgumentParser()
ap.add_argument("-i", type=float, default=1.0)
ap.add_argument("-o", required=True)
ap.add_argument("--pid", type=int)
ap.add_argument("cmd", nargs=argparse.REMAINDER)
a = ap.parse_args()
cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
child = subprocess.Popen(cmd) if a.pid is None else None
root = psutil.Process(a.pid if a.pid is not None else child.pid)
cache = {root.pid: root}          # keep Process objects between samples
out = open(a.o, "w")
nxt = time.monotonic()
while True:
    try:
        tree = [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        break
    cpu = wchar = rss = procs = threads = 0
    for p in tree:
        p = cache.setdefault(p.pid, p)
        try:
            with p.oneshot():
                t = p.cpu_times()
                cpu += t.user + t.system
                if p is root:
                    cpu += t.children_user + t.children_system
                wchar += p.io_counters().write_chars
                rss += p.memory_info().rss
                threads += p.num_threads()
            procs += 1
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    out.write(json.dumps({"ts": time.time(), "cpu": cpu, "wchar": wchar,
                          "rss": rss, "procs": procs, "threads": threads}) + "\n")
    out.flush()
    if child is not None and child.poll() is not None:
        break
    nxt += a.i
    time.sleep(max(0.0, nxt - time.monotonic()))
sys.exit(child.wait() if child is not None else 0)
