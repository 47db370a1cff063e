# 87_serve_consume.sh — `jobscope serve --consume amqp://...`, a site collector
# fed by a real rabbitmq-server (loopback, free ports): events published by
# `jobscope run -o amqp://...` become queryable; messages a server held
# without acknowledging when it was killed come again after its restart;
# points forwarded by another server (--forward amqp://) keep their names.
# docs/serve-site.md.
source "$ROOT/tests/helpers/serve.sh"

# queue_counts QUEUE: "READY UNACKED" (rabbitmqctl: live numbers)
queue_counts() {
    rmq_ctl list_queues name messages_ready messages_unacknowledged 2>/dev/null |
        awk -v q="$1" '$1 == q {print $2, $3}'
}
wait_queue() {      # QUEUE "READY UNACKED" [TRIES]
    local i
    for i in $(seq "${3:-80}"); do
        [ "$(queue_counts "$1")" = "$2" ] && return 0
        sleep 0.25
    done
    fail "queue $1: '$(queue_counts "$1")', expected '$2'"
}

# points JOB METRIC: "ts value" lines the server holds for METRIC of job JOB
points() {
    curl -s "$SERVE_URL/api/query" -d '{"start":0,"msResolution":true,"queries":[{"metric":"'"$2"'",
        "aggregator":"sum","filters":[{"type":"literal_or","tagk":"job_id","filter":"'"$1"'","groupBy":true}]}]}' |
        python3 -c 'import json,sys
d = json.load(sys.stdin)
for s in (d if isinstance(d, list) else []):
    for t, v in sorted(s["dps"].items()): print(t, float(v))'
}
# expected JOB FILE: the same from the job's own events
# (a job's last periodic sample and its final one can fall in the same
# millisecond: the store keeps one value per timestamp, the last written)
expected_rss() {
    jq_py '"\n".join("%d %r" % kv for kv in sorted({round(s["ts"] * 1000): float(s["rss"]) for s in samples}.items()))' "$1"
}
# n_samples FILE: the distinct sample timestamps of the job
n_samples() { jq_py 'len({round(s["ts"] * 1000) for s in samples})' "$1"; }
wait_points() {     # JOB METRIC N
    local i
    for i in $(seq 80); do
        [ "$(points "$1" "$2" | wc -l)" -ge "$3" ] && return 0
        sleep 0.25
    done
    fail "$(points "$1" "$2" | wc -l) points of $2 for $1, expected $3"
}

AMQP() { echo "amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2f/$1${2:+?$2}"; }

test_consume_events_published_by_jobscope_run_become_queryable() {
    rmq_start || return $?
    serve_start s --consume "$(AMQP jobs)" || return 1
    wait_queue jobscope-serve "0 0" || return 1        # declared durable and bound
    "$JS" run -i 0.2 --job jA -o ev.jsonl -o "$(AMQP jobs)" -- sh -c 'sleep 1.2' || return 1
    local n; n=$(n_samples ev.jsonl)
    wait_points jA kickstart.inv.online.rss "$n" || return 1
    assert_eq "$(points jA kickstart.inv.online.rss)" "$(expected_rss ev.jsonl)" "rss of the job" || return 1
    assert_eq "$(points jA jobscope.end.duration | awk '{print $2}')" "$(jq_py 'float(end["duration"])' ev.jsonl)" || return 1
    wait_queue jobscope-serve "0 0" || return 1        # everything acknowledged
    curl -s "$SERVE_URL/metrics" > m.txt
    assert_eq "$(awk '/^jobscope_serve_consume_messages\{queue="jobscope-serve",state="received"\}/ {print $2}' m.txt)" \
        "$(wc -l < ev.jsonl | tr -d ' ')" "messages received" || return 1
    # the queue survives a broker restart
    rmq_api GET /queues/%2f/jobscope-serve > q.json
    assert_eq "$(python3 -c 'import json; print(json.load(open("q.json"))["durable"])')" True || return 1
}

