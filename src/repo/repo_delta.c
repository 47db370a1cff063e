/* repo_delta.c — a sample's text written as its difference from the sample
 * before it in the same block (repo_block.c).
 *
 * A run's samples are lines of one shape: the same members in the same
 * order, only some values changed.  Kept whole, they were 25 bytes a point
 * in the repository, written twice by SQLite (its log, then its checkpoint)
 * and most of what a batch of samples cost the server.  zstd would shrink
 * them more, but costs as much CPU as it saves in SQLite on blocks this
 * small; this costs one pass of compares.
 *
 * The code is a list of steps, each three varints and a literal:
 *   copy  bytes taken from the previous text where it is,
 *   skip  bytes of the previous text passed over,
 *   lit   bytes that follow in the code, taken as they are.
 * The encoder copies while both texts agree; where they part it passes to
 * the next delimiter (, : } ] ") in each and takes the new text's stretch
 * as a literal, so a changed number or string costs its new digits and
 * three bytes.  Each step reads at least three bytes of the code, so that
 * decoding ends whatever the code.  Any code it writes gives back the text exactly, whatever
 * the two texts are: the delimiters only choose where to resume; a text
 * unlike the one before costs at most its length and ten bytes (then it is
 * one literal of it all); an empty text is an empty code. */
#include "repo/repo_priv.h"

#include <stdint.h>
#include <string.h>

static size_t put_varint(uint8_t *out, size_t o, size_t v)
{
    while (v >= 0x80) {
        out[o++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[o++] = (uint8_t)v;
    return o;
}

static int get_varint(const uint8_t *c, size_t n, size_t *at, size_t *v)
{
    size_t x = 0;
    for (unsigned shift = 0; shift < 64 && *at < n; shift += 7) {
        uint8_t b = c[(*at)++];
        x |= (size_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* Where the encoder resumes after a difference: the byte after a value. */
static const unsigned char delim[256] = {[','] = 1, [':'] = 1, ['}'] = 1, [']'] = 1, ['"'] = 1};

static size_t next_delim(const char *t, size_t from, size_t n)
{
    while (from < n && !delim[(unsigned char)t[from]]) from++;
    return from;
}

/* The length of the common run of p[i..np) and c[j..nc), eight bytes a
 * compare (the first differing byte found from their XOR). */
static size_t common(const char *p, size_t i, size_t np, const char *c, size_t j, size_t nc)
{
    size_t k = 0, m = np - i < nc - j ? np - i : nc - j;
    while (k + 8 <= m) {
        uint64_t a, b;
        memcpy(&a, p + i + k, 8);
        memcpy(&b, c + j + k, 8);
        if (a != b) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return k + (size_t)__builtin_ctzll(a ^ b) / 8;
#else
            break;
#endif
        }
        k += 8;
    }
    while (k < m && p[i + k] == c[j + k]) k++;
    return k;
}

static size_t literal(uint8_t *out, const char *c, size_t nc)
{
    size_t o = put_varint(out, 0, 0);
    o = put_varint(out, o, 0);
    o = put_varint(out, o, nc);
    memcpy(out + o, c, nc);
    return o + nc;
}

size_t repo_delta_encode(const char *p, size_t np, const char *c, size_t nc, uint8_t *out)
{
    if (!nc) return 0;
    if (!np) return literal(out, c, nc);
    size_t i = 0, j = 0, o = 0;
    while (j < nc) {
        size_t run = common(p, i, np, c, j, nc);
        i += run, j += run;
        if (j == nc) {
            if (o + 3 * 10 > nc + REPO_DELTA_SLACK) return literal(out, c, nc);
            o = put_varint(out, o, run);
            o = put_varint(out, o, 0);
            o = put_varint(out, o, 0);
            break;
        }
        /* resume after the value that differs, in each: where one text's
         * value ended (a delimiter, or the previous text's end), only the
         * other is passed over; both at a delimiter: one byte each */
        int pd = i == np || delim[(unsigned char)p[i]], cd = delim[(unsigned char)c[j]];
        size_t i2 = pd ? (cd && i < np ? i + 1 : i) : next_delim(p, i + 1, np);
        size_t j2 = cd ? (pd ? j + 1 : j) : next_delim(c, j + 1, nc);
        if (o + 3 * 10 + j2 - j > nc + REPO_DELTA_SLACK)
            return literal(out, c, nc); /* nothing like the one before */
        o = put_varint(out, o, run);
        o = put_varint(out, o, i2 - i);
        o = put_varint(out, o, j2 - j);
        memcpy(out + o, c + j, j2 - j);
        o += j2 - j;
        i = i2, j = j2;
    }
    return o > nc + 10 ? literal(out, c, nc) : o;
}

int repo_delta_decode(const char *p, size_t np, const uint8_t *code, size_t ncode, char *out,
                      size_t n)
{
    size_t at = 0, i = 0, o = 0;
    while (o < n) {
        size_t copy, skip, lit;
        if (get_varint(code, ncode, &at, &copy) < 0 || get_varint(code, ncode, &at, &skip) < 0 ||
            get_varint(code, ncode, &at, &lit) < 0)
            return -1;
        if (copy > np - i || skip > np - i - copy || copy > n - o || lit > n - o - copy ||
            lit > ncode - at)
            return -1;
        if (copy) memcpy(out + o, p + i, copy); /* (p may be NULL when np is 0) */
        o += copy;
        i += copy + skip;
        memcpy(out + o, code + at, lit);
        o += lit, at += lit;
    }
    return at == ncode ? 0 : -1;
}
