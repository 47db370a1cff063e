# The OpenTSDB read API of jobscope serve over HTTP (the engine's rules are unit-tested in
# tests/unit/test_tsq*.c): /api/query POST and GET, both Grafana paths, errors,
# /api/suggest, /api/aggregators, /api/config/filters, /api/search/lookup,
# /api/query/last.  docs/serve.md.
source "$ROOT/tests/helpers/serve.sh"

# two hosts, two jobs, 1 point per second for 60 s from 1700000000
populate() {
    python3 - <<'PY' > pts.json
import json
pts = []
for t in range(60):
    for h, j, v in (("n1", "a", 1), ("n2", "a", 10), ("n2", "b", 100)):
        pts.append({"metric": "kickstart.inv.online.rss", "timestamp": 1700000000 + t,
                    "value": v * (t + 1), "tags": {"host": h, "job_id": j}})
print(json.dumps(pts))
PY
    assert_eq "$(curl -s -w '%{http_code}' --data-binary @pts.json "$SERVE_URL/api/put")" 204 "populate"
}

test_query_post_groups_downsamples_and_answers_both_grafana_paths() {
    serve_start || return 1
    populate || return 1
    # browser path: ms times, showQuery, index
    curl -s "$SERVE_URL/api/query" -d '{"start":1700000000000,"end":1700000059000,"showQuery":true,"globalAnnotations":true,
      "queries":[{"metric":"kickstart.inv.online.rss","aggregator":"sum","downsample":"30s-avg",
                  "filters":[{"type":"wildcard","tagk":"host","filter":"*","groupBy":true}]}]}' > a.json
    python3 - <<'PY' || return 1
import json
d = json.load(open("a.json"))
by = {s["tags"]["host"]: s for s in d}
assert set(by) == {"n1", "n2"}, d
# n1: values 1..60; bucket 1700000000 (aligned: 1699999980?) -> check the sums directly
for s in d:
    assert s["query"]["index"] == 0 and "job_id" in s["aggregateTags"] or s["tags"]["host"] == "n1", s
    assert all(isinstance(v, str) for v in s["tags"].values())
    assert all(k.isdigit() and len(k) == 10 for k in s["dps"]), s["dps"]
n1 = by["n1"]["dps"]
# epoch-aligned 30 s buckets: 1700000010 holds values 11..40, 1700000040 holds 41..60; the
# bucket 1699999980 starts before the query's start and is not returned (OpenTSDB's rule)
assert n1 == {"1700000010": 25.5, "1700000040": 50.5}, n1
n2 = by["n2"]["dps"]
assert n2 == {"1700000010": 110 * 25.5, "1700000040": 110 * 50.5}, n2
PY
    # server path: seconds, ?arrays=true
    curl -s "$SERVE_URL/api/query?arrays=true" -d '{"start":1700000000,"end":1700000002,
      "queries":[{"metric":"kickstart.inv.online.rss","aggregator":"max","tags":{"job_id":"b"}}]}' > b.json
    python3 - <<'PY' || return 1
import json
d = json.load(open("b.json"))
assert len(d) == 1 and d[0]["tags"] == {"host": "n2", "job_id": "b"}, d
assert d[0]["dps"] == [[1700000000, 100], [1700000001, 200], [1700000002, 300]], d[0]["dps"]
assert "query" not in d[0]
PY
}

test_query_get_m_form_and_errors() {
    serve_start || return 1
    populate || return 1
    local r
    r=$(curl -s "$SERVE_URL/api/query?start=1700000000&end=1700000001&m=sum:kickstart.inv.online.rss%7Bjob_id=a%7D")
    assert_eq "$r" '[{"metric":"kickstart.inv.online.rss","tags":{"job_id":"a"},"aggregateTags":["host"],"dps":{"1700000000":11,"1700000001":22}}]' || return 1
    r=$(http GET "/api/query?start=1700000000&m=sum:no.such.metric")
    assert_match "$r" "^400 \{\"error\":\{\"code\":400,\"message\":\"No such name for 'metrics': 'no.such.metric'\"" || return 1
    r=$(http POST /api/query '{"start":1700000010,"end":1700000000,"queries":[{"metric":"kickstart.inv.online.rss","aggregator":"sum"}]}')
    assert_match "$r" '^400 \{"error":\{"code":400' "end before start" || return 1
    r=$(http POST /api/query '{"queries":')
    assert_match "$r" '^400 \{"error":\{"code":400' "truncated JSON" || return 1
    r=$(http GET "/api/query?start=1h-ago&m=nosuchagg:kickstart.inv.online.rss")
    assert_match "$r" '^400 \{"error"' "unknown aggregator" || return 1
    # a filled downsample over years would be millions of buckets: refused, not built
    r=$(http POST /api/query '{"start":1400000000000,"queries":[{"metric":"kickstart.inv.online.rss","aggregator":"sum","downsample":"10s-avg-nan"}]}')
    assert_match "$r" '^400 \{"error":\{"code":400,"message":"Query too large' "filled buckets bounded" || return 1
    r=$(http POST /api/query '{"start":1400000000000,"queries":[{"metric":"kickstart.inv.online.rss","aggregator":"sum","downsample":"10s-avg"}]}')
    assert_match "$r" '^200 ' "fill none over years is fine" || return 1
}

test_grafana_save_and_test_answers_on_an_empty_store() {
    serve_start || return 1
    assert_eq "$(http GET '/api/suggest?type=metrics&q=cpu&max=10')" "200 []" || return 1
    assert_eq "$(http GET '/api/suggest?type=metrics&q=cpu')" "200 []" || return 1
}

