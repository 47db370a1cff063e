# 83_dashboard.sh — the dashboard of `jobscope serve` and the reports in a real
# headless Chromium (Debian's), driven by playwright-core (tests/browser/
# dashboard.js): no console error, the jobs list filters and sorts, a running
# job's chart gains points while it runs, a workflow page shows its jobs, a
# report opens offline, and the load time of a job with 10k samples per
# series.  Screenshots are kept in $BUILD/test-artifacts/.

source "$ROOT/tests/helpers/publish_servers.sh"
source "$ROOT/tests/integration/82_repo.sh"     # serve_up, api, stampede_events

SHOTS="$ROOT/$BUILD/test-artifacts"

browser() {
    need chromium || return 77
    need node || return 77
    [ -d "$ROOT/web/node_modules/playwright-core" ] || { echo "    skip: web/node_modules missing (make)" >&2; return 77; }
    mkdir -p "$SHOTS"
    node "$ROOT/tests/browser/dashboard.js" "$@"
}

test_dashboard_loads_without_console_errors_and_the_jobs_list_filters() {
    need chromium || return 77
    serve_up || return 1
    for i in 1 2; do
        JOBSCOPE_SERVE_SOCKET="$SOCK" "$JS" run -i 0.05 --job sh$i -o /dev/null -- sh -c "head -c ${i}0000000 /dev/urandom | gzip -1 >/dev/null" || return 1
    done
    head -c 20000000 /dev/urandom > data
    JOBSCOPE_SERVE_SOCKET="$SOCK" "$JS" run -i 0.05 --job gz1 -o /dev/null -- gzip -1 -k -f data || return 1
    browser jobs "http://127.0.0.1:$PORT" "$SHOTS"
}

test_dashboard_running_job_chart_gains_points_while_it_runs() {
    need chromium || return 77
    serve_up || return 1
    JOBSCOPE_SERVE_SOCKET="$SOCK" "$JS" run -i 0.2 --job live -o /dev/null -- \
        sh -c 'for i in $(seq 40); do head -c 2000000 /dev/urandom | gzip -1 >/dev/null; sleep 0.1; done' &
    local rp=$!
    for _ in $(seq 50); do api "/api/jobs?state=running" | grep -q '"live"' && break; sleep 0.1; done
    browser live "http://127.0.0.1:$PORT" "$SHOTS" live
    local rc=$?
    kill $rp 2>/dev/null; wait $rp 2>/dev/null
    return $rc
}

test_dashboard_workflow_page_shows_its_jobs_and_stampede_events() {
    need chromium || return 77
    serve_up || return 1
    stampede_events > st.ndjson
    curl -sf -X POST --data-binary @st.ndjson "http://127.0.0.1:$PORT/api/events" >/dev/null || return 1
    browser workflow "http://127.0.0.1:$PORT" "$SHOTS" 0a114f53-f208-44da-9b5c-9c30edcf49c6
}

test_stampede_events_through_rabbitmq_reach_the_workflow_page() {
    need chromium || return 77
    have_pika || return 77
    rmq_start || return $?
    serve_up --consume "amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2f/monitoring" || return 1
    # the consumer declares its queue; wait for it before publishing
    for _ in $(seq 100); do rmq_api GET /api/queues/%2f/jobscope-serve >/dev/null 2>&1 && break; sleep 0.1; done
    stampede_events > st.ndjson
    # pegasus-monitord publishes one JSON event per message, routing key = event name
    $PIKA_PY - "$RMQ_PORT" st.ndjson <<'PY' || return 1
import json, sys, pika
c = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", int(sys.argv[1])))
ch = c.channel()
ch.exchange_declare("monitoring", exchange_type="topic", durable=True)
for line in open(sys.argv[2]):
    ev = json.loads(line)
    ch.basic_publish("monitoring", ev["event"], line.strip(), pika.BasicProperties(content_type="application/json", delivery_mode=2))
c.close()
PY
    local wf=0a114f53-f208-44da-9b5c-9c30edcf49c6
    for _ in $(seq 100); do
        api "/api/workflows/$wf" > wf.json 2>/dev/null && python3 -c 'import json,sys; w=json.load(open("wf.json")); sys.exit(0 if w["workflow"]["state"]=="done" and len(w["events"])==15 else 1)' && break
        sleep 0.1
    done
    python3 - <<'PY' || return 1
import json
w = json.load(open("wf.json"))
assert w["workflow"]["label"] == "1000genome" and w["workflow"]["state"] == "done", w["workflow"]
assert sorted(j["job_id"] for j in w["jobs"]) == ["individuals_ID0000001", "individuals_ID0000002", "stage_in_local_local_2_2"], w["jobs"]
assert len(w["events"]) == 15, len(w["events"])
PY
    browser workflow "http://127.0.0.1:$PORT" "$SHOTS" $wf
}

