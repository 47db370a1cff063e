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
    if r["status"] != 200 or "/_index_template/" in r["path"]:
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
    assert_eq "$(jq_py 'sorted(set((e["path"], e["status"]) for e in ev))' requests.jsonl)" \
        '[["/_bulk", 200], ["/_index_template/jobscope-panorama_kickstart", 200]]' || return 1
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

test_https_verifies_the_peer_unless_insecure() {
    make_cert "$T" || return $?
    recv_start --tls "$T/cert.pem" "$T/key.pem" || return 1
    local url="https://127.0.0.1:$RECV_PORT/in#ndjson"
    "$JS" run -i 0.1 --spool-dir sp1 --ca-file cert.pem -o ev1.jsonl -o "$url" -- sleep 0.3 2> err1.txt
    assert_eq $? 0 || return 1
    assert_eq "$(cat err1.txt)" "" || return 1
    "$JS" run -i 0.1 --spool-dir sp2 --flush-timeout 1 -o ev2.jsonl -o "$url" -- sleep 0.3 2> err2.txt
    assert_eq $? 0 || return 1
    grep -q "certificate" err2.txt || fail "no certificate error: $(cat err2.txt)" || return 1
    assert_eq "$(ls sp2/*.spool | wc -l)" 1 "spooled" || return 1
    "$JS" run -i 0.1 --spool-dir sp3 --insecure -o ev3.jsonl -o "$url" -- sleep 0.3 2> err3.txt
    assert_eq $? 0 || return 1
    accepted_events got.jsonl
    cat ev1.jsonl ev3.jsonl > want.jsonl
    assert_eq "$(wc -l < got.jsonl)" "$(wc -l < want.jsonl)" "received = sent with --ca-file and --insecure" || return 1
    assert_eq "$(grep -c "$(head -1 ev2.jsonl | cut -c1-60)" got.jsonl)" 0 "nothing went to an unverified peer"
}

test_require_output_makes_an_unreachable_destination_fatal_before_the_job_starts() {
    local port; port=$(free_port)
    "$JS" run --require-output -o ev.jsonl -o "http://user:pw9@127.0.0.1:$port/x" -- touch ran 2> err.txt
    assert_eq $? 125 || return 1
    [ ! -e ran ] || fail "the job was started" || return 1
    assert_eq "$(wc -l < err.txt)" 1 "one line" || return 1
    assert_match "$(cat err.txt)" "^jobscope: .*http://user:\*\*\*@127\.0\.0\.1:$port/x" || return 1
    "$JS" run --require-output -o "amqp://u:pw9@127.0.0.1:$port/onlyvhost" -- touch ran 2> err2.txt
    assert_eq $? 125 || return 1
    [ ! -e ran ] || fail "the job was started" || return 1
    assert_match "$(cat err2.txt)" "expected amqp" || return 1
    ! grep -q pw9 err.txt err2.txt || fail "password printed"
}

