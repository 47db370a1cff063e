# jobscope serve, the ingest side: OpenTSDB /api/put (exact answers and errors), Dragon's
# /api/metrics, the Influx line protocol, NDJSON events, local runs streaming through the
# well-known socket, the jobscope:// sink across an outage, `jobscope import`, and the
# options / config file.  docs/serve.md.
source "$ROOT/tests/helpers/serve.sh"

# lookup METRIC: the series of METRIC as "k=v,k=v" lines, sorted
lookup() {
    curl -s "$SERVE_URL/api/search/lookup?m=$1&limit=100000" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for r in sorted(d["results"], key=lambda r: sorted(r["tags"].items())):
    assert all(isinstance(v, str) for v in r["tags"].values()), r
    print(",".join("%s=%s" % kv for kv in sorted(r["tags"].items())))'
}

test_serve_help_documents_every_option() {
    "$JS" serve --help > help.txt || return 1
    local opt
    for opt in listen socket store retention max-size token-file peers peers-file peer-timeout \
               forward consume node-interval body-limit threads spool-dir config verbose help; do
        grep -q -- "--$opt" help.txt || fail "--$opt is not in 'jobscope serve --help'" || return 1
    done
    # the options of a --consume URL (consume.c), in --help and the man page
    for opt in queue= key= prefetch=; do
        grep -q -- "$opt" help.txt || fail "--consume's $opt is not in 'jobscope serve --help'" || return 1
        grep -q -- "$opt" "$ROOT/man/jobscope-serve.1.scd" || fail "--consume's $opt is not in the man page" || return 1
    done
    "$JS" serve --no-such-option 2> err.txt; assert_eq $? 125 "bad option" || return 1
    "$JS" serve --retention 3 parsecs 2> err.txt; assert_eq $? 125 "stray argument" || return 1
    "$JS" serve --retention lots 2> err.txt; assert_eq $? 125 "bad duration" || return 1
    assert_match "$(cat err.txt)" "retention 'lots'" || return 1
}

