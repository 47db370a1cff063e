# 91_release.sh — release quality (issue 13, docs/testing.md): man pages that
# match --help, --version naming the build's features, and a Debian package
# that builds, installs and runs a job from /usr/bin.

# The long options a text mentions (--foo), sorted, one per line.
long_options() { grep -oE '(^|[^A-Za-z0-9-])--[a-z][a-z0-9-]+' | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u; }

# cmd_vs_man "run" jobscope-run.1: every option of `jobscope run --help` is
# in the man page and the man page names no option --help does not know.
cmd_vs_man() {
    local help man
    help=$("$JS" $1 --help 2>&1 | long_options)
    man=$(long_options < "$ROOT/man/$2.scd")
    [ -n "$help" ] || fail "no options in 'jobscope $1 --help'" || return 1
    local diff
    diff=$(diff <(echo "$help") <(echo "$man")) || { echo "$diff" | sed 's/^/    /' >&2
        fail "jobscope $1 --help (<) and man/$2.scd (>) list different options"; return 1; }
}

test_the_run_man_page_lists_every_option_of_run_help() { cmd_vs_man run jobscope-run.1; }
test_the_emit_man_page_lists_every_option_of_emit_help() { cmd_vs_man emit jobscope-emit.1; }
test_the_serve_man_page_lists_every_option_of_serve_help() { cmd_vs_man serve jobscope-serve.1; }

test_man_pages_are_built_and_render() {
    need man || return
    for p in jobscope.1 jobscope-run.1 jobscope-emit.1 jobscope-serve.1 libjobscope.3; do
        assert_file "$ROOT/$BUILD/man/$p" || return 1
        man -l "$ROOT/$BUILD/man/$p" 2>/dev/null | grep -q "NAME" || fail "$p does not render" || return 1
    done
}

test_version_names_the_build_and_its_features() {
    local out
    out=$("$JS" --version) || fail "--version failed" || return 1
    assert_match "$out" '^jobscope [0-9]+\.[0-9]+\.[0-9]+' || return 1
    assert_match "$out" "network plugin: /.*jobscope-net.so" || return 1
    assert_match "$out" "server program: /.*jobscope-serve" || return 1
    assert_match "$out" "nvml: " || return 1
    JOBSCOPE_NVML_LIBRARY="$ROOT/$BUILD/fake-nvml/libnvidia-ml.so.1" "$JS" --version | grep -q "nvml: libnvidia" \
        || fail "a loadable NVML library is not reported" || return 1
}

# Builds the .deb from a copy of the tree, installs it, runs a job from /usr/bin, removes it.
test_the_debian_package_builds_installs_and_runs_a_job() {
    need dpkg-buildpackage || return
    [ "$(id -u)" = 0 ] || { echo "    skip: installing a package needs root" >&2; return 77; }
    if dpkg-query -W -f='${Status}' jobscope 2>/dev/null | grep -q "ok installed"; then
        echo "    skip: a jobscope package is installed already" >&2; return 77
    fi
    mkdir src && (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar cf -) | tar xf - -C src
    (cd src && dpkg-buildpackage -us -uc -b -J"$(nproc)" >"$T/build.log" 2>&1) || { tail -20 "$T/build.log" >&2; fail "dpkg-buildpackage failed"; return 1; }
    ls jobscope_*.deb libjobscope-dev_*.deb >/dev/null || fail "packages missing" || return 1
    dpkg -c jobscope_*.deb | grep -q "usr/lib/jobscope/jobscope-net.so" || fail "plugin not packaged" || return 1
    dpkg -c libjobscope-dev_*.deb | grep -q "usr/include/jobscope.h" || fail "header not packaged" || return 1
    trap 'dpkg -r libjobscope-dev jobscope >/dev/null 2>&1' RETURN
    dpkg -i jobscope_*.deb libjobscope-dev_*.deb >"$T/install.log" 2>&1 || { cat "$T/install.log" >&2; fail "dpkg -i failed"; return 1; }
    /usr/bin/jobscope run -q -o "$T/ev.jsonl" -- true || fail "installed jobscope failed" || return 1
    jq_py 'ev[-1]["event"]' "$T/ev.jsonl" | grep -q jobscope.end || fail "no end record" || return 1
    /usr/bin/jobscope --version | grep -q "network plugin: /usr/lib/jobscope/jobscope-net.so" \
        || fail "installed jobscope does not find its plugin" || return 1
    man -w jobscope-run >/dev/null 2>&1 || fail "man page not installed" || return 1
    pkg-config --exists jobscope || fail "jobscope.pc not installed" || return 1
}