test_without_require_output_the_job_runs_and_events_wait_in_the_spool() {
    local port; port=$(free_port)
    "$JS" run -i 0.1 --spool-dir sp --flush-timeout 0.5 -o ev.jsonl \
        -o "opentsdb://127.0.0.1:$port" -o "amqp://u:pw9@127.0.0.1:$port/onlyvhost" -- sh -c 'exit 7' 2> err.txt
    assert_eq $? 7 "the job's own status" || return 1
    assert_eq "$(ls sp/*.spool | wc -l)" 2 "one spool per destination" || return 1
    grep -q "expected amqp" err.txt && grep -q "jobscope flush" err.txt || fail "$(cat err.txt)" || return 1
    ! grep -q pw9 err.txt sp/*.spool || fail "password printed or spooled" || return 1
    # the malformed destination's spool goes to a good URL later
    recv_start || return 1
    local f; f=$(grep -l onlyvhost sp/*.spool)
    "$JS" flush -o "http://127.0.0.1:$RECV_PORT/late" "$f" 2> flush.txt
    assert_eq $? 0 "$(cat flush.txt)" || return 1
    accepted_events got.jsonl
    assert_match "$(check_delivery got.jsonl ev.jsonl exact)" "^ok " || return 1
}

test_passwords_stay_out_of_the_process_list() {
    recv_start || return 1
    echo "http://file:pwfile1@127.0.0.1:$RECV_PORT/a" > url.txt
    "$JS" run -i 0.1 --spool-dir sp -o @url.txt -o "http://argv:pwargv2@127.0.0.1:$RECV_PORT/b" -- sleep 1 2> err.txt &
    local js=$!
    sleep 0.5
    tr '\0' ' ' < /proc/$js/cmdline > cmdline.txt
    wait $js
    assert_eq $? 0 || return 1
    assert_match "$(cat cmdline.txt)" "http://argv:\*+@127" "password hidden in argv" || return 1
    ! grep -q "pwargv2\|pwfile1" cmdline.txt err.txt || fail "password visible: $(cat cmdline.txt)" || return 1
    assert_eq "$(jq_py 'sorted(set((e["path"], e["auth"]) for e in ev))' requests.jsonl)" \
        '[["/a", "Basic ZmlsZTpwd2ZpbGUx"], ["/b", "Basic YXJndjpwd2FyZ3Yy"]]' "both credentials used" || return 1
}

test_wrong_credentials_keep_events_in_the_spool_instead_of_dropping_them() {
    recv_start --fail-first 100000 --fail-status 401 || return 1
    "$JS" run -i 0.1 --spool-dir sp --flush-timeout 1 -o ev.jsonl \
        -o "http://u:wrong@127.0.0.1:$RECV_PORT/in" -- sleep 0.3 2> err.txt
    assert_eq $? 0 || return 1
    grep -q "HTTP 401" err.txt || fail "$(cat err.txt)" || return 1
    local f; f=$(ls sp/*.spool) || return 1
    assert_eq "$(grep -c '^[0-9]*	' "$f")" "$(wc -l < ev.jsonl)" "every event kept" || return 1
}

# Panorama's index expects a time field, and ES maps a first-seen `ts` as a
# 32-bit float (sub-second precision lost): documents carry @timestamp and an
# index template with explicit types is installed before the first batch.
test_elasticsearch_documents_have_timestamp_and_a_template_types_ts_as_double() {
    recv_start || return 1
    "$JS" run -i 0.1 --spool-dir sp -o ev.jsonl -o "elasticsearch://127.0.0.1:$RECV_PORT/kick?index.jobscope.=meta" \
        -- sleep 0.3 2> err.txt
    assert_eq $? 0 "$(cat err.txt)" || return 1
    python3 - requests.jsonl ev.jsonl <<'PY' || return 1
import json, sys, datetime
reqs = [json.loads(l) for l in open(sys.argv[1])]
sent = {e["seq"]: e for e in map(json.loads, open(sys.argv[2]))}
assert "/_index_template/" in reqs[0]["path"], "the template is not the first request: %s" % reqs[0]["path"]
assert reqs[0]["path"] == "/_index_template/jobscope-kick", reqs[0]["path"]
t = json.loads(reqs[0]["body"])
assert sorted(t["index_patterns"]) == ["kick", "meta"], t["index_patterns"]
props = t["template"]["mappings"]["properties"]
assert props["ts"]["type"] == "double" and props["@timestamp"]["type"] == "date", props
for k in ("wf_uuid", "dag_job_id", "hostname", "event", "site"):
    assert props[k]["type"] == "keyword", k
assert len([r for r in reqs if "_index_template" in r["path"]]) == 1, "template installed more than once"
n = 0
for r in reqs[1:]:
    for d in r["body"].split("\n")[1::2]:
        if not d:
            continue
        d = json.loads(d)
        assert list(d)[0] == "@timestamp", list(d)[:3]
        ts = datetime.datetime.strptime(d.pop("@timestamp"), "%Y-%m-%dT%H:%M:%S.%fZ") \
            .replace(tzinfo=datetime.timezone.utc).timestamp()
        assert abs(ts - d["ts"]) < 0.0006, (ts, d["ts"])
        assert d == sent[d["seq"]], "document differs from the event beyond @timestamp"
        n += 1
assert n == len(sent), (n, len(sent))
PY
}