test_serve_answers_version_on_tcp_and_on_the_unix_socket() {
    serve_start || return 1
    local v
    v=$(curl -s "$SERVE_URL/api/version")
    assert_match "$v" '"version":"2\.4' || return 1
    v=$(curl -s --unix-socket "$SERVE_SOCK" http://localhost/api/version)
    assert_match "$v" '"version":"2\.4' || return 1
    assert_eq "$(stat -c %a "$(dirname "$SERVE_SOCK")")" 700 "socket directory mode" || return 1
    serve_stop || return 1
    [ ! -e "$SERVE_SOCK" ] || fail "socket left behind after a clean stop" || return 1
    # a socket directory others can enter is refused
    mkdir -m 755 open
    "$JS" serve --store st --listen none --socket "$T/open/serve.sock" 2> err.txt
    assert_eq $? 125 "socket in a 0755 directory" || return 1
    assert_match "$(cat err.txt)" "mode 0700" || return 1
}

test_put_single_array_summary_details_answers() {
    serve_start || return 1
    local r
    r=$(http POST /api/put '{"metric":"sys.cpu.nice","timestamp":1346846400,"value":18,"tags":{"host":"web01"}}')
    assert_eq "$r" "204 " "single point" || return 1
    r=$(http POST /api/put '[{"metric":"sys.cpu.nice","timestamp":1346846401000,"value":"9.5","tags":{"host":"web01","dc":"lga"}},
                             {"metric":"sys.cpu.nice","timestamp":1346846402,"value":1e3,"tags":{"host":"web02"}}]')
    assert_eq "$r" "204 " "array with ms timestamp and string value" || return 1
    r=$(http POST '/api/put?summary' '[{"metric":"m.a","timestamp":1346846400,"value":1,"tags":{"h":"x"}}]')
    assert_eq "$r" '200 {"success":1,"failed":0}' "summary" || return 1
    r=$(http POST '/api/put?details' '[{"metric":"m.a","timestamp":1346846400,"value":1,"tags":{"h":"x"}},
                                      {"metric":"m.a","timestamp":1346846400,"value":"NaN","tags":{"h":"x"}},
                                      {"metric":"m.a","timestamp":1346846400,"value":2},
                                      {"metric":"bad name!","timestamp":1346846400,"value":2,"tags":{"h":"x"}},
                                      {"metric":"m.a","timestamp":12345678901234,"value":2,"tags":{"h":"x"}}]')
    python3 - "$r" <<'PY' || return 1
import json, sys
code, _, body = sys.argv[1].partition(" ")
d = json.loads(body)
assert code == "400", code
assert d["success"] == 1 and d["failed"] == 4, d
errs = [e["error"] for e in d["errors"]]
assert "NaN" in errs[0] or "finite" in errs[0], errs
assert "tags" in errs[1].lower(), errs
assert "metric" in errs[2].lower(), errs
assert "timestamp" in errs[3].lower(), errs
assert d["errors"][2]["datapoint"]["metric"] == "bad name!", d
PY
    r=$(http POST /api/put '[{"metric":"m.b","timestamp":1346846400,"value":1,"tags":{"h":"x"}},{"metric":"m.b","value":1,"tags":{"h":"x"}}]')
    assert_match "$r" '^400 \{"error":\{"code":400,"message":"1 of 2 data points' "plain error body" || return 1
    # what was acknowledged is there, tag values as strings
    assert_eq "$(lookup 'sys.cpu.nice' | tr '\n' ' ')" "dc=lga,host=web01 host=web01 host=web02 " || return 1
    assert_eq "$(lookup 'm.b' | tr '\n' ' ')" "h=x " "valid point of a partly bad batch stored" || return 1
    r=$(curl -s "$SERVE_URL/api/query/last?timeseries=sys.cpu.nice%7Bhost=web02%7D")
    assert_match "$r" '"timestamp":1346846402000,"value":"1000"' "last point" || return 1
}

test_put_rounds_fractional_seconds_to_the_nearest_millisecond_half_away_from_zero() {
    serve_start || return 1
    local r h ts want
    # seconds below 1e10 are scaled to milliseconds and rounded as llround
    # does (a half goes up); 13 digits are milliseconds already
    for h in "a 1346846400.0005 1346846400001" "b 1346846400.0004 1346846400000" \
             "c 1346846400.9996 1346846401000" "d 0.0015 2" "e 1346846400000.5 1346846400001" \
             "f 1346846400123.49 1346846400123"; do
        set -- $h
        r=$(http POST /api/put "{\"metric\":\"r.ms\",\"timestamp\":$2,\"value\":1,\"tags\":{\"h\":\"$1\"}}")
        assert_eq "$r" "204 " "timestamp $2" || return 1
        r=$(curl -s "$SERVE_URL/api/query/last?timeseries=r.ms%7Bh=$1%7D")
        assert_match "$r" "\"timestamp\":$3," "timestamp $2 stored as $3 ms" || return 1
    done
}

test_put_refuses_malformed_bodies_with_opentsdb_errors() {
    serve_start || return 1
    local body r
    for body in '' 'not json' '[1,2' '"x"' '42' '[[]]' '{"metric":1}' '{"metric":"a","value":{},"tags":{"h":"x"},"timestamp":1}' \
                '{"metric":"a","value":1,"tags":{"h":[1]},"timestamp":1}' '{"metric":"a","value":1,"tags":{"h":"x"},"timestamp":-5}'; do
        r=$(http POST /api/put "$body")
        assert_match "$r" '^400 \{"error":\{"code":400,"message":' "body '$body'" || return 1
    done
    r=$(http GET /api/put)
    assert_match "$r" '^405 \{"error":\{"code":405' "GET /api/put" || return 1
    r=$(http GET /api/nothing)
    assert_match "$r" '^404 \{"error":\{"code":404' "unknown endpoint" || return 1
    assert_match "$(curl -s "$SERVE_URL/api/version")" '"version"' "still answering" || return 1
}

test_gzip_and_deflate_bodies_are_inflated_within_the_body_limit() {
    serve_start s --body-limit 64K || return 1
    printf 'cpu,host=a usage=1 1700000000000000000\ncpu,host=b usage=2 1700000000000000000\n' | gzip > lp.gz
    assert_eq "$(curl -s -w '%{http_code}' -H 'Content-Encoding: gzip' --data-binary @lp.gz "$SERVE_URL/write")" 204 || return 1
    assert_eq "$(lookup cpu.usage | tr '\n' ' ')" "host=a host=b " || return 1
    printf '{"metric":"z.v","timestamp":1700000000,"value":1,"tags":{"h":"x"}}' |
        python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read()))' > put.z
    assert_eq "$(curl -s -w '%{http_code}' -H 'Content-Encoding: deflate' --data-binary @put.z "$SERVE_URL/api/put")" 204 || return 1
    # a small body that inflates beyond the limit (1 MiB of zeros, ~1 KiB compressed)
    head -c 1048576 /dev/zero | gzip -9 > bomb.gz
    assert_match "$(curl -s -w ' %{http_code}' -H 'Content-Encoding: gzip' --data-binary @bomb.gz "$SERVE_URL/write")" '"code":413.* 413$' || return 1
    head -c $(( $(stat -c %s lp.gz) - 10 )) lp.gz > cut.gz
    assert_match "$(curl -s -w ' %{http_code}' -H 'Content-Encoding: gzip' --data-binary @cut.gz "$SERVE_URL/write")" ' 400$' "truncated" || return 1
    assert_match "$(curl -s -w ' %{http_code}' -H 'Content-Encoding: br' --data-binary @lp.gz "$SERVE_URL/write")" ' 415$' || return 1
}

