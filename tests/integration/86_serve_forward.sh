# 86_serve_forward.sh — `jobscope serve --forward URL` into a real
# victoria-metrics (Debian package, loopback, free ports): every stored point
# reaches the cluster engine under the same metric name (OpenTSDB) or as the
# line protocol's measurement + field (Influx), node metrics included; while
# the engine is down the points wait in the spool, also across a restart of
# the server, and arrive once it is back.  docs/serve-site.md.
source "$ROOT/tests/helpers/serve.sh"

T0=1700000000

put_json() {   # FIRST COUNT: m.fwd{host=h1} = i at T0+i, load_average{host=n9} = i/10
    python3 - "$1" "$2" <<'PY' > put.json
import json, sys
first, n = int(sys.argv[1]), int(sys.argv[2])
T0 = 1700000000
pts = []
for i in range(first, first + n):
    pts.append({"metric": "m.fwd", "timestamp": T0 + i, "value": i, "tags": {"host": "h1", "job_id": "j"}})
    pts.append({"metric": "load_average", "timestamp": T0 + i, "value": i / 10, "tags": {"host": "n9"}})
print(json.dumps(pts))
PY
    assert_eq "$(curl -s -w '%{http_code}' --data-binary @put.json "$SERVE_URL/api/put")" 204 "put"
}

# wait_vm METRIC N: until VM holds N points of METRIC (20 s)
wait_vm() {
    local i
    for i in $(seq 80); do
        [ "$(vm_points "$1" | wc -l)" -ge "$2" ] && return 0
        sleep 0.25
    done
    fail "victoria-metrics has $(vm_points "$1" | wc -l) points of $1, expected $2"
}

test_forward_points_and_events_into_victoria_metrics() {
    vm_start || return $?
    serve_start s --forward "opentsdb://127.0.0.1:$VM_TSDB" --forward "influx://127.0.0.1:$VM_PORT/jobs" \
        --node-interval 0.2 || return 1
    put_json 0 20 || return 1
    # a job's events, as a local jobscope run streams them
    "$JS" run -i 0.2 -o ev.jsonl -- sh -c 'sleep 1' || return 1
    assert_eq "$(curl -s -w '%{http_code}' -o /dev/null --data-binary @ev.jsonl "$SERVE_URL/api/events")" 200 "events" || return 1
    wait_vm m.fwd 20 || return 1
    # exactly what was stored, same name (OpenTSDB) ...
    assert_eq "$(vm_points m.fwd | tr '\n' ' ')" "$(python3 -c '
T0 = 1700000000
print(" ".join("%d %r" % ((T0 + i) * 1000, float(i)) for i in range(20)), end=" ")')" "m.fwd in VM" || return 1
    # ... a dot-less name keeps its name, through both protocols
    wait_vm load_average 20 || return 1
    assert_eq "$(vm_points load_average | head -3 | tr '\n' ' ')" "1700000000000 0.0 1700000001000 0.1 1700000002000 0.2 " || return 1
    wait_vm m_fwd 20 || return 1          # influx: measurement "m", field "fwd"
    wait_vm load_average_value 20 || return 1
    # the job's samples: every rss point the server stored is in VM
    local n
    n=$(jq_py 'len(samples)' ev.jsonl)
    wait_vm kickstart.inv.online.rss "$n" || return 1
    assert_eq "$(vm_points kickstart.inv.online.rss | awk '{print $2}' | tr '\n' ' ')" \
        "$(jq_py '" ".join(repr(float(s["rss"])) for s in samples) + " "' ev.jsonl)" "rss values" || return 1
    curl -sf "http://127.0.0.1:$VM_PORT/api/v1/series" --data-urlencode 'match[]=kickstart.inv.online.rss' > series.json
    assert_eq "$(python3 -c 'import json; d=json.load(open("series.json"))["data"]; print(len(d), d[0]["job_id"] == d[0]["job_id"], "host" in d[0])')" "1 True True" || return 1
    # node metrics are forwarded too, with their host tag
    wait_vm cpu_percent 1 || return 1
    # and the server counts what it delivered
    curl -s "$SERVE_URL/metrics" > m.txt
    assert_match "$(grep 'jobscope_serve_forward_events{destination="0",state="delivered"}' m.txt)" ' [1-9][0-9]*$' || return 1
    grep -q 'forward: opentsdb://127.0.0.1' "$T/s.log" || { fail "start-up line"; return 1; }
}

test_forward_spools_while_engine_down_and_across_restart() {
    vm_start || return $?
    serve_start s --forward "opentsdb://127.0.0.1:$VM_TSDB" || return 1
    put_json 0 5 || return 1
    wait_vm m.fwd 5 || return 1
    vm_stop
    put_json 5 10 || return 1            # acknowledged (204) while VM is down
    sleep 1
    curl -s "$SERVE_URL/metrics" > m.txt
    assert_match "$(grep '^jobscope_serve_forward_pending' m.txt)" ' [1-9][0-9]*$' "pending while down" || return 1
    # the server stops while the engine is still down: the points wait in the spool
    serve_stop || return 1
    ls "$SERVE_STORE"/spool/*.spool >/dev/null 2>&1 || { fail "no spool file left"; return 1; }
    vm_start again || return 1
    serve_start s --forward "opentsdb://127.0.0.1:$VM_TSDB" || return 1
    wait_vm m.fwd 15 || return 1
    assert_eq "$(vm_points m.fwd | awk '{print $2}' | tr '\n' ' ')" \
        "0.0 1.0 2.0 3.0 4.0 5.0 6.0 7.0 8.0 9.0 10.0 11.0 12.0 13.0 14.0 " "nothing lost" || return 1
    grep -q "delivering what an earlier run left" "$T/s.log" || { fail "spool not taken over"; return 1; }
}

test_forward_bad_url_is_one_clear_error() {
    "$JS" serve --store "$T/x" --listen 127.0.0.1:0 --socket none --node-interval 0 \
        --forward "influx://" > out.txt 2> err.txt
    assert_eq $? 125 "exit status" || return 1
    assert_match "$(cat err.txt)" "forward" || return 1
    assert_eq "$(wc -l < err.txt)" 1 "one line" || return 1
}
