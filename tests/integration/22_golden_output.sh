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
