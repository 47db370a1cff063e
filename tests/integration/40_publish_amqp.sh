# Publishing to a real RabbitMQ (AMQP 0-9-1 and the management HTTP API),
# consumed with an independent client (python3-pika).  docs/publishing.md.
source "$ROOT/tests/helpers/publish_servers.sh"

test_amqp_and_management_api_deliver_every_event_once_with_its_routing_key() {
    have_pika || return 77
    rmq_start || return $?
    rmq_queue monitoring q_all '#' && rmq_queue monitoring q_samples 'kickstart.inv.online' &&
    rmq_queue panorama q_http '#' && rmq_queue fixed q_fixed '#' || return 1
    local amqp="amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2f/monitoring"
    local http="rabbitmq://guest:guest@127.0.0.1:$RMQ_MGMT/api/exchanges/%2f/panorama/publish"
    "$JS" run -i 0.05 --spool-dir sp -o "$amqp" -o "$http" \
        -o "amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2f/fixed?routing_key=site.jobs" \
        -o ev.jsonl -- sh -c 'sleep 1; exit 3' 2> err.txt
    assert_eq $? 3 "job exit status" || { cat err.txt; return 1; }
    assert_eq "$(cat err.txt)" "" "nothing on stderr" || return 1
    amqp_drain q_all all.jsonl && amqp_drain q_samples samples.jsonl &&
    amqp_drain q_http http.jsonl && amqp_drain q_fixed fixed.jsonl || return 1
    local n; n=$(wc -l < ev.jsonl)
    assert_ge "$n" 15 "events" || return 1
    assert_match "$(check_delivery all.jsonl ev.jsonl exact)" "^ok $n events, 0 dup" "amqp" || return 1
    assert_match "$(check_delivery http.jsonl ev.jsonl exact)" "^ok $n events, 0 dup" "rabbitmq http" || return 1
    assert_match "$(check_delivery fixed.jsonl ev.jsonl exact)" "^ok $n events, 0 dup" "routing_key option" || return 1
    # routing key = event name; persistent JSON messages
    assert_eq "$(jq_py 'sorted(set((e["rk"] == e["ev"]["event"], e["dm"], e["ct"]) for e in ev))' all.jsonl http.jsonl)" \
              '[[true, 2, "application/json"]]' || return 1
    assert_eq "$(jq_py 'sorted(set(e["rk"] for e in ev))' fixed.jsonl)" '["site.jobs"]' || return 1
    # the topic binding on the sample key got exactly the samples
    assert_eq "$(wc -l < samples.jsonl)" "$(grep -c '"event":"kickstart.inv.online"' ev.jsonl)" || return 1
    assert_eq "$(ls sp 2>/dev/null | wc -l)" 0 "no spool left" || return 1
    # A burst faster than the broker: the memory queue (16384) overflows into
    # the spool while batches are in flight; still each event once, in order.
    rmq_queue bench q_bench '#' || return 1
    "$HELPERS/publish_bench" -s sp_b -n 30000 "amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2f/bench" > bench.txt || return 1
    assert_match "$(cat bench.txt)" "; [1-9][0-9]* went through the spool" "overflow exercised" || return 1
    amqp_drain q_bench bench.jsonl || return 1
    assert_eq "$(jq_py '[e["ev"]["seq"] for e in ev] == list(range(1, 30001))' bench.jsonl)" true "30000 in order, once" || return 1
    assert_eq "$(ls sp_b 2>/dev/null | wc -l)" 0 "no spool left" || return 1
}

