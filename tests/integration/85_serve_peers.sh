# 85_serve_peers.sh — one API over an allocation (--peers, --peer-timeout;
# docs/serve-site.md): three servers on loopback, each given all three as peers
# (its own entry must be dropped), answers merged before aggregation and
# checked against values computed by hand; then one server stopped and one
# frozen (SIGSTOP): a partial answer with a warning within the deadline.
source "$ROOT/tests/helpers/serve.sh"

T0=1700000000

# Node a: job j1, ranks 0 and 1 at T0+0..40 step 10 (1..5 and 2..10).
# Node b: job j1, rank 0 at T0+5..35 step 10 (10..40): interleaved in time.
# Node c: job j2 at T0+0..40 (100..500), and a metric of its own.
put_points() {     # NODE URL
    python3 - "$1" > "$1.json" <<PY
import json, sys
node, T0 = sys.argv[1], $T0
pts = []
def p(m, t, v, **tags):
    pts.append({"metric": m, "timestamp": T0 + t, "value": v, "tags": tags})
if node == "a":
    for i, t in enumerate(range(0, 41, 10)):
        p("m.test", t, i + 1, host="a", job="j1", rank="0")
        p("m.test", t, 2 * (i + 1), host="a", job="j1", rank="1")
elif node == "b":
    for i, t in enumerate(range(5, 36, 10)):
        p("m.test", t, 10 * (i + 1), host="b", job="j1", rank="0")
else:
    for i, t in enumerate(range(0, 41, 10)):
        p("m.test", t, 100 * (i + 1), host="c", job="j2", rank="0")
    p("m.only_c", 0, 7, host="c")
print(json.dumps(pts))
PY
    assert_eq "$(curl -s -w '%{http_code}' ${AUTH:+-H "$AUTH"} --data-binary @"$1.json" "$2/api/put")" 204 "put on $1"
}

# wait_up URL: until the server answers (with $AUTH when set), 10 s
wait_up() {
    local i
    for i in $(seq 100); do
        curl -sf -o /dev/null ${AUTH:+-H "$AUTH"} "$1/api/version" && return 0
        sleep 0.1
    done
    fail "server at $1 did not answer"
}

start_three() {
    PA=$(free_port); PB=$(free_port); PC=$(free_port)
    local all="127.0.0.1:$PA,127.0.0.1:$PB,localhost:$PC" n port pid
    for n in a b c; do
        case $n in a) port=$PA;; b) port=$PB;; c) port=$PC;; esac
        "$JS" serve --store "$T/$n.store" --listen "127.0.0.1:$port" --socket "$T/$n.rt/serve.sock" \
            --node-interval 0 --peers "$all" --peer-timeout 1 "$@" >>"$T/$n.log" 2>&1 &
        pid=$!
        _js_add_trap "kill -CONT $pid 2>/dev/null; kill -9 $pid 2>/dev/null"
        eval "PID_$n=$pid"
        wait_up "http://127.0.0.1:$port" || { cat "$T/$n.log" >&2; return 1; }
    done
    put_points a "http://127.0.0.1:$PA" && put_points b "http://127.0.0.1:$PB" &&
    put_points c "http://127.0.0.1:$PC"
}

# q PORT BODY OUT: POST /api/query; headers to OUT.h, body to OUT, seconds to OUT.t
q() {
    curl -s -o "$3" -D "$3.h" -w '%{http_code} %{time_total}\n' "http://127.0.0.1:$1/api/query" -d "$2" > "$3.t"
}

AVG_BODY='{"start":'$T0',"end":'$((T0 + 40))',"queries":[{"metric":"m.test","aggregator":"avg",
  "filters":[{"type":"wildcard","tagk":"job","filter":"*","groupBy":true}]}]}'
SUM_BODY='{"start":'$T0',"end":'$((T0 + 40))',"queries":[{"metric":"m.test","aggregator":"sum","downsample":"10s-sum",
  "filters":[{"type":"literal_or","tagk":"job","filter":"j1","groupBy":true}]},
  {"metric":"m.test","aggregator":"max","tags":{"host":"*"}}],"showQuery":true}'

