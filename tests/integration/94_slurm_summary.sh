# 94_slurm_summary.sh — `jobscope summary SLURM_JOBID` on a real cluster
# (tests/helpers/slurm_cluster.sh): one report across a job's steps and tasks,
# every figure checked against Slurm's own accounting (sacct) and, where
# Slurm measures something else, recomputed here by hand from the monitors'
# events; an array element named as sacct names it (A_2); the epilog's
# AdminComment is the report's one line; the node's serve, several servers
# and the plugin's files give the same report (docs/slurm.md, docs/views.md).
source "$ROOT/tests/helpers/slurm_cluster.sh"
source "$ROOT/tests/helpers/serve.sh"
W=$HELPERS/workload

test_summary_of_a_slurm_job_across_its_steps_and_tasks_agrees_with_sacct() {
    [ -e "$ROOT/$BUILD/jobscope-spank.so" ] || { echo "    skip: no jobscope-spank.so (libslurm-dev)" >&2; return 77; }
    mkdir -p "$T/ev" "$T/out"
    serve_start s || return 1
    local node=unix:$SERVE_SOCK # the node's serve, where its monitors stream
    export JOBSCOPE_SERVE_SOCKET=$SERVE_SOCK
    printf '#!/bin/sh\nexport SLURM_CONF=%s/slurm/slurm.conf PATH=$PATH:/usr/bin:/usr/sbin\nexec %s --socket %s --jobscope %s --wait 5 2>>%s/epilog.log\n' \
        "$T" "$ROOT/dist/slurm/jobscope-slurm-epilog" "$SERVE_SOCK" "$JS" "$T" >epilog.sh
    chmod 755 epilog.sh
    JS_TEST_EPILOG=$T/epilog.sh
    slurm_start "required $ROOT/$BUILD/jobscope-spank.so jobscope=$JS output=$T/ev/%j.%s.%t.jsonl interval=0.25 log=$T/monitors.log"
    local rc=$?
    [ $rc = 0 ] || return $rc

    # two steps on the node: two tasks that burn 1 s each, then one that holds 150 MB
    submit two -n2 --mem=300M --wrap "srun -n2 $W burn 1000; srun -n1 $W grow 150 1500" || return 1
    submit array -n1 --mem=100M --array=1-2 --wrap "$W burn 400" || return 1
    local two arr all ids i
    two=$(jobid two)
    arr=$(jobid array)
    all="$two $arr"
    slurm_wait_jobs $all || return 1
    for i in $(seq 75); do # slurmdbd is written asynchronously; the epilogs run last
        sacct -P -n -j "$two,$arr" -o JobID,JobIDRaw,State,ExitCode,AllocCPUS,ReqMem,TotalCPU,MaxRSS,Elapsed,AdminComment >sacct.txt 2>&1
        [ "$(grep -c 'jobscope:' sacct.txt)" -ge 3 ] && ! grep -q 'RUNNING\|PENDING' sacct.txt &&
            [ "$(grep -c "^$two\." sacct.txt)" -ge 3 ] && break
        sleep 0.2
    done
    cat sacct.txt
    [ ! -s "$T/monitors.log" ] || { cat "$T/monitors.log"; fail "monitors complained"; return 1; }

    # the report from the node's serve, as a user types it
    "$JS" summary --server "$node" "$two" >report.txt || { fail "summary $two"; return 1; }
    cat report.txt
    "$JS" summary --json --server "$node" "$two" >two.json || return 1
    "$JS" summary --oneline --server "$node" "$two" >two.line || return 1

    # every figure, by hand: sacct for what Slurm measures the same way,
    # the events (one file per task) for the rest
    python3 - "$two" sacct.txt "$T/ev" two.json report.txt two.line <<'PY' | tee figures.txt
import glob, json, math, os, re, sys
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "helpers"))
from slurm_compare import secs, kb as kib  # sacct's [D-][HH:]MM:SS and 123K forms
job, sacct_file, evdir, page_file, report_file, line_file = sys.argv[1:]
MiB = 1 << 20
rows = {}
for l in open(sacct_file):
    f = l.rstrip("\n").split("|")
    if len(f) >= 10:
        rows[f[0]] = dict(zip(["JobID", "Raw", "State", "ExitCode", "AllocCPUS", "ReqMem", "TotalCPU", "MaxRSS", "Elapsed", "AdminComment"], f))
