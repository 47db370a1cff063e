#!/usr/bin/env python3
"""ks_record.py — reads a job's .out file the way pegasus-monitord does, to
check what jobscope kickstart writes (tests/integration/84-87_kickstart_*).

Written from the reading rules of Pegasus' kickstart_parser.py (its YAML
path), not from its code:
  * a record starts at a line containing "- invocation:";
  * it goes on with every line that starts with a space, "-" or a newline
    (other lines are skipped), up to a line starting with "[cluster-" or
    "---------------pegasus-multipart", or the end of the file;
  * "---------------pegasus-multipart" starts a multipart record: the YAML
    list after it, each item marked "multipart";
  * the record is YAML 1.1 with timestamps read as strings; its first item
    is the invocation, mapped to the names monitord stores (stampede).
The file itself must be UTF-8 and every record valid YAML: a record that
does not parse is an error here (monitord would log and lose it).

  ks_record.py FILE                 prints the records as JSON, one a line
  ks_record.py 'EXPR' FILE...       prints EXPR over: recs (the invocation
                                    records, as YAML gave them), st (their
                                    stampede mappings), parts (multipart
                                    items); exit 1 if any record is invalid
  ks_record.py --golden GOLD FILE   compares FILE's first record with the
                                    golden one, key by key in order; a golden
                                    value "*" matches any value, "@T" in a
                                    golden string is the directory $T
"""
import json
import sys

import yaml

yaml.SafeLoader.yaml_constructors["tag:yaml.org,2002:timestamp"] = yaml.SafeLoader.yaml_constructors[
    "tag:yaml.org,2002:str"
]

INVOCATION = "- invocation:"
MULTIPART = "---------------pegasus-multipart"

# stampede name <- path in the record (monitord's mapping of Pegasus 5 YAML)
STAMPEDE = {
    "hostname": ("hostname",),
    "resource": ("resource",),
    "user": ("user",),
    "hostaddr": ("hostaddr",),
    "transformation": ("transformation",),
    "derivation": ("derivation",),
    "duration": ("mainjob", "duration"),
    "start": ("mainjob", "start"),
    "utime": ("mainjob", "usage", "utime"),
    "stime": ("mainjob", "usage", "stime"),
    "maxrss": ("mainjob", "usage", "maxrss"),
    "ram": ("machine", "ram_total"),
    "system": ("machine", "uname_system"),
    "release": ("machine", "uname_release"),
    "machine": ("machine", "uname_machine"),
    "name": ("mainjob", "executable", "file_name"),
    "raw": ("mainjob", "status", "raw"),
    "signal": ("mainjob", "status", "signalled_signal"),
    "action": ("mainjob", "status", "signalled_name"),
    "corefile": ("mainjob", "status", "corefile"),
    "exitcode": ("mainjob", "status", "regular_exitcode"),
    "cwd": ("cwd",),
    "stdout": ("files", "stdout", "data"),
    "stderr": ("files", "stderr", "data"),
}


def split(lines):
    """Yields ("invocation" | "multipart", text) in file order."""
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if INVOCATION in line:
            kind, body = "invocation", [line[line.find(INVOCATION):]]
        elif line.startswith(MULTIPART):
            kind, body = "multipart", []
        else:
            continue
        while i < len(lines):
            nxt = lines[i]
            if nxt.startswith("[cluster-") or nxt.startswith(MULTIPART):
                break
            if nxt[:1] in (" ", "-", "\n"):  # a second record (-l appends) joins the list
                body.append(nxt)
            i += 1
        yield kind, "".join(body)


def stampede(rec):
    out = {"invocation": True}
    for name, path in STAMPEDE.items():
        v = rec
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        if v is not None:
            out[name] = v
    out["outputs"] = {
        lfn: {k: f[k] for k in ("user", "size", "ctime", "sha256", "checksum_timing") if k in f}
        for lfn, f in (rec.get("files") or {}).items()
        if isinstance(f, dict) and f.get("output")
    }
    return out


def read(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")  # a record must be UTF-8
    recs, parts = [], []
    for kind, body in split(text.splitlines(keepends=True)):
        doc = yaml.safe_load(body)
        if kind == "invocation":
            if not isinstance(doc, list) or not all(isinstance(d, dict) and d.get("invocation") is True for d in doc):
                raise ValueError("%s: not an invocation record" % path)
            recs.extend(doc)
        else:
            for item in doc or []:
                item["multipart"] = True
                parts.append(item)
    return recs, parts


def flatten(x, path=""):
    if isinstance(x, dict):
        out = [(path, "{}")] if not x else []
        for k, v in x.items():
            out += flatten(v, path + "/" + str(k))
        return out
    if isinstance(x, list):
        out = [(path, "[]")] if not x else []
        for i, v in enumerate(x):
            out += flatten(v, "%s[%d]" % (path, i))
        return out
    return [(path, x)]


def golden(gold_path, path):
    import os

    with open(gold_path) as f:
        gold = yaml.safe_load(f)[0]
    recs, _ = read(path)
    want, got = flatten(gold), flatten(recs[0])
    tdir = os.environ.get("T", "@T")
    bad = []
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else ("<none>", None)
        g = got[i] if i < len(got) else ("<none>", None)
        wv = w[1].replace("@T", tdir) if isinstance(w[1], str) else w[1]
        if w[0] != g[0] or (wv != "*" and wv != g[1]):
            bad.append("%s = %r, expected %s = %r" % (g[0], g[1], w[0], wv))
    for b in bad[:10]:
        print(b)
    sys.exit(1 if bad else 0)


def main():
    args = sys.argv[1:]
    if args and args[0] == "--golden":
        return golden(args[1], args[2])
    expr = None
    if len(args) > 1:
        expr, args = args[0], args[1:]
    recs, parts = [], []
    for path in args:
        try:
            r, p = read(path)
        except Exception as e:
            sys.exit("%s: invalid record: %s" % (path, str(e).splitlines()[0] if str(e) else e))
        recs += r
        parts += p
    st = [stampede(r) for r in recs]
    if expr is None:
        for r in recs:
            print(json.dumps(r, default=str))
        return
    res = eval(expr, {"recs": recs, "st": st, "parts": parts, "rec": recs[0] if recs else None})
    print(res if isinstance(res, str) else json.dumps(res, default=str))


if __name__ == "__main__":
    main()