test_peers_merge_raw_series_before_aggregating() {
    start_three || return 1
    local port
    for port in $PA $PB $PC; do           # every node answers for the whole allocation
        q $port "$AVG_BODY" avg.$port.json
        assert_eq "$(cut -d' ' -f1 avg.$port.json.t)" 200 "avg via $port" || return 1
        grep -qi '^X-Jobscope-Partial' avg.$port.json.h && { fail "partial answer with all up"; return 1; }
        python3 - avg.$port.json <<PY || return 1
import json, sys
d = {s["tags"]["job"]: s for s in json.load(open(sys.argv[1]))}
assert set(d) == {"j1", "j2"}, d
# avg over the group j1 = (a/r0 + a/r1 + b/r0) / 3 where present, b interpolated
# linearly between its own points, no contribution outside [T0+5, T0+35].
# Averaging per node first would give ((a0+a1)/2 + b)/2 instead.
T0 = $T0
want = {0: 1.5, 5: 14.5 / 3, 10: 7.0, 15: 27.5 / 3, 20: 34 / 3, 25: 13.5, 30: 47 / 3,
        35: 53.5 / 3, 40: 7.5}
got = {int(k) - T0: v for k, v in d["j1"]["dps"].items()}
assert set(got) == set(want), sorted(got)
for t in want:
    assert abs(got[t] - want[t]) < 1e-9, (t, got[t], want[t])
assert sorted(d["j1"]["aggregateTags"]) == ["host", "rank"], d["j1"]
assert d["j2"]["tags"] == {"host": "c", "job": "j2", "rank": "0"}, d["j2"]
assert {int(k) - T0: v for k, v in d["j2"]["dps"].items()} == {0: 100, 10: 200, 20: 300, 30: 400, 40: 500}
PY
    done
    # downsample per series, then sum over nodes; a second sub-query keeps its index
    q $PB "$SUM_BODY" sum.json
    python3 - <<PY || return 1
import json
d = json.load(open("sum.json"))
T0 = $T0
j1 = [s for s in d if s["query"]["index"] == 0]
assert len(j1) == 1, d
# 10 s buckets: a0 + a1 + b (b's T0+5 point falls into bucket T0, ...); at T0+40 b has ended
assert {int(k) - T0: v for k, v in j1[0]["dps"].items()} == {0: 13, 10: 26, 20: 39, 30: 52, 40: 15}, j1
mx = {s["tags"]["host"]: s for s in d if s["query"]["index"] == 1}
assert set(mx) == {"a", "b", "c"}, mx
assert mx["b"]["dps"]["%d" % (T0 + 35)] == 40 and mx["c"]["dps"]["%d" % (T0 + 40)] == 500
assert mx["a"]["dps"]["%d" % (T0 + 40)] == 10          # max of the two ranks
PY
    # a metric only a peer holds is found; one that no node holds is OpenTSDB's 400
    assert_eq "$(curl -s "http://127.0.0.1:$PA/api/query?start=$T0&end=$((T0 + 40))&m=sum:m.only_c")" \
        '[{"metric":"m.only_c","tags":{"host":"c"},"aggregateTags":[],"dps":{"'$T0'":7}}]' "GET, metric of c only" || return 1
    assert_match "$(curl -s -w ' %{http_code}' "http://127.0.0.1:$PA/api/query" \
        -d '{"start":'$T0',"queries":[{"metric":"nowhere","aggregator":"sum"}]}')" \
        "No such name for 'metrics': 'nowhere'.* 400$" "unknown everywhere" || return 1
    # suggest: sorted union; lookup: series of every node
    assert_eq "$(curl -s "http://127.0.0.1:$PA/api/suggest?type=metrics&q=m.")" '["m.only_c","m.test"]' "suggest" || return 1
    assert_eq "$(curl -s "http://127.0.0.1:$PA/api/suggest?type=tagv&q=j")" '["j1","j2"]' "suggest tagv" || return 1
    assert_eq "$(curl -s "http://127.0.0.1:$PA/api/suggest?type=metrics&q=m.&max=1")" '["m.only_c"]' "suggest max" || return 1
    curl -s "http://127.0.0.1:$PC/api/search/lookup?m=m.test%7Bhost=*%7D&limit=100" > lk.json
    assert_eq "$(python3 -c 'import json; d=json.load(open("lk.json")); print(d["totalResults"], sorted(set(r["tags"]["host"] for r in d["results"])))')" \
        "4 ['a', 'b', 'c']" "lookup" || return 1
    # last: one entry per series of the allocation
    curl -s "http://127.0.0.1:$PA/api/query/last?timeseries=m.test%7Bjob=j1%7D&back_scan=0" > last.json
    assert_eq "$(python3 -c 'import json; d=json.load(open("last.json")); print(len(d), sorted(float(x["value"]) for x in d))')" \
        "3 [5.0, 10.0, 40.0]" "query/last" || return 1
    # the query size bound holds on the allocation-wide path too (and for ?raw=1)
    assert_match "$(curl -s -w ' %{http_code}' "http://127.0.0.1:$PA/api/query" \
        -d '{"start":1400000000000,"queries":[{"metric":"m.test","aggregator":"sum","downsample":"10s-avg-nan"}]}')" \
        '"message":"Query too large.* 400$' "bucket bound with peers" || return 1
    assert_match "$(curl -s -w ' %{http_code}' "http://127.0.0.1:$PA/api/query?raw=1" \
        -d '{"start":1400000000000,"queries":[{"metric":"m.test","aggregator":"sum","downsample":"10s-avg-nan"}]}')" \
        '"message":"Query too large.* 400$' "bucket bound, raw" || return 1
    # a peer's own request is answered locally (no loops in the full mesh)
    assert_eq "$(curl -s -H 'X-Jobscope-Peer: 1' "http://127.0.0.1:$PA/api/suggest?type=metrics&q=m.")" '["m.test"]' "local answer" || return 1
    grep -q "own entry left out" "$T/a.log" || { fail "self entry not reported"; return 1; }
}