jobrow = rows[job]
steps = {k.split(".", 1)[1]: v for k, v in rows.items() if k.startswith(job + ".") and not k.endswith(".extern")}
assert sorted(steps) == ["0", "1", "batch"], sorted(steps)
page = json.load(open(page_file))
s, a = page["summary"], page["assessment"]
report = open(report_file).read()
def line(label):
    m = re.search(r"^ *%s: (.*)$" % re.escape(label), report, re.M)
    assert m, label
    return m.group(1)

# the allocation: sacct's AllocCPUS and ReqMem (the node's, as slurmstepd tells the plugin)
cpus = int(jobrow["AllocCPUS"])
req_mib = kib(jobrow["ReqMem"].rstrip("n").rstrip("c")) / 1024
assert line("CPU cores") == "%d (slurm_alloc_cores)" % cpus, line("CPU cores")
assert line("CPU memory") == "%.0f MiB (slurm_alloc_mem_mb)" % req_mib, (line("CPU memory"), req_mib)
assert line("Runs") == "3 steps, 4 tasks, 1 node", line("Runs")

# CPU: the tasks' CPU is their cgroups' (docs/slurm.md), sacct's TotalCPU within 1% or 20 ms a step
cpu_sacct = sum(secs(v["TotalCPU"]) for v in steps.values())
assert abs(s["cpu_time"] - cpu_sacct) <= max(0.01 * cpu_sacct, 0.02 * len(steps)), (s["cpu_time"], cpu_sacct)
# the run time: from the batch script's start to the last end, sacct's whole seconds within 1 s
assert abs(s["duration"] - secs(jobrow["Elapsed"])) <= 1.0, (s["duration"], jobrow["Elapsed"])
eff = s["cpu_time"] / (s["duration"] * cpus)
assert abs(s["cpu_efficiency"] - eff) < 1e-9, (s["cpu_efficiency"], eff)
bar = re.search(r"^  CPU utilization  \[[| ]*(\d+)%\]$", report, re.M)
assert bar and int(bar.group(1)) == round(100 * eff), (bar and bar.group(0), eff)

# memory: each run's own peak (its largest /proc RSS, process high-water mark,
# cgroup anon + shmem), summed over the runs alive at once
runs = []
for f in glob.glob(evdir + "/%s.*.jsonl" % job):
    ev = [json.loads(l) for l in open(f)]
    peak = 0
    for e in ev:
        if e["event"] == "kickstart.inv.online":
            peak = max(peak, (e.get("rss") or 0) * 1024,
                       (e.get("cg_memory_anon") or 0) + (e.get("cg_memory_shmem") or 0))
        if e["event"] == "jobscope.end":
            end = e
            peak = max(peak, e["peaks"]["rss"]["value"] * 1024, e["peaks"].get("max_process_hwm", 0) * 1024)
    runs.append((end["start"], end["start"] + end["duration"], peak, end["tags"]["slurm_step"]))
assert len(runs) == 4, runs
alive = max(sum(p for s0, e0, p, _ in runs if s0 <= t < e0) for t, _, _, _ in runs)
assert abs(s["peak_mem"] - alive) < 1, (s["peak_mem"], alive)
# ... against sacct: at least the batch step's and the 150 MB step's MaxRSS
# (both alive at once), at most 12 MiB more a run (file-backed pages /proc counts)
low = (kib(steps["batch"]["MaxRSS"]) + kib(steps["1"]["MaxRSS"])) * 1024
assert low <= s["peak_mem"] <= low + 2 * 12 * MiB, (s["peak_mem"], low)
assert 150 * MiB < s["peak_mem"] < 200 * MiB, s["peak_mem"]
mem_bar = re.search(r"^  CPU memory usage \[[| ]*(\d+)%\]$", report, re.M)
assert int(mem_bar.group(1)) == round(100 * s["peak_mem"] / (req_mib * MiB)), mem_bar.group(0)

# next time, in sbatch's syntax: memory per node + 10%, two tasks of one CPU
# each (step 0 kept two CPUs busy with two tasks), the run time + 10% in minutes
mem_next = math.ceil(s["peak_mem"] * 1.1 / MiB)
minutes = math.ceil(s["duration"] * 1.1 / 60)
want = "--mem=%dM --ntasks-per-node=2 --cpus-per-task=1 --time=00:%02d:00" % (mem_next, minutes)
assert a["next"]["slurm"] == want, (a["next"]["slurm"], want)
assert "    Slurm:    " + want in report, want
assert "memory" in [n["kind"] for n in a["notes"]], a["notes"]  # 300 MB asked, ~170 MB used

