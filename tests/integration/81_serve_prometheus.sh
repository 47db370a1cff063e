# jobscope serve's Prometheus /metrics: server health plus the live values of running jobs
# (job labels), valid for `promtool check metrics`, and scraped by a real Prometheus on
# loopback.  docs/serve.md.
source "$ROOT/tests/helpers/serve.sh"

# a running job j1 on n1 (no end record yet), with a GPU and a custom metric
post_running_job() {
    cat > ev.jsonl <<'EOF'
{"event":"jobscope.start","ts":1700000000,"hostname":"n1","job_id":"j1","wf_uuid":"w\"1","rank":0,"pid":42,"interval":1,"seq":1}
{"event":"kickstart.inv.online","ts":1700000001,"hostname":"n1","job_id":"j1","wf_uuid":"w\"1","rank":0,"pid":42,"rss":1000,"utime":1.5,"procs":2,"read_bytes":4096,"seq":2}
{"event":"kickstart.inv.online","ts":1700000002,"hostname":"n1","job_id":"j1","wf_uuid":"w\"1","rank":0,"pid":42,"rss":2000,"utime":2.5,"procs":3,"read_bytes":8192,"seq":3}
{"event":"kickstart.inv.online.gpu.stats","ts":1700000002,"hostname":"n1","job_id":"j1","rank":0,"id":0,"uuid":"GPU-1","gpu_utilization":75,"memoryUsed":5,"seq":4}
{"event":"jobscope.metric","ts":1700000002,"hostname":"n1","job_id":"j1","rank":0,"name":"loss","value":0.5,"tags":{"phase":"train"},"seq":5}
{"event":"kickstart.inv.online","ts":1700000001,"hostname":"n1","job_id":"j2","rank":0,"pid":43,"rss":10,"seq":2}
EOF
    curl -sf -o /dev/null --data-binary @ev.jsonl "$SERVE_URL/api/events"
}

test_metrics_exposes_running_jobs_and_passes_promtool() {
    need promtool || return 77
    serve_start || return 1
    post_running_job || fail "events refused" || return 1
    curl -s "$SERVE_URL/metrics" > m.txt
    promtool check metrics < m.txt > lint.txt 2>&1 || fail "promtool: $(cat lint.txt)" || return 1
    grep -q '^jobscope_kickstart_inv_online_rss{host="n1",job_id="j1",rank="0",wf_uuid="w\\"1"} 2000$' m.txt ||
        fail "latest rss of j1 with job labels: $(grep rss m.txt)" || return 1
    grep -q '^# TYPE jobscope_kickstart_inv_online_utime_total counter$' m.txt || fail "utime is a counter" || return 1
    grep -q '^jobscope_kickstart_inv_online_utime_total{.*job_id="j1".*} 2.5$' m.txt || fail "utime value" || return 1
    grep -q '^jobscope_kickstart_inv_online_gpu_stats_gpu_utilization{gpu="0",gpu_uuid="GPU-1",host="n1",job_id="j1",rank="0"} 75$' m.txt ||
        fail "GPU labels: $(grep gpu_util m.txt)" || return 1
    grep -q '^jobscope_kickstart_inv_online_gpu_stats_memory_used{' m.txt || fail "camelCase to snake_case" || return 1
    grep -q '^jobscope_jobscope_metric_loss{.*phase="train".*} 0.5$' m.txt || fail "custom metric" || return 1
    grep -q '^jobscope_serve_ingested_events_total 6$' m.txt || fail "health counters" || return 1
    # the end record of j1 removes its series; j2 stays
    echo '{"event":"jobscope.end","ts":1700000003,"hostname":"n1","job_id":"j1","rank":0,"exitcode":0,"seq":6}' |
        curl -sf -o /dev/null --data-binary @- "$SERVE_URL/api/events" || return 1
    curl -s "$SERVE_URL/metrics" > m2.txt
    grep -q 'job_id="j1"' m2.txt && fail "j1 still exposed after its end" && return 1
    grep -q '^jobscope_kickstart_inv_online_rss{host="n1",job_id="j2",rank="0"} 10$' m2.txt || fail "j2 gone" || return 1
    promtool check metrics < m2.txt || return 1
}

test_a_real_prometheus_scrapes_the_server() {
    need prometheus || return 77
    serve_start || return 1
    post_running_job || return 1
    local pport; pport=$(free_port)
    cat > prom.yml <<EOF
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: jobscope
    static_configs: [ { targets: ["127.0.0.1:$SERVE_PORT"] } ]
EOF
    prometheus --config.file=prom.yml --storage.tsdb.path="$T/promdata" --web.listen-address="127.0.0.1:$pport" \
        > prom.log 2>&1 &
    local ppid=$!
    _js_add_trap "kill $ppid 2>/dev/null; wait $ppid 2>/dev/null"
    local i r=""
    for i in $(seq 150); do
        r=$(curl -s "http://127.0.0.1:$pport/api/v1/query?query=jobscope_kickstart_inv_online_rss%7Bjob_id%3D%22j1%22%7D" 2>/dev/null)
        case "$r" in *'"2000"'*) break ;; esac
        sleep 0.2
    done
    assert_match "$r" '"job":"jobscope".*"job_id":"j1".*"2000"' "rss of j1 in Prometheus" || { tail -5 prom.log; return 1; }
    r=$(curl -s "http://127.0.0.1:$pport/api/v1/query?query=up%7Bjob%3D%22jobscope%22%7D")
    assert_match "$r" '"value":\[[0-9.]+,"1"\]' "target up" || return 1
    r=$(curl -s "http://127.0.0.1:$pport/api/v1/targets")
    assert_match "$r" '"health":"up"' || return 1
    assert_eq "$(echo "$r" | grep -c '"lastError":"[^"]')" 0 "scrape errors: $r" || return 1
}
