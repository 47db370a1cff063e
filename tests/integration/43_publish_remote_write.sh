# 43_publish_remote_write.sh — Prometheus remote write (promrw://, docs/publishing.md)
# into the real receivers, on loopback: VictoriaMetrics' /api/v1/write from the
# monitor (-o), Prometheus' remote-write receiver from the server (--forward),
# each stopped in the middle and started again on the same data: every sample
# arrives once, with its value, its timestamp and the job's labels.
source "$ROOT/tests/helpers/serve.sh"
W=$HELPERS/workload

# prom_start [again]: Prometheus with the remote-write receiver; PROM_PORT.
prom_start() {
    need prometheus || return 77
    [ "${1:-}" = again ] || PROM_PORT=$(free_port)
    echo 'global: { scrape_interval: 1h }' >prom.yml
    prometheus --config.file=prom.yml --storage.tsdb.path="$T/promdata" \
        --web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-remote-write-receiver >>prom.log 2>&1 &
    PROM_PID=$!
    _js_add_trap prom_stop
    local i
    for i in $(seq 100); do
        curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    fail "prometheus did not start: $(tail -3 prom.log)"
}
prom_stop() { [ -n "${PROM_PID:-}" ] && kill "$PROM_PID" 2>/dev/null; wait "$PROM_PID" 2>/dev/null; PROM_PID=; }

# samples FILE FIELD: "ms value" of every kickstart.inv.online sample, sorted
samples() {
    python3 - "$1" "$2" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
for e in ev:
    if e["event"] == "kickstart.inv.online":
        print(round(e["ts"] * 1000), repr(float(e[sys.argv[2]])))
PY
}

test_monitor_remote_writes_into_victoria_metrics_across_an_outage() {
    vm_start || return $?
    "$JS" run -i 0.1 --tag phase=train -o "promrw://127.0.0.1:$VM_PORT" -o ev.jsonl -- \
        "$W" burn 2500 2>err.txt &
    local job=$!
    sleep 0.8
    vm_stop                      # down for a second in the middle of the job
    sleep 1
    vm_start again || return 1
    wait $job || { cat err.txt; return 1; }
    # the outage happened, was reported, and ended
    assert_match "$(cat err.txt)" "promrw://127.0.0.1:$VM_PORT: .*events wait in the spool until it answers" "outage" || return 1
    assert_match "$(cat err.txt)" "promrw://127.0.0.1:$VM_PORT: delivering again" "recovery" || return 1
    local want got
    want=$(samples ev.jsonl rss)
    assert_ge "$(echo "$want" | wc -l)" 20 "samples" || return 1
    for i in $(seq 40); do
        got=$(vm_points kickstart_inv_online_rss)
        [ "$got" = "$want" ] && break
        sleep 0.25
    done
    assert_eq "$got" "$want" "every rss sample in VictoriaMetrics, once" || return 1
    assert_eq "$(vm_points kickstart_inv_online_utime)" "$(samples ev.jsonl utime)" "utime" || return 1
    # the job's labels: annotations and its --tag
    curl -sf "http://127.0.0.1:$VM_PORT/api/v1/series" --data-urlencode 'match[]=kickstart_inv_online_rss' >series.json
    assert_eq "$(python3 -c '
import json; d = json.load(open("series.json"))["data"]
print(sorted({(s["job_id"], s["phase"], s["hostname"] != "") for s in d}))')" \
        "[('$(jq_py 'ev[0]["job_id"]' ev.jsonl)', 'train', True)]" "labels" || return 1
}

test_serve_forwards_remote_write_into_prometheus_across_an_outage() {
    prom_start || return $?
    serve_start s --forward "promrw://127.0.0.1:$PROM_PORT" || return 1
    local now i
    now=$(date +%s)
    put() { # FIRST COUNT: m.rw{host=h1,job_id=j} = i at now-60+i
        python3 - "$1" "$2" "$now" >put.json <<'PY'
import json, sys
first, n, now = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
print(json.dumps([{"metric": "m.rw", "timestamp": now - 60 + i, "value": i * 1.5,
                   "tags": {"host": "h1", "job_id": "j"}} for i in range(first, first + n)]))
PY
        assert_eq "$(curl -s -w '%{http_code}' --data-binary @put.json "$SERVE_URL/api/put")" 204 "put"
    }
    put 0 10 || return 1
    # wait for the first 10, then take Prometheus down, store 20 more, bring it back
    for i in $(seq 50); do
        [ "$(curl -s "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode 'query=count_over_time(m_rw[5m])' |
            grep -o '"[0-9]*"\]' | tr -dc 0-9)" = 10 ] && break
        sleep 0.2
    done
    prom_stop
    put 10 20 || return 1
    sleep 1
    prom_start again || return 1
    local r=""
    for i in $(seq 100); do
        r=$(curl -s "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode 'query=count_over_time(m_rw[5m])')
        case "$r" in *'"30"]'*) break ;; esac
        sleep 0.2
    done
    assert_match "$r" '"host":"h1".*"job_id":"j".*"30"\]' "30 points in Prometheus after the outage" || return 1
    r=$(curl -s "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode 'query=sum_over_time(m_rw[5m])')
    assert_match "$r" '"652.5"\]' "the values (1.5 * (0+...+29))" || return 1
    assert_match "$(cat s.log)" "promrw://127.0.0.1:$PROM_PORT: .*events wait in the spool" "outage" || return 1
    assert_match "$(cat s.log)" "promrw://127.0.0.1:$PROM_PORT: delivering again" "recovery" || return 1
    # the server says what it delivered
    assert_match "$(curl -s "$SERVE_URL/metrics" | grep 'jobscope_serve_forward_events{.*delivered')" ' 30$' "delivered" || return 1
}
