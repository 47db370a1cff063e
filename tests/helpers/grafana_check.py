#!/usr/bin/env python3
"""grafana_check.py URL DASHBOARD.json... — runs every panel of Grafana
dashboards against a jobscope server the way Grafana's OpenTSDB data source
does (tests/integration/88_serve_grafana.sh, grafana/):

  * template variables: tag_values(METRIC, KEY) through /api/search/lookup,
    tag_names(METRIC) likewise, metrics(PREFIX) through /api/suggest; a
    multi-value variable takes all its values joined by '|' (Grafana's
    OpenTSDB formatting), a single-value one its first value;
  * each panel is one POST /api/query with all its targets, converted as
    Grafana's convertTargetToQuery does (aggregator, downsample
    "<interval>-<agg>[-<fill>]", rate + rateOptions, filters or tags,
    explicitTags), browser path: start in ms over the dashboard's range,
    "showQuery": true, "globalAnnotations": true, answers matched by
    query.index;
  * the same queries once more on Grafana's server path (seconds, one POST
    per target) with its strict decoding: string tag values, integer-second
    dps keys, no "NaN".

Prints one line per panel; exits 1 when any target returned no data."""
import json
import re
import sys
import time
import urllib.parse
import urllib.request

url = sys.argv[1].rstrip("/")


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def variable_values(query):
    m = re.match(r"\s*tag_values\(\s*([^,\s]+)\s*,\s*([^,\s)]+)\s*\)", query)
    if m:
        q = urllib.parse.quote("%s{%s=*}" % (m.group(1), m.group(2)))
        st, d = call("GET", "/api/search/lookup?m=%s&limit=3000" % q)
        assert st == 200, (query, st, d)
        return sorted({r["tags"][m.group(2)] for r in d["results"] if m.group(2) in r["tags"]})
    m = re.match(r"\s*tag_names\(\s*([^,\s)]+)\s*\)", query)
    if m:
        q = urllib.parse.quote("%s{}" % m.group(1))
        st, d = call("GET", "/api/search/lookup?m=%s&limit=3000" % q)
        assert st == 200, (query, st, d)
        return sorted({k for r in d["results"] for k in r["tags"]})
    m = re.match(r"\s*metrics\(\s*([^)\s]*)\s*\)", query)
    if m:
        st, d = call("GET", "/api/suggest?type=metrics&q=%s&max=1000" % urllib.parse.quote(m.group(1)))
        assert st == 200, (query, st, d)
        return d
    raise SystemExit("unsupported variable query: %s" % query)


def substitute(text, values):
    def rep(m):
        return values.get(m.group(1) or m.group(2), m.group(0))
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", rep, text)


def grafana_query(t, values, interval):
    """Grafana's OpenTSDB convertTargetToQuery (tsdbVersion 3)."""
    if not t.get("metric") or t.get("hide"):
        return None
    q = {"metric": substitute(t["metric"], values), "aggregator": t.get("aggregator") or "avg"}
    if t.get("shouldComputeRate"):
        q["rate"] = True
        q["rateOptions"] = {"counter": bool(t.get("isCounter"))}
        if t.get("counterMax"):
            q["rateOptions"]["counterMax"] = int(t["counterMax"])
        if t.get("counterResetValue"):
            q["rateOptions"]["resetValue"] = int(t["counterResetValue"])
        q["rateOptions"]["dropResets"] = not q["rateOptions"].get("counterMax") and not q["rateOptions"].get("resetValue")
    if not t.get("disableDownsampling"):
        iv = substitute(t.get("downsampleInterval") or interval, values)
        if re.search(r"\.[0-9]+s", iv):
            iv = "%gms" % (float(iv[:-1]) * 1000)
        q["downsample"] = iv + "-" + t.get("downsampleAggregator", "avg")
        if t.get("downsampleFillPolicy") and t["downsampleFillPolicy"] != "none":
            q["downsample"] += "-" + t["downsampleFillPolicy"]
    if t.get("filters"):
        q["filters"] = [dict(f, filter=substitute(f["filter"], values)) for f in t["filters"]]
    else:
        q["tags"] = {k: substitute(v, values) for k, v in (t.get("tags") or {}).items()}
    if t.get("explicitTags"):
        q["explicitTags"] = True
    return q


def strict(series):
    """Grafana's server-side decoder."""
    for s in series:
        assert all(isinstance(v, str) for v in s["tags"].values()), s["tags"]
        dps = s["dps"]
        pairs = dps if isinstance(dps, list) else list(dps.items())
        for k, v in pairs:
            assert re.fullmatch(r"\d{1,10}", str(k)), k
            assert v is None or isinstance(v, (int, float)), v


bad = 0
checked = 0
for path in sys.argv[2:]:
    dash = json.load(open(path))
    now = int(time.time() * 1000)
    rng = dash.get("time", {}).get("from", "now-1h")
    m = re.fullmatch(r"now-(\d+)([smhd])", rng)
    start = now - int(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)] * 1000
    values = {}
    for v in dash.get("templating", {}).get("list", []):
        vals = variable_values(substitute(v["query"], values))
        if not vals:
            print("FAIL %s: variable $%s (%s) has no values" % (path, v["name"], v["query"]))
            bad += 1
            continue
        values[v["name"]] = "|".join(vals) if v.get("multi") else vals[0]
    for p in dash["panels"]:
        targets = [t for t in p.get("targets", [])]
        queries = [grafana_query(t, values, "10s") for t in targets]
        body = {"start": start, "queries": [q for q in queries if q], "msResolution": False,
                "globalAnnotations": True, "showQuery": True}
        st, d = call("POST", "/api/query", body)
        title = "%s / %s" % (dash["title"], p["title"])
        if st != 200:
            print("FAIL %s: HTTP %s %s" % (title, st, d))
            bad += 1
            continue
        for i, q in enumerate(body["queries"]):
            got = [s for s in d if s.get("query", {}).get("index") == i]
            npts = sum(len(s["dps"]) for s in got)
            checked += 1
            if not got or npts == 0:
                print("FAIL %s: target %s (%s) returned no data" % (title, targets[i]["refId"], q["metric"]))
                bad += 1
                continue
            # server path: seconds, one query at a time, strict decoding
            st2, d2 = call("POST", "/api/query?arrays=true",
                           {"start": start // 1000, "end": now // 1000 + 1, "queries": [q]})
            try:
                assert st2 == 200 and d2, (st2, d2)
                strict(d2)
            except AssertionError as e:
                print("FAIL %s: target %s on the server path: %s" % (title, targets[i]["refId"], e))
                bad += 1
                continue
            print("ok   %s: %s -> %d series, %d points" % (title, q["metric"], len(got), npts))
print("%d targets, %d failed" % (checked, bad))
sys.exit(1 if bad or not checked else 0)
