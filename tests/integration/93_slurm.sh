# 93_slurm.sh — every Slurm job step watched by the SPANK plugin
# (build/jobscope-spank.so, docs/slurm.md) on a real single-node cluster
# (tests/helpers/slurm_cluster.sh: munged, mariadb, slurmdbd, slurmctld,
# slurmd on loopback), with no change to the batch scripts, and jobscope's
# totals checked against Slurm's own accounting (sacct).  One cluster for
# the whole file: the jobs of known shape are submitted together.
source "$ROOT/tests/helpers/slurm_cluster.sh"
source "$ROOT/tests/helpers/serve.sh"
W=$HELPERS/workload

test_every_step_is_watched_and_agrees_with_sacct() {
    [ -e "$ROOT/$BUILD/jobscope-spank.so" ] || { echo "    skip: no jobscope-spank.so (libslurm-dev)" >&2; return 77; }
    need mpirun || return $?
    mkdir -p "$T/ev" "$T/out"
    # the node's jobscope serve: slurmd (and so every monitor) finds it by
    # the well-known socket, as a site's does
    serve_start s || return 1
    export JOBSCOPE_SERVE_SOCKET=$SERVE_SOCK
    # the epilog stores the one-line summary in AdminComment (slurmd gives
    # epilogs a bare environment: the wrapper names the socket and the config)
    printf '#!/bin/sh\nexport SLURM_CONF=%s/slurm/slurm.conf PATH=$PATH:/usr/bin:/usr/sbin JOBSCOPE_EPILOG_DEBUG=1\nexec %s --socket %s --jobscope %s --wait 5 2>>%s/epilog.log\n' \
        "$T" "$ROOT/dist/slurm/jobscope-slurm-epilog" "$SERVE_SOCK" "$JS" "$T" >epilog.sh
    chmod 755 epilog.sh
    JS_TEST_EPILOG=$T/epilog.sh  # (SLURM_EPILOG would be srun's --epilog)
    slurm_start "required $ROOT/$BUILD/jobscope-spank.so jobscope=$JS output=$T/ev/%j.%s.%t.jsonl interval=0.5 log=$T/monitors.log"
    local rc=$?
    [ $rc = 0 ] || return $rc

    # jobs of known shape, all at once (the node has 2 cores; -O lets 4 ranks share them)
    submit cpu -n1 --mem=100M --wrap "srun $W burn 2000" || return 1
    submit threads -n2 --mem=100M --wrap "srun -n1 -c2 $W threads 2 1000" || return 1
    submit forks -n1 --mem=100M --wrap "mkdir -p $T/out/f; srun $W forkstorm 300 3 4096 $T/out/f" || return 1
    submit grow -n1 --mem=400M --wrap "srun $W grow 200 3000" || return 1
    submit oom -n1 --mem=100M --wrap "srun $W grow 400 2000" || return 1
    submit array -n1 --mem=100M --array=1-3 --wrap "$W burn 600" || return 1
    submit mpi -n4 -O --mem=200M --wrap "srun --mpi=pmix -n4 $W burn 700; mpirun --allow-run-as-root --oversubscribe -np 4 $W burn 300" || return 1
    submit fails -n1 --mem=100M --wrap "srun sh -c 'sleep 0.6; kill -TERM \$\$'; exit 3" || return 1
    submit off -n1 --mem=100M --jobscope=off --wrap "sleep 0.5" || return 1
    submit tuned -n1 --mem=100M --jobscope=interval=0.2 --wrap "sleep 1" || return 1
    # a bad value is refused by sbatch itself, before the job exists
    if sbatch --jobscope=interval=0.001 --wrap true >bad.out 2>&1; then
        fail "sbatch accepted --jobscope=interval=0.001"; return 1
    fi
    assert_match "$(cat bad.out)" "jobscope: --jobscope: interval '0.001': seconds, at least 0.1" || return 1

    local all=""
    for f in "$T"/jobs/*; do all="$all $(cut -d';' -f1 "$f")"; done
    slurm_wait_jobs $all || return 1
    # slurmdbd is written to asynchronously: until every step is there
    local i ids
    ids=$(echo $all | tr ' ' ,)
    for i in $(seq 50); do
        sacct -P -n -j "$ids" -o JobID,JobIDRaw,State,ExitCode,TotalCPU,MaxRSS,Elapsed >sacct.txt 2>&1
        sacct -P -n -X -j "$(jobid grow)" -o AdminComment >comment.txt 2>&1
        ! grep -q 'RUNNING\|PENDING' sacct.txt && [ "$(grep -c . sacct.txt)" -ge 25 ] &&
            grep -q jobscope comment.txt && break
        sleep 0.2
    done
    sacct -j "$ids" -o JobID%10,JobIDRaw,State,ExitCode,TotalCPU,MaxRSS,Elapsed,AdminComment%60 >sacct-view.txt
    cat sacct-view.txt

    # --jobscope=off: no monitor; --jobscope=interval=0.2: that interval
    assert_eq "$(ls "$T/ev" | grep -c "^$(jobid off)\.")" 0 "--jobscope=off watched" || return 1
    assert_eq "$(jq_py 'ev[0]["interval"]' "$T/ev/$(jobid tuned).batch.0.jsonl")" 0.2 "--jobscope=interval" || return 1

    # Slurm's ids on every event (the array element as sacct names it)
    local a
    a=$(jobid array)
    python3 - "$T/ev" "$a" <<'PY' || return 1
import glob, json, sys
d, arr = sys.argv[1], sys.argv[2]
files = [f for f in glob.glob(d + "/*.batch.0.jsonl")
         if json.loads(open(f).readline())["tags"].get("slurm_array_job_id") == arr]
assert len(files) == 3, files
for f in files:
    ev = [json.loads(l) for l in open(f)]
    assert ev[0]["event"] == "jobscope.start" and ev[-1]["event"] == "jobscope.end", f
    t = ev[0]["tags"]
    assert t["slurm_array_job_id"] == arr and t["slurm_step"] == "batch", t
    assert ev[0]["job_id"] == t["slurm_job_id"], (ev[0]["job_id"], t)  # the unique id
    for k in ("slurm_job_id", "slurm_user", "slurm_account", "slurm_partition", "slurm_alloc_mem_mb"):
        assert t.get(k), (k, t)
    assert all(e["tags"] == t for e in ev), "tags differ between events"
PY
    local m
    m=$(jobid mpi)
    cat "$T"/ev/$m.0.*.jsonl >mpi.jsonl
    assert_eq "$(jq_py 'sorted(set((e["rank"], e["tags"]["slurm_task"]) for e in ev))' mpi.jsonl)" \
        '[[0, "0"], [1, "1"], [2, "2"], [3, "3"]]' "MPI ranks" || return 1

    # the epilog's line in AdminComment, as jobstats keeps it: `jobscope summary
    # --oneline` of the whole job (94_slurm_summary checks the full report); the
    # grow job had 1 core and 400 MB for ~4 s, used ~0.15 CPU-s and ~206 MB
    python3 - "$(cat comment.txt)" "$(jobid grow)" sacct.txt <<'PY' || return 1
import re, sys
line, job, rows = sys.argv[1], sys.argv[2], [l.rstrip("\n").split("|") for l in open(sys.argv[3])]
m = re.match(r"^jobscope: completed \(exit code 0\), cpu (\d+)% of 1 \(slurm_alloc_cores\), mem (\d+) mib of 400 mib \((\d+)%\), "
             r"wall 00:00:0(\d), 2 steps 2 tasks 1 node; next: --mem=(\d+)m --cpus-per-task=1 --time=00:01:00$", line)
assert m, line
def secs(t):
    p = [float(x) for x in t.split(":")]
    return sum(v * 60 ** k for k, v in enumerate(reversed(p)))
kib = lambda v: float(v.rstrip("K") or 0)
steps = [r for r in rows if r[0].startswith(job + ".")]
cpu = sum(secs(r[4]) for r in steps)
wall = int(m.group(4))
assert abs(int(m.group(1)) - 100 * cpu / wall) <= 1 + 100 * cpu / wall * 0.25, (m.group(1), cpu, wall)
used = int(m.group(2))                           # MiB: the batch step's and step 0's own peaks, both alive
low = sum(kib(r[5]) for r in steps) / 1024       # sacct's MaxRSS of the two (cgroup anon)
assert low <= used <= low + 24, (used, low)      # /proc RSS also counts each task's file-backed pages
assert int(m.group(3)) == round(100 * used / 400) or abs(int(m.group(3)) - 100 * used / 400) <= 1, line
assert int(m.group(5)) >= used * 1.1, line
PY
    assert_match "$(sacct -P -n -X -j "$(jobid fails)" -o AdminComment)" '^jobscope: failed \(exit code 3\), .*, 2 steps 2 tasks 1 node; next: ' "AdminComment of a failed job" || return 1

    # the node's serve has the same steps, by Slurm's ids
    curl -sf "$SERVE_URL/api/jobs/$(jobid cpu)" >job.json || { fail "serve has no job $(jobid cpu)"; return 1; }

    # the totals against sacct (the table docs/slurm.md shows)
    python3 "$ROOT/tests/helpers/slurm_compare.py" sacct.txt "$T/ev" --rss "$(jobid grow).0" --skip "$(jobid off)" --table "$T/table.md"
    rc=$?
    [ -n "${SLURM_TABLE_OUT:-}" ] && cp "$T/table.md" "$SLURM_TABLE_OUT"
    [ $rc = 0 ] || { fail "jobscope and sacct differ (above)"; return 1; }
    # the monitors never failed
    [ ! -s "$T/monitors.log" ] || { cat "$T/monitors.log"; fail "monitors complained"; return 1; }
}

# The plugin's contract with `jobscope attach`, without Slurm: the reaper of the
# watched process writes its wait status on --exit-status-fd; the end record
# has it at once (not at the next tick), and the descriptor is closed only
# after the final sample.
test_attach_reports_the_exit_status_its_reaper_hands_over() {
    python3 - "$JS" <<'PY' || return 1
import json, os, socket, subprocess, sys, time
js = sys.argv[1]

def watched(interval):
    """A child, our end of the monitor's descriptor 3, and the monitor."""
    child = subprocess.Popen(["sleep", "30"])
    mine, theirs = socket.socketpair()
    mon = subprocess.Popen([js, "attach", "-q", "--no-serve", "-i", str(interval), "-o", "ev.jsonl",
                            "--exit-status-fd=%d" % theirs.fileno(), str(child.pid)],
                           pass_fds=[theirs.fileno()])
    theirs.close()
    time.sleep(0.5)
    return child, mine, mon

def ended(mon):
    """(exit_type, exit_code, signal) of the monitor's end record."""
    mon.wait(timeout=20)
    end = [json.loads(l) for l in open("ev.jsonl")][-1]
    os.remove("ev.jsonl")
    assert end["event"] == "jobscope.end"
    return end["exit_type"], end["exit_code"], end["signal"]

for status, want in ((3 << 8, ("exited", 3, None)), (15, ("signaled", None, 15))):
    child, mine, mon = watched(10)
    child.kill(); child.wait()
    t0 = time.time()
    mine.send(b"%d\n" % status)
    assert mine.recv(1) == b"", "the monitor closes its end after the final sample"
    waited = time.time() - t0
    assert waited < 5, waited          # not the 10 s interval
    got = ended(mon)
    assert got == want, (got, want)
# slurmstepd reaps the task and only then runs the plugin's task_exit: ticks
# that find the process gone before its status comes wait for the status
# (a monitor that ended at once wrote exit_type "ended", exit_code null)
child, mine, mon = watched(0.1)
child.terminate(); child.wait()
time.sleep(0.6)                        # six ticks see no process
assert mon.poll() is None, "the monitor ended before the status came"
mine.send(b"%d\n" % (7 << 8))
assert mine.recv(1) == b""
got = ended(mon)
assert got == ("exited", 7, None), got
PY
    # an option for attach only, and a descriptor number
    "$JS" run --exit-status-fd=3 -- true 2>err.txt
    assert_eq $? 125 "run --exit-status-fd" || return 1
    "$JS" attach --exit-status-fd=x 1 2>err.txt
    assert_eq $? 125 || return 1
    assert_match "$(cat err.txt)" "bad --exit-status-fd 'x'" || return 1
}
