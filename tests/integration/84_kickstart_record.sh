# 84_kickstart_record.sh — jobscope kickstart writes the invocation record
# Pegasus 5's pegasus-kickstart writes and pegasus-monitord reads (issue 21.1,
# docs/kickstart.md).  Every record is read by tests/helpers/ks_record.py, a
# reader written from the rules of Pegasus' kickstart_parser.py: it fails on
# a record that is not valid UTF-8 YAML.

ks_py() { python3 "$ROOT/tests/helpers/ks_record.py" "$@"; }
# the scheduler ids of the machine running the tests are not the record's
no_ids() { env -u SLURM_JOBID -u PBS_JOBID -u LSB_JOBID -u JOB_ID -u COBALT_JOBID \
    -u GLOBUS_GRAM_JOB_CONTACT -u CONDOR_JOBID "$@"; }

test_a_record_matches_the_golden_record_field_by_field() {
    echo in > in.txt
    no_ids CONDOR_JOBID=7.0 "$JS" kickstart -H -n ns::tr:1.0 -N ID01 -R condorpool -L wf \
        -T 2024-01-01T00:00:00+00:00 -S in.lfn=in.txt -s out.lfn=out.txt -B 64 \
        /bin/sh -c 'echo hello; echo oops >&2; echo data > out.txt' >rec.yml
    assert_eq $? 0 || return 1
    ks_py --golden "$ROOT/tests/golden/kickstart_record.yml" rec.yml
}

test_pegasus_reads_the_invocation_as_monitord_maps_it() {
    no_ids "$JS" kickstart -n diamond::findrange:4.0 -N ID0000002 -R condorpool \
        /bin/sh -c 'echo to-stdout; echo to-stderr >&2; exit 3' >job.out
    assert_eq $? 3 "the job's exit code" || return 1
    assert_eq "$(ks_py '[len(st), st[0]["transformation"], st[0]["derivation"], st[0]["resource"], st[0]["raw"], st[0]["exitcode"]]' job.out)" \
        '[1, "diamond::findrange:4.0", "ID0000002", "condorpool", 768, 3]' || return 1
    assert_eq "$(ks_py '[st[0]["stdout"], st[0]["stderr"], st[0]["cwd"], st[0]["system"]]' job.out)" \
        "[\"to-stdout\\n\", \"to-stderr\\n\", \"$T\", \"linux\"]" || return 1
    assert_match "$(ks_py 'st[0]["name"]' job.out)" '/(da)?sh$' || return 1
    # every section of kickstart's record, in its order; jobscope's last
    assert_eq "$(ks_py '[k for k in rec]' job.out)" \
        '["invocation", "version", "start", "duration", "transformation", "derivation", "resource", "interface", "hostaddr", "hostname", "pid", "uid", "user", "gid", "group", "umask", "mainjob", "jobids", "cwd", "usage", "machine", "files", "environment", "limits", "monitoring"]' || return 1
    assert_eq "$(ks_py '[rec["version"], sorted(rec["machine"])[:6], list(rec["files"])]' job.out)" \
        '[3.0, ["boot", "cpu_count", "cpu_model", "cpu_speed", "cpu_vendor", "load_min1"], ["stdin", "stdout", "stderr", "metadata", "kickstart", "logfile"]]'
}

test_the_status_says_exited_signalled_or_failed() {
    "$JS" kickstart /bin/sh -c 'kill -TERM \$\$' >sig.yml   # kickstart rewrites $, \$ is one
    assert_eq $? 143 "128+SIGTERM" || return 1
    assert_eq "$(ks_py '[st[0]["raw"], st[0]["signal"], st[0]["action"], rec["mainjob"]["status"]["singalled_name"], st[0]["corefile"]]' sig.yml)" \
        '[15, 15, "Terminated", "Terminated", false]' || return 1
    "$JS" kickstart no-such-program-anywhere >miss.yml 2>err.txt
    assert_eq $? 127 || return 1
    assert_eq "$(ks_py 'rec["mainjob"]["status"]' miss.yml)" '{"raw": -127, "failure_error": "2   No such file or directory"}' || return 1
    grep -q 'FATAL: Unable to execute' err.txt || fail "kickstart's message: $(cat err.txt)" || return 1
    printf '#!/bin/sh\necho ran\n' > script.sh
    "$JS" kickstart ./script.sh >perm.yml
    assert_eq $? 127 || return 1
    assert_match "$(ks_py 'rec["mainjob"]["status"]["failure_error"]' perm.yml)" '^13 +Permission denied$' || return 1
    assert_eq "$(ks_py '"environment" in rec and "limits" in rec' perm.yml)" true "a failure implies -f" || return 1
    "$JS" kickstart -X ./script.sh >x.yml || return 1
    assert_eq "$(ks_py 'st[0]["stdout"]' x.yml)" ran "-X made it executable"
}

