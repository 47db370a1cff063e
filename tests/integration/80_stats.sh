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
