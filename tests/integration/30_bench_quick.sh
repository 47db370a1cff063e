# 30_bench_quick.sh — smoke test of the benchmark (bench/run --quick): every
# workload runs (the fixed cost of a run, a whole attach and a one-process job
# too), results.json is written with the machine and jobscope's figures, and
# jobscope's exact totals are right.  No timing assertions: the figures
# themselves depend on the machine (see bench/README.md).

# The bench is built and run in its own flags: under a sanitizer build
# (make asan) its binaries would link instrumented objects without the
# runtime, and its figures would mean nothing.
not_sanitized() {
    case $BUILD in *asan*) echo "    skip: the bench does not run in a sanitizer build" >&2; return 77;; esac
}

test_bench_quick() {
    not_sanitized || return
    make -s -C "$ROOT" BUILD="$BUILD" bench-bins >/dev/null || fail "make bench-bins" || return 1
    "$ROOT/bench/run" --quick --no-install --build "$BUILD" --out "$T/results.json" \
        --table "$T/table.md" >"$T/out.txt" 2>"$T/err.txt" || { cat "$T/err.txt"; fail "bench/run --quick"; return 1; }
    assert_file "$T/results.json" || return 1
    assert_file "$T/table.md" || return 1
    grep -q '^| figure' "$T/out.txt" || fail "no table on stdout" || return 1
    local r
    r=$(python3 - "$T/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m, W, F = r["machine"], r["workloads"], r["figures"]
assert m["cores"] >= 1 and m["kernel"], "machine not recorded"
for w in ("tree", "cpu", "forkstorm", "orphans", "crowd", "fixed", "whole", "one"):
    assert w in W, "workload %s missing" % w
# the fixed cost of a run and a whole attach, each with its peer
fx = W["fixed"]["runs"]["jobscope-procfs"]
assert fx and fx[0]["rc"] == 0 and fx[0]["cpu_ms"] > 0 and fx[0]["maxrss_kb"] > 0, "fixed: %s" % fx
wh = W["whole"]["runs"]
assert wh["floor"] and wh["jobscope"] and wh["jobscope"][0]["cpu_s"] > 0, "whole: no floor or jobscope run"
if m.get("bpf_pinned"):   # a node with the sampler pinned: auto uses it at once
    assert wh["jobscope-auto"][0]["first_sampler"] == "bpf", "whole: auto began with %s" % wh["jobscope-auto"]
    assert W["fixed"]["runs"]["jobscope-bpf"][0]["sampler"] == "bpf", "fixed: bpf run"
for k in ("one@1s", "one@0.1s"):
    o = W["one"][k]["runs"]
    assert o["floor"] and o["jobscope"] and o["jobscope"][0]["us_per_sample"] > 0, "%s: no run" % k
c = W["crowd"]["runs"]["jobscope"]
assert c["idle"] and c["crowded"], "crowd: no jobscope run"
assert c["crowded"][0]["procs_seen"] == 10, "crowd: jobscope saw %s of 10" % c["crowded"][0]["procs_seen"]
t = W["tree"]["tree-1000@1s"]["runs"]
assert t["floor"] and t["jobscope"], "tree-1000: no floor or jobscope run"
js = t["jobscope"][0]
assert js["alive"], "jobscope attach died while watching tree-1000"
assert js["procs_seen"] == 1000, "jobscope saw %s of 1000 processes" % js["procs_seen"]
assert js["us_per_sample"] > 0 and js["hwm_kb"] > 0, "no CPU/RSS measured for jobscope"
f = W["forkstorm"]["runs"]["jobscope"][0]
assert f["rc"] == 0 and f["reported"], "forkstorm under jobscope failed"
assert abs(f["reported"]["wbytes"] / f["truth"]["wbytes"] - 1) < 0.01, "forkstorm bytes %s vs %s" % (f["reported"]["wbytes"], f["truth"]["wbytes"])
assert abs(f["reported"]["cpu"] / f["truth"]["cpu"] - 1) < 0.05, "forkstorm cpu %s vs %s" % (f["reported"]["cpu"], f["truth"]["cpu"])
o = W["orphans"]["runs"]["jobscope"][0]
assert o["reported"]["wbytes"] >= 0.99 * o["truth"]["wbytes"], "orphans: bytes not attributed"
assert len(r["targets"]) >= 8 and any(x["met"] is not None for x in r["targets"]), "targets missing"
st = W.get("store")      # jobscope serve against VictoriaMetrics (when it is installed)
if st is not None:
    assert st["figures"] and st["std"] and st["hc"], "store: no figures"
    assert not any(x["answers_differ"] for x in st["std"] + st["hc"]), "store: answers differ"
sp = {x.get("server") or x.get("figure"): x for x in (W.get("serve_put") or {}).get("rows", [])}
js = sp.get("jobscope serve")   # /api/put and /api/events of the whole server (bench/serve_put/run)
assert js and js["put_points_per_cpu_s"][0] > 0 and js["events_points_per_cpu_s"][0] > 0, "serve_put: %s" % sp
assert any(x["target"].startswith("serve_put: /api/events") for x in r["targets"]), "serve_put: no target row"
print("ok")
PY
) || { echo "$r"; fail "results.json checks"; return 1; }
    assert_eq "$r" ok
}

# 14.16: bench/run waited while *any* bench_tree ran on the machine
# (pgrep -x): another user's or test's process must not hold it up.
test_bench_waits_only_for_its_own_bench_tree() {
    not_sanitized || return
    make -s -C "$ROOT" BUILD="$BUILD" bench-bins >/dev/null || fail "make bench-bins" || return 1
    cp /bin/sleep "$T/bench_tree"
    "$T/bench_tree" 300 &
    local other=$!
    # the one-process workload starts and stops its own bench_tree (the
    # floor's) in a few seconds; the tree workload took a minute of CI
    timeout 150 "$ROOT/bench/run" --quick --no-install --only one --build "$BUILD" --out "$T/results.json" \
        >"$T/out.txt" 2>"$T/err.txt"
    local rc=$?
    kill $other 2>/dev/null
    assert_ne "$rc" 124 "bench/run still waiting after 150 s" || return 1
    assert_eq "$rc" 0 "$(tail -5 "$T/err.txt")" || return 1
    assert_file "$T/results.json"
}
