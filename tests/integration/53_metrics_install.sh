# 53_metrics_install.sh — `make install` puts libjobscope (shared, static,
# header, pkg-config file) and jobscope.py where PREFIX and DESTDIR say, and
# a program built against the installed copy reports to `jobscope run`.

test_install_and_link_with_pkg_config() {
    need cc || return 77
    need pkg-config || return 77
    make -s -C "$ROOT" BUILD="$BUILD" install DESTDIR="$T/root" PREFIX=/opt/js >make.log 2>&1 || { cat make.log; return 1; }
    for f in bin/jobscope include/jobscope.h lib/libjobscope.so.0 lib/libjobscope.so \
             lib/libjobscope.a lib/pkgconfig/jobscope.pc; do
        [ -e "root/opt/js/$f" ] || fail "not installed: $f" || return 1
    done
    assert_eq "$(find root -path '*/jobscope/__init__.py' | wc -l)" 1 "the jobscope python package installed" || return 1
    assert_eq "$(find root -path '*/jobscope/dragon.py' | wc -l)" 1 "jobscope.dragon installed" || return 1
    assert_match "$(cat root/opt/js/lib/pkgconfig/jobscope.pc)" "prefix=/opt/js" || return 1
    cat >app.c <<'C'
#include <jobscope.h>
#include <stdio.h>
int main(void)
{
    const char *tags[] = { "unit", "s", NULL };
    int n = js_metric("app.loss", 0.25) + js_metric_at("app.at", 1, 1700000000.5) +
            js_metric_level("app.l2", 2, 2) + js_metric_tags("app.tag", 3, tags) +
            js_metric_full("app.full", 4, 0, 1, NULL) + js_payload("{\"payload\":[{\"k\":1}]}");
    printf("%d %d\n", n, js_enabled(1));
    return 0;
}
C
    # under `make asan` the library is instrumented: so must the program be
    san=; nm root/opt/js/lib/libjobscope.a | grep -q __asan_init && san="-fsanitize=address,undefined"
    export PKG_CONFIG_SYSROOT_DIR="$T/root" PKG_CONFIG_PATH="$T/root/opt/js/lib/pkgconfig"
    cc $san -o app-shared app.c $(pkg-config --cflags --libs jobscope) || return 1
    cc $san -o app-static app.c $(pkg-config --cflags jobscope) "$T/root/opt/js/lib/libjobscope.a" -pthread || return 1
    LD_LIBRARY_PATH="$T/root/opt/js/lib" "$JS" run -q -o ev.jsonl -- ./app-shared >out.txt || return 1
    assert_eq "$(cat out.txt)" "5 1" "calls that reached the monitor (level 2 is filtered)" || return 1
    assert_eq "$(jq_py '[e["name"] for e in ev if e["event"]=="jobscope.metric"]' ev.jsonl)" \
        '["app.loss", "app.at", "app.tag", "app.full"]' || return 1
    assert_eq "$(jq_py '[e["k"] for e in ev if e["event"]=="monitoring.additional"]' ev.jsonl)" '[1]' || return 1
    "$JS" run -q -o ev2.jsonl -- ./app-static >out.txt || return 1
    assert_eq "$(cat out.txt)" "5 1" || return 1
    # without a monitor: no-op, 0 sent
    env -u JOBSCOPE_SOCKET LD_LIBRARY_PATH="$T/root/opt/js/lib" ./app-shared >out.txt || return 1
    assert_eq "$(cat out.txt)" "0 0" || return 1
    # only the js_ API is exported from the shared library
    assert_eq "$(nm -D --defined-only root/opt/js/lib/libjobscope.so.0 | awk '$2=="T"{print $3}' | grep -vc '^js_')" 0 || return 1
}

# microbenchmark: what a call costs the caller (figures in docs/metrics.md)
test_bench_calls_per_second() {
    "$HELPERS/js_bench" 200000 >off.txt || return 1
    "$JS" run -q -o /dev/null -- "$HELPERS/js_bench" 200000 >on.txt || return 1
    cat off.txt on.txt >&2
    off=$(awk '$1=="plain"{print $5}' off.txt)
    on=$(awk '$1=="plain"{print $5}' on.txt)
    assert_le "$off" 50 "no monitor: a call should cost nanoseconds" || return 1
    assert_le "$on" 20000 "with a monitor: a call should cost microseconds" || return 1
}

# 14.14: `make install` puts the python package where Debian's python3 looks
# (/usr/local/lib/python3.X/dist-packages, not site-packages), and Dragon's
# telemetry interface is one import away: from jobscope.dragon import Telemetry.
test_make_install_puts_the_python_package_on_pythons_own_path() {
    local py=/usr/bin/python3
    [ -x $py ] || py=$(command -v python3)
    make -s -C "$ROOT" BUILD="$BUILD" install DESTDIR="$T/root" PREFIX=/usr/local PYTHON=$py >make.log 2>&1 || { cat make.log; return 1; }
    init=$(cd root && find . -path '*/jobscope/__init__.py' -o -name jobscope.py | head -1 | sed 's|^\.||')
    [ -n "$init" ] || fail "no python module installed" || return 1
    dir=${init%/jobscope/__init__.py}
    dir=${dir%/jobscope.py}
    $py -c 'import sys; sys.exit(0 if sys.argv[1] in sys.path else 1)' "$dir" \
        || fail "$dir is not on $py's sys.path: $($py -c 'import sys; print(sys.path)')" || return 1
    cat > job.py <<'PY'
from jobscope.dragon import Telemetry
dt = Telemetry()
dt.start()
print(dt.level(), int(dt.level))
dt.add_data("predicted", 3.5, telemetry_level=2, tagk="gpu", tagv="0")
dt.add_data("dropped", 1.0, telemetry_level=3)
dt.shutdown()
print(dt.add_data("after", 1.0))
dt.finalize()
PY
    PYTHONPATH="$T/root$dir" "$JS" run -q --telemetry-level 2 -o ev.jsonl -- $py job.py > out.txt || return 1
    assert_eq "$(cat out.txt | tr '\n' ' ')" "2 2 False " || return 1
    assert_eq "$(jq_py '[(e["name"], e["value"], e["tags"]) for e in ev if e["event"]=="jobscope.metric"]' ev.jsonl)" \
        '[["predicted", 3.5, {"gpu": "0"}]]' || return 1
    # outside a monitored job: level 0, nothing sent, nothing raised
    env -u JOBSCOPE_SOCKET PYTHONPATH="$T/root$dir" $py job.py > out2.txt || return 1
    assert_eq "$(head -1 out2.txt)" "0 0"
}
