# 93_docs.sh — the documents say what the program does (issue 27): every
# command example of README.md and docs/*.md marked `<!-- doc-test -->` runs
# here as written (tests/helpers/doc_examples.py; docs/testing.md says how to
# mark one).

test_every_marked_command_example_of_the_docs_runs() {
    python3 "$ROOT/tests/helpers/doc_examples.py" "$ROOT" "$JS"
}

# The runner fails on a changed example: it is no mere listing.
test_the_doc_example_runner_fails_on_an_example_that_fails() {
    mkdir -p d
    printf '<!-- doc-test -->\n```sh\njobscope run --no-such-option -- true\n```\n' > d/a.md
    printf '<!-- doc-test -->\n```sh\njobscope run -o ev.jsonl -- ./task\n```\n' > d/b.md
    printf '<!-- doc-test: skip=12889 -->\n```sh\njobscope attach 12889\n```\n' > d/c.md
    python3 "$ROOT/tests/helpers/doc_examples.py" "$T" "$JS" d/a.md d/b.md d/c.md > out.txt
    assert_eq $? 1 "the runner's status" || { cat out.txt; return 1; }
    assert_match "$(cat out.txt)" 'FAIL  d/a.md:2' || return 1
    assert_match "$(cat out.txt)" 'ok    d/b.md:2' || return 1
    assert_match "$(cat out.txt)" 'ok    d/c.md:2 \(0 command lines\)' || return 1
    printf '<!-- doc-test -->\nno fence\n' > d/e.md
    python3 "$ROOT/tests/helpers/doc_examples.py" "$T" "$JS" d/e.md > out.txt
    assert_eq $? 2 "a marker without a block" || return 1
}
