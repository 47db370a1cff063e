# 87_kickstart_monitoring.sh — kickstart's online monitoring inside jobscope
# kickstart (-m, -G, KICKSTART_MON_URL) and the kickstart://HOST:PORT
# endpoint between a kickstart and the monitor nested in its job (issue
# 21.5, 21.6).

ks_py() { python3 "$ROOT/tests/helpers/ks_record.py" "$@"; }

# kickstart_listener FILE: a kickstart:// endpoint on 127.0.0.1 (pegasus-
# kickstart's wire: one 296-byte ProcStats per connection) that writes each
# report it takes as a JSON line to FILE; its port in FILE.port.  Stops
# when FILE.stop appears.
kickstart_listener() {
    python3 - "$1" <<'PY' &
import json, os, socket, struct, sys, time
out = sys.argv[1]
fmt = "<iidIiiI7Q3d4QII2Q128s"
assert struct.calcsize(fmt) == 296
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16); s.settimeout(0.2)
open(out + ".port", "w").write(str(s.getsockname()[1]))
end = time.time() + 30
while time.time() < end and not os.path.exists(out + ".stop"):
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    data = b""
    c.settimeout(2)
    while len(data) < 296:
        b = c.recv(296 - len(data))
        if not b:
            break
        data += b
    c.close()
    if len(data) != 296:
        continue
    v = struct.unpack(fmt, data)
    rec = dict(type=v[0], ts=v[2], pid=v[4], rchar=v[7], utime=v[14], vm=v[18], rss=v[20], procs=v[21],
               exe=v[25].split(b"\0")[0].decode())
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")
PY
    for _ in $(seq 50); do [ -s "$1.port" ] && break; sleep 0.1; done
}

test_m_sends_kickstarts_events_only_site_from_the_environment_task_id_from_N() {
    PEGASUS_SITE=condorpool KICKSTART_MON_URL=file://$T/ev.jsonl "$JS" kickstart -n tr -N ID01 \
        -R from-R -m 1 /bin/sleep 1.3 >rec.yml || return 1
    assert_eq "$(jq_py 'sorted(set((e["event"], e["site"], e["task_id"], e["xformation"]) for e in ev))' ev.jsonl)" \
        '[["kickstart.inv.online", "condorpool", "ID01", "tr"]]' || return 1
    assert_ge "$(jq_py 'len(samples)' ev.jsonl)" 2 || return 1
    assert_eq "$(ks_py '[rec["resource"], rec["monitoring"]["interval"], rec["monitoring"]["destination"], rec["monitoring"]["samples"] >= 2]' rec.yml)" \
        "[\"from-R\", 1, \"file://$T/ev.jsonl\", true]" || return 1
    # jobscope's own events too, when asked for
    JOBSCOPE_KICKSTART_EVENTS=all KICKSTART_MON_URL=file://$T/all.jsonl "$JS" kickstart -m 1 /bin/true >rec.yml || return 1
    assert_eq "$(jq_py '[e["event"] for e in ev if e["event"].startswith("jobscope.")]' all.jsonl)" '["jobscope.start", "jobscope.end"]'
}

test_without_m_the_job_runs_with_monitoring_off() {
    KICKSTART_MON_URL=file://$T/ev.jsonl "$JS" kickstart /bin/sh -c 'echo ran' >rec.yml || return 1
    assert_eq "$(ks_py '[st[0]["stdout"], rec["monitoring"]["interval"], rec["monitoring"]["samples"], rec["monitoring"]["tree"]["total_procs"] >= 1]' rec.yml)" \
        '["ran\n", 0, 0, true]' || return 1
    assert_eq "$([ -s ev.jsonl ] && echo events || echo none)" none || return 1
    "$JS" kickstart -m 0 -G /bin/true >rec.yml || return 1
    mkdir job && cd job
    env -u KICKSTART_MON_URL "$JS" kickstart -m 1 /bin/true >../rec.yml 2>../err.txt || return 1
    grep -q 'KICKSTART_MON_URL is not set' ../err.txt || fail "one line says where events did not go" || return 1
    assert_eq "$(ls | wc -l)" 0 "no file left in the job's directory"
}

test_jobscope_run_under_a_kickstart_reports_on_its_wire() {
    kickstart_listener "$T/wire.jsonl"
    port=$(cat wire.jsonl.port)
    printf '#!/bin/sh\nhead -c 20000000 /dev/zero >/dev/null\ni=0; while [ $i -lt 300000 ]; do i=$((i+1)); done\n' > burn.sh
    chmod +x burn.sh
    KICKSTART_MON_URL=kickstart://127.0.0.1:$port "$JS" run -i 0.2 -- ./burn.sh 2>err.txt || return 1
    touch wire.jsonl.stop; wait
    assert_eq "$(cat err.txt)" "" || return 1
    assert_eq "$(jq_py 'sorted(set((e["type"], e["pid"] == ev[0]["pid"]) for e in ev))' wire.jsonl)" '[[2, true]]' "MERGED records under one pid" || return 1
    assert_ge "$(jq_py 'len(ev)' wire.jsonl)" 3 || return 1
    assert_ge "$(jq_py 'ev[-1]["rchar"]' wire.jsonl)" 20000000 "the whole tree's I/O" || return 1
    assert_ge "$(jq_py 'ev[-1]["utime"]' wire.jsonl)" 0.05
}

test_an_unreachable_kickstart_endpoint_falls_back_to_the_default_file() {
    port=$(free_port)
    KICKSTART_MON_URL=kickstart://127.0.0.1:$port "$JS" run --job myjob --spool-dir sp -i 0.1 -- sleep 0.3 2>err.txt || return 1
    assert_eq "$(cat err.txt)" "jobscope: kickstart://127.0.0.1:$port: Connection refused; events go to myjob.jsonl instead" || return 1
    assert_ge "$(jq_py 'len(samples)' myjob.jsonl)" 2 || return 1
    assert_eq "$(ls sp 2>/dev/null | wc -l)" 0 "nothing stranded in a spool"
}

test_jobscope_kickstart_hands_its_job_a_kickstart_endpoint() {
    KICKSTART_MON_URL=file://$T/ev.jsonl "$JS" kickstart -m 1 "$JS" run -i 0.2 -- sleep 0.8 >rec.yml || return 1
    assert_eq "$(ks_py '[rec["monitoring"]["nested_reports"] >= 3, rec["monitoring"]["nested_processes"], rec["monitoring"]["endpoint"].startswith("kickstart://")]' rec.yml)" \
        '[true, 1, true]' || return 1
    # the nested run's tree is the kickstart's: counted once in its events
    assert_eq "$(jq_py 'sorted(set(e["event"] for e in ev))' ev.jsonl)" '["kickstart.inv.online"]'
}

source "$ROOT/tests/helpers/publish_servers.sh"
