# Crash safety of jobscope serve: every point acknowledged over HTTP (2xx) is there after
# kill -9 of the server in the middle of the ingest and a restart on the same store.
# docs/serve.md, docs/store.md.
source "$ROOT/tests/helpers/serve.sh"

test_acknowledged_points_survive_kill_9_and_a_restart() {
    serve_start || return 1
    # Four writers post batches of 50 points (one series per batch, tag b) as fast as they
    # can; each batch is recorded only once the server acknowledged it.
    python3 - "$SERVE_PORT" > writer.log 2>&1 <<'PY' &
import http.client, json, sys, threading
port = int(sys.argv[1])
T0 = 1700000000000
def writer(w):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    out = open("acked.%d" % w, "w")
    b = w
    while True:
        pts = [{"metric": "crash.v", "timestamp": T0 + b * 1000 + k, "value": b * 100 + k,
                "tags": {"b": str(b), "w": str(w)}} for k in range(50)]
        try:
            c.request("POST", "/api/put", json.dumps(pts), {"Content-Type": "application/json"})
            r = c.getresponse(); r.read()
        except Exception:
            return
        if r.status == 204:
            out.write("%d\n" % b); out.flush()
        b += 4
ts = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
for t in ts: t.start()
for t in ts: t.join()
PY
    local wpid=$!
    _js_add_trap "kill $wpid 2>/dev/null"
    local i
    for i in $(seq 100); do [ "$(cat acked.* 2>/dev/null | wc -l)" -ge 40 ] && break; sleep 0.05; done
    sleep 0.3
    kill -9 "$SERVE_PID"
    wait "$SERVE_PID" 2>/dev/null
    wait "$wpid"
    local acked; acked=$(cat acked.* | wc -l)
    assert_ge "$acked" 40 "batches acknowledged before the kill" || return 1
    # restart on the same store
    serve_start s2 --store "$SERVE_STORE" || return 1
    curl -s "$SERVE_URL/api/query/last?timeseries=crash.v&resolve=true" > last.json
    python3 - <<'PY' || return 1
import glob, json
T0 = 1700000000000
acked = [int(l) for f in glob.glob("acked.*") for l in open(f)]
last = {r["tags"]["b"]: r for r in json.load(open("last.json"))}
missing = [b for b in acked if str(b) not in last]
wrong = [b for b in acked if str(b) in last and
         (last[str(b)]["timestamp"] != T0 + b * 1000 + 49 or float(last[str(b)]["value"]) != b * 100 + 49)]
assert not missing and not wrong, ("lost after kill -9", len(acked), missing[:5], wrong[:5])
print("ok: %d acknowledged batches (%d points) all there" % (len(acked), 50 * len(acked)))
PY
}

test_a_run_streaming_to_the_local_server_loses_nothing_when_it_crashes_and_restarts() {
    serve_start s --socket "$JOBSCOPE_SERVE_SOCKET" || return 1
    local store=$SERVE_STORE port=$SERVE_PORT
    "$JS" run -v -i 0.1 --spool-dir sp --flush-timeout 20 -o ev.jsonl -- sleep 3 2> err.txt &
    local js=$!
    sleep 1
    grep -q "streaming to the local server" err.txt || fail "not detected: $(cat err.txt)" || return 1
    kill -9 "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null
    sleep 0.8
    "$JS" serve --store "$store" --listen "127.0.0.1:$port" --socket "$JOBSCOPE_SERVE_SOCKET" --node-interval 0 \
        >> s2.log 2>&1 &
    SERVE_PID=$!
    _js_add_trap "kill -9 $SERVE_PID 2>/dev/null"
    wait $js || fail "the job's status changed: $(cat err.txt)" || return 1
    local job n got
    job=$(jq_py 'ev[0]["job_id"]' ev.jsonl)
    # one elapsed point per sample timestamp, each exactly once (a batch resent
    # after the crash overwrites the same timestamps; the final sample can fall
    # in the same millisecond as the last regular one, and then replaces it)
    n=$(jq_py 'len(set(round(s["ts"] * 1000) for s in samples))' ev.jsonl)
    got=$(curl -sg "$SERVE_URL/api/query?start=1h-ago&m=zimsum:0all-count:kickstart.inv.online.elapsed{job_id=$job}" |
          python3 -c 'import json,sys; d=json.load(sys.stdin); print(int(list(d[0]["dps"].values())[0]) if d else 0)')
    assert_eq "$got" "$n" "samples stored after a kill -9 and restart of the server mid-job" || return 1
    got=$(curl -sg "$SERVE_URL/api/query?start=1h-ago&m=zimsum:0all-count:jobscope.end.exit_code{job_id=$job}" |
          python3 -c 'import json,sys; d=json.load(sys.stdin); print(int(list(d[0]["dps"].values())[0]) if d else 0)')
    assert_eq "$got" 1 "the end record" || return 1
}

