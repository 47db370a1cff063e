#!/usr/bin/env python3
"""gen_jobs.py — writes N synthetic job event files (jobscope's format) with
known distributions, for the tests of `jobscope stats` and `jobscope report`.

  gen_jobs.py DIR N [SAMPLES] [SEED]

Three executables with different shapes: 'align' (lognormal peak memory,
about 2 cores), 'reduce' (normal memory, one core, I/O heavy), 'train'
(uses a GPU).  Memory grows linearly over each job (RSS = peak * t/T), so
the average-run curve of memory is a known ramp.  Half the jobs record a
request (tags request_memory, request_cpus, request_walltime)."""
import json, math, os, random, sys

def main():
    out, n = sys.argv[1], int(sys.argv[2])
    nsamp = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    rnd = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 42)
    os.makedirs(out, exist_ok=True)
    t0 = 1700000000.0
    for i in range(n):
        exe = ("align", "reduce", "train")[i % 3]
        if exe == "align":
            peak_kb = int(rnd.lognormvariate(math.log(2e6), 0.3))
            cores_used, dur = rnd.uniform(1.2, 2.0), rnd.uniform(300, 900)
        elif exe == "reduce":
            peak_kb = max(1000, int(rnd.gauss(5e5, 5e4)))
            cores_used, dur = rnd.uniform(0.3, 1.0), rnd.gauss(120, 15)
        else:
            peak_kb = int(rnd.uniform(4e6, 8e6))
            cores_used, dur = rnd.uniform(0.9, 1.0), rnd.uniform(1000, 2000)
        dur = round(max(10.0, dur), 3)
        cpu = round(cores_used * dur, 6)
        start = t0 + i * 10
        rchar = int(rnd.uniform(1e6, 1e9)); wchar = int(rnd.uniform(1e5, 1e8))
        ann = {"hostname": "node%d" % (i % 7), "site": None, "wf_uuid": "wf-%d" % (i // 500),
               "wf_label": None, "dag_job_id": None, "condor_job_id": None,
               "xformation": exe + "_x", "task_id": None, "rank": 0, "job_id": "job%05d" % i}
        tags = {"task": exe}
        if i % 2 == 0:
            tags.update(request_memory="%dM" % (peak_kb * 2 // 1024), request_cpus="4",
                        request_walltime="1h")
        ann["tags"] = tags
        seq = 0
        lines = []
        def ev(name, ts, **kw):
            nonlocal seq
            seq += 1
            d = {"event": name, "ts": round(ts, 6)}
            d.update(ann); d.update(kw); d["seq"] = seq
            lines.append(json.dumps(d))
        ev("jobscope.start", start, version="0.1", mode="run", pid=1000 + i, exe="/opt/bin/" + exe,
           argv=[exe, "--in", "x"], cmd=exe + " --in x", cwd="/tmp", user="u", uid=1000,
           interval=dur / (nsamp - 1), cpus_available=4, cpus_online=4)
        gpu = exe == "train"
        gpu_peak = int(rnd.uniform(2e9, 1.2e10)) if gpu else None
        gpu_util = rnd.uniform(40, 95) if gpu else None
        for k in range(nsamp):
            f = k / (nsamp - 1)
            kw = dict(pid=1000 + i, exe="/opt/bin/" + exe, elapsed=round(f * dur, 3),
                      utime=round(cpu * f * 0.9, 3), stime=round(cpu * f * 0.1, 3),
                      cpu_percent=round(100 * cores_used, 3), rss=int(peak_kb * f), vm=int(peak_kb * f) + 10000,
                      swap=0, rchar=int(rchar * f), wchar=int(wchar * f), read_bytes=0, write_bytes=0,
                      procs=1, threads=2)
            if gpu:
                kw.update(gpu_mem=int(gpu_peak * f), gpu_util=round(gpu_util, 3))
            ev("kickstart.inv.online", start + f * dur, **kw)
        end = dict(pid=1000 + i, exe="/opt/bin/" + exe, cmd=exe + " --in x", exit_type="exited",
                   exit_code=0, status=0, start=start, end=start + dur, duration=dur,
                   utime=round(cpu * 0.9, 3), stime=round(cpu * 0.1, 3), cpu_time=cpu, cores=4,
                   cpu_efficiency=cpu / (dur * 4), rchar=rchar, wchar=wchar, read_bytes=0,
                   write_bytes=0, samples=nsamp, total_procs=1,
                   peaks={"rss": {"value": peak_kb, "ts": start + dur}})
        if gpu:
            end["gpu"] = {"devices": 1, "samples": nsamp, "peak_mem": gpu_peak,
                          "mean_util": round(gpu_util, 3), "gpu_seconds": gpu_util / 100 * dur}
        ev("jobscope.end", start + dur, **end)
        with open(os.path.join(out, "job%05d.jsonl" % i), "w") as fh:
            fh.write("\n".join(lines) + "\n")

main()
