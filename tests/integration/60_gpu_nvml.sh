# 60_gpu_nvml.sh — `jobscope run -G` against the scripted fake NVML library
# (tests/fake_nvml, built as $BUILD/fake-nvml/libnvidia-ml.so.1).  The job
# appends its own pid to the fake's script, so the fake lists it as a GPU
# process next to pid 1 (another job's, which must never show up).

gpu_env() {
    export JOBSCOPE_NVML_LIBRARY="$ROOT/$BUILD/fake-nvml/libnvidia-ml.so.1"
    export FAKE_NVML_SCRIPT="$T/nvml.script" FAKE_NVML_LOG="$T/nvml.log"
    export JOBSCOPE_SYSFS_ROOT="$T/nosys"          # no DRM device from this machine
    unset CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES KICKSTART_MON_GRAPHICS_PROCS \
          KICKSTART_MON_GRAPHICS_UTIL KICKSTART_MON_GRAPHICS_PCIE
    [ -f "$JOBSCOPE_NVML_LIBRARY" ] || { echo "    missing $JOBSCOPE_NVML_LIBRARY (make fake-nvml)" >&2; return 1; }
}

# A job that "uses" GPU DEV: 256 MiB, 40 % SM; other jobs' pid 1 uses 1 GiB, 90 %.
gpu_job() {
    local dev=${1:-0} secs=${2:-1}
    echo "sh -c 'echo \"proc $dev \$\$ 268435456 40 7 1 2\" >> $FAKE_NVML_SCRIPT; sleep $secs; exit 3'"
}

test_gpu_one_device_job_share() {
    gpu_env || return 1
    printf 'devices 1\nutil 0 95 30\nproc 0 1 1073741824 90 20 0 0\n' > nvml.script
    eval "$JS run -G -i 0.2 -o ev.jsonl -- $(gpu_job 0 1)" 2>err.txt
    assert_eq $? 3 "job exit status" || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"]=="kickstart.inv.online.gpu.env"])' ev.jsonl)" 1 "env events" || return 1
    assert_eq "$(jq_py '[e for e in ev if e["event"]=="kickstart.inv.online.gpu.env"][0]["devices"][0]["total_bar1_memory"]' ev.jsonl)" 137438953472 || return 1
    # other jobs' processes never listed; the job's are
    assert_eq "$(jq_py 'sorted({p["pid"] for e in ev if e["event"].endswith("gpu.stats") for p in e["compute_procs"]} - {end["pid"]})' ev.jsonl)" "[]" "foreign pid listed" || return 1
    assert_eq "$(jq_py 'max(e["job_mem_usage"] for e in ev if e["event"].endswith("gpu.stats"))' ev.jsonl)" 268435456 || return 1
    assert_eq "$(jq_py 'max(e["job_sm_util"] or 0 for e in ev if e["event"].endswith("gpu.stats"))' ev.jsonl)" 40.0 || return 1
    assert_eq "$(jq_py 'min(e["other_procs"] for e in ev if e["event"].endswith("gpu.stats"))' ev.jsonl)" 1 || return 1
    assert_eq "$(jq_py 'all(e["vendor"]=="nvidia" for e in ev if "gpu" in e["event"])' ev.jsonl)" true || return 1
    assert_eq "$(jq_py 'all(e["sampling_duration"]>0 for e in ev if e["event"].endswith("gpu.stats"))' ev.jsonl)" true || return 1
    # the process samples carry the job's share
    assert_eq "$(jq_py 'max(s.get("gpu_mem",0) for s in samples)' ev.jsonl)" 268435456 || return 1
    assert_eq "$(jq_py 'max(s.get("gpu_util") or 0 for s in samples)' ev.jsonl)" 40.0 || return 1
    # the record: peak memory, GPU-seconds ~ 0.4 per second of the job
    assert_eq "$(jq_py 'end["gpu"]["peak_mem"]' ev.jsonl)" 268435456 || return 1
    assert_close "$(jq_py 'end["gpu"]["gpu_seconds"]' ev.jsonl)" 0.4 0.35 "gpu_seconds" || return 1
    assert_close "$(jq_py 'end["gpu"]["mean_util"]' ev.jsonl)" 40 0.35 "mean_util" || return 1
    assert_eq "$(jq_py '[e for e in ev if e["event"].endswith("gpu.stats.max")][0]["devices"][0]["max_gpu_utilization"]' ev.jsonl)" 95 || return 1
    # kickstart's optional parts are off by default
    assert_eq "$(jq_py 'any("pcie_tx" in e or "graphics_procs" in e or "proc_samples" in e for e in ev)' ev.jsonl)" false || return 1
    assert_eq "$(cat err.txt)" "" "stderr" || return 1
}

