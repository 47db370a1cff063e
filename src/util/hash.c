/* hash.c — see hash.h. */
#include "hash.h"

#include <string.h>

uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    /* the last 0..7 bytes without a call to memcpy of a variable length
     * (most names and tag values are shorter than 8 bytes): two
     * overlapping words of 4, or the first, middle and last byte, which
     * cover every byte (n is in the hash already) */
    uint64_t w = 0;
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        w = a | (uint64_t)b << 32;
    } else if (n)
        w = (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[n / 2] << 8 |
            (uint64_t)(unsigned char)s[n - 1] << 16;
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}
