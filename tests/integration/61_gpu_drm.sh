# 61_gpu_drm.sh — `jobscope run -G` on an AMD node made of fixture trees:
# tests/fixtures/gpu/amd as /sys (JOBSCOPE_SYSFS_ROOT) and a /proc
# (JOBSCOPE_PROC_ROOT) where the job itself publishes a DRM client in
# fdinfo, the way amdgpu does, with its gfx engine busy half of the time.

drm_env() {
    cp -a "$ROOT/tests/fixtures/gpu/amd" "$T/sys" || return 1
    mkdir -p "$T/p/proc"
    export JOBSCOPE_SYSFS_ROOT="$T/sys" JOBSCOPE_PROC_ROOT="$T/p"
    export JOBSCOPE_NVML_LIBRARY="$T/no-such-libnvidia-ml.so.1"
    unset ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES CUDA_VISIBLE_DEVICES
}

DRM_JOB='P=$JOBSCOPE_PROC_ROOT/proc/$$; mkdir -p $P/fd $P/fdinfo; ln -s /dev/dri/renderD128 $P/fd/3
i=0; while [ $i -lt 14 ]; do
  printf "drm-driver:\tamdgpu\ndrm-client-id:\t42\ndrm-pdev:\t0000:c3:00.0\ndrm-memory-vram:\t524288 KiB\ndrm-memory-gtt:\t1024 KiB\ndrm-engine-gfx:\t%d ns\ndrm-engine-enc:\t0 ns\n" $((i*50000000)) > $P/fdinfo/3.new
  mv $P/fdinfo/3.new $P/fdinfo/3; i=$((i+1)); sleep 0.1
done; exit 2'

test_gpu_drm_amd_job_share() {
    drm_env || return 1
    "$JS" run -G -i 0.25 -o ev.jsonl -- sh -c "$DRM_JOB" 2>err.txt
    assert_eq $? 2 "job exit status" || return 1
    assert_eq "$(cat err.txt)" "" "no diagnostic when DRM finds GPUs" || return 1
    local env='[e for e in ev if e["event"].endswith("gpu.env")][0]'
    assert_eq "$(jq_py "($env)['vendor'], ($env)['backend'], [d['id'] for d in ($env)['devices']]" ev.jsonl)" '["amd", "drm", [0, 2]]' || return 1
    assert_eq "$(jq_py "($env)['devices'][0]['name'], ($env)['devices'][0]['total_memory'], ($env)['devices'][0]['power_limit']" ev.jsonl)" '["AMD Instinct MI210", 68702699520, 300000]' || return 1
    local st='[e for e in ev if e["event"].endswith("gpu.stats") and e["id"]==0]'
    assert_eq "$(jq_py "sorted({(e['vendor'], e['gpu_utilization'], e['temp'], e['power_usage'], e['mem_usage']) for e in $st})" ev.jsonl)" '[["amd", 73, 45, 150000, 4294967296]]' || return 1
    assert_eq "$(jq_py "max(e['job_mem_usage'] for e in $st)" ev.jsonl)" 536870912 || return 1
    assert_eq "$(jq_py "{p['pid'] for e in $st for p in e['compute_procs']} == {end['pid']}" ev.jsonl)" true || return 1
    # gfx busy 50 ms every 100 ms (slower under load: never more)
    local u
    u=$(jq_py "max(e['job_sm_util'] or 0 for e in $st)" ev.jsonl)
    assert_ge "$u" 20 "job_sm_util" || return 1
    assert_le "$u" 60 "job_sm_util" || return 1
    assert_ge "$(jq_py "max(e.get('job_engine_util', {}).get('gfx', 0) for e in $st)" ev.jsonl)" 20 || return 1
    assert_eq "$(jq_py "max(s.get('gpu_mem', 0) for s in samples)" ev.jsonl)" 536870912 || return 1
    assert_ge "$(jq_py 'end["gpu"]["gpu_seconds"]' ev.jsonl)" 0.2 || return 1
    # card2 carries nothing of the job
    assert_eq "$(jq_py 'max(e["job_mem_usage"] for e in ev if e["event"].endswith("gpu.stats") and e["id"]==2)' ev.jsonl)" 0 || return 1
}

test_gpu_drm_rocr_visible() {
    drm_env || return 1
    ROCR_VISIBLE_DEVICES=1 "$JS" run -G -i 0.2 -o ev.jsonl -- true || return 1
    assert_eq "$(jq_py '[d["id"] for d in [e for e in ev if e["event"].endswith("gpu.env")][0]["devices"]]' ev.jsonl)" "[2]" || return 1
}

test_gpu_no_gpu_at_all() {
    mkdir -p empty
    JOBSCOPE_SYSFS_ROOT=$T/empty JOBSCOPE_NVML_LIBRARY=$T/none.so "$JS" run -G -i 0.2 -o ev.jsonl -- sh -c 'exit 1' 2>err.txt
    assert_eq $? 1 || return 1
    assert_eq "$(grep -c . err.txt)" 1 || return 1
    assert_match "$(cat err.txt)" "^jobscope: gpu: no GPU monitored \(NVML: .*; DRM: .*\)$" || return 1
}
