# Layers: no #include goes up util -> model -> sources | outputs -> monitor
# -> front ends -> cli, sources and outputs never include each other, no
# file is exempt (the event model includes no output), the server side
# includes nothing of cli/ or monitor/, and the monitor side nothing of the
# server side (tests/check_layers.py, docs/hacking.md).

test_no_include_goes_up_the_layers() {
    python3 "$ROOT/tests/check_layers.py" "$ROOT/src"
}

# a tree with one violation of each kind: each is reported
test_the_layer_check_rejects_upward_includes() {
    mkdir -p s/util s/proc s/monitor s/cli s/store s/model s/event s/sink s/gpu
    echo '#include "../monitor/monitor.h"' > s/proc/proctree.c
    echo '#include "../sink/sink.h"' > s/event/event.c
    echo '#include "../sink/sink.h"' > s/gpu/gpu_source.c
    echo '#include "../gpu/gpu.h"' > s/sink/csv.c
    touch s/sink/sink.h s/gpu/gpu.h
    echo '#include "cli/options.h"' > s/store/store.c
    echo '#include "../store/store.h"' > s/monitor/monitor.c
    echo '#include "../model/metric.h"' > s/util/clock.c
    touch s/monitor/monitor.h s/cli/options.h s/store/store.h s/model/metric.h
    echo '#include "../util/clock.h"' > s/cli/main.c; touch s/util/clock.h
    python3 "$ROOT/tests/check_layers.py" s > out.txt
    assert_eq $? 1 || return 1
    assert_eq "$(wc -l < out.txt)" 7 || { cat out.txt; return 1; }
    assert_match "$(cat out.txt)" "proctree.c:1: includes monitor/monitor.h" || return 1
    assert_match "$(cat out.txt)" "server side must not include cli" || return 1
    assert_match "$(cat out.txt)" "monitor side must not include the server side" || return 1
    assert_match "$(cat out.txt)" "event.c:1: includes sink/sink.h: model \(layer 1\) includes outputs" || return 1
    assert_match "$(cat out.txt)" "gpu_source.c:1: .*sources and outputs stand side by side" || return 1
    assert_match "$(cat out.txt)" "csv.c:1: .*outputs and sources stand side by side" || return 1
    assert_match "$(cat out.txt)" "util \(layer 0\) includes model"
}

# Inside src/server calls go one way (issue 24 §2): no file calls or
# includes, directly or through others, a file that calls it back
# (tests/server_graph.py, from the objects and the sources).
test_the_server_files_call_each_other_without_a_circle() {
    python3 "$ROOT/tests/server_graph.py" "$ROOT/$BUILD" "$ROOT/src/server" > graph.txt
    assert_eq "$?" 0 "$(grep -A3 '^circles' graph.txt)" || return 1
    assert_match "$(cat graph.txt)" "circles: 0" || return 1
}
