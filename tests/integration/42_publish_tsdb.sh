# Publishing to a time-series database: a real VictoriaMetrics on loopback
# takes Influx line protocol (influx://) and OpenTSDB /api/put (opentsdb://);
# it is stopped in the middle of the job and started again, and every sample
# must be queryable afterwards.  docs/publishing.md.
source "$ROOT/tests/helpers/publish_servers.sh"

# the "ms value" pairs of FIELD of the samples in ev.jsonl
expected_points() {
    python3 - "$1" <<'PY'
import json, sys
pts = set()
for l in open("ev.jsonl"):
    e = json.loads(l)
    if e["event"] == "kickstart.inv.online" and isinstance(e.get(sys.argv[1]), (int, float)):
        pts.add((round(e["ts"] * 1000), float(e[sys.argv[1]])))
for t, v in sorted(pts):
    print(t, repr(v))
PY
}

# same_points A B: the same points, timestamps within 1 ms (ns vs ms rounding)
same_points() {
    python3 - "$1" "$2" <<'PY'
import sys
a = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
b = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
bad = [p for p in a if not any(abs(p[0] - q[0]) <= 1 and p[1] == q[1] for q in b)]
extra = [q for q in b if not any(abs(p[0] - q[0]) <= 1 and p[1] == q[1] for p in a)]
print("ok" if not bad and not extra else "missing %s extra %s" % (bad[:3], extra[:3]))
PY
}

test_influx_and_opentsdb_into_victoria_metrics_across_an_outage() {
    vm_start || return $?
    "$JS" run -i 0.1 --spool-dir sp --flush-timeout 20 --tag team=hpc -o ev.jsonl \
        -o "influx://127.0.0.1:$VM_PORT/jobs" -o "opentsdb://127.0.0.1:$VM_TSDB" -- sleep 3.5 2> err.txt &
    local js=$!
    sleep 1.2
    vm_stop
    sleep 1.2
    ls sp/*.spool > spools.txt 2>/dev/null
    vm_start again || return 1
    wait $js
    assert_eq $? 0 "job exit status" || return 1
    assert_eq "$(ls sp/*.spool spools.txt 2>/dev/null | wc -l)" 1 "spooled during the outage, then removed" || return 1
    expected_points vm > want.txt
    assert_ge "$(wc -l < want.txt)" 20 "samples" || return 1
    local i
    for i in $(seq 1 20); do   # the freshest points take a moment to be searchable
        vm_points kickstart.inv.online_vm > influx.txt
        vm_points kickstart.inv.online.vm > tsdb.txt
        [ "$(same_points want.txt influx.txt)$(same_points want.txt tsdb.txt)" = okok ] && break
        sleep 0.5
    done
    assert_eq "$(same_points want.txt influx.txt)" ok "influx" || return 1
    assert_eq "$(same_points want.txt tsdb.txt)" ok "opentsdb" || return 1
    # annotations and --tag became labels; exe, cmd, version, cwd, kernel
    # did not (issue 27.11: one series per command line)
    for m in kickstart.inv.online.vm jobscope.end.cpu_time jobscope.start.interval; do
        curl -sf "http://127.0.0.1:$VM_PORT/api/v1/series" --data-urlencode "match[]={__name__=\"$m\"}" > series.json
        assert_eq "$(python3 -c 'import json; d=json.load(open("series.json"))["data"]; print(sorted(set(k for s in d for k in s)))')" \
            "['__name__', 'hostname', 'job_id', 'pid', 'rank', 'team']" "labels of $m" || return 1
    done
}