test_gpu_zero_devices_one_diagnostic() {
    gpu_env || return 1
    printf 'devices 0\n' > nvml.script
    "$JS" run -G -i 0.2 -o ev.jsonl -- sh -c 'echo out; exit 4' >out.txt 2>err.txt
    assert_eq $? 4 "job exit status" || return 1
    assert_eq "$(cat out.txt)" "out" || return 1
    assert_eq "$(grep -c 'jobscope: gpu:' err.txt)" 1 "one diagnostic" || return 1
    assert_match "$(cat err.txt)" "no NVIDIA GPU" || return 1
    assert_eq "$(jq_py 'len([e for e in ev if "gpu" in e["event"]])' ev.jsonl)" 0 || return 1
    assert_eq "$(jq_py '"gpu_mem" in samples[-1]' ev.jsonl)" false || return 1
}

test_gpu_broken_library_one_diagnostic() {
    gpu_env || return 1
    echo "not a library" > libnvidia-ml.so.1
    JOBSCOPE_NVML_LIBRARY=$T/libnvidia-ml.so.1 "$JS" run -G -i 0.2 -o ev.jsonl -- sh -c 'exit 5' 2>err.txt
    assert_eq $? 5 || return 1
    assert_eq "$(grep -c 'jobscope: gpu:' err.txt)" 1 || return 1
    printf 'init_error 9\n' > nvml.script
    "$JS" run -G -i 0.2 -o ev2.jsonl -- true 2>err2.txt
    assert_eq $? 0 || return 1
    assert_match "$(cat err2.txt)" "Driver Not Loaded" || return 1
    assert_eq "$(grep -c . err2.txt)" 1 || return 1
    # -q: not even that
    "$JS" run -q -G -i 0.2 -o ev3.jsonl -- true 2>err3.txt
    assert_eq "$(cat err3.txt)" "" || return 1
}

test_gpu_eight_devices_visible() {
    gpu_env || return 1
    printf 'devices 8\n' > nvml.script
    CUDA_VISIBLE_DEVICES=6,GPU-fa4e0001-1111-2222-3333-000000000001 \
        "$JS" run -G -i 0.2 -o ev.jsonl -- sh -c 'sleep 0.3' || return 1
    assert_eq "$(jq_py '[d["id"] for d in ev[0:0] + [e for e in ev if e["event"].endswith("gpu.env")][0]["devices"]]' ev.jsonl)" "[6, 1]" || return 1
    assert_eq "$(jq_py 'sorted({e["id"] for e in ev if e["event"].endswith("gpu.stats")})' ev.jsonl)" "[1, 6]" || return 1
    # --gpu=all: every device, one polling thread each
    CUDA_VISIBLE_DEVICES=6 "$JS" run --gpu=all -i 0.2 -o all.jsonl -- sh -c 'sleep 0.5' || return 1
    assert_eq "$(jq_py '[e for e in ev if e["event"].endswith("gpu.env")][0]["device_count"]' all.jsonl)" 8 || return 1
    assert_eq "$(jq_py 'sorted({e["id"] for e in ev if e["event"].endswith("gpu.stats")})' all.jsonl)" "[0, 1, 2, 3, 4, 5, 6, 7]" || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"].endswith("gpu.stats.max")][0]["devices"])' all.jsonl)" 8 || return 1
    # NVIDIA_VISIBLE_DEVICES as well (MIG UUID: its parent GPU)
    printf 'devices 4\nmig 3 MIG-0c1d2e3f-aaaa-bbbb-cccc-ddddeeeeffff\n' > nvml.script
    NVIDIA_VISIBLE_DEVICES=MIG-0c1d2e3f-aaaa-bbbb-cccc-ddddeeeeffff "$JS" run -G -i 0.2 -o mig.jsonl -- true || return 1
    assert_eq "$(jq_py '[(d["id"], d["mig_uuid"], d["mig_mode"]) for d in [e for e in ev if e["event"].endswith("gpu.env")][0]["devices"]]' mig.jsonl)" \
        '[[3, "MIG-0c1d2e3f-aaaa-bbbb-cccc-ddddeeeeffff", true]]' || return 1
}