test_the_record_is_valid_yaml_whatever_the_job_prints() {
    # quotes, &, control characters, ANSI colours, CR, invalid UTF-8, U+2028,
    # a NUL, a progress bar: kickstart's own test files and worse
    printf '#!/bin/sh\nprintf %s\n' \
        "'\"q\" & && <x a=\"b\">\\001\\033[33mY\\033[0m\\r\\nbad:\\377\\376 ok \\342\\200\\250 next\\000nul\\n  0%%|\\342\\226\\210\\342\\226\\210| 10/10\\n'" > noisy.sh
    chmod +x noisy.sh
    "$JS" kickstart -n 'tr "quoted" & more' ./noisy.sh >a.yml 2>&1 || return 1
    assert_eq "$(ks_py 'rec["transformation"]' a.yml)" 'tr "quoted" & more' || return 1
    ks_py 'st[0]["stdout"]' a.yml > data.txt || return 1
    grep -q '"q" & && <x a="b">\[33mY\[0m$' data.txt || fail "quotes, & kept, ESC dropped: $(cat data.txt)" || return 1
    grep -q 'bad:�� ok' data.txt || fail "invalid UTF-8 as U+FFFD: $(cat data.txt)" || return 1
    grep -q '██| 10/10' data.txt || return 1
    # arguments: quotes, a newline, invalid UTF-8, 128 KiB; locale de_DE
    python3 -c 'import sys; sys.stdout.buffer.write(b"/bin/echo\n\"quoted\" \x27x\x27 &amp; \xff\n" + b"c" * 131072 + b"\n")' > args.txt
    # (Linux takes at most 128 KiB - 1 in one argument: exec fails as kickstart's did)
    LC_ALL=de_DE.UTF-8 LANG=de_DE.UTF-8 "$JS" kickstart -I args.txt >b.yml 2>/dev/null
    assert_eq $? 127 || return 1
    assert_eq "$(ks_py '[len(rec["mainjob"]["argument_vector"][1]), rec["mainjob"]["argument_vector"][0], type(rec["duration"]).__name__, st[0]["exitcode"], st[0]["stderr"]]' b.yml)" \
        '[131072, "\"quoted\" '"'"'x'"'"' &amp; \ufffd", "float", 127, "execv: Argument list too long\n"]' || return 1
    LC_ALL=C "$JS" kickstart /bin/echo "$(printf 'caf\303\251')" >c.yml || return 1
    assert_eq "$(ks_py 'st[0]["stdout"]' c.yml)" 'café' "UTF-8 in the C locale"
}

test_B_keeps_the_last_characters_and_says_truncated() {
    "$JS" kickstart -B 10 /bin/sh -c 'printf "0123456789abcdefghij\n"' >b10.yml || return 1
    assert_eq "$(ks_py '[rec["files"]["stdout"]["data_truncated"], st[0]["stdout"]]' b10.yml)" '[true, "bcdefghij\n"]' || return 1
    "$JS" kickstart -B 10 /bin/sh -c 'printf "é€😀abcdefgh\n"' >utf.yml || return 1
    assert_eq "$(ks_py 'st[0]["stdout"]' utf.yml)" '😀abcdefgh' "characters, not bytes" || return 1
    python3 -c 'print("x" * 300000)' > big.txt
    "$JS" kickstart /bin/cat big.txt >def.yml || return 1
    assert_eq "$(ks_py '[rec["files"]["stdout"]["data_truncated"], len(st[0]["stdout"])]' def.yml)" '[true, 262144]' "default 256 KiB" || return 1
    "$JS" kickstart -B all /bin/cat big.txt >all.yml || return 1
    assert_eq "$(ks_py '[rec["files"]["stdout"]["data_truncated"], len(st[0]["stdout"])]' all.yml)" '[false, 300001]'
}

test_q_keeps_the_data_only_when_the_job_failed() {
    "$JS" kickstart -q /bin/sh -c 'echo out; echo err >&2' >ok.yml || return 1
    assert_eq "$(ks_py '["data" in rec["files"]["stdout"], "data" in rec["files"]["stderr"]]' ok.yml)" '[false, false]' || return 1
    "$JS" kickstart -q /bin/sh -c 'echo out; echo err >&2; exit 1' >bad.yml
    assert_eq "$(ks_py '[st[0]["stdout"], st[0]["stderr"]]' bad.yml)" '["out\n", "err\n"]'
}

