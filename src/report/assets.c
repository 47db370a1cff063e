/* assets.c — looks up the web assets embedded by web/embed.py (web_assets.h). */
#include "report/web_assets.h"

#include <string.h>

const web_asset *web_asset_find(const char *name)
{
    for (const web_asset *a = web_assets; a->name; a++)
        if (!strcmp(a->name, name)) return a;
    return NULL;
}
