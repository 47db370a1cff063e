# 84_summary.sh — `jobscope summary JOB|FILE`: a job's efficiency report on
# one screen (jobstats' layout) with bars against the allocation, notes and
# the next-time request in the job's scheduler's syntax, every figure
# computed here by hand; the one-line form for an epilog; the same report
# from a `jobscope serve` by job id or prefix; real runs measured against
# the allocation detected where they ran (and the end record with them); a
# job of several runs over two nodes, from one server, two, or its files.

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
    # the monitor's own end record measures against the same allocation
    assert_eq "$(jq_py 'end["cores"], end["cores_from"], abs(end["cpu_efficiency"] - end["cpu_time"] / end["duration"]) < 1e-3' ev.jsonl)" \
        '[1, "SLURM_CPUS_ON_NODE", true]' "end record against the allocation" || return 1
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

# A Slurm job of several runs over two nodes (tests/helpers/slurm_job_events.py),
# the report computed by hand: 131 CPU-s of 8 CPUs x 100 s = 16%; c1 ran
# 1 + 2 x 30 + 10 = 71 CPU-s of 400 (18%) and held at most 10 + 1000 MiB of
# 4096 (25%), c2 60 of 400 (15%) and 1000 MiB (24%); 2010 of 8192 MiB (25%);
# next: --mem = 1010 x 1.1 -> 1111M, step 0 kept 1.5 CPUs of a node busy with
# two tasks -> two tasks of one CPU, 110 s -> 2 minutes.  The same report
# from one server, from two that each hold one node's events, and from the
# files.
test_summary_of_a_job_of_several_runs_across_two_nodes_computed_by_hand() {
    python3 "$ROOT/tests/helpers/slurm_job_events.py" 500 > job.jsonl
    grep '"hostname":"c1"' job.jsonl > c1.jsonl
    grep '"hostname":"c2"' job.jsonl > c2.jsonl
    serve_up || return 1
    local one=$PORT
    curl -sf -X POST --data-binary @job.jsonl "http://127.0.0.1:$one/api/events" >/dev/null || return 1
    "$JS" summary --server "http://127.0.0.1:$one" 500 > out.txt || fail "summary" || return 1
    cat out.txt
    grep -qx '      User/Host: alice / c1 (+1 node)' out.txt || fail "hosts" || return 1
    grep -qx '           Runs: 3 steps, 6 tasks, 2 nodes' out.txt || fail "runs" || return 1
    grep -qx '      CPU cores: 8 (slurm_alloc_cores)' out.txt || fail "cores" || return 1
    grep -qx '     CPU memory: 8.0 GiB (slurm_alloc_mem_mb)' out.txt || fail "memory" || return 1
    grep -Eqx '  CPU utilization  \[\|{9} {42}16%\]' out.txt || fail "CPU bar" || return 1
    grep -Eqx '  CPU memory usage \[\|{13} {38}25%\]' out.txt || fail "memory bar" || return 1
    grep -Eqx '  c1 CPU           \[\|{10} {41}18%\]' out.txt || fail "c1 CPU bar" || return 1
    grep -Eqx '  c1 mem           \[\|{13} {38}25%\]' out.txt || fail "c1 memory bar" || return 1
    grep -Eqx '  c2 CPU           \[\|{8} {43}15%\]' out.txt || fail "c2 CPU bar" || return 1
    grep -Eqx '  c2 mem           \[\|{13} {38}24%\]' out.txt || fail "c2 memory bar" || return 1
    grep -qx '  c1: CPU 00:01:11/00:06:40 on 4 CPUs (17.8%), memory 1010 MiB/4.0 GiB, 4 runs,' out.txt || fail "c1 line" || return 1
    grep -qx '  step 0: 4 tasks, 40.0 s, CPU 00:02:00, memory 2.0 GiB, COMPLETED (exit code' out.txt || fail "step 0 line" || return 1
    grep -qx '    Slurm:    --mem=1111M --ntasks-per-node=2 --cpus-per-task=1 --time=00:02:00' out.txt || fail "next time" || return 1
    # stats over the server counts each run as the files of its monitors are counted
    mkdir runs
    python3 -c '
import json, sys
for l in open("job.jsonl"):
    e = json.loads(l); t = e["tags"]
    open("runs/%s.%s.%s.jsonl" % (e["hostname"], t["slurm_step"], t["slurm_task"]), "a").write(l)'
    "$JS" stats runs --json -o files.json || return 1
    "$JS" stats --server "http://127.0.0.1:$one" --json -o server.json || return 1
    python3 -c '
import json
a, b = json.load(open("files.json")), json.load(open("server.json"))
assert a["files"] == b["files"] == 6, (a["files"], b["files"])
ga = {g["group"]: g["distributions"] for g in a["groups"]}
assert ga == {g["group"]: g["distributions"] for g in b["groups"]} and sorted(ga) == ["bash", "step0", "step1"], ga' || return 1
    # report --server: the whole job's page, as the server gives it
    "$JS" report --server "http://127.0.0.1:$one" 500 -o r.html 2>/dev/null || fail "report --server" || return 1
    grep -q '"runs":\[{"run":"c1:batch.0"' r.html || fail "the report is not the whole job" || return 1
    "$JS" summary --oneline --server "http://127.0.0.1:$one" 500 > one.txt || return 1
    assert_eq "$(cat one.txt)" "jobscope: COMPLETED (exit code 0), cpu 16% of 8 (slurm_alloc_cores), mem 2.0 GiB of 8.0 GiB (25%), wall 00:01:40, 3 steps 6 tasks 2 nodes; next: --mem=1111M --ntasks-per-node=2 --cpus-per-task=1 --time=00:02:00" || return 1
    # each node's own serve: the client groups and sums the same way
    kill $SERVE_PID; wait $SERVE_PID 2>/dev/null
    rm -rf "$T/store" "$T/sock"
    serve_up || return 1
    local a=$PORT
    curl -sf -X POST --data-binary @c1.jsonl "http://127.0.0.1:$a/api/events" >/dev/null || return 1
    T=$T/b; mkdir -p "$T"; serve_up || return 1; T=${T%/b}
    curl -sf -X POST --data-binary @c2.jsonl "http://127.0.0.1:$PORT/api/events" >/dev/null || return 1
    "$JS" summary --server "http://127.0.0.1:$a" --server "http://127.0.0.1:$PORT" 500 > two.txt || fail "two servers" || return 1
    diff out.txt two.txt || fail "two servers give another report" || return 1
    "$JS" summary --peers "127.0.0.1:$a,127.0.0.1:$PORT" 500 > peers.txt || fail "--peers" || return 1
    diff out.txt peers.txt || return 1
    "$JS" summary --job 500 c2.jsonl c1.jsonl > files.txt || fail "--job files" || return 1
    diff out.txt files.txt || return 1
    "$JS" summary --server "http://127.0.0.1:$a" --job 500 c1.jsonl 2>err.txt
    assert_eq $? 125 "--job with --server" || return 1
}
