/* series_name.c — see series_name.h. */
#include "series_name.h"

void series_name_clean(char *s)
{
    for (; *s; s++)
        if (!series_name_char((unsigned char)*s)) *s = '_';
}
