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
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}
