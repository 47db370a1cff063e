# `make install` puts jobscope-serve, its systemd unit (pointing at the installed jobscope)
# and the example config where PREFIX, DESTDIR and UNITDIR say.  docs/serve.md.

test_install_puts_the_serve_program_and_a_valid_systemd_unit() {
    make -s -C "$ROOT" BUILD="$BUILD" install DESTDIR="$T/root" PREFIX=/opt/js >make.log 2>&1 || { cat make.log; return 1; }
    local f
    for f in bin/jobscope lib/jobscope/jobscope-serve lib/systemd/system/jobscope-serve.service \
             share/doc/jobscope/serve.conf.example share/doc/jobscope/serve.md; do
        [ -e "root/opt/js/$f" ] || fail "not installed: $f" || return 1
    done
    local unit=root/opt/js/lib/systemd/system/jobscope-serve.service
    assert_match "$(grep ^ExecStart= $unit)" '^ExecStart=/opt/js/bin/jobscope serve$' || return 1
    grep -q '^RuntimeDirectoryMode=0700$' $unit || fail "socket directory not 0700" || return 1
    grep -q '@' $unit && fail "unexpanded placeholder: $(grep @ $unit)" && return 1
    # the installed program finds its server half and answers --help
    root/opt/js/bin/jobscope serve --help | grep -q -- '--listen' || fail "installed jobscope serve" || return 1
    # systemd's own check of the unit, where systemd is installed (the binary it names exists)
    if command -v systemd-analyze >/dev/null; then
        sed "s|/opt/js|$T/root/opt/js|g" $unit > jobscope-serve.service
        systemd-analyze verify ./jobscope-serve.service > verify.txt 2>&1
        grep -v -e 'Failed to connect' -e 'Cannot add dependency' -e '^$' verify.txt | grep -i -e 'jobscope-serve.service' &&
            fail "systemd-analyze: $(cat verify.txt)" && return 1
    fi
    # the example config parses (every line is a comment) and a filled-in copy too
    sed -e 's/^# \(listen\|retention\|max-size\|threads\|body-limit\) /\1 /' \
        root/opt/js/share/doc/jobscope/serve.conf.example | sed 's/ *#.*$//' > serve.conf
    "$ROOT/$BUILD/jobscope-serve" serve --config serve.conf --store st --socket none --listen 127.0.0.1:0 \
        --node-interval 0 > s.log 2>&1 &
    local pid=$!
    sleep 1
    kill -0 $pid 2>/dev/null || fail "example config refused: $(cat s.log)" || return 1
    kill $pid; wait $pid
}