test_gpu_unsupported_calls_skipped() {
    gpu_env || return 1
    printf 'devices 2\nunsupported * nvmlDeviceGetPowerUsage\nunsupported 1 nvmlDeviceGetProcessUtilization\n' > nvml.script
    printf 'util 1 64 10\n' >> nvml.script
    eval "$JS run -G -i 0.2 -o ev.jsonl -- $(gpu_job 1 0.8)" 2>err.txt
    assert_eq $? 3 || return 1
    assert_eq "$(jq_py 'any("power_usage" in e for e in ev if e["event"].endswith("gpu.stats"))' ev.jsonl)" false || return 1
    assert_eq "$(jq_py 'all("temp" in e for e in ev if e["event"].endswith("gpu.stats"))' ev.jsonl)" true || return 1
    assert_ge "$(jq_py 'len([e for e in ev if e["event"].endswith("gpu.stats")])' ev.jsonl)" 8 || return 1
    # asked once per device, not every interval
    assert_eq "$(grep -c '^nvmlDeviceGetPowerUsage 1$' nvml.log)" 1 || return 1
    assert_eq "$(grep -c '^nvmlDeviceGetProcessUtilization 1$' nvml.log)" 1 || return 1
    # no per-process samples on GPU 1, but the job is its only user: the
    # device's utilisation is the job's
    assert_eq "$(jq_py 'sorted({e["job_util_source"] for e in ev if e["event"].endswith("gpu.stats") and e["id"]==1 and e["job_procs"]})' ev.jsonl)" '["device"]' || return 1
    assert_eq "$(jq_py 'max(e["job_sm_util"] or 0 for e in ev if e["event"].endswith("gpu.stats") and e["id"]==1)' ev.jsonl)" 64.0 || return 1
    assert_eq "$(cat err.txt)" "" || return 1
}

test_gpu_kickstart_switches() {
    gpu_env || return 1
    printf 'devices 1\ngproc 0 1 4096\n' > nvml.script
    ( export KICKSTART_MON_GRAPHICS_PCIE=1 KICKSTART_MON_GRAPHICS_PROCS= KICKSTART_MON_GRAPHICS_UTIL=yes
      eval "$JS run -G -i 0.2 -o ev.jsonl -- $(gpu_job 0 0.5)" )
    assert_eq $? 3 || return 1
    assert_eq "$(jq_py 'all(e["pcie_tx"]==1000 and e["pcie_rx"]==2000 and "graphics_procs" in e for e in ev if e["event"].endswith("gpu.stats"))' ev.jsonl)" true || return 1
    # graphics list filtered too: pid 1 is another job's
    assert_eq "$(jq_py 'sum(len(e["graphics_procs"]) for e in ev if e["event"].endswith("gpu.stats"))' ev.jsonl)" 0 || return 1
    assert_eq "$(jq_py 'sorted({(p["pid"]==end["pid"], p["sm_util"]) for e in ev if e["event"].endswith("gpu.stats") for p in e["proc_samples"]})' ev.jsonl)" '[[true, 40]]' || return 1
    # the same through options; --gpu-all-procs lists everyone
    "$JS" run -G --gpu-graphics-procs --gpu-all-procs -i 0.2 -o ev2.jsonl -- sleep 0.3 || return 1
    assert_eq "$(jq_py 'all(e["graphics_procs"]==[{"pid":1,"mem_usage":4096}] for e in ev if e["event"].endswith("gpu.stats"))' ev2.jsonl)" true || return 1
}

