# 84_summary.sh — `jobscope summary JOB|FILE`: a job's efficiency report on
# one screen (jobstats' layout) with bars against the allocation, notes and
# the next-time request in the job's scheduler's syntax, every figure
# computed here by hand; the one-line form for an epilog; the same report
# from a `jobscope serve` by job id or prefix; real runs measured against
# the allocation detected where they ran.

source "$ROOT/tests/helpers/publish_servers.sh"
source "$ROOT/tests/integration/82_repo.sh"     # serve_up, api

# A Slurm job given 4 CPUs and 8 GiB that kept 0.6 CPU busy for 1000 s with
# one thread, its memory growing steadily to 1.5 GiB.
slurm_job() {
    python3 - <<'PY'
import json
GiB = 1 << 30
t = 1700000000.0
a = {"hostname": "c12", "job_id": "4242", "batch": {"system": "slurm", "job_id": "4242"}}
ev = lambda **k: print(json.dumps(dict(a, **k)))
ev(event="jobscope.start", ts=t, exe="/usr/bin/bash", cmd="bash run.sh", user="alice", cpus_available=4,
   alloc_cpus=4, alloc_cpus_from="SLURM_CPUS_PER_TASK", alloc_mem=8 * GiB, alloc_mem_from="SLURM_MEM_PER_NODE",
   alloc_gpus=None, alloc_gpus_from=None)
for k in range(0, 21):
    ev(event="kickstart.inv.online", ts=t + 50 * k, elapsed=50 * k, exe="/opt/sim/bin/sim", rss=int(1.5 * GiB / 1024 * k / 20),
       utime=30 * k, stime=0, procs=1, threads=1, rchar=1000 * k, wchar=100 * k)
ev(event="jobscope.end", ts=t + 1000, exe="/opt/sim/bin/sim", cmd="sim --steps 1000", exit_type="exited", exit_code=0,
   start=t, end=t + 1000, duration=1000, cpu_time=600, cores=4, samples=21, peaks={"rss": {"value": int(1.5 * GiB / 1024)}})
PY
}

# The report, as expected line by line (computed by hand):
#   efficiency 600 / (1000 x 4) = 15%; memory 1.5 / 8 GiB = 18.75% -> 19%;
#   next: memory 1536 MiB x 1.1 = 1689.6 -> 1690M; CPUs ceil(0.6 - 0.05) = 1;
#   time 1000 s x 1.1 = 1100 s -> 19 minutes.
test_summary_prints_the_report_and_the_one_line_computed_by_hand() {
    slurm_job > job.jsonl
    "$JS" summary job.jsonl > out.txt || fail "summary failed" || return 1
    cat out.txt
    grep -qx '         Job ID: 4242' out.txt || fail "job id" || return 1
    grep -qx '      Batch job: slurm 4242' out.txt || fail "batch id" || return 1
    grep -qx '     Executable: /opt/sim/bin/sim' out.txt || fail "the real executable, not the shell" || return 1
    grep -qx '          State: COMPLETED (exit code 0)' out.txt || fail "state" || return 1
    grep -qx '      CPU cores: 4 (SLURM_CPUS_PER_TASK)' out.txt || fail "cores" || return 1
    grep -qx '     CPU memory: 8.0 GiB (SLURM_MEM_PER_NODE)' out.txt || fail "memory" || return 1
    grep -qx '       Run Time: 00:16:40' out.txt || fail "run time" || return 1
    grep -Eqx '  CPU utilization  \[\|{8} {43}15%\]' out.txt || fail "CPU bar: $(grep 'CPU util' out.txt)" || return 1
    grep -Eqx '  CPU memory usage \[\|{10} {41}19%\]' out.txt || fail "memory bar: $(grep 'CPU memory usage' out.txt)" || return 1
    local notes
    notes=$(sed -n '/Notes/,$p' out.txt | tr -s ' \n' ' ')
    assert_match "$notes" 'This job used 1.5 GiB of the 8.0 GiB of memory allocated to it \(SLURM_MEM_PER_NODE\), 19%: request --mem=1690M next time\.' || return 1
    assert_match "$notes" 'This job used 15% of the 4 CPUs allocated to it \(SLURM_CPUS_PER_TASK\): 0\.60 CPUs busy on average\. It never ran more than 1 thread at once\. Request --cpus-per-task=1 next time\.' || return 1
    assert_match "$notes" 'Memory grew steadily through the run' || return 1
    grep -qx '    Slurm:    --mem=1690M --cpus-per-task=1 --time=00:19:00' out.txt || fail "next time" || return 1
    ! grep -q 'HTCondor:' out.txt || fail "a Slurm job's report speaks Slurm" || return 1
    [ "$(wc -l < out.txt)" -le 50 ] || fail "more than one screen: $(wc -l < out.txt) lines" || return 1
    "$JS" summary --oneline job.jsonl > one.txt || return 1
    assert_eq "$(cat one.txt)" "jobscope: COMPLETED (exit code 0), cpu 15% of 4 (SLURM_CPUS_PER_TASK), mem 1.5 GiB of 8.0 GiB (19%), wall 00:16:40; next: --mem=1690M --cpus-per-task=1 --time=00:19:00" || return 1
    "$JS" summary --json job.jsonl > j.json || return 1
    python3 -c '
import json; j = json.load(open("j.json")); a = j["assessment"]
assert a["scheduler"] == "slurm" and a["next"]["slurm"] == "--mem=1690M --cpus-per-task=1 --time=00:19:00", a["next"]
assert [b["key"] for b in a["bars"]] == ["cpu", "memory"] and abs(a["bars"][0]["pct"] - 15) < 1e-9, a["bars"]
assert sorted(n["kind"] for n in a["notes"]) == ["cpu", "memory", "memory_growth"], a["notes"]' || return 1
}

