/* store_index.c — the series index of the store (store_priv.h, docs/store.md
 * "Reading"): interned names, the canonical key of a series (metric NUL
 * (key NUL value NUL)*, tags sorted by key), the hash table from key to
 * series, series by id, and the index's answers (store_series_of,
 * store_metric_version, store_names).  Everything here runs under `mu`. */
#include "store/store_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Interned strings (metric names, tag keys, tag values). */
strent *store_strmap_find(strmap *m, const char *s, uint64_t h, int add)
{
    if (add && (m->n + 1) * 4 >= m->cap * 3) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        strent *ns = calloc(nc, sizeof *ns);
        if (!ns) return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].s) continue;
            size_t j = m->slots[i].h & (nc - 1);
            while (ns[j].s) j = (j + 1) & (nc - 1);
            ns[j] = m->slots[i];
        }
        free(m->slots);
        m->slots = ns;
        m->cap = nc;
    }
    if (!m->cap) return NULL;
    size_t j = h & (m->cap - 1);
    while (m->slots[j].s) {
        if (m->slots[j].h == h && strcmp(m->slots[j].s, s) == 0) return &m->slots[j];
        j = (j + 1) & (m->cap - 1);
    }
    if (!add || !(m->slots[j].s = strdup(s))) return NULL;
    m->slots[j].h = h;
    m->slots[j].val = NULL;
    m->n++;
    return &m->slots[j];
}

const char *store_intern(strmap *m, const char *s)
{
    strent *e = store_strmap_find(m, s, store_hash(s, strlen(s)), 1);
    return e ? e->s : NULL;
}

void store_strmap_free(strmap *m, int free_vals)
{
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].s) continue;
        free(m->slots[i].s);
        if (free_vals && m->slots[i].val) {
            mlist *l = m->slots[i].val;
            free(l->v);
            free(l);
        }
    }
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* --- the series index ---------------------------------------------------- */

int store_tag_cmp(const void *a, const void *b)
{
    return strcmp(((const store_tag *)a)->key, ((const store_tag *)b)->key);
}

/* Canonical key: metric NUL (key NUL value NUL)* with tags sorted by key.
 * -1 when out of memory. */
int store_key_make(store_buf *k, const char *metric, const store_tag *sorted, int ntags)
{
    k->n = 0;
    size_t l = strlen(metric) + 1;
    if (store_buf_reserve(k, l) < 0) return -1;
    memcpy(k->p + k->n, metric, l);
    k->n += l;
    for (int i = 0; i < ntags; i++) {
        size_t a = strlen(sorted[i].key) + 1, b = strlen(sorted[i].value) + 1;
        if (store_buf_reserve(k, a + b) < 0) return -1;
        memcpy(k->p + k->n, sorted[i].key, a);
        memcpy(k->p + k->n + a, sorted[i].value, b);
        k->n += a + b;
    }
    return 0;
}

series *store_series_find(store *s, const uint8_t *key, size_t len, uint64_t h)
{
    if (!s->tabcap) return NULL;
    size_t j = h & (s->tabcap - 1);
    while (s->tab[j]) {
        series *se = s->tab[j];
        if (se->hash == h && se->keylen == len && memcmp(se->key, key, len) == 0) return se;
        j = (j + 1) & (s->tabcap - 1);
    }
    return NULL;
}

/* Room in the hash table for one more series: 0, or -1 out of memory. */
static int tab_reserve(store *s)
{
    if ((s->nseries + 1) * 4 >= s->tabcap * 3) {
        size_t nc = s->tabcap ? s->tabcap * 2 : 1024;
        series **nt = calloc(nc, sizeof *nt);
        if (!nt) return -1;
        for (size_t i = 0; i < s->tabcap; i++) {
            if (!s->tab[i]) continue;
            size_t j = s->tab[i]->hash & (nc - 1);
            while (nt[j]) j = (j + 1) & (nc - 1);
            nt[j] = s->tab[i];
        }
        free(s->tab);
        s->tab = nt;
        s->tabcap = nc;
    }
    return 0;
}

static void tab_insert(store *s, series *se)
{
    size_t j = se->hash & (s->tabcap - 1);
    while (s->tab[j]) j = (j + 1) & (s->tabcap - 1);
    s->tab[j] = se;
    s->nseries++;
}

/* Adds a series (tags sorted by key) with a given id; the caller logs it.
 * NULL when out of memory, with the index as it was. */
