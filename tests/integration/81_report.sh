# 81_report.sh — `jobscope report`: one self-contained HTML file per set of
# jobs (assets inlined, no external reference), the job's data and warnings
# inside, static SVG plots, JoReMon input.  The browser side (the page opens
# offline without console errors) is in 83_dashboard.sh.

# The JSON data block of a report, as Python sees it.
report_data() {
    python3 - "$1" <<'PY'
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<script id="jobscope-data" type="application/json">(.*?)</script>', html, re.S)
print(json.dumps(json.loads(m.group(1))))
PY
}

test_report_is_one_self_contained_file_with_the_jobs_data() {
    "$JS" run -i 0.05 --job rep1 -o ev.jsonl -- sh -c \
        'for i in 1 2 3 4 5 6; do "$0" emit loss 0.$i --tag phase=train; head -c 3000000 /dev/urandom | gzip -1 >/dev/null; done' "$JS" || return 1
    "$JS" report ev.jsonl -o r.html 2>err.txt || fail "report failed: $(cat err.txt)" || return 1
    assert_match "$(cat err.txt)" '^jobscope report: 1 job, [0-9]+ warnings?, [0-9]+ bytes -> r.html$' || return 1
    # nothing is fetched from anywhere: no src=/href= to a URL, uPlot inlined
    ! grep -Eo '(src|href)="[^"#]+' r.html | grep -q . || fail "external reference: $(grep -Eo '(src|href)="[^"#]+' r.html | head -3)" || return 1
    grep -q 'uPlot' r.html || fail "uPlot not inlined" || return 1
    report_data r.html > data.json || return 1
    python3 - <<'PY' || return 1
import json
d = json.load(open("data.json"))
j = d["jobs"][0]
ev = [json.loads(l) for l in open("ev.jsonl")]
end = [e for e in ev if e["event"] == "jobscope.end"][0]
samples = [e for e in ev if e["event"] == "kickstart.inv.online"]
s = j["summary"]
assert s["job_id"] == "rep1" and s["finished"] and s["exit_code"] == 0, s
# the job's own peak: tree RSS, the largest process high-water mark, the cgroup's anon + shmem
own = max([end["peaks"]["rss"]["value"], end["peaks"]["max_process_hwm"]] + [x["rss"] for x in samples]) * 1024
own = max([own] + [x["cg_memory_anon"] + x["cg_memory_shmem"] for x in samples if "cg_memory_anon" in x])
assert abs(s["cpu_time"] - end["cpu_time"]) < 1e-9 and s["peak_mem"] == own, (s, own)
assert len(j["series"]["ts"]) == len(samples), (len(j["series"]["ts"]), len(samples))
assert j["series"]["rss"][-2] == samples[-2]["rss"] * 1024
# I/O rates from the cumulative counters
r = j["series"]["rchar_rate"]
k = max(range(1, len(samples)), key=lambda i: samples[i]["rchar"] - samples[i-1]["rchar"])
want = (samples[k]["rchar"] - samples[k-1]["rchar"]) / (samples[k]["ts"] - samples[k-1]["ts"])
assert abs(r[k] - want) <= 1e-6 * want, (r[k], want)
m = [x for x in j["extra"] if x["name"] == "loss{phase=train}"]
assert m and m[0]["val"] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], j["extra"]
assert j["end"]["seq"] == end["seq"]
PY
}

test_report_warns_of_low_efficiency_memory_near_limit_idle_gpu_and_io_phases() {
    python3 - <<'PY' > w.jsonl
import json
t = 1700000000.0
def ev(name, ts, **kw):
    d = {"event": name, "ts": ts, "hostname": "n1", "job_id": "w1"}; d.update(kw); print(json.dumps(d))
ev("jobscope.start", t, exe="/bin/x", cmd="x", cpus_available=4)
for i in range(101):          # 100 s; 30..60 s: writing 50 MiB/s at 5 % CPU
    io = i >= 30 and i <= 60
    ev("kickstart.inv.online", t + i, elapsed=i, cpu_percent=5 if io else 90, rss=900000,
       rchar=0, wchar=0, read_bytes=0, write_bytes=(min(i, 60) - 29) * 50 * 1048576 if i >= 30 else 0,
       utime=i * 0.5, stime=0, gpu_mem=1000, gpu_util=1.0, procs=1, threads=1)
ev("jobscope.end", t + 100, exe="/bin/x", cmd="x", exit_type="exited", exit_code=0, start=t, end=t + 100,
   duration=100, cpu_time=50, cores=4, cpu_efficiency=0.125, peaks={"rss": {"value": 950000}},
   limits={"max": {"memory": 1000000 * 1024}}, gpu={"devices": 1, "peak_mem": 1000, "mean_util": 1.0})
PY
    "$JS" report w.jsonl -o w.html 2>/dev/null || return 1
    report_data w.html > d.json || return 1
    python3 - <<'PY' || return 1
import json
w = json.load(open("d.json"))["jobs"][0]["warnings"]
kinds = sorted(x["kind"] for x in w)
assert kinds == ["cpu_efficiency", "idle_gpu", "io_bound", "memory_limit"], w
io = [x for x in w if x["kind"] == "io_bound"][0]
assert io["from"] == 1700000000.0 + 29 and io["to"] == 1700000000.0 + 60, io
PY
}

