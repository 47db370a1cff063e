# jobscope serve under attack (issue 23): a hostile client, a hostile local user and a
# hostile peer.  Each test is bounded in time (timeout, curl -m) and the dangerous ones in
# memory too (the server runs under `prlimit --as`), so a regression fails the test instead
# of taking the machine down.  docs/serve.md "Limits" names every bound checked here.
source "$ROOT/tests/helpers/serve.sh"

ATTACK="python3 $ROOT/tests/helpers/serve_attack.py"

# capped GIB: runs the server under an address-space cap of GIB GiB (prlimit takes bytes;
# not under AddressSanitizer, which reserves terabytes of address space for its shadow).
capped() {
    case $BUILD in *asan*) SERVE_WRAP= ;; *) SERVE_WRAP="prlimit --as=$(($1 << 30))" ;; esac
}

rss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# P BODY [MAXTIME]: POST /api/query, prints "STATUS BODY" (000 when no answer in time)
P() {
    curl -s -m "${2:-10}" -w '\n%{http_code}' --data-binary "$1" "$SERVE_URL/api/query" | _http_fmt
}

regexp_query() { # TAG FILTER
    printf '{"start":1700000000,"end":1700000100,"queries":[{"metric":"rx.v","aggregator":"sum","filters":[{"type":"regexp","tagk":"%s","filter":"%s","groupBy":false}]}]}' "$1" "$2"
}

test_a_regexp_filter_that_would_compile_into_gigabytes_is_a_400() {
    capped 2
    serve_start || return 1
    curl -s --data-binary '{"metric":"rx.v","timestamp":1700000050,"value":1,"tags":{"host":"aaaa"}}' "$SERVE_URL/api/put"
    local r
    r=$(P "$(regexp_query host '((a{1,255}){1,255}){1,255}')")
    assert_match "$r" '^400 .*regular expression' "nested counted repetition" || return 1
    r=$(P "$(regexp_query host '(a{1,20}){1,20}')")
    assert_match "$r" '^(400|200) ' "smaller nesting answers" || return 1
    kill -0 "$SERVE_PID" || fail "the server died" || return 1
    assert_le "$(rss_kb "$SERVE_PID")" 200000 "RSS (kB) after the regexps" || return 1
}

test_a_backtracking_regexp_cannot_pin_the_workers() {
    capped 2
    serve_start || return 1
    local a256 i
    a256=$(head -c 256 /dev/zero | tr '\0' a)
    curl -s --data-binary "{\"metric\":\"rx.v\",\"timestamp\":1700000050,\"value\":1,\"tags\":{\"host\":\"$a256\"}}" "$SERVE_URL/api/put"
    local q
    q=$(regexp_query host '^(a*)(a*)(a*)\\3\\2\\1b')
    local pids=()
    for i in 1 2 3 4 5 6; do P "$q" 20 > "q$i.out" & pids+=($!); done
    sleep 1
    local t0 t1
    t0=$(date +%s%N)
    assert_eq "$(curl -s -m 3 -o /dev/null -w '%{http_code}' "$SERVE_URL/api/version")" 200 "version while 6 regexps run" || return 1
    wait "${pids[@]}"
    t1=$(date +%s%N)
    assert_le $(( (t1 - t0) / 1000000 )) 5000 "ms until every regexp query answered" || return 1
    for i in 1 2 3 4 5 6; do
        assert_match "$(cat "q$i.out")" '^(200|400) ' "query $i answered" || return 1
    done
}

test_a_query_past_its_deadline_is_cancelled() {
    serve_start s --query-timeout 0.001 || return 1
    # 20,000 series: walking them takes longer than a millisecond
    python3 - "$SERVE_URL" <<'PY'
import sys, urllib.request
url = sys.argv[1] + "/write?precision=s"
lines = "".join("rx,host=h%05d v=1 1700000050\n" % i for i in range(20000))
urllib.request.urlopen(urllib.request.Request(url, lines.encode(), method="POST")).read()
PY
    local r
    r=$(P '{"start":1700000000,"end":1700000100,"queries":[{"metric":"rx.v","aggregator":"sum","filters":[{"type":"wildcard","tagk":"host","filter":"h*","groupBy":true}]}]}' 20)
    assert_match "$r" '^503 .*deadline' "a query past --query-timeout" || return 1
    assert_eq "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$SERVE_URL/api/version")" 200 || return 1
}

