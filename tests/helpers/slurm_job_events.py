#!/usr/bin/env python3
"""slurm_job_events.py — the events of a Slurm job of several runs, as the
SPANK plugin's monitors write them (one monitor per task; docs/slurm.md):

  slurm_job_events.py [JOBID]

JOBID (default 500) on two nodes of 4 CPUs and 4 GiB each: the batch script
on c1 for 100 s (1 CPU-s, 10 MiB), step 0's four tasks two a node from 5 s
to 45 s (30 CPU-s, 500 MiB each), step 1 on c1 from 50 s to 90 s (10 CPU-s,
1000 MiB); events in time order, compact JSON Lines.  By hand: 131 CPU-s of
8 CPUs x 100 s (16%); memory at once c1 1010 MiB, c2 1000 MiB: 2010 of
8192 MiB; next --mem=1111M --ntasks-per-node=2 --cpus-per-task=1
--time=00:02:00."""
import json, sys

job = sys.argv[1] if len(sys.argv) > 1 else "500"
MiB = 1 << 20
t0 = 1700000000.0
out = []


def run(host, step, task, pid, start, dur, cpu, rss_mib):
    tags = {"slurm_job_id": job, "slurm_step": step, "slurm_task": str(task), "slurm_user": "alice",
            "slurm_account": "lab", "slurm_partition": "debug", "slurm_alloc_cores": "0-3",
            "slurm_alloc_mem_mb": "4096"}
    a = {"hostname": host, "rank": task, "job_id": job, "batch": {"system": "slurm", "job_id": job}, "tags": tags}
    ev = lambda **k: out.append(dict(a, **k))
    exe = "/usr/bin/bash" if step == "batch" else "/opt/sim/bin/step" + step
    ev(event="jobscope.start", ts=start, pid=pid, mode="attach", exe=exe, cmd=exe, user="alice",
       alloc_cpus=4, alloc_cpus_from="SLURM_CPUS_ON_NODE", alloc_mem=4096 * MiB, alloc_mem_from="SLURM_MEM_PER_NODE",
       alloc_gpus=None, alloc_gpus_from=None)
    for k in range(int(dur) + 1):
        ev(event="kickstart.inv.online", ts=start + k, pid=pid, elapsed=float(k), exe=exe, rss=rss_mib * 1024,
           utime=cpu * k / dur, stime=0.0, procs=1, threads=1, rchar=0, wchar=0)
    ev(event="jobscope.end", ts=start + dur, pid=pid, exe=exe, cmd=exe, exit_type="exited", exit_code=0, signal=None,
       start=start, end=start + dur, duration=dur, cpu_time=cpu, cores=4, cores_from="SLURM_CPUS_ON_NODE",
       samples=int(dur) + 1, peaks={"rss": {"value": rss_mib * 1024}, "threads": {"value": 1}},
       cgroup={"cpu_usage": cpu, "oom_kill": 0})


run("c1", "batch", 0, 100, t0, 100.0, 1.0, 10)
for i, h in enumerate(["c1", "c1", "c2", "c2"]):
    run(h, "0", i, 200 + i, t0 + 5, 40.0, 30.0, 500)
run("c1", "1", 0, 300, t0 + 50, 40.0, 10.0, 1000)
out.sort(key=lambda e: e["ts"])
for e in out:
    print(json.dumps(e, separators=(",", ":")))