test_report_file_opens_offline_in_the_browser() {
    need chromium || return 77
    "$JS" run -i 0.05 --job rep -o ev.jsonl -- sh -c \
        'for i in 1 2 3 4; do "$0" emit loss 0.$i; head -c 5000000 /dev/urandom | gzip -1 >/dev/null; done' "$JS" || return 1
    "$JS" report ev.jsonl -o "$T/r.html" 2>/dev/null || return 1
    browser report "$T/r.html" "$SHOTS"
}

test_dashboard_shows_a_job_with_10k_samples_per_series() {
    need chromium || return 77
    serve_up || return 1
    python3 - <<'PY' > big.ndjson
import json, math
t = 1700000000.0
def ev(name, ts, **kw):
    d = {"event": name, "ts": ts, "hostname": "n1", "job_id": "big", "wf_uuid": None}; d.update(kw); print(json.dumps(d))
ev("jobscope.start", t, exe="/bin/big", cmd="big", cpus_available=4)
for i in range(10000):
    ev("kickstart.inv.online", t + i, elapsed=i, cpu_percent=100 + 90 * math.sin(i / 300), rss=1000000 + i * 10,
       vm=2000000 + i * 10, swap=0, rchar=i * 1048576, wchar=i * 524288, read_bytes=i * 4096, write_bytes=i * 8192,
       utime=i * 0.9, stime=i * 0.1, procs=3, threads=3 + i % 5, iowait=i * 0.01, seq=i + 2)
ev("jobscope.end", t + 10000, exit_type="exited", exit_code=0, start=t, end=t + 10000, duration=10000,
   cpu_time=10000, cores=4, cpu_efficiency=0.25, peaks={"rss": {"value": 1100000}})
PY
    curl -sf -X POST --data-binary @big.ndjson "http://127.0.0.1:$PORT/api/events" > post.json || fail "post: $(cat post.json)" || return 1
    local t0 t1
    t0=$(date +%s%N); api "/api/jobs/big" > big.json; t1=$(date +%s%N)
    echo "GET /api/jobs/big: $(( (t1 - t0) / 1000000 )) ms, $(wc -c < big.json) bytes"
    browser load "http://127.0.0.1:$PORT" "$SHOTS" big > load.json || { cat load.json; return 1; }
    cat load.json
    local ms
    ms=$(python3 -c 'import json; print(json.load(open("load.json"))["load_ms"])')
    # The < 1 s target is a figure (docs/views.md), not a test: these machines
    # are noisy.  The test only guards against a page that never finishes.
    echo "dashboard load time, best of 3: $ms ms"
    assert_le "$ms" 20000 "dashboard load time (ms, best of 3) of a 10k-sample job" || return 1
}

# A repository of 100,000 jobs, filled through the repository's own ingest
# (bench/repo/repo_bench): the list shows the count and a screenful of rows,
# scrolls to its very end, sorts on the server, searches by job id and by
# workflow label, and an idle tab only revalidates (304, no rows); the
# overview groups it.  The server-side times are figures of the bench
# (bench/repo/run), not assertions here.
test_dashboard_at_100000_jobs_lists_searches_sorts_and_idles_cheaply() {
    need chromium || return 77
    [[ $BUILD == *asan* ]] && { echo "    skip: a scale test (100,000 jobs) under ASan" >&2; return 77; }
    "$ROOT/$BUILD/bench/repo_bench" fill "$T/store" 100000 0 || return 1
    serve_up || return 1
    local t0 t1
    t0=$(date +%s%N); api "/api/jobs?q=job00123&limit=100" > s.json || return 1; t1=$(date +%s%N)
    echo "search over 100,000 jobs: $(( (t1 - t0) / 1000000 )) ms with curl (the server-side figure is in bench/repo/run)"
    assert_eq "$(python3 -c 'import json; print(json.load(open("s.json"))["total"])')" 100 || return 1
    browser big "http://127.0.0.1:$PORT" "$SHOTS" > big.json || { cat big.json; return 1; }
    cat big.json
}

# A finished job's page: bars against its allocation (the --tags here),
# notes and the next-time request as the API computes them, the allocation
# drawn on the charts, the x axis as time since the start, the zone switch.
test_dashboard_job_page_shows_bars_notes_and_allocation_lines() {
    need chromium || return 77
    serve_up || return 1
    JOBSCOPE_SERVE_SOCKET="$SOCK" "$JS" run -q -i 0.1 --job page1 --tag request_cpus=2 --tag request_memory=256M \
        -o /dev/null -- sh -c 'head -c 30000000 /dev/urandom | gzip -1 >/dev/null; sleep 0.5' || return 1
    browser jobpage "http://127.0.0.1:$PORT" "$SHOTS" page1 > jp.json || { cat jp.json; return 1; }
    cat jp.json
}