test_dragon_metrics_body_answers_201_with_counts() {
    serve_start || return 1
    local r
    r=$(http POST /api/metrics '{"timestamp":1722010226,"dps":[{"metric":"load_average","value":1.5,"tags":{"host":"n1"}},
                                {"metric":"user_metric","value":3},{"metric":"bad","value":"x","tags":{"host":"n1"}}]}')
    python3 - "$r" <<'PY' || return 1
import json, sys
code, _, body = sys.argv[1].partition(" ")
d = json.loads(body)
assert code == "201", code
assert d["success"] == 2 and d["failed"] == 1 and len(d["errors"]) == 1, d
PY
    assert_eq "$(lookup load_average)" "host=n1" || return 1
    # a point without tags is tagged with the server's host
    assert_eq "$(lookup user_metric)" "host=$(hostname)" || return 1
    # Telemetry().add_data(name, value, tagk=None, tagv=None) sends a None tag
    r=$(http POST /api/metrics '{"timestamp":1722010227.5,"dps":[{"metric":"py_metric","value":2,"tags":{"null":null}},
                                {"metric":"py_metric2","value":2,"tags":{"gpu":"0","x":null}}]}')
    assert_match "$r" '^201 \{"success":2,"failed":0' || return 1
    assert_eq "$(lookup py_metric)" "host=$(hostname)" || return 1
    assert_eq "$(lookup py_metric2)" "gpu=0" || return 1
    r=$(http POST /api/metrics '{"dps":"no"}')
    assert_match "$r" '^400 ' || return 1
}

test_influx_line_protocol_on_write() {
    serve_start || return 1
    local r
    r=$(printf 'cpu,host=a,dc=x\\ y usage=3.5,idle=1i,ok=t 1700000000000000000\n# comment\n\nmem,host=a used=10 1700000001000000000\n' |
        curl -s -w ' %{http_code}' --data-binary @- "$SERVE_URL/write")
    assert_eq "$r" " 204" || return 1
    assert_eq "$(lookup cpu.usage)" "dc=x y,host=a" "escaped space in a tag value" || return 1
    assert_eq "$(lookup cpu.idle)" "dc=x y,host=a" || return 1
    r=$(printf 'x,host=a v=1 1700000000\n' | curl -s -w ' %{http_code}' --data-binary @- "$SERVE_URL/write?precision=s")
    assert_eq "$r" " 204" || return 1
    r=$(curl -s "$SERVE_URL/api/query/last?timeseries=x.v%7Bhost=a%7D")
    assert_match "$r" '"timestamp":1700000000000' "precision=s" || return 1
    r=$(printf 'cpu,host=a usage=1\ngarbage\n' | curl -s -w ' %{http_code}' --data-binary @- "$SERVE_URL/write")
    assert_match "$r" '"code":400.*line 2' "bad line reported" || return 1
}