test_s_and_S_files_carry_their_lfn_and_a_sha256() {
    echo before > in.txt
    printf 'a.lfn=a.txt  # a comment\n\nmissing.txt\n' > list.txt
    "$JS" kickstart -S in.lfn=in.txt -s out.lfn=out.txt -s @list.txt \
        /bin/sh -c 'echo data > out.txt; echo aa > a.txt' >rec.yml || return 1
    sum=$(python3 -c 'import hashlib; print(hashlib.sha256(open("out.txt","rb").read()).hexdigest())')
    assert_eq "$(ks_py '[list(rec["files"])[:4], rec["files"]["out.lfn"]["sha256"] == "'"$sum"'", rec["files"]["out.lfn"]["output"], "output" in rec["files"]["in.lfn"]]' rec.yml)" \
        '[["in.lfn", "out.lfn", "a.lfn", "missing.txt"], true, true, false]' || return 1
    assert_eq "$(ks_py '[rec["files"]["missing.txt"]["error"], sorted(st[0]["outputs"])]' rec.yml)" '[2, ["a.lfn", "out.lfn"]]'
}

test_H_omits_the_machine_and_f_adds_environment_and_limits() {
    "$JS" kickstart -H /bin/true >h.yml || return 1
    assert_eq "$(ks_py '["machine" in rec, "environment" in rec, "limits" in rec]' h.yml)" '[false, false, false]' || return 1
    env 'GIDEON"=juve' "$JS" kickstart -f /bin/true >f.yml || return 1   # Pegasus' quoting test
    assert_eq "$(ks_py '[rec["environment"]["GIDEON\""], rec["limits"]["RLIMIT_NOFILE_soft"] > 0, list(rec["files"])[-2:]]' f.yml)" \
        '["juve", true, ["kickstart", "logfile"]]'
}

test_l_appends_records_and_the_logfile_is_recorded() {
    "$JS" kickstart -l rec.yml /bin/echo one >out.txt || return 1
    "$JS" kickstart -l rec.yml /bin/echo two >>out.txt || return 1
    assert_eq "$(cat out.txt)" "" "nothing on stdout" || return 1
    assert_eq "$(ks_py '[s["stdout"] for s in st]' rec.yml)" '["one\n", "two\n"]' || return 1
    "$JS" kickstart -l - -f /bin/true >dash.yml || return 1
    assert_eq "$(ks_py 'rec["files"]["logfile"]["descriptor_number"]' dash.yml)" 1
}

test_metadata_and_integrity_data_join_the_record() {
    # the job writes key=value metadata, and a Pegasus tool (pegasus-integrity's
    # format) adds a file entry to KICKSTART_INTEGRITY_DATA
    cat > job.sh <<'EOF'
#!/bin/sh
echo foo=bar >> "$KICKSTART_METADATA"
cat >> "$KICKSTART_INTEGRITY_DATA" <<EOT
    "f.a":
      comment: entry generated by a Pegasus tool
      file_name: "f.a"
      output: True
      sha256: 8e8ecb610e893781b6c0a38e443a257cb8c0aa548b04946930bea987e5e090d6
      checksum_timing: 0.01
EOT
EOF
    chmod +x job.sh
    "$JS" kickstart ./job.sh >rec.yml || return 1
    assert_eq "$(ks_py '[rec["files"]["metadata"]["data"], list(rec["files"])[0], st[0]["outputs"]["f.a"]["sha256"][:8]]' rec.yml)" \
        '["foo=bar\n", "f.a", "8e8ecb61"]'
}

test_multipart_records_after_the_record_are_read_too() {
    "$JS" kickstart /bin/echo main >job.out || return 1
    printf '\n---------------pegasus-multipart\n- integrity_summary:\n    succeeded: 1\n    failed: 0\n    duration: 0.182\n' >> job.out
    assert_eq "$(ks_py '[len(st), st[0]["stdout"], parts[0]["integrity_summary"]["succeeded"], parts[0]["multipart"]]' job.out)" \
        '[1, "main\n", 1, true]'
}

test_a_non_root_job_gets_its_own_user_and_group() {
    [ "$(id -u)" = 0 ] || return 77
    chmod 755 "$T"
    su nobody -s /bin/sh -c "cd $T && '$JS' kickstart /bin/id -un" >rec.yml 2>err.txt || { cat err.txt; return 1; }
    assert_eq "$(ks_py '[rec["user"], st[0]["stdout"], rec["files"]["stdout"]["user"]]' rec.yml)" '["nobody", "nobody\n", "nobody"]'
}