test_peers_dead_and_frozen_nodes_give_partial_answers_in_time() {
    start_three || return 1
    kill -9 "$PID_c"; wait "$PID_c" 2>/dev/null
    q $PA "$AVG_BODY" down.json
    assert_eq "$(cut -d' ' -f1 down.json.t)" 200 "status with c down" || return 1
    assert_le "$(cut -d' ' -f2 down.json.t)" 1.5 "a dead node costs no waiting" || return 1
    assert_match "$(grep -i '^X-Jobscope-Partial' down.json.h)" "127.0.0.1:$PC|localhost:$PC" "warning names c" || return 1
    assert_eq "$(python3 -c 'import json; print(sorted(s["tags"]["job"] for s in json.load(open("down.json"))))')" "['j1']" || return 1

    kill -STOP "$PID_b"
    q $PA "$AVG_BODY" slow.json
    kill -CONT "$PID_b"
    assert_eq "$(cut -d' ' -f1 slow.json.t)" 200 "status with b frozen" || return 1
    assert_le "$(cut -d' ' -f2 slow.json.t)" 3 "answer within the deadline (1 s) + slack" || return 1
    assert_ge "$(cut -d' ' -f2 slow.json.t)" 0.9 "waited for the deadline" || return 1
    local h; h=$(grep -i '^X-Jobscope-Partial' slow.json.h)
    assert_match "$h" "127.0.0.1:$PB: no answer within 1.0 s" "warning names b" || return 1
    assert_match "$h" "$PC" "and c" || return 1
    # j1 now holds node a only: avg of its two ranks
    python3 - <<PY || return 1
import json
d = json.load(open("slow.json"))
assert [s["tags"]["job"] for s in d] == ["j1"], d
got = {int(k) - $T0: v for k, v in d[0]["dps"].items()}
assert got == {0: 1.5, 10: 3.0, 20: 4.5, 30: 6.0, 40: 7.5}, got
PY
    grep -q "partial answer to /api/query: .*$PB" "$T/a.log" || { fail "no warning in the log"; return 1; }
    # suggest is partial too, and says so
    curl -s -D sg.h "http://127.0.0.1:$PA/api/suggest?type=metrics&q=m." > sg.json
    assert_eq "$(cat sg.json)" '["m.test"]' || return 1
    grep -qi '^X-Jobscope-Partial' sg.h || { fail "suggest without warning"; return 1; }
    # b answers again once resumed
    q $PA "$AVG_BODY" back.json
    assert_eq "$(python3 -c 'import json; print(len(json.load(open("back.json"))[0]["dps"]))')" 9 "b back" || return 1
}

test_peers_bad_peer_spec_is_one_clear_error() {
    "$JS" serve --store "$T/x" --listen 127.0.0.1:0 --socket none --node-interval 0 \
        --peers "node1:99999" > out.txt 2> err.txt
    assert_eq $? 125 "exit status" || return 1
    assert_match "$(cat err.txt)" "peer 'node1:99999': bad port" || return 1
    assert_eq "$(wc -l < err.txt)" 1 "one line" || return 1
}

test_peers_send_the_allocation_token() {
    printf 'a-token-for-this-allocation-0123\n' > token
    chmod 600 token
    AUTH="Authorization: Bearer $(cat token)"
    # plain http on loopback: the token may go to the peers only when said so
    start_three --token-file "$T/token" --peers-insecure || return 1
    assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PA/api/suggest?type=metrics&q=m.")" 401 "no token" || return 1
    curl -s -D h.txt -H "$AUTH" "http://127.0.0.1:$PA/api/suggest?type=metrics&q=m." > sg.json
    assert_eq "$(cat sg.json)" '["m.only_c","m.test"]' "peers accepted the token" || return 1
    grep -qi '^X-Jobscope-Partial' h.txt && { fail "partial: $(grep -i partial h.txt)"; return 1; }
    assert_eq "$(curl -s -H "$AUTH" "http://127.0.0.1:$PB/api/query" -d "$AVG_BODY" |
        python3 -c 'import json,sys; print(sorted(s["tags"]["job"] for s in json.load(sys.stdin)))')" "['j1', 'j2']" || return 1
}