# A Slurm job of several runs (two nodes, a batch script and two steps): its
# page is the whole job (bars against both nodes' allocation) with its
# nodes, steps and runs; a run's link opens the run alone.
test_dashboard_job_of_several_runs_shows_the_whole_and_each_run() {
    need chromium || return 77
    serve_up || return 1
    python3 "$ROOT/tests/helpers/slurm_job_events.py" 500 > job.ndjson
    curl -sf -X POST --data-binary @job.ndjson "http://127.0.0.1:$PORT/api/events" > post.json || fail "post: $(cat post.json)" || return 1
    browser runs "http://127.0.0.1:$PORT" "$SHOTS" 500 > runs.json || { cat runs.json; return 1; }
    cat runs.json
}

# A workflow of 600 jobs with up to 40 at a time: the Gantt packs them into
# lanes (its height follows the concurrency, not the number of jobs), has a
# time axis, opens a job on click; a stampede event with a 3,000-character
# field neither widens the page nor shows its JSON before it is asked for.
test_dashboard_workflow_gantt_stays_readable_at_600_jobs() {
    need chromium || return 77
    serve_up || return 1
    python3 - > wf600.ndjson <<'PY'
import json
wf, t = "5d3c2b1a-0000-4000-8000-000000000600", 1700000000.0
print(json.dumps({"event": "stampede.wf.plan", "ts": t, "xwf_id": wf, "dax_label": "montage-600", "user": "alice"}))
print(json.dumps({"event": "stampede.xwf.start", "ts": t, "xwf_id": wf}))
print(json.dumps({"event": "stampede.task.monitoring", "ts": t + 5, "xwf_id": wf, "job_id": "job000",
                  "monitoring_event": "darshan.perf", "payload": "x" * 3000}))
for i in range(600):
    s = t + (i // 40) * 60 + (i % 40) * 0.5
    a = {"wf_uuid": wf, "job_id": "job%03d" % i, "hostname": "n%d" % (i % 8), "xformation": "mProject" if i % 3 else "mDiff"}
    print(json.dumps(dict(a, event="jobscope.start", ts=s, exe="/bin/mProject", cmd="mProject", cpus_available=1)))
    print(json.dumps(dict(a, event="jobscope.end", ts=s + 50, exit_type="exited", exit_code=1 if i % 50 == 7 else 0,
                          start=s, end=s + 50, duration=50, cpu_time=40, cores=1, peaks={"rss": {"value": 1000 + i}})))
print(json.dumps({"event": "stampede.xwf.end", "ts": t + 1000, "xwf_id": wf, "status": 0}))
PY
    curl -sf -X POST --data-binary @wf600.ndjson "http://127.0.0.1:$PORT/api/events" > post.json || fail "post: $(cat post.json)" || return 1
    browser gantt "http://127.0.0.1:$PORT" "$SHOTS" 5d3c2b1a-0000-4000-8000-000000000600 > g.json || { cat g.json; return 1; }
    cat g.json
}

# A report of 200 jobs draws the jobs in view, not 1,400 charts: a
# comparison table (sortable) first; a job's charts appear when it is
# scrolled to.
test_report_of_200_jobs_draws_on_demand_and_compares_them() {
    need chromium || return 77
    python3 "$ROOT/tests/helpers/gen_jobs.py" jobs 200 12 || return 1
    "$JS" report jobs/*.jsonl -o "$T/many.html" 2>/dev/null || return 1
    browser reports "$T/many.html" "$SHOTS" 200 > r.json || { cat r.json; return 1; }
    cat r.json
}

# An executable named "/bin/<!--<script>" once left a blank page: the JSON
# embedded in the report escapes '<'.
test_report_of_a_job_named_like_markup_opens_and_shows_the_name() {
    need chromium || return 77
    python3 - > x.jsonl <<'PY'
import json
ev = lambda **k: print(json.dumps(k))
ev(event="jobscope.start", ts=1.0, job_id="x<y", exe="/bin/<!--<script>", cmd="a</script><script>alert(1)</script>")
ev(event="kickstart.inv.online", ts=2.0, job_id="x<y", exe="/bin/<!--<script>", rss=100, procs=1, utime=1, stime=0)
ev(event="jobscope.end", ts=3.0, job_id="x<y", exe="/bin/<!--<script>", exit_type="exited", exit_code=0, start=1, end=3, duration=2, cpu_time=1)
PY
    "$JS" report x.jsonl -o "$T/x.html" 2>/dev/null || return 1
    ! grep -q '<!--<script>' "$T/x.html" || fail "raw markup in the report" || return 1
    browser report-escaped "$T/x.html" "$SHOTS" > r.json || { cat r.json; return 1; }
    cat r.json
}