test_gpu_blocking_call_never_delays_sampling() {
    gpu_env || return 1
    # GPU 0 answers its temperature after 1.5 s; GPU 1 is fine.
    printf 'devices 2\nblock 0 nvmlDeviceGetTemperature 1.5\n' > nvml.script
    local t0 t1
    t0=$(date +%s.%N)
    "$JS" run -G -i 0.1 -o ev.jsonl -- sh -c 'sleep 1.2; exit 7' 2>err.txt
    assert_eq $? 7 || return 1
    t1=$(date +%s.%N)
    # process samples keep their rhythm: no gap longer than 2.5 intervals
    assert_le "$(jq_py 'max(b["ts"]-a["ts"] for a, b in zip(samples, samples[1:]))' ev.jsonl)" 0.25 "sample gap" || return 1
    assert_ge "$(jq_py 'len(samples)' ev.jsonl)" 10 || return 1
    # GPU 1 was polled all along, GPU 0 only when it answered
    assert_ge "$(jq_py 'len([e for e in ev if e["event"].endswith("gpu.stats") and e["id"]==1])' ev.jsonl)" 9 || return 1
    assert_le "$(jq_py 'len([e for e in ev if e["event"].endswith("gpu.stats") and e["id"]==0])' ev.jsonl)" 2 || return 1
    assert_ge "$(jq_py 'max(e["sampling_duration"] for e in ev if e["event"].endswith("gpu.stats") and e["id"]==0)' ev.jsonl)" 1.4 || return 1
    # the end is not held hostage: at most ~2 s after the job
    assert_le "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" 4.5 "jobscope ran too long" || return 1
    assert_eq "$(jq_py 'ev[-1]["event"]' ev.jsonl)" "jobscope.end" || return 1
}

test_gpu_stuck_library_left_behind() {
    gpu_env || return 1
    # a call that never comes back (within the test): the job's end goes on
    printf 'devices 1\nblock 0 nvmlDeviceGetPowerUsage 30\n' > nvml.script
    local t0 t1
    t0=$(date +%s.%N)
    "$JS" run -G -i 0.1 -o ev.jsonl -- sh -c 'sleep 0.5; exit 6' 2>err.txt
    assert_eq $? 6 || return 1
    t1=$(date +%s.%N)
    assert_le "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" 3.0 "jobscope waited for the library" || return 1
    assert_eq "$(grep -c 'jobscope: gpu:' err.txt)" 1 || return 1
    assert_match "$(cat err.txt)" "left behind" || return 1
    assert_eq "$(jq_py 'ev[-1]["event"]' ev.jsonl)" "jobscope.end" || return 1
    assert_eq "$(jq_py 'end["gpu"]["samples"]' ev.jsonl)" 0 || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"].endswith("gpu.env")])' ev.jsonl)" 1 || return 1
    # stuck in nvmlInit itself (before any device): the same
    printf 'devices 1\nblock * nvmlInit_v2 30\n' > nvml.script
    "$JS" run -G -i 0.1 -o ev2.jsonl -- sh -c 'exit 9' 2>err2.txt
    assert_eq $? 9 || return 1
    assert_match "$(cat err2.txt)" "did not answer" || return 1
    assert_eq "$(jq_py 'len([e for e in ev if "gpu" in e["event"]])' ev2.jsonl)" 0 || return 1
}

test_gpu_short_job_still_reported() {
    gpu_env || return 1
    printf 'devices 2\n' > nvml.script
    "$JS" run -G -i 5 -o ev.jsonl -- true || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"].endswith("gpu.env")])' ev.jsonl)" 1 || return 1
    assert_ge "$(jq_py 'len([e for e in ev if e["event"].endswith("gpu.stats")])' ev.jsonl)" 2 || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"].endswith("gpu.stats.max")])' ev.jsonl)" 1 || return 1
}

test_gpu_attach_reads_the_jobs_visible_devices() {
    gpu_env || return 1
    printf 'devices 4\n' > nvml.script
    CUDA_VISIBLE_DEVICES=2 sh -c 'sleep 1' &
    local pid=$!
    sleep 0.1
    "$JS" attach -G -i 0.2 -o ev.jsonl "$pid" || return 1
    assert_eq "$(jq_py '[d["id"] for d in [e for e in ev if e["event"].endswith("gpu.env")][0]["devices"]]' ev.jsonl)" "[2]" || return 1
}