test_consume_unacknowledged_messages_come_again_after_kill() {
    rmq_start || return $?
    serve_start s --consume "$(AMQP jobs)" || return 1
    wait_queue jobscope-serve "0 0" || return 1
    kill -STOP "$SERVE_PID"                  # holds what the broker sends, acks nothing
    "$JS" run -i 0.2 --job jB -o ev.jsonl -o "$(AMQP jobs)" -- sh -c 'sleep 1' || return 1
    local n; n=$(wc -l < ev.jsonl | tr -d ' ')
    wait_queue jobscope-serve "0 $n" || { kill -CONT "$SERVE_PID"; return 1; }   # all delivered, none acked
    kill -9 "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null
    wait_queue jobscope-serve "$n 0" || return 1        # back in the queue
    serve_start s --consume "$(AMQP jobs)" || return 1  # the same store
    wait_points jB kickstart.inv.online.rss "$(n_samples ev.jsonl)" || return 1
    assert_eq "$(points jB kickstart.inv.online.rss)" "$(expected_rss ev.jsonl)" "nothing lost" || return 1
    wait_queue jobscope-serve "0 0" || return 1
    curl -s "$SERVE_URL/metrics" > m.txt
    assert_eq "$(awk '/state="redelivered"/ {print $2}' m.txt)" "$n" "redelivered" || return 1
}

test_consume_points_forwarded_by_another_server_keep_their_names() {
    rmq_start || return $?
    serve_start c --consume "$(AMQP site queue=collector)" || return 1
    local C_URL=$SERVE_URL
    wait_queue collector "0 0" || return 1
    serve_start n --forward "$(AMQP site)" || return 1
    python3 - <<'PY' > put.json
import json
T0 = 1700000000
print(json.dumps([{"metric": m, "timestamp": T0 + i, "value": i * k, "tags": {"host": "n1"}}
                  for i in range(10) for m, k in (("load_average", 0.5), ("app.loss", 2))]))
PY
    assert_eq "$(curl -s -w '%{http_code}' --data-binary @put.json "$SERVE_URL/api/put")" 204 || return 1
    "$JS" run -i 0.2 --job jC -o ev.jsonl -- sh -c 'sleep 0.6' || return 1
    curl -s -o /dev/null --data-binary @ev.jsonl "$SERVE_URL/api/events" || return 1
    SERVE_URL=$C_URL
    local i
    for i in $(seq 80); do
        [ "$(curl -s "$C_URL/api/suggest?type=metrics&q=app" )" = '["app.loss"]' ] && break
        sleep 0.25
    done
    curl -s "$C_URL/api/query" -d '{"start":1700000000,"end":1700000009,"queries":[
        {"metric":"load_average","aggregator":"sum"},{"metric":"app.loss","aggregator":"sum","tags":{"host":"n1"}}]}' > q.json
    python3 - <<'PY' || return 1
import json
d = json.load(open("q.json"))
assert len(d) == 2, d
la = {int(k) - 1700000000: v for k, v in d[0]["dps"].items()}
assert la == {i: i * 0.5 for i in range(10)}, la
assert d[1]["tags"] == {"host": "n1"} and len(d[1]["dps"]) == 10 and d[1]["dps"]["1700000009"] == 18, d[1]
PY
    # the job's events went as events (not also as loose points): one series per field
    wait_points jC kickstart.inv.online.rss "$(n_samples ev.jsonl)" || return 1
    assert_eq "$(points jC kickstart.inv.online.rss)" "$(expected_rss ev.jsonl)" "rss via the collector" || return 1
    assert_eq "$(curl -s "$C_URL/api/suggest?type=metrics&q=jobscope.points")" '[]' "no jobscope.points metric" || return 1
}

test_consume_bad_url_is_one_clear_error() {
    "$JS" serve --store "$T/x" --listen 127.0.0.1:0 --socket none --node-interval 0 \
        --consume "amqp://guest:guest@localhost/onlyvhost" > out.txt 2> err.txt
    assert_eq $? 125 "exit status" || return 1
    assert_match "$(cat err.txt)" "expected amqp://USER:PASS@HOST/VHOST/EXCHANGE" || return 1
    assert_eq "$(wc -l < err.txt)" 1 "one line" || return 1
}
