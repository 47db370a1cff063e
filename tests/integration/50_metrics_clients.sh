# 50_metrics_clients.sh — custom metrics from the C library, the Python module
# and `jobscope emit`, from many processes and threads at once (docs/metrics.md).

PY="$ROOT/python"

test_c_many_processes_and_threads() {
    # paced so the monitor keeps up: nothing may be lost
    "$JS" run -q -o ev.jsonl -- "$HELPERS/js_load" 4 4 500 20000 >out.txt || return 1
    read -r _ sent _ dropped <out.txt
    assert_eq "$sent" 8001 "metrics sent" || return 1
    assert_eq "$dropped" 0 "client drops" || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"]=="jobscope.metric"])' ev.jsonl)" 8001 "metric events" || return 1
    assert_eq "$(jq_py 'end["metrics"]["received"]' ev.jsonl)" 8001 "record received" || return 1
    assert_eq "$(jq_py 'end["metrics"]["series"]["load.value"]' ev.jsonl)" \
        '{"count": 8000, "min": 0, "max": 499, "mean": 249.5, "last": 499}' "series" || return 1
    # every (proc, thread) sent exactly 500, tags intact
    assert_eq "$(jq_py 'sorted(set(__import__("collections").Counter((e["tags"]["proc"],e["tags"]["thread"]) for e in ev if e.get("name")=="load.value").values()))' ev.jsonl)" "[500]" || return 1
    # the level-3 metrics were dropped in the client (default level 1)
    assert_eq "$(jq_py 'len([e for e in ev if e.get("name")=="load.level3"])' ev.jsonl)" 0 || return 1
    assert_eq "$(jq_py 'end["metrics"]["dropped"]["above_level"]' ev.jsonl)" 0 || return 1
    # pids are those of the sending processes (children of the helper)
    assert_ge "$(jq_py 'len(set(e["pid"] for e in ev if e.get("name")=="load.value"))' ev.jsonl)" 4 || return 1
}

test_c_flood_is_counted_never_blocks() {
    # no pause: the monitor falls behind; whatever is not delivered is counted
    "$JS" run -q -o ev.jsonl -- "$HELPERS/js_load" 2 4 20000 >out.txt || return 1
    read -r _ sent _ dropped <out.txt
    got=$(jq_py 'len([e for e in ev if e["event"]=="jobscope.metric"])' ev.jsonl)
    assert_eq "$((got + dropped))" "$sent" "delivered + dropped = sent" || return 1
    assert_eq "$(jq_py 'end["metrics"]["received"]' ev.jsonl)" "$got" || return 1
    # drops reported by clients reach the record (the last ones may not)
    assert_le "$(jq_py 'end["metrics"]["dropped"]["client_lost"]' ev.jsonl)" "$dropped" || return 1
}

test_python_processes_and_threads() {
    cat >job.py <<'PYJOB'
import os, sys, threading
import jobscope
def work(tag):
    for i in range(300):
        jobscope.metric("py.value", i, who=tag)
pids = []
for p in range(3):
    pid = os.fork()
    if pid == 0:
        ts = [threading.Thread(target=work, args=("%d-%d" % (p, t),)) for t in range(3)]
        [t.start() for t in ts]; [t.join() for t in ts]
        os._exit(0 if jobscope.dropped() == 0 else 3)
    pids.append(pid)
ok = all(os.waitpid(p, 0)[1] == 0 for p in pids)
print("ok" if ok else "dropped")
PYJOB
    PYTHONPATH="$PY" "$JS" run -q -o ev.jsonl -- python3 job.py >out.txt || return 1
    assert_eq "$(cat out.txt)" ok || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e.get("name")=="py.value"])' ev.jsonl)" 2700 || return 1
    assert_eq "$(jq_py 'sorted(set(__import__("collections").Counter(e["tags"]["who"] for e in ev if e.get("name")=="py.value").values()))' ev.jsonl)" "[300]" || return 1
    assert_eq "$(jq_py 'end["metrics"]["series"]["py.value"]["count"]' ev.jsonl)" 2700 || return 1
}

