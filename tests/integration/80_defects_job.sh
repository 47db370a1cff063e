# Regression tests for the defects of issue 16 (and 13) that harm the job or
# hang it: each test fails on the code before its fix (docs/testing.md).
W=$HELPERS/workload

# 16.16: glibc's posix_spawn leaves its internal signals 32 and 33 ignored in
# the child; a job must start with the dispositions a shell would give it.
test_the_job_inherits_no_ignored_signals_a_shell_would_not_give() {
    want=$(sh -c 'grep SigIgn /proc/self/status')
    got=$("$JS" run -q -o /dev/null -- grep SigIgn /proc/self/status)
    assert_eq "$got" "$want" "job's ignored signals"
}

test_a_signal_ignored_by_the_caller_stays_ignored_in_the_job() {
    # nohup's contract: what jobscope's caller ignores, the job ignores
    want=$(trap '' HUP; sh -c 'grep SigIgn /proc/self/status')
    got=$(trap '' HUP; "$JS" run -q -o /dev/null -- grep SigIgn /proc/self/status)
    assert_eq "$got" "$want" "job's ignored signals under trap '' HUP"
}
