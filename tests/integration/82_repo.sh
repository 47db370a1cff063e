# 82_repo.sh — the events repository of `jobscope serve`: jobs streamed by
# `jobscope run`, Pegasus stampede and transfer events and payloads posted
# as NDJSON, all kept whole (unknown fields too) and answered by /api/jobs,
# /api/jobs/ID, /api/workflows, /api/events; `stats --server` and
# `report --server` read them back.

source "$ROOT/tests/helpers/publish_servers.sh"

serve_up() {   # serve_up [OPTIONS...]
    PORT=$(free_port)
    mkdir -p -m 700 "$T/sock"
    SOCK=$T/sock/s.sock
    "$JS" serve --listen 127.0.0.1:$PORT --store "$T/store" --socket "$SOCK" --node-interval 0 "$@" \
        > "$T/serve.log" 2>&1 &
    SERVE_PID=$!
    _js_add_trap 'kill $SERVE_PID 2>/dev/null; wait $SERVE_PID 2>/dev/null' 
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/api/version" >/dev/null && return 0; sleep 0.1; done
    fail "serve did not start: $(cat "$T/serve.log")"
}
api() { curl -sf "http://127.0.0.1:$PORT$1"; }

stampede_events() {     # a small workflow as pegasus-monitord publishes it (JSON)
    python3 - <<'PY'
import json
wf, t = "0a114f53-f208-44da-9b5c-9c30edcf49c6", 1552869700.0
def ev(name, ts, **kw):
    d = {"event": name, "ts": ts, "xwf_id": wf}; d.update(kw); print(json.dumps(d))
ev("stampede.wf.plan", t, dax_label="1000genome", submit_hostname="submit1", user="alice")
ev("stampede.xwf.start", t + 1, restart_count=0)
for i, (job, code) in enumerate([("individuals_ID0000001", 0), ("individuals_ID0000002", 1)]):
    ev("stampede.job.info", t + 2, job_id=job, executable="/bin/individuals", type_desc="compute")
    ev("stampede.job_inst.main.start", t + 10 + i, job_id=job, job_inst_id=i + 1, sched_id="14988.%d" % i)
    ev("stampede.job_inst.host.info", t + 10 + i, job_id=job, job_inst_id=i + 1, hostname="workers1-%d" % i)
    ev("stampede.inv.end", t + 40 + i, job_id=job, job_inst_id=i + 1, executable="/bin/individuals",
       remote_cpu_time=12.5, dur=30.0 + i, exitcode=code, start_time=t + 10 + i)
    ev("stampede.job_inst.main.end", t + 41 + i, job_id=job, job_inst_id=i + 1, exitcode=code,
       panorama_extra={"kept": True})
ev("stampede.task.monitoring", t + 42, job_id="individuals_ID0000001", monitoring_event="darshan.perf",
   POSIX_module_data={"total_bytes": 403752, "agg_perf_by_slowest": 18.47})
ev("transfer.inv.go", t + 5, wf_uuid=wf, dag_job_id="stage_in_local_local_2_2", bytes_transferred=32248)
ev("stampede.xwf.end", t + 60, restart_count=0, status=0)
PY
}