test_dragon_telemetry_signature() {
    cat >job.py <<'PYJOB'
from jobscope import Telemetry
dt = Telemetry()
dt.add_data("predicted", 3.5)
dt.add_data("actual", 2, timestamp=1700000000.25, telemetry_level=1, tagk="gpu", tagv="0")
dt.add_data(ts_metric_name="detail", ts_data=1.0, telemetry_level=2)
PYJOB
    PYTHONPATH="$PY" "$JS" run -q -o ev.jsonl --telemetry-level 1 -- python3 job.py || return 1
    assert_eq "$(jq_py '[(e["name"], e["value"], e["tags"], e["level"]) for e in ev if e["event"]=="jobscope.metric"]' ev.jsonl)" \
        '[["predicted", 3.5, {}, 1], ["actual", 2, {"gpu": "0"}, 1]]' || return 1
    assert_eq "$(jq_py '[e["ts"] for e in ev if e.get("name")=="actual"]' ev.jsonl)" "[1700000000.25]" || return 1
}

test_shell_emit_parallel() {
    cat >job.sh <<SHJOB
for p in 1 2 3 4 5 6 7 8; do
    ( for i in 1 2 3 4 5 6 7 8 9 10; do "$JS" emit sh.value \$i --tag p=\$p || exit 1; done ) &
done
wait
"$JS" emit sh.neg -2.5e-3 --level 1 --ts 1700000000.5
SHJOB
    "$JS" run -q -o ev.jsonl -- sh job.sh || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e.get("name")=="sh.value"])' ev.jsonl)" 80 || return 1
    assert_eq "$(jq_py 'end["metrics"]["series"]["sh.value"]' ev.jsonl)" \
        '{"count": 80, "min": 1, "max": 10, "mean": 5.5, "last": 10}' || return 1
    assert_eq "$(jq_py '[(e["value"], e["ts"]) for e in ev if e.get("name")=="sh.neg"]' ev.jsonl)" "[[-0.0025, 1700000000.5]]" || return 1
}

test_a_series_last_is_the_value_of_the_latest_timestamp_not_the_last_to_arrive() {
    cat >job.sh <<SHJOB
"$JS" emit late.value 2 --ts 1700000002
"$JS" emit late.value 1 --ts 1700000001
SHJOB
    "$JS" run -q -o ev.jsonl -- sh job.sh || return 1
    assert_eq "$(jq_py 'end["metrics"]["series"]["late.value"]["last"]' ev.jsonl)" 2 || return 1
}

test_emit_errors_and_noop() {
    # outside a monitored job: nothing to do, success
    env -u JOBSCOPE_SOCKET "$JS" emit x 1 || return 1
    env -u JOBSCOPE_SOCKET "$HELPERS/js_load" 1 1 10 >out.txt || return 1
    assert_eq "$(cat out.txt)" "sent 11 dropped 0" || return 1
    env -u JOBSCOPE_SOCKET PYTHONPATH="$ROOT/python" python3 -c 'import jobscope; assert jobscope.metric("x", 1) is False' || return 1
    # bad arguments are jobscope's errors
    "$JS" emit "bad name" 1 2>err.txt; assert_eq $? 125 || return 1
    assert_match "$(cat err.txt)" "^jobscope: emit: bad name" || return 1
    "$JS" emit x abc 2>/dev/null; assert_eq $? 125 || return 1
    "$JS" emit x 1 --tag novalue 2>/dev/null; assert_eq $? 125 || return 1
    "$JS" emit x 1 --level 0 2>/dev/null; assert_eq $? 125 || return 1
    "$JS" emit x 2>/dev/null; assert_eq $? 125 || return 1
    echo '{"payload": 1}' | "$JS" emit --payload - 2>/dev/null; assert_eq $? 125 || return 1
}

test_bad_messages_are_counted() {
    cat >job.py <<'PYJOB'
import os, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(os.environ["JOBSCOPE_SOCKET"])
for m in [b"garbage", b"M1\tbad name\t1\t\t1\t1\t0", b"M1\tx\tnan\t\t1\t1\t0",
          b"M1\tx\t1\t\t0\t1\t0", b"M1\tx\t1\t\t1\t1\t0\tnotag", b"M1\tx\t1\t\t1\t1",
          b"M1\tok\t7\t\t1\t1\t5", b"M1\tx\t1\t\t9\t1\t0", b"\xff" * 100]:
    s.send(m)
PYJOB
    "$JS" run -q -o ev.jsonl -- python3 job.py || return 1
    assert_eq "$(jq_py 'end["metrics"]["dropped"]' ev.jsonl)" \
        '{"malformed": 3, "bad_name": 1, "bad_value": 1, "bad_level": 1, "bad_tag": 1, "above_level": 1, "client_lost": 5, "too_large": 0, "series_overflow": 0}' || return 1
    assert_eq "$(jq_py '[e["name"] for e in ev if e["event"]=="jobscope.metric"]' ev.jsonl)" '["ok"]' || return 1
}
