# 80_stats.sh — `jobscope stats`: distributions, average run and right-sizing
# advice over thousands of job files, checked against values computed here
# independently (Python's statistics.quantiles, the rules of docs/views.md).

GEN="$ROOT/tests/helpers/gen_jobs.py"

test_stats_percentiles_and_advice_match_independent_computation() {
    python3 "$GEN" jobs 2100 12 7 || return 1
    "$JS" stats jobs --by exe --json -o stats.json || fail "stats failed" || return 1
    python3 - jobs stats.json <<'PY'
import json, math, os, statistics, sys
d, out = sys.argv[1], json.load(open(sys.argv[2]))
jobs = {}
for name in sorted(os.listdir(d)):
    ev = [json.loads(l) for l in open(os.path.join(d, name))]
    end = [e for e in ev if e["event"] == "jobscope.end"][0]
    start = [e for e in ev if e["event"] == "jobscope.start"][0]
    jobs.setdefault(os.path.basename(start["exe"]), []).append((start, end, ev))
def q(v, p):
    v = sorted(v)
    if p == 1: return v[-1]
    return statistics.quantiles(v, n=100, method="inclusive")[round(p * 100) - 1]
groups = {g["group"]: g for g in out["groups"]}
assert sorted(groups) == ["align", "reduce", "train"], sorted(groups)
assert out["files"] == 2100, out["files"]
bad = 0
def close(a, b, what, rel=1e-9):
    global bad
    if b is None or a is None or abs(a - b) > rel * max(1, abs(b)):
        print("MISMATCH", what, a, b); bad += 1
for exe, js in jobs.items():
    g = groups[exe]
    assert g["count"] == len(js), (exe, g["count"], len(js))
    metr = {
        "peak_memory": [e["peaks"]["rss"]["value"] * 1024 for s, e, _ in js],
        "cpu_time": [e["cpu_time"] for s, e, _ in js],
        "cpu_efficiency": [e["cpu_efficiency"] for s, e, _ in js],
        "wall_time": [e["duration"] for s, e, _ in js],
        "io_read": [e["rchar"] for s, e, _ in js],
        "cores_used": [e["cpu_time"] / e["duration"] for s, e, _ in js],
    }
    if exe == "train":
        metr["gpu_memory"] = [e["gpu"]["peak_mem"] for s, e, _ in js]
        metr["gpu_utilization"] = [e["gpu"]["mean_util"] for s, e, _ in js]
    for m, v in metr.items():
        dist = g["distributions"][m]
        for key, p in (("p50", .5), ("p90", .9), ("p95", .95), ("p99", .99), ("max", 1)):
            close(dist[key], q(v, p), "%s %s %s" % (exe, m, key))
    MiB = 1048576
    for key, p in (("p95", .95), ("p99", .99)):
        a = g["advice"][key]
        mem = math.ceil(q(metr["peak_memory"], p) * 1.10 / MiB) * MiB
        cores = max(1, math.ceil(q(metr["cores_used"], p) - 0.05))
        wall = math.ceil(q(metr["wall_time"], p) * 1.10 / 60) * 60
        close(a["memory_bytes"], mem, exe + " advice mem " + key)
        close(a["cores"], cores, exe + " advice cores " + key)
        close(a["wall_seconds"], wall, exe + " advice wall " + key)
        assert "request_memory = %dM" % (mem // MiB) in a["htcondor"], a["htcondor"]
        assert "--mem=%dM --cpus-per-task=%d --time=%02d:%02d:00" % (mem // MiB, cores, wall // 3600, wall // 60 % 60) in a["slurm"], a["slurm"]
        assert 'profile pegasus "memory" "%d"' % (mem // MiB) in a["pegasus"], a["pegasus"]
        if exe == "train":
            assert a["gpus"] == 1 and "request_gpus = 1" in a["htcondor"] and "--gres=gpu:1" in a["slurm"], a
            close(a["gpu_memory_bytes"], math.ceil(q(metr["gpu_memory"], p) * 1.10 / MiB) * MiB, "gpu mem")
        else:
            assert a["gpus"] == 0 and "gpu" not in a["slurm"], a
    # waste of the recorded requests (tags request_memory/request_cpus/request_walltime)
    req = [(s, e) for s, e, _ in js if "request_memory" in e["tags"]]
    w = g["waste"]
    assert w["memory"]["jobs"] == len(req), w
    unused = sum(max(0, int(e["tags"]["request_memory"][:-1]) * MiB - e["peaks"]["rss"]["value"] * 1024) / 2**30 * e["duration"] / 3600 for s, e in req)
    close(w["memory"]["unused_gib_hours"], unused, exe + " mem waste", 1e-6)
    coreh = sum(max(0, 4 * e["duration"] / 3600 - e["cpu_time"] / 3600) for s, e in req)
    close(w["cores"]["unused_core_hours"], coreh, exe + " core waste", 1e-6)
    close(w["wall"]["mean_unused_seconds"], sum(3600 - e["duration"] for s, e in req) / len(req), exe + " wall waste", 1e-6)
    # the average run: memory grows linearly, so slice b's median is the
    # median over jobs of peak * (mean normalised time of its samples)
    cur = g["average_run"]["memory"]["median"]
    assert all(cur[i] <= cur[i + 1] for i in range(len(cur) - 1)), cur
    close(cur[-1], q([e["peaks"]["rss"]["value"] * 1024 for s, e, _ in js], .5), exe + " curve end", 0.02)
sys.exit(1 if bad else 0)
PY
}

test_stats_reads_5000_job_files_in_seconds_with_bounded_memory() {
    python3 "$GEN" many 5000 60 || return 1
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -f '%M' -o rss.txt "$JS" stats many --by exe > text.txt || fail "stats failed" || return 1
    t1=$(date +%s.%N)
    local secs kb
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')
    kb=$(tail -1 rss.txt)
    echo "stats: 5000 files ($(du -sm many | cut -f1) MB, 310000 events) in ${secs}s, max RSS ${kb} kB"
    assert_match "$(head -1 text.txt)" '^5000 job files' || return 1
    grep -q 'request_memory = ' text.txt || fail "no advice" || return 1
    # under AddressSanitizer (make asan) everything is several times slower and larger
    local max_s=30 max_kb=65536
    [[ $BUILD == *asan* ]] && max_s=300 max_kb=1048576
    assert_le "$secs" $max_s "5000 files took too long" || return 1
    assert_le "$kb" $max_kb "memory not bounded" || return 1
}

test_stats_reads_joremon_and_kickstart_formats() {
    "$JS" run -i 0.05 --job jr --format joremon-json -o jr.jsonl -- sh -c 'head -c 20000000 /dev/urandom | gzip -1 >/dev/null' || return 1
    "$JS" run -i 0.05 --job jc --format joremon-csv -o jr.csv -- sh -c 'head -c 20000000 /dev/urandom | gzip -1 >/dev/null' || return 1
    printf '%s\n' '{"event":"kickstart.inv.online","ts":1552869746.0,"xformation":"individuals","rss":25004,"utime":1.0,"stime":0.5,"exe":"/bin/ks","hostname":"w1","dag_job_id":"individuals_ID0000001","rchar":0,"wchar":0}' \
                  '{"event":"kickstart.inv.online","ts":1552869756.0,"xformation":"individuals","rss":35004,"utime":9.0,"stime":1.0,"exe":"/bin/ks","hostname":"w1","dag_job_id":"individuals_ID0000001","rchar":100,"wchar":0}' > ks.jsonl
    "$JS" stats jr.jsonl jr.csv ks.jsonl --by all --json -o s.json || fail "stats failed" || return 1
    python3 - <<'PY' || return 1
import json
s = json.load(open("s.json"))
g = s["groups"][0]
assert s["files"] == 3 and g["count"] == 3, s
d = g["distributions"]
assert d["peak_memory"]["max"] == 35004 * 1024, d["peak_memory"]     # the kickstart trace's rss (kB)
assert d["cpu_time"]["n"] == 3 and d["cpu_time"]["max"] >= 10.0, d["cpu_time"]
assert d["wall_time"]["n"] == 3, d["wall_time"]
PY
}

test_stats_html_has_curves_and_advice() {
    python3 "$GEN" jobs 30 12 || return 1
    "$JS" stats jobs --by tag:task --html -o s.html || return 1
    assert_eq "$(grep -c '<svg' s.html)" 10 "3 groups x 3 curves + the GPU curve of train" || return 1
    grep -q 'request_memory = ' s.html && grep -q -- '--cpus-per-task=' s.html || fail "no advice" || return 1
}

test_stats_bad_input_is_one_line_and_125() {
    "$JS" stats /nonexistent 2>err.txt
    assert_eq $? 125 || return 1
    assert_eq "$(wc -l < err.txt)" 1 || return 1
    echo 'not json' > x.jsonl
    "$JS" stats x.jsonl 2>err.txt
    assert_eq $? 125 || return 1
    "$JS" stats --by nope x.jsonl 2>err.txt
    assert_eq $? 125 || return 1
    assert_eq "$(wc -l < err.txt)" 1 || return 1
}

# Generated jobs of one transformation: 5 that ran to their end, one still
# running, one killed by SIGKILL, one killed by the OOM killer at its 1 GiB
# allocation.  Only the 5 make the figures; the others are counted apart,
# and the memory advice is raised to what the OOM-killed job needed at
# least: 1.5 x its 1 GiB.  Every expected figure is computed here by hand.
test_stats_counts_running_and_stopped_jobs_apart_and_raises_advice_after_oom() {
    python3 - <<'PY' || return 1
import json, os
os.makedirs("jobs", exist_ok=True)
MiB = 1048576
def job(name, peak_mib, dur, end=True, **endkw):
    t = 1700000000.0
    a = {"hostname": "n1", "job_id": name, "xformation": "mProject", "wf_uuid": "w1"}
    ev = [dict(a, event="jobscope.start", ts=t, exe="/bin/mProject", cpus_available=2,
               alloc_cpus=1, alloc_cpus_from="SLURM_CPUS_PER_TASK", alloc_mem=1024 * MiB, alloc_mem_from="SLURM_MEM_PER_NODE")]
    for k in range(1, 5):
        ev.append(dict(a, event="kickstart.inv.online", ts=t + dur * k / 4, elapsed=dur * k / 4, rss=peak_mib * 1024 * k // 4,
                       utime=dur * k / 4, stime=0, procs=1, threads=1))
    if end:
        e = dict(a, event="jobscope.end", ts=t + dur, exe="/bin/mProject", exit_type="exited", exit_code=0, start=t,
                 end=t + dur, duration=dur, cpu_time=dur, cores=2, peaks={"rss": {"value": peak_mib * 1024}})
        e.update(endkw)
        ev.append(e)
    with open("jobs/%s.jsonl" % name, "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in ev))
for i, m in enumerate([100, 200, 300, 400, 500]):
    job("ok%d" % i, m, 100.0 * (i + 1))
job("running", 800, 5000.0, end=False)
job("killed", 900, 50.0, exit_type="signaled", exit_code=None, signal_name="SIGKILL")
job("oom", 1000, 60.0, exit_type="signaled", exit_code=None, signal_name="SIGKILL", cgroup={"oom_kill": 1})
PY
    "$JS" stats jobs --json -o s.json || return 1
    python3 - <<'PY' || return 1
import json, math
s = json.load(open("s.json"))
assert s["by"] == "auto" and [g["group"] for g in s["groups"]] == ["mProject"], s["groups"]   # grouped by transformation
g = s["groups"][0]
assert g["count"] == 5 and g["running"] == 1 and g["stopped"] == {"signal": 1, "limit": 0, "oom_kill": 1}, g
MiB = 1048576
assert g["distributions"]["peak_memory"]["max"] == 500 * MiB and g["distributions"]["wall_time"]["max"] == 500, g["distributions"]
# by hand: p95 of 100..500 MiB = 480 MiB -> x1.1 = 528 MiB; but the OOM-killed job had 1 GiB: at least
# 1.5 x 1024 MiB = 1536 MiB (the same float steps as the code: x1.5 / 1.1 then x1.1, rounded up to a MiB)
floor = math.ceil(max(1000 * 1024 * 1024, 1024 * MiB) * 1.5 / 1.1 * 1.1 / MiB) * MiB
assert floor == 1536 * MiB, floor
a = g["advice"]["p95"]
assert a["memory_bytes"] == floor and "--mem=1536M" in a["slurm"], a
# wall: p95 of 100..500 s = 480 s, x1.1 = 528 s -> 9 minutes; cores: 1 CPU busy -> 1
assert a["wall_seconds"] == 540 and a["cores"] == 1, a
assert g["distributions"]["cpu_efficiency"]["max"] == 1.0   # against the 1 allocated CPU, not the 2 available
c = " | ".join(g["cautions"])
assert "1 job still running, not counted" in c and "2 jobs stopped before the end" in c and "ran out of memory" in c, c
PY
    "$JS" stats jobs > s.txt || return 1
    grep -q '^  caution: 1 job still running, not counted$' s.txt || fail "no caution in the text: $(head -5 s.txt)" || return 1
}

# Cores from the job's own parallelism: 2 threads kept 1 CPU busy on a
# crowded node and waited 90 s of 100 for a CPU (cgroup cpu.pressure):
# 2 CPUs, not 1.  Memory without page cache: a 2.6 MB RSS, not the cgroup's
# 310 MiB.  The executable is the one the job settled into (env -> python3.11),
# efficiency is against the allocation, a custom metric's tags are not the
# job's, and a group of one run gets a caution.
test_stats_advises_cores_from_parallelism_and_memory_without_page_cache() {
    python3 - <<'PY' || return 1
import json, os
os.makedirs("jobs", exist_ok=True)
MiB = 1048576
for i in range(5):
    t = 1700000000.0 + i * 1000
    a = {"hostname": "n1", "job_id": "py%d" % i}
    ev = [dict(a, event="jobscope.start", ts=t, exe="/usr/bin/env", cmd="env python3 x.py", alloc_cpus=4,
               alloc_cpus_from="SLURM_CPUS_PER_TASK", cpus_available=8)]
    for k in range(0, 11):
        ev.append(dict(a, event="kickstart.inv.online", ts=t + 10 * k, elapsed=10 * k, exe="/usr/bin/python3.11",
                       rss=2600 * k // 10, utime=10 * k, stime=0, procs=2, threads=2, cg_psi_cpu_some_total=9.0 * k,
                       cg_memory_peak=310 * MiB * k // 10))
    ev.append(dict(a, event="jobscope.metric", ts=t + 50, name="loss", value=0.5, tags={"phase": "train"}))
    ev.append(dict(a, event="jobscope.end", ts=t + 100, exe="/usr/bin/python3.11", exit_type="exited", exit_code=0,
                   start=t, end=t + 100, duration=100, cpu_time=100, cores=8, cpu_efficiency=0.125,
                   peaks={"rss": {"value": 2600}}, cgroup={"memory_peak": 310 * MiB}))
    open("jobs/py%d.jsonl" % i, "w").write("".join(json.dumps(x) + "\n" for x in ev))
t = 1700100000.0
open("jobs/solo.jsonl", "w").write("".join(json.dumps(x) + "\n" for x in [
    {"event": "jobscope.start", "ts": t, "job_id": "solo", "exe": "/bin/solo"},
    {"event": "jobscope.end", "ts": t + 30, "job_id": "solo", "exe": "/bin/solo", "exit_type": "exited", "exit_code": 0,
     "start": t, "end": t + 30, "duration": 30, "cpu_time": 15, "cores": 1, "peaks": {"rss": {"value": 1024}}}]))
PY
    "$JS" stats jobs --json -o s.json || return 1
    "$JS" stats jobs --by tag:phase --json -o t.json || return 1
    python3 - <<'PY' || return 1
import json, math
s = json.load(open("s.json"))
g = {x["group"]: x for x in s["groups"]}
assert sorted(g) == ["python3.11", "solo"], sorted(g)   # the real executable, not env
py = g["python3.11"]
MiB = 1048576
d = py["distributions"]
assert d["peak_memory"]["max"] == 2600 * 1024, d["peak_memory"]            # RSS, not the cgroup's page cache
assert d["cpu_efficiency"]["max"] == 100 / (100 * 4), d["cpu_efficiency"]  # against the 4 allocated CPUs
assert d["cores_used"]["max"] == 1.0 and abs(d["cores_wanted"]["max"] - 1.9) < 1e-9, d["cores_wanted"]
a = py["advice"]["p95"]
assert a["cores"] == 2 and "--cpus-per-task=2" in a["slurm"], a           # ceil(1.9 - 0.05)
assert a["memory_bytes"] == math.ceil(2600 * 1024 * 1.1 / MiB) * MiB == 3 * MiB and "--mem=3M" in a["slurm"], a
assert py["cautions"] == [], py["cautions"]
assert g["solo"]["count"] == 1 and any("advice from 1 run only" in c for c in g["solo"]["cautions"]), g["solo"]
t = json.load(open("t.json"))
assert [x["group"] for x in t["groups"]] == ["(none)"], [x["group"] for x in t["groups"]]   # phase=train is the metric's tag
PY
}
