# 83_dropin_payload.sh — Panorama's monitoring payload blocks as Panorama
# stored them, and the seed's own block accepted (issue 14 point 6,
# docs/metrics.md).

# The block of the Panorama slides (seed 001): "ts" sits inside the list.
_seed_block() {
    cat <<'B'
@@@MONITORING_PAYLOAD - START@@@
{
    "monitoring_event": "darshan.perf",
    "payload": [
        {
            "POSIX_module_data": {
                "agg_perf_by_cumul": 14.667417,
                "total_bytes": 403761
            }
        },
        "ts": 1552878285
    ]
}
@@@MONITORING_PAYLOAD - END@@@
B
}

test_the_seeds_block_with_ts_inside_the_list_is_repaired_and_says_so() {
    _seed_block > blk.txt
    "$JS" run --scan-output -o ev.jsonl -- cat blk.txt > out.txt || return 1
    assert_eq "$(jq_py '[(e["ts"], e["POSIX_module_data"]["total_bytes"]) for e in ev if e["event"]=="darshan.perf"]' ev.jsonl)" \
        '[[1552878285.0, 403761]]' || return 1
    assert_match "$(jq_py '[e["payload_repaired"] for e in ev if e["event"]=="darshan.perf"][0]' ev.jsonl)" '"ts"' || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"]=="jobscope.payload_error"])' ev.jsonl)" 0 || return 1
    # jobscope emit --payload takes it too
    "$JS" run -o ev2.jsonl -- sh -c "sed '1d;\$d' blk.txt | '$JS' emit --payload -" || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"]=="darshan.perf"])' ev2.jsonl)" 1
}

test_payload_shape_panorama_stores_events_as_panorama_did() {
    _seed_block > blk.txt
    PEGASUS_WF_UUID=e8c30de5-6bb2 PEGASUS_DAG_JOB_ID=namd_ID0000002 CONDOR_JOBID=10469.0 \
        "$JS" run --payload-shape panorama --scan-output -o ev.jsonl -- cat blk.txt > /dev/null || return 1
    python3 - ev.jsonl <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
p = [e for e in ev if e.get("monitoring_event") == "darshan.perf"]
assert len(p) == 1, ev
e = p[0]
assert e["event"] == "stampede.task.monitoring", e
assert (e["xwf_id"], e["job_id"], e["sched_id"]) == ("e8c30de5-6bb2", "namd_ID0000002", "10469.0"), e
assert e["POSIX_module_data"]["total_bytes"] == 403761 and e["ts"] == 1552878285
assert "wf_uuid" not in e, "annotations are not Panorama's shape"
PY
}
