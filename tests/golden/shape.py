#!/usr/bin/env python3
"""shape.py — the shape of a real run's output, for 22_golden_output.sh.

  shape.py EVENTS.jsonl EVENTS.csv

Prints, per event, its name and its keys in order, each with the kind of its
value: s (string), i (integer), fN (number written with N decimals), null,
b (boolean), [..] (array), {..} (object, recursively).  Values that differ
between machines or runs are not printed, only their form; fields whose
presence depends on the machine (null or a value) count as present.  For the
CSV: the header, then the form of each cell of each row.  A change in field
order, naming or number formatting changes this output."""
import json, re, sys

NULLABLE = {"iowait": "f3", "exe": "s", "cwd": "s", "cmd": "s", "user": "s"}


def num(text):
    return ("f%d" % len(text.split(".")[1])) if "." in text else "i"


def form(v, key=None):
    if v is None:
        return NULLABLE.get(key, "null")
    if isinstance(v, bool):
        return "b"
    if isinstance(v, str):
        if v.startswith("#NUM#"):
            return v[5:]
        return "s"
    if isinstance(v, list):
        return "[" + ",".join(sorted(set(form(x) for x in v))) + "]"
    if isinstance(v, dict):
        return "{" + ",".join("%s:%s" % (k, form(x, k)) for k, x in v.items()) + "}"
    return "?"


def load(line):
    return json.loads(line, parse_float=lambda t: "#NUM#" + num(t),
                      parse_int=lambda t: "#NUM#i", object_pairs_hook=dict)


for line in open(sys.argv[1]):
    e = load(line)
    if e["event"] == "jobscope.start":
        # host facts after "discovery" depend on the machine: names only to there
        keys = list(e)
        e = {k: e[k] for k in keys[: keys.index("discovery") + 1]}
    print(e["event"] if isinstance(e["event"], str) else "?", form(e))

rows = open(sys.argv[2]).read().splitlines()
print(rows[0])
for r in rows[1:]:
    cells = r.split(",")
    out = []
    for i, c in enumerate(cells):
        if re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", c):
            out.append(num(c))
        elif c == "" and i == 19:       # iowait: empty without delay accounting
            out.append("f3")
        else:
            out.append("s" if c else "")
    print(",".join(out))
