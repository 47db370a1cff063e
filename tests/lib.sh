# tests/lib.sh — sourced by every integration test (tests/integration/*.sh).
#
# A test file is a list of shell functions named test_*; tests/run.sh runs each
# one in a subshell inside a fresh temporary directory ($T) and counts it as
# passed when it returns 0.  Assertions print what differed and return 1.
#
#   JS           path to the jobscope binary under test
#   HELPERS      directory of helper programs built from tests/helpers/*.c
#   jq_py EXPR FILE...   evaluate a Python expression over JSON Lines:
#                        `ev` is the list of parsed events; prints the result
#   need CMD     skip the test (return 77) when CMD is missing

JS=${JS:-$PWD/build/jobscope}
# Each test has its own well-known `jobscope serve` socket: a server running
# on this machine never receives the tests' events (docs/serve.md).
export JOBSCOPE_SERVE_SOCKET=${T:-/nonexistent}/.serve/serve.sock
# Nor its pinned BPF sampler (docs/bpf.md): each test loads its own, or pins
# into a bpffs of its own (23_sampler.sh), whatever another run left behind.
export JOBSCOPE_BPF_PIN_DIR=off
HELPERS=${HELPERS:-$PWD/build/helpers}

fail() { echo "    FAIL: $*" >&2; return 1; }
assert_eq() { [ "$1" = "$2" ] || fail "${3:-values differ}: expected '$2', got '$1'"; }
assert_ne() { [ "$1" != "$2" ] || fail "${3:-values equal}: both '$1'"; }
assert_ge() { awk -v a="$1" -v b="$2" 'BEGIN{exit !(a+0>=b+0)}' || fail "${3:-}: $1 < $2"; }
assert_le() { awk -v a="$1" -v b="$2" 'BEGIN{exit !(a+0<=b+0)}' || fail "${3:-}: $1 > $2"; }
# assert_close A B REL: |A-B| <= REL*|B|
assert_close() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN{d=a-b; if(d<0)d=-d; m=b<0?-b:b; exit !(d<=r*m)}' \
                   || fail "${4:-}: $1 not within $3 of $2"; }
assert_match() { printf '%s' "$1" | grep -Eq -- "$2" || fail "${3:-no match}: '$1' !~ /$2/"; }
assert_file() { [ -s "$1" ] || fail "missing or empty file $1"; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "    skip: $1 not installed" >&2; return 77; }; }

# jq_py 'len([e for e in ev if e["event"]=="kickstart.inv.online"])' events.jsonl
jq_py() {
    local expr=$1; shift
    python3 - "$expr" "$@" <<'PY'
import json, sys
expr = sys.argv[1]
ev = []
for path in sys.argv[2:]:
    with open(path, 'rb') as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line:
                try:
                    ev.append(json.loads(line))
                except Exception as e:
                    sys.exit("%s:%d: not JSON: %s" % (path, n, e))
samples = [e for e in ev if e.get("event") == "kickstart.inv.online"]
end = next((e for e in ev if e.get("event") == "jobscope.end"), None)
r = eval(expr)
print(json.dumps(r) if not isinstance(r, str) else r)
PY
}