# The same report from the server: by the job id, by a unique prefix; an
# unknown id is one line and 125.
test_summary_finds_the_job_on_a_server_by_id_and_prefix() {
    serve_up || return 1
    slurm_job > job.jsonl
    curl -sf -X POST --data-binary @job.jsonl "http://127.0.0.1:$PORT/api/events" >/dev/null || return 1
    "$JS" summary job.jsonl > file.txt || return 1
    "$JS" summary --server "http://127.0.0.1:$PORT" 4242 > srv.txt || fail "by id" || return 1
    diff file.txt srv.txt || fail "the server's report differs from the file's" || return 1
    "$JS" summary --server "http://127.0.0.1:$PORT" 424 > pre.txt || fail "by prefix" || return 1
    diff file.txt pre.txt || return 1
    "$JS" summary --server "unix:$SOCK" --oneline 4242 > one.txt || fail "over the Unix socket" || return 1
    grep -q '^jobscope: COMPLETED' one.txt || return 1
    "$JS" summary --server "http://127.0.0.1:$PORT" nosuch 2>err.txt
    assert_eq $? 125 || return 1
    assert_eq "$(wc -l < err.txt)" 1 "$(cat err.txt)" || return 1
    "$JS" summary /nonexistent/x.jsonl 2>err.txt
    assert_eq $? 125 || return 1
    assert_eq "$(wc -l < err.txt)" 1 || return 1
}

# Real runs: the allocation is detected where the job runs (Slurm's
# variables here), the report measures against it and says where it came
# from; a job run with --tag request_cpus=1 is measured against 1 CPU.
test_summary_of_real_runs_measures_against_the_detected_allocation() {
    env SLURM_JOB_ID=77 SLURM_CPUS_ON_NODE=1 SLURM_MEM_PER_NODE=512 \
        "$JS" run -q -i 0.1 --job real1 -o ev.jsonl -- "$HELPERS/workload" burn 1200 || return 1
    jq_py 'ev[0]["alloc_cpus"], ev[0]["alloc_cpus_from"], ev[0]["alloc_mem"], ev[0]["alloc_mem_from"]' ev.jsonl > alloc.txt
    assert_eq "$(cat alloc.txt)" '[1.0, "SLURM_CPUS_ON_NODE", 536870912, "SLURM_MEM_PER_NODE"]' || return 1
    "$JS" summary ev.jsonl > out.txt || return 1
    grep -qx '      CPU cores: 1 (SLURM_CPUS_ON_NODE)' out.txt || fail "$(head -20 out.txt)" || return 1
    grep -qx '     CPU memory: 512 MiB (SLURM_MEM_PER_NODE)' out.txt || fail "$(head -20 out.txt)" || return 1
    # against the 1 allocated CPU, not the host's $(nproc): CPU time / wall time
    local pct want
    pct=$(sed -n "s/^  CPU utilization  \[[| ]*\([0-9]*\)%\]$/\1/p" out.txt)
    want=$(jq_py '"%.0f" % (100 * end["cpu_time"] / end["duration"])' ev.jsonl)
    assert_eq "$pct" "$want" "CPU bar against 1 CPU" || return 1
    "$JS" run -q -i 0.1 --job real2 --tag request_cpus=1 -o ev2.jsonl -- "$HELPERS/workload" burn 300 || return 1
    "$JS" summary --oneline ev2.jsonl > one.txt || return 1
    assert_match "$(cat one.txt)" 'cpu [0-9]+% of 1 \(--tag request_cpus\)' || return 1
}

# dd writes 200 MiB through the page cache: the job's own peak stays small,
# the cgroup's figure (when jobscope could make a cgroup) is shown apart as
# page cache, and the advice follows the job's own peak.
test_summary_keeps_page_cache_out_of_the_peak_and_the_advice() {
    "$JS" run -q -i 0.05 --job dd1 -o ev.jsonl -- dd if=/dev/zero of=big bs=1M count=200 status=none || return 1
    rm -f big
    "$JS" summary --json ev.jsonl > j.json || return 1
    python3 - <<'PY' || return 1
import json, math
j = json.load(open("j.json")); s = j["summary"]; MiB = 1048576
assert s["peak_mem"] < 40 * MiB, s["peak_mem"]
assert j["assessment"]["next"]["memory_bytes"] == math.ceil(s["peak_mem"] * 1.1 / MiB) * MiB, j["assessment"]["next"]
if s["cg_peak_mem"] is None:
    print("no cgroup here: the page-cache half is not checked")
else:
    assert s["cg_peak_mem"] > 150 * MiB, s["cg_peak_mem"]
    assert "page_cache" in [n["kind"] for n in j["assessment"]["notes"]], j["assessment"]["notes"]
PY
}