test_amqp_broker_stopped_mid_job_nothing_lost_order_kept() {
    have_pika || return 77
    rmq_start || return $?
    rmq_queue monitoring q_all '#' || return 1
    rmq_api PUT /users/tester '{"password":"secretpw","tags":""}' >/dev/null &&
    rmq_api PUT /permissions/%2f/tester '{"configure":".*","write":".*","read":".*"}' >/dev/null || return 1
    "$JS" run -i 0.05 --spool-dir sp --flush-timeout 30 -o ev.jsonl \
        -o "amqp://tester:secretpw@127.0.0.1:$RMQ_PORT/%2f/monitoring" -- sleep 7 2> err.txt &
    local js=$!
    sleep 1.5
    rmq_ctl stop_app || return 1
    sleep 1.5
    ls sp/*.spool > spools.txt 2>/dev/null
    rmq_ctl start_app || return 1
    wait $js
    assert_eq $? 0 "job exit status" || return 1
    assert_file spools.txt || return 1          # events went to disk during the outage
    amqp_drain q_all all.jsonl || return 1
    assert_match "$(check_delivery all.jsonl ev.jsonl)" "^ok " "after an outage" || return 1
    assert_eq "$(ls sp | wc -l)" 0 "spool removed once delivered" || return 1
    grep -q "events wait in the spool" err.txt || fail "outage not reported: $(cat err.txt)" || return 1
    grep -q "delivering again" err.txt || fail "recovery not reported" || return 1
    ! grep -q secretpw err.txt || fail "password printed: $(cat err.txt)"
}

test_spool_left_at_exit_is_resent_by_jobscope_flush() {
    have_pika || return 77
    local port; port=$(free_port)
    # nothing listens on $port: everything goes to the spool
    "$JS" run -i 0.05 --spool-dir sp --flush-timeout 0.5 -o ev.jsonl \
        -o "amqp://guest:guest@127.0.0.1:$port/%2f/monitoring" -- sleep 0.5 2> err.txt
    assert_eq $? 0 || return 1
    local f; f=$(ls sp/*.spool) || return 1
    grep -q "jobscope flush $f" err.txt || fail "no hint: $(cat err.txt)" || return 1
    ! grep -q 'guest:guest' "$f" || fail "password in the spool file" || return 1
    # the spool records the destination without its password: flush asks for it
    "$JS" flush --flush-timeout 2 sp 2> flush1.txt
    assert_eq $? 1 || return 1
    grep -q "had a password" flush1.txt || fail "$(cat flush1.txt)" || return 1
    rmq_start || return $?
    rmq_queue monitoring q_all '#' || return 1
    echo "amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2f/monitoring" > url.txt
    "$JS" flush -o @url.txt sp 2> flush2.txt
    assert_eq $? 0 "flush: $(cat flush2.txt)" || return 1
    assert_eq "$(ls sp | wc -l)" 0 "spool removed" || return 1
    amqp_drain q_all all.jsonl || return 1
    assert_match "$(check_delivery all.jsonl ev.jsonl exact)" "^ok " "flushed" || return 1
}

test_amqps_verifies_the_broker_certificate() {
    have_pika || return 77
    RMQ_WITH_TLS=1 rmq_start || return $?
    rmq_queue monitoring q_all '#' || return 1
    local url="amqps://guest:guest@localhost:$RMQ_TLS/%2f/monitoring"
    # trusted through --ca-file
    "$JS" run -i 0.1 --spool-dir sp1 --ca-file rmq/cert.pem -o "$url" -o ev1.jsonl -- sleep 0.3 2> err1.txt
    assert_eq $? 0 || return 1
    assert_eq "$(cat err1.txt)" "" "$(cat err1.txt)" || return 1
    amqp_drain q_all got1.jsonl || return 1
    assert_match "$(check_delivery got1.jsonl ev1.jsonl exact)" "^ok " "amqps with --ca-file" || return 1
    # a self-signed certificate the system does not trust: refused, events kept
    "$JS" run -i 0.1 --spool-dir sp2 --flush-timeout 1 -o "$url" -o ev2.jsonl -- sleep 0.3 2> err2.txt
    assert_eq $? 0 || return 1
    assert_eq "$(ls sp2/*.spool | wc -l)" 1 "spooled" || { cat err2.txt; return 1; }
    grep -q "events wait in the spool" err2.txt || fail "$(cat err2.txt)" || return 1
    grep -Eiq "ssl|certif|verif" err2.txt || fail "not a certificate error: $(cat err2.txt)" || return 1
    amqp_drain q_all got2.jsonl || return 1
    assert_eq "$(wc -l < got2.jsonl)" 0 "nothing went to an unverified broker" || return 1
    # --insecure: accepted without verification
    "$JS" run -i 0.1 --spool-dir sp3 --insecure -o "$url" -o ev3.jsonl -- sleep 0.3 2> err3.txt
    assert_eq $? 0 || return 1
    amqp_drain q_all got3.jsonl || return 1
    assert_match "$(check_delivery got3.jsonl ev3.jsonl exact)" "^ok " "amqps --insecure" || return 1
}
