# Golden output: every encoding, byte for byte.  tests/helpers/golden.c feeds
# fixed samples (built by the monitor's own code) and fixed source events
# through the real sinks and time-series encoders; the files must equal
# tests/golden/*.  A real run must keep the shape recorded in
# tests/golden/run-shape.txt (field order, names, decimals).  A legitimate
# change of the output regenerates them: tests/golden/regenerate.  The GPU
# part (gpu.jsonl) runs the GPU source against the fake NVML (make fake-nvml).
G=$ROOT/tests/golden
export JOBSCOPE_NVML_LIBRARY="$ROOT/$BUILD/fake-nvml/libnvidia-ml.so.1"

test_every_encoding_of_fixed_samples_is_byte_identical_to_the_golden_files() {
    [ -f "$JOBSCOPE_NVML_LIBRARY" ] || { echo "    missing $JOBSCOPE_NVML_LIBRARY (make fake-nvml)" >&2; return 1; }
    "$HELPERS/golden" "$T" || return 1
    local f bad=0
    for f in ev.jsonl ev.csv jr.jsonl jr.csv influx.txt opentsdb.json cgroup.jsonl gpu.jsonl; do
        cmp "$T/$f" "$G/$f" || { diff "$G/$f" "$T/$f" | head -5; bad=1; }
    done
    return $bad
}

# The influx:// and opentsdb:// outputs encode samples and gpu.stats from
# their value sets, everything else (and what comes back from a spool) from
# the JSON: the helper encodes each event with a set both ways (3 samples,
# 2 with the cgroup fixtures, GPU share and odd labels, the real GPU
# source's gpu.stats; 4 tag lists x 2 formats each) and counts differences.
test_the_time_series_encodings_from_the_value_set_equal_those_from_the_json() {
    [ -f "$JOBSCOPE_NVML_LIBRARY" ] || { echo "    missing $JOBSCOPE_NVML_LIBRARY (make fake-nvml)" >&2; return 1; }
    "$HELPERS/golden" "$T" > "$T/out.txt" || { cat "$T/out.txt"; return 1; }
    local line n d
    line=$(grep '^tsconv paths:' "$T/out.txt") || { fail "no comparison summary"; return 1; }
    n=$(echo "$line" | awk '{print $3}')
    d=$(echo "$line" | awk '{print $6}')
    [ "$d" = 0 ] || { fail "$line"; return 1; }
    [ "$n" -ge $(( (5 + 1) * 8 )) ] || { fail "too few compared (no gpu.stats?): $line"; return 1; }
}

# Every event a real run makes (start, samples with the GPU share, the
# limit, a custom metric with tags, the GPU's env/stats/max, a payload
# block's event, a payload error, the end record) encodes the same from its
# value set and from its JSON; only the payload events, whose fields are the
# job's own JSON, are left to the JSON path.
test_every_event_of_a_real_run_encodes_the_same_from_its_set_and_its_json() {
    [ -f "$JOBSCOPE_NVML_LIBRARY" ] || { echo "    missing $JOBSCOPE_NVML_LIBRARY (make fake-nvml)" >&2; return 1; }
    cat > job.sh <<EOF
echo '@@@MONITORING_PAYLOAD - START@@@'
echo '{"monitoring_event": "golden.block", "payload": [{"x": 1, "s": "a"}]}'
echo '@@@MONITORING_PAYLOAD - END@@@'
"$JS" emit loss 0.5 --tag phase=train --tag 'odd.key=v, 1 \"q\"'
sleep 0.3
echo '@@@MONITORING_PAYLOAD - START@@@'
EOF
    "$HELPERS/golden" "$T" sh job.sh > out.txt || { cat out.txt; return 1; }
    grep -q '^tsconv paths: .* 0 differ$' out.txt || { fail "$(tail -1 out.txt)"; return 1; }
    local n ev
    n=$(sed -n 's/^real run: \([0-9]*\) events.*/\1/p' out.txt)
    [ "${n:-0}" -ge 10 ] || { fail "real run: ${n:-no} events"; return 1; }
    for ev in jobscope.start kickstart.inv.online jobscope.limit jobscope.metric \
              kickstart.inv.online.gpu.env kickstart.inv.online.gpu.stats \
              kickstart.inv.online.gpu.stats.max golden.block jobscope.payload.error jobscope.end; do
        grep -q "^{\"event\":\"$ev\"" run.jsonl || { fail "no $ev in the run"; return 1; }
    done
    # declined: the payload events only (their fields are the job's JSON)
    if grep '^tsconv declined:' out.txt | grep -vq -e ' golden.block$'; then
        fail "$(grep '^tsconv declined:' out.txt | sort -u)"; return 1
    fi
}

test_a_real_run_keeps_the_golden_shape_of_its_events_and_csv() {
    env -i PATH=/usr/bin:/bin HOME="$T" "$JS" run --no-cgroup -i 5 --job golden --tag site=test \
        -o ev.jsonl -o ev.csv -- "$HELPERS/workload" sleep 0.3 || return 1
    python3 "$G/shape.py" ev.jsonl ev.csv > shape.txt || return 1
    diff "$G/run-shape.txt" shape.txt
}

test_the_golden_test_fails_when_an_encoding_changes() {
    "$HELPERS/golden" "$T" || return 1
    sed -i 's/"utime":1.235/"utime":1.2350/' "$T/ev.jsonl"
    if cmp -s "$T/ev.jsonl" "$G/ev.jsonl"; then fail "a changed file compares equal"; return 1; fi
    printf 'x' >> "$T/influx.txt"
    ! cmp -s "$T/influx.txt" "$G/influx.txt"
}
