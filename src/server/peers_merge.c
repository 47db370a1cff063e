/* peers_merge.c — the answers of the peers merged with the local one, for
 * the endpoints that are unions (peers.h): /api/suggest, /api/search/lookup
 * and /api/query/last; a peer answer of another shape is left out.  The
 * fan-out and /api/query's merge of raw series are in peers.c. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "peers.h"
#include "util/log.h"

static json_t *load_ok(const server_peer_reply *r)
{
    if (r->status != 200 || !r->body) return NULL;
    return json_loadb(r->body, r->len, 0, NULL);
}

static char *dump(json_t *j, size_t *outlen)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(j);
    *outlen = s ? strlen(s) : 0;
    return s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *peers_merge_suggest(const char *local, size_t len, const server_peer_reply *rep, int n,
                          int max, size_t *outlen)
{
    json_t *mine = json_loadb(local, len, 0, NULL);
    if (!json_is_array(mine)) {
        json_decref(mine);
        return NULL;
    }
    size_t cap = 64, cnt = 0;
    char **v = malloc(cap * sizeof *v);
    json_t *all[1 + n];
    int na = 0;
    all[na++] = mine;
    for (int i = 0; i < n; i++) {
        json_t *j = load_ok(&rep[i]);
        if (json_is_array(j))
            all[na++] = j;
        else
            json_decref(j);
    }
    for (int a = 0; a < na && v; a++) {
        size_t i;
        json_t *e;
        json_array_foreach(all[a], i, e)
        {
            if (!json_is_string(e)) continue;
            if (cnt == cap) {
                char **nv = realloc(v, (cap *= 2) * sizeof *v);
                if (!nv) break;
                v = nv;
            }
            v[cnt++] = (char *)json_string_value(e);
        }
    }
    json_t *outj = json_array();
    if (v) {
        qsort(v, cnt, sizeof *v, cmp_str);
        int kept = 0;
        for (size_t i = 0; i < cnt && (max <= 0 || kept < max); i++) {
            if (i && !strcmp(v[i], v[i - 1])) continue;
            json_array_append_new(outj, json_string(v[i]));
            kept++;
        }
    }
    free(v);
    char *res = dump(outj, outlen);
    for (int a = 0; a < na; a++) json_decref(all[a]);
    return res;
}

/* A series' identity: its metric and tags as canonical JSON. */
static char *series_key(json_t *r)
{
    json_t *k = json_pack("{s:O?,s:O?}", "m", json_object_get(r, "metric"), "t",
                          json_object_get(r, "tags"));
    char *s = k ? json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(k);
    return s;
}

char *peers_merge_lookup(const char *local, size_t len, const server_peer_reply *rep, int n,
                         size_t *outlen)
{
    json_t *mine = json_loadb(local, len, 0, NULL);
    json_t *res = json_object_get(mine, "results");
    if (!json_is_array(res)) {
        json_decref(mine);
        return NULL;
    }
    json_t *seen = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(res, i, e)
    {
        char *k = series_key(e);
        if (k) json_object_set_new(seen, k, json_true());
        free(k);
    }
    for (int p = 0; p < n; p++) {
        json_t *j = load_ok(&rep[p]);
        json_t *pr = json_object_get(j, "results");
        if (json_is_array(pr)) {
            json_array_foreach(pr, i, e)
            {
                char *k = series_key(e);
                if (k && !json_object_get(seen, k)) {
                    json_object_set_new(seen, k, json_true());
                    json_array_append(res, e);
                }
                free(k);
            }
        }
        json_decref(j);
    }
    json_decref(seen);
    json_object_set_new(mine, "totalResults", json_integer((json_int_t)json_array_size(res)));
    return dump(mine, outlen);
}

char *peers_merge_concat(const char *local, size_t len, const server_peer_reply *rep, int n,
                         size_t *outlen)
{
    json_t *mine = json_loadb(local, len, 0, NULL);
    if (!json_is_array(mine)) {
        json_decref(mine);
        return NULL;
    }
    for (int p = 0; p < n; p++) {
        json_t *j = load_ok(&rep[p]);
        if (json_is_array(j)) json_array_extend(mine, j);
        json_decref(j);
    }
    return dump(mine, outlen);
}

void peers_mark_partial(server *s, server_response *w, const char *what, const char *warn)
{
    if (!warn || !warn[0]) return;
    server_add_header(w, PEERS_PARTIAL_HEADER, warn);
    js_log(1, "peers", "partial answer to %s: %s", what, warn);
}

/* Is a peer's 200 answer of the shape this endpoint answers?  A peer that
 * sends anything else is left out of the merge and named in the warning. */
int peers_answer_valid(enum peers_kind kind, const server_peer_reply *rep)
{
    json_t *j = load_ok(rep);
    int ok = j != NULL;
    size_t i;
    json_t *e;
    if (kind == PEERS_SUGGEST) {
        ok = json_is_array(j);
        json_array_foreach(j, i, e) ok &= json_is_string(e);
    } else if (kind == PEERS_LOOKUP) {
        json_t *res = json_object_get(j, "results");
        ok = json_is_array(res);
        json_array_foreach(res, i, e) ok &= json_is_string(json_object_get(e, "metric")) &&
                                            json_is_object(json_object_get(e, "tags"));
    } else {
        ok = json_is_array(j);
        json_array_foreach(j, i, e) ok &= json_is_integer(json_object_get(e, "timestamp")) &&
                                          json_is_string(json_object_get(e, "value"));
    }
    json_decref(j);
    return ok;
}
