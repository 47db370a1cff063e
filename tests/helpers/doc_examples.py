#!/usr/bin/env python3
"""doc_examples.py — runs the command examples of README.md and docs/*.md that
are marked to run on this machine, so that the documents cannot drift from
the program (docs/testing.md, "Examples in the documents").

A fenced block is run when the line before it (blank lines aside) is

    <!-- doc-test -->                 every line of the block runs
    <!-- doc-test: skip=A|B -->       lines containing A or B do not

Each marked block runs as one bash script (`set -e -o pipefail`: the first
command that fails fails the block) in a fresh sandbox directory that holds
what the examples name: `jobscope` (the build under test), stand-ins for the
placeholder programs (./task, ./job.sh, ./simulate, ./solver, ./exec,
./tool, ./app, ./namd2, train.py, a Makefile), `mpirun` and `srun` running
their command once as rank 0, an `events.jsonl` and a `jobs/` folder of
event files; HOME, the spool and the serve socket are the sandbox's own.

    doc_examples.py ROOT JOBSCOPE [FILE...]
Prints one line per block and exits 1 if any failed, 2 if a marker is not
followed by a fence or fewer than MIN_BLOCKS blocks are marked."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

MIN_BLOCKS = 3
TIMEOUT = 120
MARK = re.compile(r"^\s*<!--\s*doc-test(?::\s*(.*?))?\s*-->\s*$")
FENCE = re.compile(r"^\s*```\s*(\w*)")

STUB = "#!/bin/sh\n# a placeholder program of the documents' examples\nexit 0\n"
LAUNCHER = """#!/bin/sh
# %s: runs its command once, as rank 0 (the documents' examples)
while [ $# -gt 0 ]; do
    case "$1" in -np|-n|-N|--ntasks|--nodes) shift 2;; -*) shift;; *) break;; esac
done
OMPI_COMM_WORLD_RANK=0 SLURM_PROCID=0 exec "$@"
"""


def blocks(path):
    """(line, options, lang, [lines]) of every marked block of path."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        opts = {}
        o = re.match(r"skip=(.*)$", (m.group(1) or "").strip())
        if o:
            opts["skip"] = o.group(1).strip()
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        f = FENCE.match(lines[j]) if j < len(lines) else None
        if not f:
            print("%s:%d: a doc-test marker not followed by a fenced block" % (path, i + 1))
            sys.exit(2)
        k = j + 1
        while k < len(lines) and not FENCE.match(lines[k]):
            k += 1
        out.append((j + 1, opts, f.group(1), lines[j + 1:k]))
        i = k + 1
    return out


def sandbox(js):
    d = tempfile.mkdtemp(prefix="jobscope-doc-")
    b = os.path.join(d, "bin")
    os.makedirs(b)
    os.symlink(js, os.path.join(b, "jobscope"))
    for name in ("mpirun", "srun"):
        with open(os.path.join(b, name), "w") as f:
            f.write(LAUNCHER % name)
        os.chmod(os.path.join(b, name), 0o755)
    py = shutil.which("python3")
    if py:
        os.symlink(py, os.path.join(b, "python"))
    for name in ("task", "job.sh", "simulate", "solver", "exec", "tool", "app", "namd2"):
        with open(os.path.join(d, name), "w") as f:
            f.write(STUB)
        os.chmod(os.path.join(d, name), 0o755)
    with open(os.path.join(d, "train.py"), "w") as f:
        f.write("print('trained')\n")
    with open(os.path.join(d, "Makefile"), "w") as f:
        f.write("all:\n\t@true\n")
    env = environment(d)
    os.makedirs(os.path.join(d, "jobs"))
    for out, cmd in (("events.jsonl", ["true"]), ("jobs/a.jsonl", ["true"]),
                     ("jobs/b.jsonl", ["sleep", "0.1"])):
        subprocess.run([js, "run", "-q", "-i", "0.05", "-o", out, "--"] + cmd, cwd=d, env=env,
                       check=True, timeout=TIMEOUT)
    return d, env


def environment(d):
    env = dict(os.environ)
    for k in ("KICKSTART_MON_URL", "KICKSTART_MON_INTERVAL", "JOBSCOPE_SOCKET", "XDG_STATE_HOME"):
        env.pop(k, None)
    env.update(HOME=d, JOBSCOPE_SPOOL_DIR=os.path.join(d, "spool"),
               JOBSCOPE_SERVE_SOCKET=os.path.join(d, "serve.sock"),
               PATH=os.path.join(d, "bin") + os.pathsep + env.get("PATH", "/usr/bin:/bin"))
    return env


def main():
    root, js = sys.argv[1], os.path.abspath(sys.argv[2])
    files = sys.argv[3:] or [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "*.md")))
    failed = total = 0
    for path in files:
        for line, opts, lang, body in blocks(path):
            total += 1
            where = "%s:%d" % (os.path.relpath(path, root), line)
            skip = [s for s in opts.get("skip", "").split("|") if s]
            run = [l for l in body if not any(s in l for s in skip)]
            d, env = sandbox(js)
            try:
                if lang == "python":
                    cmd = ["python3", "-c", "\n".join(run)]
                else:
                    cmd = ["bash", "-c", "set -e -o pipefail\n" + "\n".join(run)]
                try:
                    p = subprocess.run(cmd, cwd=d, env=env, stdin=subprocess.DEVNULL,
                                       capture_output=True, text=True, errors="replace",
                                       timeout=TIMEOUT)
                    ok, rc, out = p.returncode == 0, p.returncode, p.stdout + p.stderr
                except subprocess.TimeoutExpired:
                    ok, rc, out = False, "timeout", ""
                print("%s  %s (%d command line%s)" % ("ok  " if ok else "FAIL", where, len(run),
                                                      "" if len(run) == 1 else "s"))
                if not ok:
                    failed += 1
                    print("    status %s; output:" % rc)
                    for l in out.splitlines()[-15:]:
                        print("    | " + l)
            finally:
                shutil.rmtree(d, ignore_errors=True)
    if total < MIN_BLOCKS:
        print("only %d marked block%s (at least %d expected)" % (total, "" if total == 1 else "s",
                                                                  MIN_BLOCKS))
        sys.exit(2)
    print("%d block%s, %d failed" % (total, "" if total == 1 else "s", failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
