#!/usr/bin/env python3
"""slurm_compare.py — jobscope's per-step totals against Slurm's accounting.

  slurm_compare.py SACCT_FILE EVENTS_DIR [--rss STEP]... [--skip JOBID]... [--table OUT.md]

SACCT_FILE is `sacct -P -n -o JobID,JobIDRaw,State,ExitCode,TotalCPU,MaxRSS,Elapsed`;
EVENTS_DIR holds the files the SPANK plugin's monitors wrote (one per task).
Each step of sacct is matched to the jobscope.end records whose tags say
slurm_job_id = the raw job id and slurm_step = the step, and compared where
Slurm measures the same thing (docs/slurm.md explains each rule):

  CPU      sacct TotalCPU (the rusage of the reaped tasks) against the sum over
           the step's tasks of their cgroup's cpuacct.usage (cg_cpu_usage of
           the final sample, taken once the task was reaped): within 1%, or
           20 ms for steps of less than half a CPU-second;
  MaxRSS   sacct's MaxRSS (jobacct_gather/cgroup: the largest polled total_rss
           of a task's cgroup) against the largest cg_memory_anon jobscope
           sampled (the same file): within 1% for the steps listed with --rss
           STEP (a memory that holds still for longer than both polling
           intervals).  jobscope's /proc RSS peak is shown beside it;
  Elapsed  sacct's whole seconds against jobscope's duration: at most 1 s
           less (the seconds are truncated) and less than 2 s more (the
           truncation's second, and the step's set-up and tear-down that
           Slurm's window holds around the job's own; a 0.99 s batch step
           was once 2 s in sacct);
  exit     ExitCode and State: the same, as Slurm derives them from the
           task's wait status (and the cgroup's OOM kill).

Prints the table, then one line per disagreement; exit 1 if any."""
import glob, json, re, sys


def secs(s):  # [D-][HH:]MM:SS[.mmm]
    d = 0
    if "-" in s:
        d, s = s.split("-", 1)
    parts = [float(p) for p in s.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    return int(d) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]


def kb(s):
    if not s:
        return None
    m = re.match(r"^([\d.]+)([KMGT]?)$", s)
    return float(m.group(1)) * {"": 1 / 1024, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3}[m.group(2)]


def state_of(rec):
    """Slurm's state and ExitCode from the task's wait status, as slurmstepd
    and slurmctld derive them: OUT_OF_MEMORY when the cgroup saw an OOM kill,
    CANCELLED for a step ended by a signal, FAILED for a non-zero exit."""
    sig, code = rec.get("signal"), rec.get("exit_code")
    oom = (rec.get("cgroup") or {}).get("oom_kill") or 0
    if oom:
        return "OUT_OF_MEMORY", "0:125"
    if sig:
        return "CANCELLED", "0:%d" % sig
    if code is None:  # the monitor never got the task's status: a disagreement, said as one
        return "(no status)", "%s" % rec.get("exit_type")
    return ("COMPLETED" if code == 0 else "FAILED"), "%d:0" % code


def main():
    args = sys.argv[1:]
    table = None
    rss_steps, skip = [], []
    while len(args) > 2 and args[-2] in ("--table", "--rss", "--skip"):
        if args[-2] == "--table":
            table = args[-1]
        elif args[-2] == "--rss":
            rss_steps.append(args[-1])
        else:
            skip.append(args[-1])
        args = args[:-2]
    sacct_file, evdir = args
    ends = {}
    for f in glob.glob(evdir + "/*.jsonl"):
        cpu = anon = 0.0
        for line in open(f):
            e = json.loads(line)
            cpu = max(cpu, e.get("cg_cpu_usage", 0.0))
            anon = max(anon, e.get("cg_memory_anon", 0))
            if e["event"] != "jobscope.end":
                continue
            t = e.get("tags", {})
            e["_cg_cpu"] = max(cpu, (e.get("cgroup") or {}).get("cpu_usage", 0.0))
            e["_cg_anon_kb"] = anon / 1024
            ends.setdefault((t.get("slurm_job_id"), t.get("slurm_step")), []).append(e)
    rows, bad = [], []
    for line in open(sacct_file):
        jobid, raw, state, exitcode, totalcpu, maxrss, elapsed = line.rstrip("\n").split("|")
        if "." not in jobid or jobid.endswith(".extern") or jobid.split(".")[0] in skip:
            continue  # the job's own line sums its steps
        step = jobid.split(".", 1)[1]
        recs = ends.get((raw.split(".")[0], step), [])
        if not recs:
            bad.append("%s: no jobscope record" % jobid)
            continue
        cpu = sum(r["_cg_cpu"] for r in recs)
        rss = max(r["_cg_anon_kb"] for r in recs)
        prss = max(r["peaks"]["rss"]["value"] for r in recs)
        dur = max(r["duration"] for r in recs)
        worst = max(recs, key=lambda r: (bool((r.get("cgroup") or {}).get("oom_kill")),
                                         r.get("signal") or 0, r.get("exit_code") or 0))
        js_state, js_exit = state_of(worst)
        s_cpu, s_rss, s_el = secs(totalcpu), kb(maxrss), secs(elapsed)
        d_cpu = (cpu - s_cpu) / s_cpu * 100 if s_cpu else 0.0
        d_rss = (rss - s_rss) / s_rss * 100 if s_rss else 0.0
        rows.append("| %s | %d | %.3f | %.3f | %+.2f%% | %s | %d | %+.2f%% | %d | %d | %.2f | %s %s | %s %s |" % (
            jobid, len(recs), s_cpu, cpu, d_cpu, "%dK" % s_rss if s_rss is not None else "",
            rss, d_rss, prss, s_el, dur, state, exitcode, js_state, js_exit))
        if (s_cpu >= 0.5 and abs(cpu - s_cpu) > 0.01 * s_cpu) or (s_cpu < 0.5 and abs(cpu - s_cpu) > 0.02):
            bad.append("%s: CPU %.3f s, sacct %.3f s" % (jobid, cpu, s_cpu))
        if step in rss_steps or jobid in rss_steps:
            if s_rss is None or abs(rss - s_rss) > 0.01 * s_rss:
                bad.append("%s: RSS peak %d KB, sacct %s" % (jobid, rss, maxrss))
        if dur - s_el > 1.0 or s_el - dur >= 2.0:
            bad.append("%s: duration %.2f s, sacct %d s" % (jobid, dur, s_el))
        if (js_state, js_exit) != (state, exitcode):
            bad.append("%s: %s %s, sacct %s %s" % (jobid, js_state, js_exit, state, exitcode))
    head = ("| step | tasks | sacct TotalCPU s | jobscope CPU s | Δ | sacct MaxRSS | jobscope cgroup rss KB | Δ "
            "| jobscope /proc RSS KB | sacct Elapsed s | jobscope s | sacct State ExitCode | jobscope |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    out = head + "\n" + "\n".join(rows) + "\n"
    print(out)
    if table:
        open(table, "w").write(out)
    for b in bad:
        print("DIFFERS: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
