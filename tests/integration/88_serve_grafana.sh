# 88_serve_grafana.sh — the dashboards of grafana/ cannot silently rot: a
# server is populated with a real job of a workflow (GPU through the fake
# NVML, a custom metric from the Python module) and with its own node
# metrics, then every panel target of every dashboard runs through the API as
# Grafana would send it (tests/helpers/grafana_check.py) and must return data.
source "$ROOT/tests/helpers/serve.sh"

test_grafana_every_dashboard_panel_returns_data() {
    export JOBSCOPE_NVML_LIBRARY="$ROOT/$BUILD/fake-nvml/libnvidia-ml.so.1"
    export FAKE_NVML_SCRIPT="$T/nvml.script" JOBSCOPE_SYSFS_ROOT="$T/nosys"
    [ -f "$JOBSCOPE_NVML_LIBRARY" ] || { fail "missing $JOBSCOPE_NVML_LIBRARY (make fake-nvml)"; return 1; }
    unset CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES
    printf 'devices 2\nutil 0 60 20\nutil 1 30 10\n' > nvml.script
    serve_start s --node-interval 0.2 || return 1
    cat > job.sh <<JOB
echo "proc 0 \$\$ 268435456 40 7 1 2" >> $FAKE_NVML_SCRIPT
PYTHONPATH=$ROOT/python python3 -c '
import jobscope, time
for i in range(8):
    jobscope.metric("loss", 1.0 / (i + 1))
    time.sleep(0.15)
'
dd if=/dev/zero of=out.bin bs=1M count=8 conv=fsync 2>/dev/null
sleep 0.4
JOB
    PEGASUS_WF_UUID=wf-0001 PEGASUS_WF_LABEL=demo PEGASUS_DAG_JOB_ID=ID0001 \
        "$JS" run -G -i 0.2 --job job-1 -o ev.jsonl -- sh job.sh || return 1
    assert_eq "$(curl -s -w '%{http_code}' -o /dev/null --data-binary @ev.jsonl "$SERVE_URL/api/events")" 200 || return 1
    sleep 0.5                                   # a few node samples more
    local n
    n=$(ls "$ROOT"/grafana/dashboards/*.json | wc -l)
    assert_ge "$n" 3 "dashboards" || return 1
    python3 "$ROOT/tests/helpers/grafana_check.py" "$SERVE_URL" "$ROOT"/grafana/dashboards/*.json > check.txt 2>&1
    local rc=$?
    cat check.txt >&2
    assert_eq "$rc" 0 "every panel returns data" || return 1
    # every panel of every dashboard was run
    assert_eq "$(grep -c '^ok ' check.txt)" "$(python3 -c '
import json, sys, glob
print(sum(len(p["targets"]) for f in glob.glob(sys.argv[1] + "/grafana/dashboards/*.json") for p in json.load(open(f))["panels"]))' "$ROOT")" \
        "targets run" || return 1
}

test_grafana_provisioning_files_are_valid() {
    python3 - "$ROOT/grafana" <<'PY' || return 1
import json, sys, glob, re
root = sys.argv[1]
ds = open(root + "/provisioning/datasources/jobscope.yaml").read()
assert re.search(r"^\s+type: opentsdb$", ds, re.M) and re.search(r"^\s+uid: jobscope$", ds, re.M), ds
assert re.search(r"tsdbVersion: 3", ds)
uids = set()
for f in glob.glob(root + "/dashboards/*.json"):
    d = json.load(open(f))
    assert d["uid"] not in uids
    uids.add(d["uid"])
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)), f
    for p in d["panels"]:
        assert p["datasource"] == {"type": "opentsdb", "uid": "jobscope"}, (f, p["title"])
        assert p["targets"], (f, p["title"])
        for t in p["targets"]:
            assert t["metric"] and t["aggregator"], (f, p["title"])
assert uids == {"jobscope-job", "jobscope-node", "jobscope-workflow"}, uids
PY
}
