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
    # this server's pid, as it is now: a test may start two (84_summary)
    _js_add_trap "kill $SERVE_PID 2>/dev/null; wait $SERVE_PID 2>/dev/null"
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

status() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT$1"; }

# docs/views.md promises 400 for what the API does not take: unknown
# parameters, unknown sort keys and orders, values that do not parse or are
# out of range (issue 27 item 12), each with a JSON reason.
test_api_answers_400_to_unknown_parameters_and_bad_values() {
    serve_up || return 1
    local u bad=0
    for u in "/api/jobs?sort=bogus" "/api/jobs?order=sideways" "/api/jobs?limit=abc" \
             "/api/events?limit=abc&after=abc" "/api/events?after=abc" "/api/events?limit=-1" \
             "/api/jobs?xformations=mDiff" "/api/jobs?limit=0" "/api/jobs?limit=10001" \
             "/api/jobs?offset=-1" "/api/jobs?offset=1.5" "/api/jobs?since=yesterday" \
             "/api/jobs?state=bogus" "/api/jobs/x?max_points=abc" "/api/jobs/x/events?since=1" \
             "/api/aggregate?by=nope" "/api/aggregate?buckets=0" "/api/export?limit=abc" \
             "/api/workflows?x=1" "/api/nodes?x=1" "/api/workflows/w?x=1"; do
        local code
        code=$(status "$u")
        if [ "$code" != 400 ]; then echo "    $u answered $code" >&2; bad=1; fi
    done
    curl -s "http://127.0.0.1:$PORT/api/jobs?sort=bogus" | python3 -c '
import json, sys
e = json.load(sys.stdin)["error"]
assert e["code"] == 400 and "sort must be one of" in e["message"] and e["details"] == "bogus", e' || return 1
    curl -s "http://127.0.0.1:$PORT/api/jobs?xformations=mDiff" | grep -q "unknown parameter 'xformations'" || fail "no reason given" || return 1
    for u in "/api/jobs?sort=cpu_efficiency&order=asc&limit=5&offset=0" "/api/jobs?xformation=m&warning=io_bound&state=failed" \
             "/api/events?limit=5&after=0" "/api/aggregate?by=host&buckets=10&top=3" "/api/export?limit=5" "/api/workflows" "/api/nodes"; do
        [ "$(status "$u")" = 200 ] || { echo "    $u did not answer 200" >&2; bad=1; }
    done
    return $bad
}

# Search, filters, server-side sort and pages over a generated repository,
# checked against the same selection and order computed here from the whole
# list: NULLs last both ways, ties by row, pages that neither overlap nor
# miss a row; the counts.
test_api_search_filter_sort_and_pages_agree_with_an_independent_computation() {
    "$ROOT/$BUILD/bench/repo_bench" fill "$T/store" 3000 1 > fill.json || return 1
    serve_up || return 1
    api "/api/jobs?limit=10000&sort=job&order=asc" > all.json || return 1
    local q
    for q in "sort=cpu_efficiency&order=asc" "sort=peak_mem&order=desc" "sort=duration&order=desc&host=node007" \
             "q=job00012" "q=blast-3" "wf=montage-1" "xformation=xf_mD" "state=failed&sort=duration" \
             "state=running" "state=stopped" "warning=cpu_efficiency&sort=cpu_efficiency&order=asc" \
             "exe=prog1&user=user2" "since=1700010000&until=1700020000&sort=start&order=asc"; do
        api "/api/jobs?$q&limit=10000" > "q-$(echo "$q" | tr -c 'a-z0-9' _).json" || { fail "GET $q"; return 1; }
        for off in 0 700 1400 2100 2800; do
            api "/api/jobs?$q&limit=700&offset=$off" > "p-$(echo "$q" | tr -c 'a-z0-9' _)-$off.json" || return 1
        done
    done
    python3 - <<'PY' || return 1
import json
rows = json.load(open("all.json"))["jobs"]
assert len(rows) == 3000, len(rows)
def sel(q):
    p = dict(kv.split("=") for kv in q.split("&"))
    out = []
    for r in rows:
        if "q" in p and not (r["job_id"].startswith(p["q"]) or r["wf"].startswith(p["q"]) or (r["wf_label"] or "").startswith(p["q"])): continue
        if "wf" in p and not (r["wf"].startswith(p["wf"]) or (r["wf_label"] or "").startswith(p["wf"])): continue
        if "xformation" in p and not (r["xformation"] or "").startswith(p["xformation"]): continue
        for k in ("host", "user"):
            if k in p and r[k] != p[k]: break
        else:
            if "exe" in p and p["exe"] not in (r["exe"] or ""): continue
            st = p.get("state")
            if st == "running" and r["state"] != "running": continue
            if st == "failed" and not (r["state"] == "done" and r["exit_code"] != 0): continue
            if st == "stopped" and r["stopped_by"] is None: continue
            if "warning" in p and p["warning"] not in [w["kind"] for w in r["warnings"]]: continue
            if "since" in p and not (r["last"] or r["end"] or r["start"]) >= float(p["since"]): continue
            if "until" in p and not (r["start"] is not None and r["start"] <= float(p["until"])): continue
            out.append(r)
    key = {"cpu_efficiency": "cpu_efficiency"}.get(p.get("sort", "start"), p.get("sort", "start"))
    desc = p.get("order", "desc") == "desc"
    known = sorted([r for r in out if r[key] is not None], key=lambda r: (r[key], r["row"]), reverse=desc)
    return known + sorted([r for r in out if r[key] is None], key=lambda r: r["row"], reverse=desc)
for q in ["sort=cpu_efficiency&order=asc", "sort=peak_mem&order=desc", "sort=duration&order=desc&host=node007",
          "q=job00012", "q=blast-3", "wf=montage-1", "xformation=xf_mD", "state=failed&sort=duration",
          "state=running", "state=stopped", "warning=cpu_efficiency&sort=cpu_efficiency&order=asc",
          "exe=prog1&user=user2", "since=1700010000&until=1700020000&sort=start&order=asc"]:
    tag = "".join(c if c in "abcdefghijklmnopqrstuvwxyz0123456789" else "_" for c in q + "\n")
    got = json.load(open("q-%s.json" % tag))
    want = sel(q)
    assert got["total"] == len(want), (q, got["total"], len(want))
    assert [r["job_id"] for r in got["jobs"]] == [r["job_id"] for r in want], (q, [r["job_id"] for r in got["jobs"]][:5], [r["job_id"] for r in want][:5])
    paged = sum((json.load(open("p-%s-%d.json" % (tag, o)))["jobs"] for o in (0, 700, 1400, 2100, 2800)), [])
    assert [r["job_id"] for r in paged] == [r["job_id"] for r in want], q
    assert len(want) > 0, ("the query selects nothing: no test", q)
print("13 queries agree")
PY
}

