/* fuzz_repo_delta.c — the repository's coded samples (src/repo/repo_delta.c),
 * which a damaged disk or a person may change in the file: decoding any code
 * against any text before it either refuses it or fills exactly the length
 * asked, never reading or writing outside (the buffers are exactly as long
 * as they are said to be); and any two texts encode to a code that decodes
 * back to the second, byte for byte, no longer than it and the slack.
 *
 * Input: byte 0 picks the check (bit 0: round trip, else decode); bytes
 * 1-2 the split between the text before and the rest, bytes 3-4 (decode)
 * the length asked. */
#include "fuzz.h"
#include "repo/repo_priv.h"

static void *copy_of(const uint8_t *p, size_t n)
{
    void *c = malloc(n ? n : 1);
    if (!c) abort();
    if (n) memcpy(c, p, n);
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5) return 0;
    size_t rest = size - 5, split = ((size_t)data[1] | (size_t)data[2] << 8) % (rest + 1);
    size_t want = (size_t)data[3] | (size_t)data[4] << 8;
    char *prev = copy_of(data + 5, split);
    const uint8_t *tail = data + 5 + split;
    size_t ntail = rest - split;
    if (data[0] & 1) {
        char *cur = copy_of(tail, ntail), *back = malloc(ntail ? ntail : 1);
        uint8_t *code = malloc(ntail + REPO_DELTA_SLACK);
        if (!back || !code) abort();
        size_t n = repo_delta_encode(prev, split, cur, ntail, code);
        if (n > ntail + 10) abort(); /* at worst one literal of it all */
        if (repo_delta_decode(prev, split, code, n, back, ntail) != 0) abort();
        if (ntail && memcmp(back, cur, ntail)) abort();
        free(cur), free(back), free(code);
    } else {
        uint8_t *code = copy_of(tail, ntail);
        char *out = malloc(want ? want : 1);
        if (!out) abort();
        int rc = repo_delta_decode(prev, split, code, ntail, out, want);
        if (rc != 0 && rc != -1) abort();
        free(code), free(out);
    }
    free(prev);
    return 0;
}
