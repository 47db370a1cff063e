/* web_assets.h — the web assets (the files of web/src and uPlot) compiled into
 * build/jobscope-serve by web/embed.py (build/gen/web_assets.c): the
 * dashboard of `jobscope serve` serves them, `jobscope report` inlines them
 * into a self-contained HTML file.  See docs/views.md "Build". */
#ifndef JOBSCOPE_WEB_ASSETS_H
#define JOBSCOPE_WEB_ASSETS_H

#include <stddef.h>

typedef struct web_asset {
    const char *name;          /* base name: "uPlot.iife.min.js", "charts.js" */
    const unsigned char *data; /* NUL-terminated for convenience */
    size_t len;
    const char *type; /* Content-Type */
} web_asset;

extern const web_asset web_assets[]; /* ends with a NULL name */

/* The asset of that name, or NULL. */
const web_asset *web_asset_find(const char *name);

#endif