test_events_become_series_with_string_tags() {
    serve_start || return 1
    cat > ev.jsonl <<'EOF'
{"event":"kickstart.inv.online","ts":1700000000.5,"hostname":"n1","wf_uuid":"w-1","site":null,"rank":3,"job_id":"j1","pid":42,"rss":1000,"utime":1.5,"cg_io":[],"seq":2}
{"event":"kickstart.inv.online.gpu.stats","ts":1700000001,"hostname":"n1","job_id":"j1","rank":0,"id":1,"uuid":"GPU-abc","gpu_utilization":50,"seq":3}
{"event":"jobscope.metric","ts":1700000002,"hostname":"n1","job_id":"j1","rank":0,"name":"loss","value":0.25,"tags":{"phase":"train"},"level":1,"seq":4}
{"event":"jobscope.start","ts":1700000000,"hostname":"n1","job_id":"j1","rank":0,"rlimits":{"nofile":{"soft":1024,"hard":null}},"seq":1}
EOF
    local r
    r=$(curl -s -w ' %{http_code}' --data-binary @ev.jsonl "$SERVE_URL/api/events")
    assert_match "$r" '"accepted":4,"failed":0' || return 1
    assert_eq "$(lookup kickstart.inv.online.rss)" "host=n1,job_id=j1,rank=3,wf_uuid=w-1" || return 1
    assert_eq "$(lookup kickstart.inv.online.gpu.stats.gpu_utilization)" "gpu=1,gpu_uuid=GPU-abc,host=n1,job_id=j1,rank=0" || return 1
    assert_eq "$(lookup jobscope.metric.loss)" "host=n1,job_id=j1,phase=train,rank=0" || return 1
    assert_eq "$(lookup jobscope.start.rlimits.nofile.soft)" "host=n1,job_id=j1,rank=0" "nested numbers" || return 1
    r=$(curl -s "$SERVE_URL/api/query/last?timeseries=kickstart.inv.online.utime%7Bjob_id=j1%7D")
    assert_match "$r" '"timestamp":1700000000500,"value":"1.5"' || return 1
    # fields that are tags or bookkeeping are no series
    r=$(curl -s "$SERVE_URL/api/suggest?type=metrics&q=kickstart.inv.online.&max=100")
    assert_eq "$(echo "$r" | grep -c '\.seq\|\.rank"\|\.ts"')" 0 "$r" || return 1
    r=$(printf '{"event":"x","v":1}\nnot json\n{"no_event":1}\n' | curl -s -w ' %{http_code}' --data-binary @- "$SERVE_URL/api/events")
    assert_match "$r" '"accepted":1,"failed":2.* 400$' || return 1
}