# An idle dashboard tab revalidates the list: the same list at the same
# repository version answers 304 with no body; a new event changes it.
test_jobs_list_answers_304_until_a_job_changes() {
    serve_up || return 1
    stampede_events > st.ndjson
    curl -sf -X POST --data-binary @st.ndjson "http://127.0.0.1:$PORT/api/events" >/dev/null || return 1
    local etag code
    etag=$(curl -s -D - -o first.json "http://127.0.0.1:$PORT/api/jobs?limit=10" | tr -d '\r' | sed -n 's/^ETag: //Ip')
    [ -n "$etag" ] || fail "no ETag" || return 1
    code=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' -H "If-None-Match: $etag" "http://127.0.0.1:$PORT/api/jobs?limit=10")
    assert_eq "$code" "304 0" "an unchanged list: 304, no body" || return 1
    echo '{"event":"jobscope.start","ts":1552869800,"job_id":"late","hostname":"h"}' |
        curl -sf -X POST --data-binary @- "http://127.0.0.1:$PORT/api/events" >/dev/null || return 1
    code=$(curl -s -o second.json -w '%{http_code}' -H "If-None-Match: $etag" "http://127.0.0.1:$PORT/api/jobs?limit=10")
    assert_eq "$code" 200 "a changed list" || return 1
    grep -q '"late"' second.json || fail "the new job is not in the list" || return 1
}

# stats --server reads the jobs a page at a time (GET /api/export) and
# gives what reading the same jobs from their files gives.
test_stats_server_equals_stats_of_the_files() {
    python3 "$ROOT/tests/helpers/gen_jobs.py" jobs 300 12 || return 1
    serve_up || return 1
    "$JS" import --server "http://127.0.0.1:$PORT" -q jobs/*.jsonl || return 1
    "$JS" stats jobs --json -o files.json || return 1
    "$JS" stats --server "http://127.0.0.1:$PORT" --json -o server.json || return 1
    python3 - <<'PY' || return 1
import json
a, b = json.load(open("files.json")), json.load(open("server.json"))
assert a["files"] == b["files"] == 300, (a["files"], b["files"])
ga = {g["group"]: g for g in a["groups"]}; gb = {g["group"]: g for g in b["groups"]}
assert sorted(ga) == sorted(gb) == ["align_x", "reduce_x", "train_x"], sorted(gb)
for k in ga:
    assert ga[k]["distributions"] == gb[k]["distributions"], k
    assert ga[k]["advice"] == gb[k]["advice"], k
PY
}
