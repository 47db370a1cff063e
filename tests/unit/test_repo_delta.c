/* test_repo_delta.c — a sample's text kept as its difference from the one
 * before it in a block (src/repo/repo_delta.c): whatever the two texts,
 * the code gives back the text byte for byte and is never longer than the
 * text and the slack; a line like the one before costs its changed values;
 * a code that is not one is refused or gives a text of the length asked,
 * never a read or a write outside (run under ASan). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repo/repo_priv.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

/* Encodes c against p, decodes it back and compares; the code's length. */
static size_t round_trip(const char *p, size_t np, const char *c, size_t nc)
{
    uint8_t *code = malloc(nc + REPO_DELTA_SLACK);
    char *back = malloc(nc + 1);
    assert_non_null(code), assert_non_null(back);
    size_t n = repo_delta_encode(p, np, c, nc, code);
    assert_true(n <= nc + REPO_DELTA_SLACK);
    /* the code exactly: one byte less or more is not it */
    assert_int_equal(repo_delta_decode(p, np, code, n, back, nc), 0);
    assert_memory_equal(back, c, nc);
    if (n) assert_int_equal(repo_delta_decode(p, np, code, n - 1, back, nc), -1);
    free(code), free(back);
    return n;
}

/* The line of a run's t-th sample, as jobscope writes it. */
static int sample(int t, char *buf, size_t len)
{
    return snprintf(buf, len,
                    "{\"event\":\"kickstart.inv.online\",\"ts\":%d.%03d,\"hostname\":\"node017\","
                    "\"job_id\":\"1234567\",\"pid\":4242,\"exe\":\"/usr/bin/python3\","
                    "\"rss\":%d,\"vm\":%d,\"utime\":%.16g,\"stime\":%.16g,\"rchar\":%d,"
                    "\"wchar\":%d,\"threads\":4,\"procs\":2,\"iowait\":0.5,\"load\":1.25}",
                    1764000000 + t, t * 7 % 1000, 1000 + t % 17, 2 * t, t / 3.0, t / 7.0, 5 * t,
                    3 * t);
}

static void a_line_like_the_one_before_costs_its_changed_values(void **state)
{
    (void)state;
    char a[512], b[512];
    size_t text = 0, code = 0;
    int na = sample(0, a, sizeof a);
    assert_true(round_trip("", 0, a, (size_t)na) <= (size_t)na + 4); /* the first: itself */
    for (int t = 1; t < 2000; t++) {
        int nb = sample(t, b, sizeof b);
        text += (size_t)nb;
        code += round_trip(a, (size_t)na, b, (size_t)nb);
        memcpy(a, b, (size_t)nb + 1);
        na = nb;
    }
    /* 7 changed values of ~265 bytes: under a quarter */
    assert_true(code * 4 < text);
    /* the same line again: one step */
    assert_true(round_trip(a, (size_t)na, a, (size_t)na) <= 6);
}

/* A byte of a text, biased to JSON's delimiters and to what is already there. */
static char some_byte(void)
{
    static const char pick[] = ",:}]\"{[ 0123456789.-eE\\nabcxyz";
    unsigned k = next() % 8;
    return k == 0 ? (char)(next() & 0xff) : pick[next() % (sizeof pick - 1)];
}

/* t mutated: bytes changed, inserted, deleted, a stretch cut or doubled. */
static size_t mutate(const char *t, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 64 < cap;) {
        unsigned k = next() % 64;
        if (k == 0)
            out[o++] = some_byte(), i++; /* changed */
        else if (k == 1)
            out[o++] = some_byte(); /* inserted */
        else if (k == 2)
            i++; /* deleted */
        else if (k == 3)
            i += next() % 20; /* a stretch cut */
        else if (k == 4) {
            size_t m = next() % 20; /* a stretch doubled */
            for (size_t j = 0; j < m && i + j < n; j++) out[o++] = t[i + j];
        } else
            out[o++] = t[i++];
    }
    return o;
}

static void any_text_comes_back_from_its_code_whatever_the_one_before(void **state)
{
    (void)state;
    char a[1024], b[1024], r[1024];
    for (int round = 0; round < 20000; round++) {
        size_t na = (size_t)sample((int)(next() % 100000), a, sizeof a), nb;
        unsigned kind = round % 4;
        if (kind == 0)
            nb = mutate(a, na, b, sizeof b); /* like it, changed anywhere */
        else if (kind == 1) {
            nb = next() % 600; /* nothing like it */
            for (size_t i = 0; i < nb; i++) b[i] = some_byte();
        } else if (kind == 2) {
            nb = mutate(a, na, b, sizeof b); /* the other way round */
            memcpy(r, a, na);
            memcpy(a, b, nb);
            memcpy(b, r, na);
            size_t t = na;
            na = nb, nb = t;
        } else {
            nb = na; /* the same but a byte, anywhere; or empty */
            memcpy(b, a, na);
            if (next() % 10)
                b[next() % nb] = some_byte();
            else
                nb = 0;
        }
        size_t n = round_trip(a, na, b, nb);
        assert_true(n <= nb + 10); /* at worst one literal of it all */
    }
}

static void a_code_that_is_not_one_is_refused_or_stays_inside(void **state)
{
    (void)state;
    char a[512], b[512];
    uint8_t code[512 + REPO_DELTA_SLACK];
    int refused = 0, rounds = 20000;
    for (int round = 0; round < rounds; round++) {
        size_t na = (size_t)sample(round, a, sizeof a), nb = (size_t)sample(round + 1, b, sizeof b);
        size_t n = repo_delta_encode(a, na, b, nb, code);
        /* flip a byte, cut the code, or ask for more or less than it gives */
        unsigned k = next() % 3;
        size_t want = nb;
        if (k == 0)
            code[next() % n] ^= (uint8_t)(1 + next() % 255);
        else if (k == 1)
            n = next() % n;
        else
            want = next() % (nb + 40);
        /* exactly as long as asked: ASan sees a byte past it */
        char *out = malloc(want ? want : 1);
        uint8_t *c = malloc(n ? n : 1);
        memcpy(c, code, n);
        int rc = repo_delta_decode(a, na, c, n, out, want);
        refused += rc < 0;
        assert_true(rc == 0 || rc == -1);
        free(out), free(c);
    }
    assert_true(refused > rounds / 2); /* most such codes are seen as not one */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_line_like_the_one_before_costs_its_changed_values),
        cmocka_unit_test(any_text_comes_back_from_its_code_whatever_the_one_before),
        cmocka_unit_test(a_code_that_is_not_one_is_refused_or_stays_inside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