test_slow_header_clients_cannot_lock_out_new_clients() {
    serve_start || return 1
    local r
    # 600 connections from 127.0.0.2 trickling header lines for 8 s
    r=$(timeout 60 $ATTACK slowloris "$SERVE_PORT" 127.0.0.2 600 8)
    echo "$r"
    local ok late
    ok=$(echo "$r" | sed -n 's/.*ok=\([0-9]*\).*/\1/p'); late=$(echo "$r" | sed -n 's/.*late=\([0-9]*\).*/\1/p')
    assert_eq "$late" 0 "requests of another client that were late or refused ($r)" || return 1
    assert_ge "$ok" 6 "requests of another client answered" || return 1
}

test_a_client_that_never_finishes_its_headers_is_cut_off() {
    serve_start s --header-timeout 2 || return 1
    local t
    t=$(timeout 30 $ATTACK cut "$SERVE_PORT" 12)
    [ "$t" != open ] || fail "a client trickling headers for 12 s was never cut off" || return 1
    assert_le "$t" 4 "seconds until a trickling client is cut off (--header-timeout 2)" || return 1
}

test_an_unauthenticated_body_is_refused_on_its_headers() {
    echo "s3cret-token-0123456789" > tok
    serve_start s --token-file tok || return 1
    local r
    r=$(timeout 20 $ATTACK unauth_body "$SERVE_PORT" 33554432 1048576)
    assert_match "$r" "^HTTP/1.1 401" "a POST without token, 1 MiB of 32 MiB sent" || return 1
    # 40 such clients hold nothing on the server
    r=$(timeout 60 $ATTACK held_bodies "$SERVE_PORT" "$SERVE_PID" 40 33554432 4194304)
    local rss
    rss=$(echo "$r" | sed -n 's/rss_kb=\([0-9]*\).*/\1/p')
    assert_le "$rss" 100000 "server RSS (kB) with 40 tokenless 32 MiB uploads ($r)" || return 1
}

test_bodies_held_by_all_connections_together_are_bounded() {
    echo "s3cret-token-0123456789" > tok
    serve_start s --token-file tok --body-memory 64M || return 1
    local r rss
    # 8 authenticated clients each declare 30 MiB and send all but the last bytes
    r=$(timeout 60 $ATTACK held_bodies "$SERVE_PORT" "$SERVE_PID" 8 31457280 31457000 s3cret-token-0123456789)
    echo "$r"
    rss=$(echo "$r" | sed -n 's/rss_kb=\([0-9]*\).*/\1/p')
    assert_le "$rss" 160000 "server RSS (kB) with 8 x 30 MiB held uploads and --body-memory 64M" || return 1
    assert_match "$r" "503" "uploads beyond --body-memory are answered 503" || return 1
    assert_eq "$(curl -s -m 3 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret-token-0123456789' "$SERVE_URL/api/version")" 200 || return 1
}