# a line per step, its state as sacct's
for st, v in steps.items():
    tasks = {"batch": 1, "0": 2, "1": 1}[st]
    state = "%s (exit code %s)" % (v["State"], v["ExitCode"].split(":")[0])
    want = "step %s: %d task%s," % (st, tasks, "s"[:tasks != 1])
    l = [x for x in report.split("\n") if x.strip().startswith(want)]
    assert l, (want, report)
    i = report.index(l[0])
    assert state in re.sub(r"\s+", " ", report[i:i + 300]), (state, report[i:i + 300])
assert line("State") == "%s (exit code 0)" % jobrow["State"], line("State")

# the epilog's AdminComment is the report's own line (sacctmgr lower-cases it)
one = open(line_file).read().strip()
assert jobrow["AdminComment"] == one.lower(), (jobrow["AdminComment"], one)
assert re.search(r"cpu %d%% of %d \(slurm_alloc_cores\), mem .* of %.0f MiB \(%d%%\), wall 00:00:0\d, 3 steps 4 tasks 1 node; next: %s$"
                 % (round(100 * eff), cpus, req_mib, round(100 * s["peak_mem"] / (req_mib * MiB)), re.escape(a["next"]["slurm"])), one), one
print("whole job: cpu %.3f s (sacct %.3f), %.1f s (sacct %s), peak %.1f MiB (sacct's batch + step 1: %.1f MiB), next %s"
      % (s["cpu_time"], cpu_sacct, s["duration"], jobrow["Elapsed"], s["peak_mem"] / MiB, low / MiB, a["next"]["slurm"]))
PY
    [ "${PIPESTATUS[0]}" = 0 ] || return 1
    # (the docs show a real run's report: SLURM_SUMMARY_OUT=DIR keeps it)
    [ -n "${SLURM_SUMMARY_OUT:-}" ] && cp report.txt two.line sacct.txt figures.txt "$SLURM_SUMMARY_OUT/"

    # the same report from several servers (one that never saw the job) and
    # from the plugin's files
    serve_start other || return 1
    "$JS" summary --json --server "$node" --server "$SERVE_URL" "$two" >multi.json ||
        { fail "summary over two servers"; return 1; }
    "$JS" summary --json --job "$two" "$T"/ev/"$two".*.jsonl >files.json || { fail "summary --job FILES"; return 1; }
    python3 - two.json multi.json files.json <<'PY' || return 1
import json, sys
a, b, c = (json.load(open(f)) for f in sys.argv[1:])
def same(x, y):  # the server's page went through JSON once more: 15 digits
    if isinstance(x, float) or isinstance(y, float):
        return abs(x - y) <= 1e-12 * max(abs(x), abs(y), 1e-300)
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(same(u, v) for u, v in zip(x, y))
    return x == y
for k in ("summary", "assessment", "runs", "nodes", "steps", "warnings"):
    assert same(a[k], b[k]), (k, a[k], b[k])
    assert same(a[k], c[k]), (k, a[k], c[k])
PY

    # an array element as sacct names it: A_2, through sacct, and through the
    # servers' search where sacct is not there
    local raw2
    raw2=$(sacct -n -X -P -j "${arr}_2" -o JobIDRaw)
    "$JS" summary --server "$node" "${arr}_2" >arr.txt || { fail "summary ${arr}_2"; return 1; }
    grep -qx "         Job ID: $raw2" arr.txt || { cat arr.txt; fail "the element's unique id"; return 1; }
    grep -qx "      Array job: ${arr}_2" arr.txt || { cat arr.txt; fail "the element's name"; return 1; }
    PATH=/nonexistent "$JS" summary --server "$node" "${arr}_2" >arr2.txt ||
        { fail "summary ${arr}_2 without sacct"; return 1; }
    diff arr.txt arr2.txt || { fail "the search found another job"; return 1; }
    python3 - "${arr}_2" sacct.txt arr.txt <<'PY' || return 1
import re, sys
name, sacct_file, report = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
rows = [l.rstrip("\n").split("|") for l in open(sacct_file)]
batch = [r for r in rows if r[0] == name + ".batch"][0]
job = [r for r in rows if r[0] == name][0]
m, s = batch[6].split(":")[-2:]
cpu = float(m) * 60 + float(s)
got = re.search(r"CPU time used/allocated: ([\d.]+) s/", report)
assert got and abs(float(got.group(1)) - cpu) <= 0.05, (got and got.group(0), cpu)
assert "jobscope: completed (exit code 0)" in job[9], job[9]
PY
}
