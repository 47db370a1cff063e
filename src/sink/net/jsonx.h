/* jsonx.h — the few places the network sinks read or write JSON with
 * jansson (the rest of them write with jobscope's own writer, event/json.h,
 * whose calls are jw_*: jansson owns json_*). */
#ifndef JOBSCOPE_JSONX_H
#define JOBSCOPE_JSONX_H

#include <stddef.h>

/* The management-API publish body; NULL when the key is not UTF-8. */
char *jsonx_rabbitmq_body(const char *routing_key, const char *b64, size_t b64len);

/* Reads an Elasticsearch _bulk answer for n items.  Returns -1 if it is not
 * JSON; else the number of leading items done (delivered or rejected for
 * good (400, 409, 413, 415, 422); *rejected counts them, *reason gets the
 * first); any other failed item stops the count there, *retry_status says
 * which. */
int jsonx_bulk_result(const char *resp, int n, int *rejected, long *retry_status, char *reason,
                      size_t reasonlen);

#endif