# The repository's copy of events: samples folded by its batches stay pending across them (a
# log beside repo.sqlite, docs/views.md); after kill -9 and a restart every sample acknowledged
# and committed is in the job's row and its events exactly once.
test_repository_samples_pending_at_kill_9_are_there_once_after_a_restart() {
    serve_start || return 1
    local store=$SERVE_STORE
    python3 - "$SERVE_PORT" <<'PY' || return 1
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
lines = [json.dumps({"event": "jobscope.start", "ts": 1700000000, "hostname": "n1", "job_id": "kj",
                     "pid": 9, "exe": "/bin/x"})]
lines += [json.dumps({"event": "kickstart.inv.online", "ts": 1700000001 + i, "hostname": "n1",
                      "job_id": "kj", "pid": 9, "rss": 1000 + i, "utime": i * 0.5})
          for i in range(3000)]
for k in range(0, len(lines), 500):
    c.request("POST", "/api/events", "\n".join(lines[k:k + 500]) + "\n",
              {"Content-Type": "application/x-ndjson"})
    r = c.getresponse(); r.read()
    assert r.status in (200, 204), r.status
PY
    sleep 0.3 # the last batch committed (20 ms), well before the idle write (1 s)
    local log=$store/repo.sqlite-pending
    [ -s "$log" ] && [ "$(stat -c %s "$log")" -gt 100000 ] ||
        fail "the samples were not pending: $(ls -l "$store")" || return 1
    kill -9 "$SERVE_PID"
    wait "$SERVE_PID" 2>/dev/null
    serve_start s2 --store "$store" || return 1
    grep -q "samples not yet in the repository at the last stop written" "$T/s2.log" ||
        fail "the restart did not say it replayed: $(cat "$T/s2.log")" || return 1
    local got
    got=$(curl -s "$SERVE_URL/api/jobs?job=kj" | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["samples"])')
    assert_eq "$got" 3000 "the job's samples after kill -9 and a restart" || return 1
    got=$(curl -s "$SERVE_URL/api/jobs/kj/events" |
          python3 -c 'import json,sys; e=json.load(sys.stdin); e=e.get("events", e) if isinstance(e, dict) else e; print(len([x for x in e if x.get("event") == "kickstart.inv.online"]), len(set(x.get("rss") for x in e if "rss" in x)))')
    assert_eq "$got" "3000 3000" "the job's samples, each once" || return 1
}

# Issue 23.8: one flipped byte at offset 12 of a log segment after three
# acknowledged puts and kill -9 lost all three batches silently.  Every record
# that checks out is kept, the damaged segment is set aside, and the log and
# /metrics say so.
test_a_damaged_log_after_kill_9_keeps_what_checks_out_and_says_so() {
    serve_start || return 1
    local b code
    for b in 1 2 3; do
        code=$(python3 -c 'import json,sys; b=int(sys.argv[1])
print(json.dumps([{"metric": "dmg.v", "timestamp": 1700000000000 + i * 1000, "value": b * 100 + i,
                   "tags": {"b": str(b)}} for i in range(20)]))' $b |
               curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' \
                   --data-binary @- "$SERVE_URL/api/put")
        assert_eq "$code" 204 "batch $b acknowledged" || return 1
    done
    kill -9 "$SERVE_PID"
    wait "$SERVE_PID" 2>/dev/null
    local seg store=$SERVE_STORE
    seg=$(ls "$store"/wal/*.wal | tail -1)
    python3 -c 'import sys; b=bytearray(open(sys.argv[1],"rb").read()); b[12]^=0x20; open(sys.argv[1],"wb").write(b)' "$seg"
    serve_start s2 --store "$store" || return 1
    curl -s "$SERVE_URL/api/query/last?timeseries=dmg.v&resolve=true" > last.json
    python3 - <<'PY' || return 1
import json
last = {r["tags"]["b"]: r for r in json.load(open("last.json"))}
for b in ("2", "3"):      # the first series' own record held the flipped byte
    assert b in last and last[b]["timestamp"] == 1700000019000 and float(last[b]["value"]) == int(b) * 100 + 19, (b, last)
PY
    grep -q "store: log segment .* is damaged" s2.log || fail "not in the log: $(cat s2.log)" || return 1
    ls "$store"/damaged/*.wal >/dev/null 2>&1 || fail "the damaged segment was not set aside" || return 1
    local n
    n=$(curl -s "$SERVE_URL/metrics" | awk '$1 == "jobscope_serve_store_damaged_log_segments_total" {print $2}')
    assert_eq "$n" 1 "damaged segments in /metrics" || return 1
}