test_a_request_of_many_sub_queries_is_bounded_as_a_whole() {
    capped 3
    serve_start || return 1
    curl -s --data-binary '{"metric":"b.v","timestamp":1700000050,"value":1,"tags":{"host":"a"}}' "$SERVE_URL/api/put"
    local body
    body=$(python3 -c '
import json
sq = {"metric": "b.v", "aggregator": "sum", "downsample": "1s-avg-zero"}
print(json.dumps({"start": 1700000000, "end": 1700000000 + 499000, "queries": [sq] * 100}))')
    local r
    r=$(P "$body" 60)
    assert_match "$r" '^400 .*buckets' "100 sub-queries of 499,000 filled buckets" || return 1
    assert_le "$(rss_kb "$SERVE_PID")" 300000 "RSS (kB) after the refused query" || return 1
}

test_one_bad_timestamp_is_a_400_and_the_rest_is_stored() {
    serve_start || return 1
    local r
    r=$(curl -s -w ' %{http_code}' --data-binary $'t1 v=1 1700000000\nt1 v=2 99999999999999\nt1 v=3 1700000002\n' "$SERVE_URL/write?precision=s")
    assert_match "$r" '1 of 3 lines.* 400$' "/write with one out-of-range timestamp" || return 1
    r=$(curl -s -w ' %{http_code}' --data-binary $'{"event":"e1","ts":1700000000,"x":1}\n{"event":"e1","ts":1e14,"x":2}\n{"event":"e1","ts":1700000002,"x":3}\n' "$SERVE_URL/api/events")
    assert_match "$r" '"accepted":2,"failed":1.* 400$' "/api/events with one out-of-range ts" || return 1
    r=$(curl -s "$SERVE_URL/api/query?start=1699999990&end=1700000010&m=sum:t1.v")
    assert_match "$r" '"1700000000":1(\.0)?,"1700000002":3' "the good lines of /write" || return 1
    r=$(curl -s "$SERVE_URL/api/query?start=1699999990&end=1700000010&m=sum:e1.x")
    assert_match "$r" '"1700000000":1(\.0)?,"1700000002":3' "the good events" || return 1
}

test_metrics_stay_valid_for_promtool_with_hostile_tags() {
    need promtool || return $?
    serve_start || return 1
    local k1 k2
    # two keys over 63 characters that sanitize alike
    k1="$(head -c 70 /dev/zero | tr '\0' k).x"; k2="$(head -c 70 /dev/zero | tr '\0' k)_x"
    printf '{"event":"kickstart.inv.online","ts":1700000000,"hostname":"h","job_id":"j1","rss":5,"tags":{"bad":"\\u00ff\\u00fe","%s":"x","%s":"y"}}\n' "$k1" "$k2" > ev.json
    printf 'kickstart.inv.online,job_id=j2,host=h,v=\xff\xfe utime=3 1700000000000000000\n' > lp.txt
    curl -s --data-binary @ev.json "$SERVE_URL/api/events" >/dev/null
    curl -s --data-binary @lp.txt "$SERVE_URL/write" >/dev/null
    curl -s "$SERVE_URL/metrics" > m.txt
    grep -q 'job_id="j1"' m.txt || fail "the job's series is not in /metrics" || return 1
    promtool check metrics < m.txt > pt.txt 2>&1
    if grep -Eqi 'invalid|duplicate|error' pt.txt; then cat pt.txt; fail "promtool refuses /metrics"; return 1; fi
}

test_a_32_mib_put_stays_small_in_memory() {
    capped 2
    serve_start || return 1
    python3 - <<'PY'
import json
pts = []
size = 0
i = 0
with open("put.json", "w") as f:
    f.write("[")
    while size < 32 * 1024 * 1024 - 300:
        s = json.dumps({"metric": "big.put", "timestamp": 1700000000 + i % 100000, "value": i,
                        "tags": {"host": "h%d" % (i % 50), "job": "j%d" % (i % 7)}})
        if i:
            f.write(",")
            size += 1
        f.write(s)
        size += len(s)
        i += 1
    f.write("]")
PY
    local before after r
    before=$(rss_kb "$SERVE_PID")
    r=$(curl -s -m 120 -w '%{http_code}' --data-binary @put.json "$SERVE_URL/api/put")
    assert_eq "$r" 204 "a 32 MiB /api/put" || return 1
    after=$(awk '/^VmHWM:/{print $2}' "/proc/$SERVE_PID/status")
    echo "RSS before ${before} kB, peak ${after} kB"
    # AddressSanitizer keeps freed memory in quarantine and adds its shadow
    local room=200000
    [[ $BUILD == *asan* ]] && room=1000000
    assert_le "$after" $((before + room)) "peak RSS (kB) of a 32 MiB /api/put" || return 1
}

# a fake peer answering every request with PAYLOAD (gzip-encoded when GZ=1)
fake_peer() { # PORT MODE
    python3 - "$1" "$2" <<'PY' &
import gzip, http.server, sys
port, mode = int(sys.argv[1]), sys.argv[2]
if mode == "bomb":
    raw = b"[" + b"1," * (64 << 20) + b"1]"
    body = gzip.compress(raw, 9)
else:
    body = b'[{"timestamp":1,"value":"x","garbage":[1,2,3]}, 42, "y"]'
class H(http.server.BaseHTTPRequestHandler):
    def do(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if mode == "bomb":
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", port), H)
s.timeout = 30
import time
end = time.time() + 60
while time.time() < end:
    s.handle_request()
PY
    _js_add_trap "kill $! 2>/dev/null"
}

test_a_hostile_peer_gives_a_partial_answer_and_costs_little() {
    capped 2
    local pp
    pp=$(free_port)
    fake_peer "$pp" bomb
    sleep 1
    serve_start s --peers "127.0.0.1:$pp" --peer-timeout 5 || return 1
    curl -s --data-binary '{"metric":"pq.v","timestamp":1700000050,"value":1,"tags":{"host":"a"}}' "$SERVE_URL/api/put"
    curl -s -m 20 -D h.txt -o b.txt --data-binary '{"start":1700000000,"end":1700000100,"queries":[{"metric":"pq.v","aggregator":"sum"}]}' "$SERVE_URL/api/query"
    grep -qi '^X-Jobscope-Partial:' h.txt || { cat h.txt; fail "a peer sending a gzip bomb is not named in X-Jobscope-Partial"; return 1; }
    assert_match "$(cat b.txt)" '"dps":\{"1700000050":1' "the local answer" || return 1
    assert_le "$(awk '/^VmHWM:/{print $2}' "/proc/$SERVE_PID/status")" 300000 "peak RSS (kB) after a gzip bomb from a peer" || return 1
}

test_a_peer_answering_garbage_to_query_last_is_left_out() {
    local pp
    pp=$(free_port)
    fake_peer "$pp" garbage
    sleep 1
    serve_start s --peers "127.0.0.1:$pp" || return 1
    curl -s --data-binary '{"metric":"pq.v","timestamp":1700000050,"value":1,"tags":{"host":"a"}}' "$SERVE_URL/api/put"
    curl -s -m 10 -D h.txt -o b.txt "$SERVE_URL/api/query/last?timeseries=pq.v%7Bhost=a%7D"
    grep -qi '^X-Jobscope-Partial:' h.txt || { cat h.txt b.txt; fail "garbage from a peer is not a partial answer"; return 1; }
    python3 - <<'PY' || return 1
import json
d = json.load(open("b.txt"))
assert len(d) == 1 and d[0]["value"] == "1", d
PY
}

test_tag_values_have_one_length_rule_on_write_and_put() {
    serve_start || return 1
    local x y r
    x="$(head -c 1100 /dev/zero | tr '\0' v)X"; y="$(head -c 1100 /dev/zero | tr '\0' v)Y"
    r=$(curl -s -w ' %{http_code}' --data-binary "tl,host=$x v=1 1700000000000000000
tl,host=$y v=2 1700000000000000000
tl,host=short v=3 1700000000000000000" "$SERVE_URL/write")
    assert_match "$r" '2 of 3 lines.* 400$' "/write with two over-long tag values" || return 1
    r=$(curl -s "$SERVE_URL/api/search/lookup?m=tl.v")
    assert_match "$r" '"totalResults":1' "only the short one is stored, nothing merged" || return 1
    r=$(curl -s -w ' %{http_code}' --data-binary "{\"metric\":\"tl\",\"timestamp\":1700000000,\"value\":1,\"tags\":{\"host\":\"$x\"}}" "$SERVE_URL/api/put")
    assert_match "$r" ' 400$' "/api/put with the same tag value" || return 1
    local z
    z=$(head -c 256 /dev/zero | tr '\0' z)
    r=$(curl -s -w '%{http_code}' --data-binary "tl,host=$z v=1 1700000000000000000" "$SERVE_URL/write")
    assert_eq "$r" 204 "/write with a 256-byte tag value" || return 1
    r=$(curl -s -w '%{http_code}' --data-binary "{\"metric\":\"tl\",\"timestamp\":1700000000,\"value\":1,\"tags\":{\"host\":\"$z\"}}" "$SERVE_URL/api/put")
    assert_eq "$r" 204 "/api/put with a 256-byte tag value" || return 1
}

test_import_skips_an_oversized_line_and_imports_the_rest() {
    serve_start s --body-limit 1M || return 1
    local i
    for i in 1 2 3 4 5 6; do echo "{\"event\":\"imp\",\"ts\":170000000$i,\"job_id\":\"j\",\"x\":$i}"; done > f.jsonl
    python3 -c 'print("{\"event\":\"imp\",\"ts\":1700000007,\"pad\":\"" + "p" * (2 << 20) + "\"}")' >> f.jsonl
    for i in 8 9; do echo "{\"event\":\"imp\",\"ts\":170000000$i,\"job_id\":\"j\",\"x\":$i}"; done >> f.jsonl
    "$JS" import --server "$SERVE_URL" f.jsonl 2> err.txt
    local rc=$?
    assert_eq "$rc" 1 "exit status with one line skipped" || return 1
    assert_match "$(cat err.txt)" 'line 7' "the skipped line is named" || return 1
    local r
    r=$(curl -s "$SERVE_URL/api/query?start=1700000000&end=1700000010&m=sum:imp.x")
    python3 - "$r" <<'PY' || return 1
import json, sys
d = json.loads(sys.argv[1])
assert len(d[0]["dps"]) == 8, d
PY
}

test_a_foreign_socket_directory_leaves_the_server_on_tcp_with_one_line() {
    [ "$(id -u)" = 0 ] || { echo "    skip: needs root to make a directory of another user" >&2; return 77; }
    mkdir -m 700 foreign && chown nobody foreign
    local port
    port=$(free_port)
    JOBSCOPE_SERVE_SOCKET=$T/foreign/serve.sock "$JS" serve --store st --listen "127.0.0.1:$port" \
        --node-interval 0 2> err.txt &
    local pid=$!
    _js_add_trap "kill -9 $pid 2>/dev/null"
    serve_wait "http://127.0.0.1:$port" || { cat err.txt; return 1; }
    assert_match "$(cat err.txt)" 'without the Unix socket' "one line saying so" || return 1
    [ ! -e "$T/foreign/serve.sock" ] || fail "a socket was made in a foreign directory" || return 1
    serve_stop "$pid"
}

test_query_over_the_whole_time_range_does_not_overflow() {
    serve_start || return 1
    curl -s --data-binary '{"metric":"ov.v","timestamp":1700000050,"value":7,"tags":{"host":"a"}}' "$SERVE_URL/api/put"
    local r
    r=$(curl -s "$SERVE_URL/api/query?start=0&end=9223372036854775807ms&m=sum:ov.v")
    assert_match "$r" '"dps":\{"1700000050":7' "start=0&end=INT64_MAX ms" || return 1
    r=$(curl -s -w ' %{http_code}' "$SERVE_URL/api/query?start=0&end=9223372036854775807&m=sum:ov.v")
    assert_match "$r" ' (200|400)$' "end=INT64_MAX seconds" || return 1
}

test_token_is_not_sent_to_peers_over_plain_http() {
    echo "s3cret-token-0123456789" > tok
    local port
    port=$(free_port)
    "$JS" serve --store st --listen "127.0.0.1:$port" --socket none --node-interval 0 \
        --token-file tok --peers 127.0.0.1:1 2> err.txt
    assert_eq $? 125 "--token-file with --peers over http" || return 1
    assert_match "$(cat err.txt)" 'peers-insecure' "the error names the way out" || return 1
    serve_start s --token-file tok --peers 127.0.0.1:1 --peers-insecure || return 1
}

test_a_relative_time_query_is_answered_from_the_cache() {
    serve_start || return 1
    local now
    now=$(date +%s)
    curl -s --data-binary "{\"metric\":\"cq.v\",\"timestamp\":$((now - 60)),\"value\":1,\"tags\":{\"host\":\"a\"}}" "$SERVE_URL/api/put"
    local q='{"start":"1h-ago","queries":[{"metric":"cq.v","aggregator":"sum","downsample":"1m-avg"}]}'
    local a b
    a=$(curl -s --data-binary "$q" "$SERVE_URL/api/query"); sleep 1.1
    b=$(curl -s --data-binary "$q" "$SERVE_URL/api/query")
    assert_eq "$b" "$a" "the same answer" || return 1
    assert_match "$(curl -s "$SERVE_URL/metrics")" 'jobscope_serve_query_cache_total\{result="hit"\} [1-9]' "a cache hit" || return 1
    # never stale: a point that the moving window leaves is gone from the answer
    now=$(date +%s)
    curl -s --data-binary "{\"metric\":\"cq.w\",\"timestamp\":$((now - 3600 + 2)),\"value\":5,\"tags\":{\"host\":\"a\"}}" "$SERVE_URL/api/put"
    curl -s --data-binary "{\"metric\":\"cq.w\",\"timestamp\":$((now - 60)),\"value\":6,\"tags\":{\"host\":\"a\"}}" "$SERVE_URL/api/put"
    q='{"start":"1h-ago","queries":[{"metric":"cq.w","aggregator":"sum"}]}'
    a=$(curl -s --data-binary "$q" "$SERVE_URL/api/query")
    assert_match "$a" ":5," "the older point while in the window" || return 1
    sleep 3.5
    b=$(curl -s --data-binary "$q" "$SERVE_URL/api/query")
    assert_match "$b" '"dps":\{"[0-9]+":6\}' "the older point gone once the window passed it" || return 1
}