series *store_series_add(store *s, uint64_t id, const char *metric, const store_tag *sorted,
                         int ntags, const uint8_t *key, size_t keylen, uint64_t h)
{
    /* everything that can fail first, then the insertions, which cannot */
    strent *me = store_strmap_find(&s->metrics, metric, store_hash(metric, strlen(metric)), 1);
    if (!me) return NULL;
    mlist *l = me->val;
    if (!l && !(l = me->val = calloc(1, sizeof *l))) return NULL;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 4;
        series **nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) return NULL;
        l->v = nv;
        l->cap = nc;
    }
    if (tab_reserve(s) < 0) return NULL;
    if (id >= s->by_id_cap) {
        size_t nc = s->by_id_cap ? s->by_id_cap : 1024;
        while (nc <= id) nc *= 2;
        series **nb = realloc(s->by_id, nc * sizeof *nb);
        if (!nb) return NULL;
        memset(nb + s->by_id_cap, 0, (nc - s->by_id_cap) * sizeof *nb);
        s->by_id = nb;
        s->by_id_cap = nc;
    }
    series *se = calloc(1, sizeof *se);
    store_tag *tags = malloc((size_t)(ntags ? ntags : 1) * sizeof *tags);
    char *k = malloc(keylen ? keylen : 1);
    int ok = se && tags && k;
    for (int i = 0; i < ntags && ok; i++) {
        tags[i].key = store_intern(&s->tagks, sorted[i].key);
        tags[i].value = store_intern(&s->tagvs, sorted[i].value);
        ok = tags[i].key && tags[i].value;
    }
    if (!ok) {
        free(se);
        free(tags);
        free(k);
        return NULL;
    }
    se->id = id;
    se->metric = me->s;
    se->ntags = ntags;
    se->tags = tags;
    memcpy(k, key, keylen);
    se->key = k;
    se->keylen = keylen;
    se->hash = h;
    tab_insert(s, se);
    s->by_id[id] = se;
    if (id >= s->next_id) s->next_id = id + 1;
    l->v[l->n++] = se;
    l->version++;
    se->ml = l;
    uint64_t hm = HEAD_BUDGET / (s->nseries ? s->nseries : 1);
    s->head_max = hm < HEAD_MIN ? HEAD_MIN : hm > HEAD_MAX ? HEAD_MAX : (uint32_t)hm;
    return se;
}

series *store_series_by_id(store *s, uint64_t id)
{
    return id < s->by_id_cap ? s->by_id[id] : NULL;
}

/* Parses a key (metric NUL (k NUL v NUL)*) into metric + tags (pointers into key). */
int store_key_parse(const uint8_t *key, size_t len, const char **metric, store_tag *tags,
                    int *ntags)
{
    const char *p = (const char *)key, *end = p + len;
    const char *z = memchr(p, 0, len);
    if (!z || z == p) return -1;
    *metric = p;
    p = z + 1;
    int n = 0;
    while (p < end) {
        const char *zk = memchr(p, 0, (size_t)(end - p));
        if (!zk || zk + 1 >= end) return -1;
        const char *zv = memchr(zk + 1, 0, (size_t)(end - zk - 1));
        if (!zv || n >= MAX_TAGS) return -1;
        tags[n].key = p;
        tags[n].value = zk + 1;
        n++;
        p = zv + 1;
    }
    *ntags = n;
    return 0;
}
int store_series_of(store *s, const char *metric, store_series_cb cb, void *arg)
{
    if (!s || !metric) return -1;
    pthread_mutex_lock(&s->mu);
    strent *e = store_strmap_find(&s->metrics, metric, store_hash(metric, strlen(metric)), 0);
    mlist *l = e ? e->val : NULL;
    size_t n = l ? l->n : 0;
    series **v = malloc((n ? n : 1) * sizeof *v);
    if (v && n) memcpy(v, l->v, n * sizeof *v);
    pthread_mutex_unlock(&s->mu);
    if (!v) return -1;
    /* series are never freed while the store is open, and never change */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        store_series ss = {v[i]->id, v[i]->metric, v[i]->tags, v[i]->ntags};
        rc = cb(arg, &ss);
    }
    free(v);
    return rc;
}

uint64_t store_metric_version(store *s, const char *metric)
{
    if (!s || !metric) return 0;
    pthread_mutex_lock(&s->mu);
    strent *e = store_strmap_find(&s->metrics, metric, store_hash(metric, strlen(metric)), 0);
    mlist *l = e ? e->val : NULL;
    uint64_t v = (l ? l->version : 0) + s->drop_gen;
    pthread_mutex_unlock(&s->mu);
    return v;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int store_names(store *s, enum store_name_kind kind, const char *prefix, int max, char ***out)
{
    if (!s || !out) return -1;
    *out = NULL;
    if (!prefix) prefix = "";
    size_t pl = strlen(prefix);
    pthread_mutex_lock(&s->mu);
    strmap *m = kind == STORE_METRICS ? &s->metrics : kind == STORE_TAGKS ? &s->tagks : &s->tagvs;
    const char **v = malloc((m->n ? m->n : 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; v && i < m->cap; i++)
        if (m->slots[i].s && strncmp(m->slots[i].s, prefix, pl) == 0) v[n++] = m->slots[i].s;
    if (v) qsort(v, n, sizeof *v, cmp_str);
    if (max >= 0 && n > (size_t)max) n = (size_t)max;
    char **r = v ? malloc((n ? n : 1) * sizeof *r) : NULL;
    size_t done = 0;
    for (; r && done < n; done++)
        if (!(r[done] = strdup(v[done]))) break;
    pthread_mutex_unlock(&s->mu);
    free(v);
    if (!r || done < n) {
        for (size_t i = 0; r && i < done; i++) free(r[i]);
        free(r);
        return -1;
    }
    *out = r;
    return (int)n;
}