test_repository_keeps_runs_and_stampede_events_and_answers_the_api() {
    serve_up || return 1
    JOBSCOPE_SERVE_SOCKET="$SOCK" "$JS" run -i 0.05 --job r1 --tag task=zip -o /dev/null -- \
        sh -c 'head -c 20000000 /dev/urandom | gzip -1 >/dev/null' || return 1
    JOBSCOPE_SERVE_SOCKET="$SOCK" "$JS" run -i 0.05 --job r2 -o ev2.jsonl -- sh -c 'sleep 0.3; exit 3'
    stampede_events > st.ndjson
    curl -sf -X POST --data-binary @st.ndjson "http://127.0.0.1:$PORT/api/events" >/dev/null || fail "post" || return 1
    sleep 0.3
    api "/api/jobs" > all.json && api "/api/jobs?state=failed" > failed.json &&
    api "/api/jobs?exe=dash&sort=peak_mem&order=desc" > dash.json &&
    api "/api/jobs/r1" > r1.json && api "/api/jobs/r1/events" > r1ev.json &&
    api "/api/workflows" > wfs.json &&
    api "/api/workflows/0a114f53-f208-44da-9b5c-9c30edcf49c6" > wf.json &&
    api "/api/events?name=stampede.*&limit=5" > page1.json || fail "API call failed" || return 1
    next=$(python3 -c 'import json; print(json.load(open("page1.json"))["next"])')
    api "/api/events?name=stampede.*&limit=5&after=$next" > page2.json || return 1
    api "/api/jobs?host=workers1-1" > host.json || return 1
    python3 - <<'PY' || return 1
import json
L = lambda f: json.load(open(f))
jobs = {j["job_id"]: j for j in L("all.json")["jobs"]}
assert set(jobs) >= {"r1", "r2", "individuals_ID0000001", "individuals_ID0000002"}, jobs.keys()
assert jobs["r1"]["state"] == "done" and jobs["r1"]["exit_code"] == 0 and jobs["r1"]["samples"] >= 3, jobs["r1"]
assert jobs["r2"]["exit_code"] == 3
s2 = jobs["individuals_ID0000002"]
assert s2["exit_code"] == 1 and s2["host"] == "workers1-1" and s2["cpu_time"] == 12.5 and s2["exe"] == "/bin/individuals", s2
failed = sorted(j["job_id"] for j in L("failed.json")["jobs"])
assert failed == ["individuals_ID0000002", "r2"], failed
assert [j["job_id"] for j in L("host.json")["jobs"]] == ["individuals_ID0000002"]
dash = L("dash.json")["jobs"]
assert {j["job_id"] for j in dash} == {"r1", "r2"} and dash[0]["peak_mem"] >= dash[1]["peak_mem"], dash
r1 = L("r1.json")
raw = L("r1ev.json")["events"]
samples = [e for e in raw if e["event"] == "kickstart.inv.online"]
assert len(r1["series"]["ts"]) == len(samples) and r1["summary"]["finished"], r1["summary"]
assert r1["tags"] == {"task": "zip"} and r1["end"]["seq"] == raw[-1]["seq"]
assert [e["seq"] for e in raw] == list(range(1, len(raw) + 1)), "events lost or reordered"
wfs = L("wfs.json")["workflows"]
w = L("wf.json")
assert w["workflow"]["label"] == "1000genome" and w["workflow"]["state"] == "done" and w["workflow"]["jobs"] == 3, w["workflow"]
assert w["workflow"]["failed"] == 1
names = [e["event"] for e in w["events"]]
assert "stampede.task.monitoring" in names and "transfer.inv.go" in names, names
ends = [e for e in w["events"] if e["event"] == "stampede.job_inst.main.end"]
assert ends[0]["panorama_extra"] == {"kept": True}, "unknown fields must be kept"
p1, p2 = L("page1.json"), L("page2.json")
assert len(p1["events"]) == 5 and all(e["event"]["event"].startswith("stampede.") for e in p1["events"] + p2["events"])
assert p2["events"][0]["id"] > p1["events"][-1]["id"] and len(p2["events"]) == 5 and p2["next"] is not None  # 14 stampede events: 5 + 5 + 4
PY
    # a running job: the list says so, and ?since= returns only newer points
    JOBSCOPE_SERVE_SOCKET="$SOCK" "$JS" run -i 0.1 --job slow -o /dev/null -- sleep 3 &
    local rp=$!
    sleep 1.2
    api "/api/jobs?state=running" > run.json && api "/api/jobs/slow" > s1.json || return 1
    local last
    last=$(python3 -c 'import json; print(json.load(open("s1.json"))["series"]["ts"][-1])')
    sleep 0.6
    api "/api/jobs/slow?since=$last" > s2.json || return 1
    wait $rp
    python3 - "$last" <<'PY' || return 1
import json, sys
last = float(sys.argv[1])
assert [j["job_id"] for j in json.load(open("run.json"))["jobs"]] == ["slow"]
s1, s2 = json.load(open("s1.json")), json.load(open("s2.json"))
assert s1["state"] == "running" and not s1["summary"]["finished"]
ts = s2["series"]["ts"]
assert s2["append"] and len(ts) >= 3 and min(ts) > last, ts
PY
    # stats and report read the server
    "$JS" stats --server "http://127.0.0.1:$PORT" --json -o st.json || fail "stats --server" || return 1
    python3 -c 'import json; s=json.load(open("st.json")); assert s["files"] >= 5, s["files"]' || return 1
    "$JS" report --server "http://127.0.0.1:$PORT" r1 -o r.html 2>/dev/null || fail "report --server" || return 1
    grep -q '"job_id":"r1"' r.html || fail "r1 not in the report" || return 1
    api "/api/jobs/nope" >/dev/null && fail "unknown job answered" && return 1
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/jobs?state=bogus")" = 400 ] || fail "bad state not 400" || return 1
}
