# Publishing over HTTP: plain JSON POSTs, NDJSON batches, Elasticsearch _bulk
# (a local receiver that checks the framing: no Elasticsearch package exists
# on Debian), with retries after errors.  docs/publishing.md.
source "$ROOT/tests/helpers/publish_servers.sh"

# requests.jsonl -> the events the receiver accepted, one per line
accepted_events() {
    python3 - "$T/requests.jsonl" "$1" <<'PY'
import json, sys
out = open(sys.argv[2], "w")
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["status"] != 200:
        continue
    lines = [x for x in r["body"].split("\n") if x]
    if r["path"].split("?")[0].endswith("/_bulk"):
        lines = lines[1::2]
    for x in lines:
        out.write(x + "\n")
PY
}

test_http_posts_each_event_as_json_keeping_the_receivers_query() {
    recv_start || return 1
    "$JS" run -i 0.1 --spool-dir sp -o ev.jsonl \
        -o "http://user:tok3n@127.0.0.1:$RECV_PORT/ingest?site=a" -- sleep 0.5 2> err.txt
    assert_eq $? 0 || return 1
    accepted_events got.jsonl
    assert_match "$(check_delivery got.jsonl ev.jsonl exact)" "^ok " || return 1
    assert_eq "$(jq_py 'sorted(set((e["path"], e["ct"], e["auth"]) for e in ev))' requests.jsonl)" \
        '[["/ingest?site=a", "application/json", "Basic dXNlcjp0b2szbg=="]]' || return 1
    assert_eq "$(jq_py 'max(len([x for x in e["body"].split("\n") if x]) for e in ev)' requests.jsonl)" 1 || return 1
    ! grep -q tok3n err.txt || fail "password printed"
}

test_http_ndjson_batches_survive_server_errors() {
    recv_start --fail-first 3 || return 1
    "$JS" run -i 0.02 --spool-dir sp -o ev.jsonl -o "http://127.0.0.1:$RECV_PORT/bulk#ndjson" -- sleep 1 2> err.txt
    assert_eq $? 0 || return 1
    accepted_events got.jsonl
    assert_match "$(check_delivery got.jsonl ev.jsonl)" "^ok " || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["status"] == 503])' requests.jsonl)" 3 || return 1
    assert_eq "$(jq_py 'sorted(set(e["ct"] for e in ev))' requests.jsonl)" '["application/x-ndjson"]' || return 1
    assert_ge "$(jq_py 'max(e["body"].count("\n") for e in ev)' requests.jsonl)" 2 "events per batch" || return 1
    grep -q "HTTP 503" err.txt || fail "error not reported: $(cat err.txt)"
}

test_elasticsearch_bulk_framing_index_per_family_and_partial_retry() {
    recv_start --bulk-item-429 0 || return 1
    "$JS" run -i 0.05 --spool-dir sp -o ev.jsonl \
        -o "elasticsearch://127.0.0.1:$RECV_PORT/panorama_kickstart?index.jobscope.=jobscope_meta" -- sleep 0.5 2> err.txt
    assert_eq $? 0 "$(cat err.txt)" || return 1
    assert_eq "$(jq_py 'sorted(set((e["path"], e["status"]) for e in ev))' requests.jsonl)" '[["/_bulk", 200]]' || return 1
    accepted_events got.jsonl
    # item 0 of the first request was answered 429: it was sent again
    assert_match "$(check_delivery got.jsonl ev.jsonl)" "^ok " || return 1
    assert_eq "$(grep -c '"seq":1}' got.jsonl)" 2 "the refused item sent twice" || return 1
    grep -q "_bulk item answered 429" err.txt || fail "not reported: $(cat err.txt)" || return 1
    python3 - requests.jsonl <<'PY' || return 1
import json, sys
ids = {}
for l in open(sys.argv[1]):
    lines = json.loads(l)["body"].split("\n")[:-1]
    for a, d in zip(lines[0::2], lines[1::2]):
        a, d = json.loads(a)["index"], json.loads(d)
        want = "jobscope_meta" if d["event"].startswith("jobscope.") else "panorama_kickstart"
        assert a["_index"] == want, (a, d["event"])
        assert ids.setdefault(d["seq"], a["_id"]) == a["_id"], "a resent event got another _id"
assert len(set(ids.values())) == len(ids), "two events share an _id"
PY
}
