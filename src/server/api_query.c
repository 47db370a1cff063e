/* api_query.c — the read endpoints of the OpenTSDB API over src/query/tsq.h:
 * /api/query (POST, GET m=), /api/query/last, /api/suggest,
 * /api/aggregators, /api/config/filters, /api/search/lookup; with --peers,
 * answers merged over the fan-out (server_fanout). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server_priv.h"

void server_api_query_init(server *s)
{
    (void)s;
}