test_report_svg_writes_valid_static_plots() {
    "$JS" run -i 0.05 --job s1 -o ev.jsonl -- sh -c 'head -c 20000000 /dev/urandom | gzip -1 >/dev/null' || return 1
    "$JS" report ev.jsonl -o r.html --svg plots 2>/dev/null || return 1
    for p in cpu memory io procs; do assert_file plots/s1-$p.svg || return 1; done
    python3 -c '
import sys, xml.etree.ElementTree as E
for f in sys.argv[1:]:
    r = E.parse(f).getroot()
    assert r.tag.endswith("svg"), f
    assert r.find("{http://www.w3.org/2000/svg}path") is not None, f
' plots/*.svg || return 1
}

test_report_reads_joremon_files_and_several_jobs() {
    "$JS" run -i 0.05 --job jr1 --format joremon-json -o jr.jsonl -- sh -c 'head -c 10000000 /dev/urandom | gzip -1 >/dev/null' || return 1
    "$JS" run -i 0.05 --job jr2 --format joremon-csv -o jr.csv -- sh -c 'head -c 10000000 /dev/urandom | gzip -1 >/dev/null' || return 1
    "$JS" report jr.jsonl jr.csv -o r.html 2>/dev/null || return 1
    report_data r.html > d.json || return 1
    python3 - <<'PY' || return 1
import json
jobs = json.load(open("d.json"))["jobs"]
assert [j["summary"]["job_id"] for j in jobs] == ["jr1", "jr2"], jobs
for j in jobs:
    assert j["summary"]["type"] == "joremon" and j["summary"]["cpu_time"] > 0, j["summary"]
    assert len(j["series"]["ts"]) >= 2 and max(x for x in j["series"]["rss"] if x) > 0
PY
}

test_report_bad_input_is_one_line_and_125() {
    "$JS" report /nonexistent.jsonl -o r.html 2>err.txt
    assert_eq $? 125 || return 1
    assert_eq "$(wc -l < err.txt)" 1 || return 1
    [ ! -e r.html ] || fail "a report was written" || return 1
}

# A job that writes to storage for 15 s of every minute: the same phase is
# found at 6 minutes and at 18 (the bar is min(5% of the job, 10 s), fixed
# once a job runs longer than 200 s); past 5 phases, one warning more gives
# their number and total length.
test_report_io_phases_do_not_vanish_as_the_job_grows_longer() {
    for minutes in 6 18; do
        python3 - "$minutes" > io$minutes.jsonl <<'PY'
import json, sys
m, t = int(sys.argv[1]), 1700000000.0
def ev(name, ts, **kw):
    d = {"event": name, "ts": ts, "hostname": "n1", "job_id": "io%d" % m}; d.update(kw); print(json.dumps(d))
ev("jobscope.start", t, exe="/bin/io", cmd="io", alloc_cpus=1, alloc_cpus_from="SLURM_CPUS_PER_TASK")
w = 0
for i in range(m * 60 + 1):
    if i and (i - 1) % 60 < 15:
        w += 20 * 1048576     # 20 MiB/s to storage at 5% CPU for 15 s of every minute
    ev("kickstart.inv.online", t + i, elapsed=i, cpu_percent=5 if i and (i - 1) % 60 < 15 else 95, rss=10000,
       rchar=0, wchar=w, read_bytes=0, write_bytes=w, utime=i * 0.8, stime=0, procs=1, threads=1)
ev("jobscope.end", t + m * 60, exit_type="exited", exit_code=0, start=t, end=t + m * 60, duration=m * 60,
   cpu_time=m * 60 * 0.8, cores=1, peaks={"rss": {"value": 10000}})
PY
        "$JS" report io$minutes.jsonl -o io$minutes.html 2>/dev/null || return 1
        report_data io$minutes.html > io$minutes.json || return 1
    done
    python3 - <<'PY' || return 1
import json
for m in (6, 18):
    w = [x for x in json.load(open("io%d.json" % m))["jobs"][0]["warnings"] if x["kind"] == "io_bound"]
    phases = [x for x in w if "from" in x]
    assert len(phases) == 5, (m, [x["message"] for x in w])
    assert all(x["to"] - x["from"] == 15 for x in phases), phases
    assert phases[0]["from"] == 1700000000.0, phases[0]
    total = [x for x in w if "from" not in x]
    assert len(total) == 1 and total[0]["message"].startswith("%d I/O-bound phases in all, %d s" % (m, 15 * m)), total
PY
}
