/* jsonx.c — see jsonx.h. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jsonx.h"

char *jsonx_rabbitmq_body(const char *routing_key, const char *b64, size_t b64len)
{
    json_t *o = json_pack("{s:{s:i,s:s},s:s,s:s%,s:s}", "properties", "delivery_mode", 2,
                          "content_type", "application/json", "routing_key", routing_key, "payload",
                          b64, b64len, "payload_encoding", "base64");
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return body;
}

int jsonx_bulk_result(const char *resp, int n, int *rejected, long *retry_status, char *reason,
                      size_t reasonlen)
{
    *rejected = 0;
    *retry_status = 0;
    json_t *r = json_loads(resp ? resp : "", 0, NULL);
    if (!json_is_object(r)) {
        json_decref(r);
        return -1;
    }
    int done = n;
    if (json_is_true(json_object_get(r, "errors"))) {
        json_t *items = json_object_get(r, "items");
        for (int i = 0; i < n && i < (int)json_array_size(items); i++) {
            json_t *it = json_array_get(items, (size_t)i), *a = NULL;
            const char *k;
            json_t *v;
            json_object_foreach(it, k, v)
            {
                a = v;
                break;
            } /* "index", "create", ... */
            long s = (long)json_integer_value(json_object_get(a, "status"));
            if (s >= 200 && s < 300) continue;
            if (s != 400 && s != 409 && s != 413 && s != 415 &&
                s != 422) { /* as httpc_status_class */
                *retry_status = s;
                done = i;
                break;
            }
            if (!*rejected && reason) {
                json_t *re = json_object_get(json_object_get(a, "error"), "reason");
                snprintf(reason, reasonlen, "%ld: %s", s,
                         json_is_string(re) ? json_string_value(re) : "?");
            }
            (*rejected)++;
        }
    }
    json_decref(r);
    return done;
}
