#!/usr/bin/env python3
"""tests/check_duplicates.py — the duplicates budget of `make check`
(docs/hacking.md): the pairs of places in src/ that share six or more lines,
as the team's `duplicates` tool lists them, may not grow past the budget.

Not counted, but shown: pairs the tool marks "boilerplate" (thin shapes), and
pairs whose both sides hold an interface's table of callbacks
(`const source_ops x_ops = {`): every source, output and module fills one
in, that is the interface, not a copy.  Where the tool is not installed (it
is the team's, not a Debian package) the check says so and passes: nothing
else can count the pairs.

    tests/check_duplicates.py BUDGET
"""
import os
import re
import shutil
import subprocess
import sys

OPS_TABLE = re.compile(r"^\s*(static\s+)?const\s+\w+_ops\s+\w+\s*=\s*\{")
ROW = re.compile(r"^D\d+ (\S+):(\d+)-(\d+) ~ (\S+):(\d+)-(\d+)")


def holds_ops_table(path, first, last):
    with open(os.path.join("src", path), encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")[first - 1 : last]
    return any(OPS_TABLE.match(l) for l in lines)


def main():
    budget = int(sys.argv[1])
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if not shutil.which("duplicates"):
        print(f"duplicates: tool not installed here, budget ({budget} pairs) not checked")
        return 0
    out = subprocess.run(
        ["duplicates", "--repo", "src", "--most", "200", "--seconds", "120"],
        capture_output=True, text=True).stdout.splitlines()
    bad = [l for l in out if l.startswith("incomplete:")]
    if bad:
        print("duplicates: the tool did not finish: " + "; ".join(bad), file=sys.stderr)
        return 1
    counted, interfaces, thin = [], 0, 0
    for l in out:
        m = ROW.match(l)
        if not m:
            continue
        if "boilerplate" in l:
            thin += 1
        elif holds_ops_table(m[1], int(m[2]), int(m[3])) and holds_ops_table(
                m[4], int(m[5]), int(m[6])):
            interfaces += 1
        else:
            counted.append(l)
    if len(counted) > budget:
        print(f"duplicates: {len(counted)} pairs in src/, over the budget of {budget}:",
              file=sys.stderr)
        for l in counted:
            print("  " + l, file=sys.stderr)
        print("share the code, or where a pair is right as it is, say why in the commit "
              "that raises the budget (Makefile DUPLICATES_BUDGET)", file=sys.stderr)
        return 1
    print(f"duplicates: {len(counted)} pairs in src/, within the budget of {budget} "
          f"(not counted: {interfaces} interface tables, {thin} boilerplate)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
