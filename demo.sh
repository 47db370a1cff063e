#!/usr/bin/env bash
# demo.sh — builds jobscope (installing Debian build dependencies if missing)
# and runs a small monitored job: a shell that compresses data in three
# parallel children, one of which daemonizes.  Shows the events and the
# end-of-job record, and writes a self-contained HTML report of the job.
set -e
cd "$(dirname "$0")"
./deps.sh
make -s
out=$(mktemp -d /tmp/jobscope-demo.XXXXXX)
echo "== jobscope run -i 0.2 -o $out/events.jsonl -- sh -c '...'"
./build/jobscope run -i 0.2 --job demo -o "$out/events.jsonl" --summary "$out/record.json" -- sh -c '
    for i in 1 2 3; do head -c 20000000 /dev/urandom | gzip -1 > '"$out"'/part.$i.gz & done
    (setsid sh -c "head -c 5000000 /dev/zero | md5sum > /dev/null" &)
    wait; echo "job done: $(ls '"$out"'/*.gz | wc -l) files"'
echo
echo "== $(grep -c kickstart.inv.online "$out/events.jsonl") samples; the last one:"
grep kickstart.inv.online "$out/events.jsonl" | tail -1 | python3 -m json.tool --compact
echo
echo "== end-of-job record ($out/record.json):"
python3 - "$out/record.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
keys = ["exit_type", "exit_code", "duration", "utime", "stime", "cpu_efficiency", "wchar",
        "write_bytes", "total_procs", "samples"]
for k in keys:
    print("  %-16s %s" % (k, r[k]))
print("  %-16s %s kB at %s" % ("peak rss", r["peaks"]["rss"]["value"], r["peaks"]["rss"]["ts"]))
print("  %-16s %s" % ("rusage_children", r["rusage_children"]))
PY
echo
./build/jobscope report "$out/events.jsonl" -o "$out/report.html"
echo "== the report: open file://$out/report.html in a browser (one file, works offline)"
