/* series_name.c — see series_name.h. */
#include "series_name.h"

int series_name_valid(const char *s, size_t n)
{
    if (!n || n > SERIES_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!series_name_char(c) && c < 0x80) return 0;
    }
    return 1;
}

void series_name_clean(char *s)
{
    for (; *s; s++)
        if (!series_name_char((unsigned char)*s)) *s = '_';
}