test_run_streams_every_event_to_the_local_server() {
    serve_start s --socket "$JOBSCOPE_SERVE_SOCKET" || return 1
    "$JS" run -v -i 0.2 -o ev.jsonl -- sh -c 'sleep 1' 2> err.txt || return 1
    grep -q "streaming to the local server" err.txt || fail "no auto-detection: $(cat err.txt)" || return 1
    local n_ev n_srv job
    n_ev=$(jq_py 'len(ev)' ev.jsonl)
    job=$(jq_py 'ev[0]["job_id"]' ev.jsonl)
    # every sample is a point of kickstart.inv.online.rss for this job
    n_srv=$(curl -s "$SERVE_URL/api/query/last?timeseries=kickstart.inv.online.rss%7Bjob_id=$job%7D" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
    assert_eq "$n_srv" 1 "series of the job" || return 1
    python3 - "$SERVE_URL" "$job" "$n_ev" <<'PY' || return 1
import json, sys, urllib.request
url, job, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
# every event of the file reached the server
m = urllib.request.urlopen(url + "/metrics").read().decode()
ev = [l for l in m.splitlines() if l.startswith("jobscope_serve_ingested_events_total ")]
assert ev and int(float(ev[0].split()[1])) == n, (ev, n)
PY
    # --no-serve: nothing more arrives
    local before after
    before=$(curl -s "$SERVE_URL/metrics" | awk '/^jobscope_serve_ingested_events_total /{print $2}')
    "$JS" run --no-serve -v -i 0.2 -o ev2.jsonl -- true 2> err2.txt || return 1
    after=$(curl -s "$SERVE_URL/metrics" | awk '/^jobscope_serve_ingested_events_total /{print $2}')
    assert_eq "$after" "$before" "--no-serve" || return 1
    grep -q "streaming" err2.txt && fail "--no-serve still streams" || true
}

test_jobscope_sink_loses_nothing_across_a_server_outage() {
    local port; port=$(free_port)
    "$JS" run -i 0.1 --no-serve --spool-dir sp --flush-timeout 20 -o ev.jsonl -o "jobscope://127.0.0.1:$port" -- sleep 2.5 2> err.txt &
    local js=$!
    sleep 1
    SERVE_PORT=$port; SERVE_URL=http://127.0.0.1:$port; SERVE_STORE=$T/st
    "$JS" serve --store "$T/st" --listen "127.0.0.1:$port" --socket none --node-interval 0 2>> serve.log &
    SERVE_PID=$!
    _js_add_trap "kill -9 $SERVE_PID 2>/dev/null"
    wait $js || fail "job failed: $(cat err.txt)" || return 1
    local n job
    n=$(jq_py 'len(ev)' ev.jsonl)
    job=$(jq_py 'ev[0]["job_id"]' ev.jsonl)
    local got
    got=$(curl -s "$SERVE_URL/metrics" | awk '/^jobscope_serve_ingested_events_total /{print $2}')
    assert_eq "$got" "$n" "events delivered after the server came up" || return 1
    serve_stop || return 1
}

test_import_loads_event_files_into_the_local_server() {
    serve_start s --socket "$JOBSCOPE_SERVE_SOCKET" || return 1
    "$JS" run --no-serve -i 0.1 -o a.jsonl -- sleep 0.5 || return 1
    printf 'not an event\n' > bad.jsonl
    "$JS" import a.jsonl 2> imp.txt || fail "import: $(cat imp.txt)" || return 1
    local n; n=$(jq_py 'len(ev)' a.jsonl)
    assert_match "$(cat imp.txt)" "^jobscope import: $n events" || return 1
    "$JS" import --server "$SERVE_URL" bad.jsonl 2> imp2.txt; assert_eq $? 1 "a file without events" || return 1
    "$JS" import --server http://127.0.0.1:1 a.jsonl 2> imp3.txt; assert_eq $? 125 "no server" || return 1
    "$JS" import missing.jsonl 2> imp4.txt; assert_eq $? 125 "missing file" || return 1
    local job; job=$(jq_py 'ev[0]["job_id"]' a.jsonl)
    assert_match "$(curl -s "$SERVE_URL/api/query/last?timeseries=kickstart.inv.online.elapsed%7Bjob_id=$job%7D")" '"value"' || return 1
}

test_body_limit_answers_413_and_bad_requests_never_crash_the_server() {
    serve_start s --body-limit 4K || return 1
    local r
    head -c 10000 /dev/zero | tr '\0' 'x' > big.txt
    r=$(curl -s -w ' %{http_code}' --data-binary @big.txt "$SERVE_URL/api/put")
    assert_match "$r" '"code":413.* 413$' "Content-Length over the limit" || return 1
    r=$(curl -s -w ' %{http_code}' -H 'Transfer-Encoding: chunked' --data-binary @big.txt "$SERVE_URL/api/events")
    assert_match "$r" ' 413$' "chunked body over the limit" || return 1
    python3 - "$SERVE_PORT" <<'PY' || return 1
import random, socket, sys, time
port = int(sys.argv[1])
random.seed(7)
paths = ["/api/put", "/api/put?details", "/api/metrics", "/write?precision=x", "/api/events",
         "/api/query", "/api/query/last", "/api/suggest?type=metrics&max=-1", "/api/search/lookup?m={",
         "/metrics", "/api/version", "/%00", "/api/put?summary&details"]
junk = [b"", b"{", b"[" * 3000, b'{"metric":"a","tags":{"a":"b"},"value":1e999,"timestamp":1}',
        b"\xff\xfe\x00", b'[{"metric":"' + b"a" * 3000 + b'"}]', b"a,b=c d=1 99999999999999999999999",
        b'{"timestamp":1,"dps":[' + b'{},' * 500 + b'{}]}']
for i in range(300):
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    m = random.choice(["GET", "POST", "PUT", "DELETE", "BREW"])
    body = random.choice(junk)
    req = b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (m.encode(), random.choice(paths).encode(), len(body))
    if i % 17 == 0:     # not HTTP at all: nothing to answer, the server drops it later
        req = bytes(random.randrange(256) for _ in range(200))
        s.settimeout(0.2)
    s.sendall(req + body)
    s.shutdown(socket.SHUT_WR)
    try:
        s.recv(65536)
    except Exception:
        pass
    s.close()
PY
    assert_match "$(curl -s "$SERVE_URL/api/version")" '"version"' "server alive after garbage" || return 1
    kill -0 $SERVE_PID || fail "server died" || return 1
}

test_non_loopback_listener_requires_a_token_compared_in_full() {
    local port; port=$(free_port)
    "$JS" serve --store st --listen "0.0.0.0:$port" --socket none 2> err.txt
    assert_eq $? 125 "non-loopback without a token" || return 1
    assert_match "$(cat err.txt)" "token-file" || return 1
    echo short > tok
    "$JS" serve --store st --listen "0.0.0.0:$port" --socket none --token-file tok 2> err.txt
    assert_eq $? 125 "short token" || return 1
    echo "s3cret-token-0123456789" > tok
    SERVE_PORT=$(free_port)
    "$JS" serve --store st2 --listen "0.0.0.0:$SERVE_PORT" --socket "$T/tok.rt/serve.sock" --token-file tok --node-interval 0 2>>serve2.log &
    local pid=$!
    _js_add_trap "kill -9 $pid 2>/dev/null"
    local i
    for i in $(seq 50); do curl -s -o /dev/null "127.0.0.1:$SERVE_PORT/api/version" && break; sleep 0.1; done
    assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$SERVE_PORT/api/version")" 401 "no token" || return 1
    assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret-token-012345678' "127.0.0.1:$SERVE_PORT/api/version")" 401 "prefix of the token" || return 1
    assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret-token-01234567890' "127.0.0.1:$SERVE_PORT/api/version")" 401 "token plus a character" || return 1
    assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret-token-0123456789' "127.0.0.1:$SERVE_PORT/api/version")" 200 "right token" || return 1
    assert_eq "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$T/tok.rt/serve.sock" http://x/api/version)" 200 "the local socket needs no token" || return 1
    # the sink and import send it
    "$JS" run --no-serve -i 0.2 -o ev.jsonl -o "jobscope://127.0.0.1:$SERVE_PORT?token_file=$T/tok" -- true 2> err.txt || return 1
    assert_match "$(curl -s -H 'Authorization: Bearer s3cret-token-0123456789' "127.0.0.1:$SERVE_PORT/metrics" | grep '^jobscope_serve_ingested_events_total')" ' [1-9]' || return 1
    serve_stop $pid
}

test_config_file_sets_options_and_the_command_line_wins() {
    local port; port=$(free_port)
    cat > serve.conf <<EOF
# jobscope serve settings
listen = 127.0.0.1:1
store = $T/conf-store
retention = 30d
max-size = 1G
socket = "$T/conf.rt/serve.sock"
node-interval = 0
EOF
    "$JS" serve --config serve.conf --listen "127.0.0.1:$port" 2> serve.log &
    local pid=$!
    _js_add_trap "kill -9 $pid 2>/dev/null"
    SERVE_URL=http://127.0.0.1:$port
    serve_wait "$SERVE_URL" || return 1
    [ -d "$T/conf-store" ] || fail "store from the config file not used" || return 1
    [ -S "$T/conf.rt/serve.sock" ] || fail "socket from the config file not used" || return 1
    serve_stop $pid || return 1
    printf 'listen = 127.0.0.1:%s\nretention = forever\n' "$port" > bad.conf
    "$JS" serve --config bad.conf 2> err.txt; assert_eq $? 125 || return 1
    assert_match "$(cat err.txt)" "bad.conf:2: retention 'forever'" || return 1
    printf 'colour = blue\n' > bad2.conf
    "$JS" serve --config bad2.conf 2> err.txt; assert_eq $? 125 || return 1
    assert_match "$(cat err.txt)" "bad2.conf:1: unknown setting 'colour'" || return 1
}