test_suggest_lookup_last_aggregators_filters() {
    serve_start || return 1
    populate || return 1
    curl -sf -o /dev/null "$SERVE_URL/api/put" -d '[{"metric":"kickstart.inv.online.utime","timestamp":1700000000,"value":1,"tags":{"host":"n3"}},
                                                  {"metric":"cpu","timestamp":1700000000,"value":1,"tags":{"host":"n1"}}]' || return 1
    assert_eq "$(curl -s "$SERVE_URL/api/suggest?type=metrics&q=kick")" '["kickstart.inv.online.rss","kickstart.inv.online.utime"]' || return 1
    assert_eq "$(curl -s "$SERVE_URL/api/suggest?type=metrics&q=kick&max=1")" '["kickstart.inv.online.rss"]' "max" || return 1
    assert_eq "$(curl -s "$SERVE_URL/api/suggest?type=metrics&q=inv")" '[]' "prefix, not substring" || return 1
    assert_eq "$(curl -s "$SERVE_URL/api/suggest?type=tagv&q=n")" '["n1","n2","n3"]' || return 1
    assert_eq "$(curl -s "$SERVE_URL/api/suggest?type=tagk")" '["host","job_id"]' || return 1
    assert_match "$(http GET '/api/suggest?type=bogus')" '^400 \{"error"' || return 1
    assert_match "$(http GET '/api/suggest?q=x')" '^400 \{"error"' || return 1
    local r
    r=$(curl -s "$SERVE_URL/api/search/lookup?m=kickstart.inv.online.rss%7Bhost=n2%7D")
    assert_match "$r" '"type":"LOOKUP".*"totalResults":2' || return 1
    r=$(curl -s "$SERVE_URL/api/query/last?timeseries=kickstart.inv.online.rss%7Bhost=n1%7D&resolve=true")
    assert_match "$r" '"timestamp":1700000059000,"value":"60"' || return 1
    r=$(curl -s "$SERVE_URL/api/aggregators")
    python3 -c 'import json,sys; a=json.loads(sys.argv[1]); assert {"sum","avg","zimsum","p99","ep999r7","none"} <= set(a), a' "$r" || return 1
    r=$(curl -s "$SERVE_URL/api/config/filters")
    python3 -c 'import json,sys; f=json.loads(sys.argv[1]); assert set(f) == {"literal_or","iliteral_or","not_literal_or","not_iliteral_or","wildcard","iwildcard","regexp","not_key"}, f; assert all("examples" in v and "description" in v for v in f.values())' "$r" || return 1
}

# /api/query answers are cached (api_query.c) but never stale: a repeated
# POST gets the same answer, a point written to the metric, a new series of
# it, or a different ?arrays form gets a fresh one; another metric does not
# matter.
test_repeated_query_is_answered_again_and_never_stale() {
    serve_start || return 1
    populate || return 1
    local q='{"start":1700000000,"end":1700000100,"queries":[{"metric":"kickstart.inv.online.rss","aggregator":"sum","downsample":"0all-max"}]}'
    curl -s "$SERVE_URL/api/query" -d "$q" > a1.json
    curl -s "$SERVE_URL/api/query" -d "$q" > a2.json
    assert_eq "$(cat a2.json)" "$(cat a1.json)" "same answer twice" || return 1
    assert_match "$(curl -s "$SERVE_URL/metrics")" 'jobscope_serve_query_cache_total\{result="hit"\} 1' "a hit" || return 1
    assert_match "$(cat a1.json)" '"1700000000":6660' "sum of the maxima (60+600+6000)" || return 1
    # another metric: the answer stays the same
    assert_eq "$(curl -s -w '%{http_code}' --data-binary '{"metric":"other","timestamp":1700000070,"value":1,"tags":{"host":"n1"}}' "$SERVE_URL/api/put")" 204 || return 1
    assert_eq "$(curl -s "$SERVE_URL/api/query" -d "$q")" "$(cat a1.json)" "unrelated write" || return 1
    # a new point of an existing series, later than the others
    assert_eq "$(curl -s -w '%{http_code}' --data-binary '{"metric":"kickstart.inv.online.rss","timestamp":1700000070,"value":7000,"tags":{"host":"n2","job_id":"b"}}' "$SERVE_URL/api/put")" 204 || return 1
    assert_match "$(curl -s "$SERVE_URL/api/query" -d "$q")" '"1700000000":7660' "after a write" || return 1
    # a new series of the metric (Influx path)
    assert_eq "$(printf 'kickstart.inv.online,host=n3,job_id=c rss=100000 1700000010\n' |
                 curl -s -w '%{http_code}' --data-binary @- "$SERVE_URL/write?precision=s")" 204 || return 1
    assert_match "$(curl -s "$SERVE_URL/api/query" -d "$q")" '"1700000000":107660' "after a new series" || return 1
    assert_match "$(curl -s "$SERVE_URL/api/query?arrays=true" -d "$q")" '\[\[1700000000,107660\]\]' "arrays form" || return 1
    assert_match "$(curl -s "$SERVE_URL/api/query" -d "$q")" '"1700000000":107660' "dps form again" || return 1
    assert_match "$(curl -s "$SERVE_URL/metrics")" 'jobscope_serve_query_cache_total\{result="hit"\} 3' "hits" || return 1
}
