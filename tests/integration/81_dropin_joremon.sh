# 81_dropin_joremon.sh — jobscope as a drop-in for JoReMon (issue 14 points
# 8-12, docs/events.md "JoReMon"): the semantics of its columns, its flags,
# its CSV header and its timestamps, as in the seed's rows.
W=$HELPERS/workload

# 14.8: ClockTime counts from the process's start, not from the attach
test_joremon_clocktime_counts_from_the_process_start() {
    "$W" sleep 1.2 &
    pid=$!
    sleep 0.8
    "$JS" attach -i 0.1 --format joremon-json -o jr.jsonl $pid || return 1
    assert_ge "$(jq_py 'ev[0]["ClockTime"]' jr.jsonl)" 0.75 "first row's ClockTime" || return 1
    assert_le "$(jq_py 'ev[0]["ClockTime"]' jr.jsonl)" 1.3
}

# 14.9: CPUPercent is the lifetime average (CPUTime / ClockTime), Peak its max
test_joremon_cpupercent_is_the_lifetime_average_and_peak_its_maximum() {
    "$JS" run -i 0.1 --format joremon-json --mode cpu -o jr.jsonl -- "$W" burn 400 sleep 0.6 || return 1
    python3 - jr.jsonl <<'PY' || return 1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
peak = 0
for r in rows:
    want = 100 * r["CPUTime"] / r["ClockTime"] if r["ClockTime"] > 0 else 0
    assert abs(r["CPUPercent"] - want) <= 0.02 * want + 1e-9, (r["CPUPercent"], want)
    peak = max(peak, r["CPUPercent"])
    assert abs(r["PeakCPUPercent"] - peak) < 1e-9, (r["PeakCPUPercent"], peak)
# during the sleep no CPU is used in an interval: the per-interval CPU% would
# be 0, the lifetime average is not (0.4 s of CPU over the time so far)
idle = [r for p, r in zip(rows, rows[1:]) if r["CPUTime"] == p["CPUTime"] and p["CPUTime"] > 0.3]
assert len(idle) >= 2, rows
assert all(r["CPUPercent"] > 1 for r in idle), idle
assert idle[-1]["CPUPercent"] < idle[0]["CPUPercent"], "the average decreases while idle"
assert rows[-1]["PeakCPUPercent"] > rows[-1]["CPUPercent"], "the peak was earlier"
PY
}

# 14.10: --mode selects the rows and the CSV columns (12 for cpu, as in the seed)
test_joremon_mode_cpu_selects_rows_and_the_twelve_csv_columns() {
    "$JS" run -i 0.1 --format joremon-csv --mode cpu -o jr.csv -- sleep 0.2 || return 1
    assert_eq "$(head -1 jr.csv)" "CMD,CPUPercent,CPUTime,CWD,ClockTime,Hostname,JobID,PID,PeakCPUPercent,Timestamp,Type,User" || return 1
    assert_eq "$(tail -n +2 jr.csv | awk -F, '{print NF, $11}' | sort -u)" "12 joremon.CPUInfo" || return 1
    "$JS" run -i 0.1 --format jsons --mode mem -o jr.jsonl -- sleep 0.2 || return 1
    assert_eq "$(jq_py 'sorted(set(e["Type"] for e in ev))' jr.jsonl)" '["joremon.MemInfo"]'
}

test_joremon_front_end_takes_joremons_flags() {
    "$W" sleep 1 &
    pid=$!
    "$JS" joremon -pid $pid -interval 0.2 -job 123456 -mode cpu -format csv -out jr.csv -folder "$T" || return 1
    assert_eq "$(head -1 jr.csv | tr ',' '\n' | wc -l)" 12 || return 1
    assert_eq "$(sed -n 2p jr.csv | cut -d, -f7,8)" "123456,$pid.000000" || return 1
    "$W" sleep 0.6 &
    pid=$!
    ln -s "$JS" joremon
    ./joremon --pid=$pid -interval=0.2 -job=j1 -format jsons -mode io -out - > out.jsonl || return 1
    assert_eq "$(jq_py 'sorted(set((e["Type"], e["JobID"], e["PID"]) for e in ev))' out.jsonl)" "[[\"joremon.IOInfo\", \"j1\", $pid]]" || return 1
    ./joremon -pid $pid -bogus 1 2>/dev/null
    assert_eq $? 125 "an unknown flag"
}

test_joremon_default_interval_is_five_seconds() {
    "$W" sleep 0.3 &
    pid=$!
    "$JS" joremon -pid $pid -mode cpu -out - > out.jsonl || return 1
    # start and final rows only: the 5 s interval never elapsed
    assert_eq "$(jq_py 'len(ev)' out.jsonl)" 2
}

# 14.11: the header is written when stdout already holds other text
test_joremon_csv_header_is_written_on_a_non_empty_stdout() {
    "$W" sleep 0.4 &
    pid=$!
    { echo x; "$JS" attach -i 0.1 --format joremon-csv -o - $pid; } > job.out || return 1
    assert_eq "$(sed -n 2p job.out | cut -d, -f1-3)" "CMD,CPUPercent,CPUTime" "header after the job's own line" || return 1
    # appending to our own CSV adds no second header
    "$JS" run -i 0.1 --format joremon-csv -o again.csv -- true || return 1
    "$JS" run -i 0.1 --format joremon-csv -o again.csv -- true || return 1
    assert_eq "$(grep -c '^CMD,' again.csv)" 1
}

# 14.12: Go's RFC3339Nano drops trailing zeros of the fraction
test_joremon_timestamps_are_rfc3339nano_without_trailing_zeros() {
    "$JS" run -i 0.05 --format jsons -o jr.jsonl -- sleep 0.5 || return 1
    jq_py '[e["Timestamp"] for e in ev]' jr.jsonl > ts.json
    python3 - ts.json <<'PY'
import json, re, sys
for t in json.load(open(sys.argv[1])):
    m = re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)", t)
    assert m, t
    assert not (m.group(1) or "").endswith("0"), "trailing zero: " + t
PY
}
