/* store_index.c — the series index of the store (store_priv.h, docs/store.md
 * "Memory"): what a million series cost is what this file keeps small.
 *
 * - A series is its canonical key (metric NUL (key NUL value NUL)*, tags
 *   sorted by key), kept once in an arena of large blocks (no allocation per
 *   series), and a fixed-size record in blocks of SER_BLOCK (ids are dense:
 *   the id is the position, pointers stay valid).
 * - Key → series: an open-addressed table of 32-bit ids.
 * - Metric → its series: a vector of ids per metric (store_series_of).
 * - Tag key=value → its series ("postings", as Prometheus' MemPostings and
 *   VictoriaMetrics' tag → metricID index): an open-addressed table of
 *   pairs, each with one series id inline or a vector of them; a pair's
 *   strings are not stored again but read from one of its series' keys.
 *   A lookup by tag (store_series_with) reads only the series that have it.
 * - Tag keys are interned (a few), for store_names.
 * Everything here runs under `mu`; the key bytes and records of a series
 * never move or change while the store is open, so callers may read them
 * after dropping the lock. */
#include "store/store_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the key arena ---------------------------------------------------------- */

/* The place of a copy of key in the arena (store_series_tags), or
 * UINT32_MAX out of memory or of blocks. */
static uint32_t arena_copy(store *s, const uint8_t *key, size_t len)
{
    int big = len > ARENA_BLOCK / 4;                /* a block of its own */
    if (big || !s->narena || s->arena_left < len) { /* (an empty key needs a block too) */
        if (!s->arenas && !(s->arenas = calloc(ARENA_BLOCKS, sizeof *s->arenas))) return UINT32_MAX;
        if (s->narena == ARENA_BLOCKS) return UINT32_MAX;
        uint8_t *b = malloc(big ? len : ARENA_BLOCK);
        if (!b) return UINT32_MAX;
        uint32_t bi = (uint32_t)s->narena++;
        s->arenas[bi] = b;
        if (big) {
            memcpy(b, key, len);
            return bi << ARENA_SHIFT;
        }
        s->arena_cur = bi;
        s->arena_left = ARENA_BLOCK;
    }
    uint32_t off = (uint32_t)(ARENA_BLOCK - s->arena_left);
    memcpy(s->arenas[s->arena_cur] + off, key, len);
    s->arena_left -= len;
    return s->arena_cur << ARENA_SHIFT | off;
}

/* --- interned tag keys and metric names -------------------------------------- */

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

/* --- keys ---------------------------------------------------------------------- */

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

/* Parses the tag part of a key ((k NUL v NUL)*) into tags (pointers into it). */
int store_key_tags(const uint8_t *tp, size_t len, store_tag *tags, int *ntags)
{
    const char *p = (const char *)tp, *end = p + len;
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

/* Parses a key (metric NUL (k NUL v NUL)*) into metric + tags (pointers into key). */
int store_key_parse(const uint8_t *key, size_t len, const char **metric, store_tag *tags,
                    int *ntags)
{
    const char *z = memchr(key, 0, len);
    if (!z || z == (const char *)key) return -1;
    *metric = (const char *)key;
    size_t ml = (size_t)(z - (const char *)key) + 1;
    return store_key_tags(key + ml, len - ml, tags, ntags);
}

/* The whole canonical key of se (metric NUL tags) into k: 0, or -1. */
int store_series_key(const store *s, const series *se, store_buf *k)
{
    const char *m = s->mets[se->metric]->name;
    size_t ml = strlen(m) + 1;
    k->n = 0;
    if (store_buf_reserve(k, ml + se->keylen) < 0) return -1;
    memcpy(k->p, m, ml);
    memcpy(k->p + ml, store_series_tags(s, se), se->keylen);
    k->n = ml + se->keylen;
    return 0;
}

/* The hash of a tag pair: key NUL value. */
static uint64_t pair_hash(const char *k, const char *v)
{
    size_t kl = strlen(k), vl = strlen(v);
    char buf[256];
    if (kl + 1 + vl <= sizeof buf) {
        memcpy(buf, k, kl + 1);
        memcpy(buf + kl + 1, v, vl);
        return store_hash(buf, kl + 1 + vl);
    }
    return store_hash(k, kl) * 0x9e3779b97f4a7c15ULL ^ store_hash(v, vl);
}

/* --- series records -------------------------------------------------------------- */

series *store_series_by_id(store *s, uint64_t id)
{
    if (id == 0 || id >= s->next_id) return NULL;
    series *b = s->sblocks[id / SER_BLOCK];
    series *se = b ? &b[id % SER_BLOCK] : NULL;
    return se && se->id ? se : NULL;
}

/* The record of id, its block allocated when new: NULL out of memory. */
static series *slot_for(store *s, uint64_t id)
{
    size_t bi = id / SER_BLOCK;
    if (bi >= s->nsblocks) {
        size_t nc = s->nsblocks ? s->nsblocks : 64;
        while (nc <= bi) nc *= 2;
        series **nb = realloc(s->sblocks, nc * sizeof *nb);
        if (!nb) return NULL;
        memset(nb + s->nsblocks, 0, (nc - s->nsblocks) * sizeof *nb);
        s->sblocks = nb;
        s->nsblocks = nc;
    }
    if (!s->sblocks[bi] && !(s->sblocks[bi] = calloc(SER_BLOCK, sizeof(series)))) return NULL;
    return &s->sblocks[bi][id % SER_BLOCK];
}

/* --- key → series ------------------------------------------------------------------- */

/* The series of a whole key (metric NUL tags), or NULL.  A record keeps the
 * tag part only: the metric is its index. */
series *store_series_find(store *s, const uint8_t *key, size_t len, uint64_t h)
{
    if (!s->tabcap) return NULL;
    uint32_t h32 = (uint32_t)h;
    size_t ml = strnlen((const char *)key, len) + 1;
    if (ml > len) return NULL;
    const uint8_t *tp = key + ml;
    size_t tl = len - ml;
    size_t j = h & (s->tabcap - 1);
    while (s->tab[j]) {
        series *se = store_series_by_id(s, s->tab[j]);
        if (se->hash == h32 && se->keylen == tl && memcmp(store_series_tags(s, se), tp, tl) == 0 &&
            memcmp(s->mets[se->metric]->name, key, ml) == 0)
            return se;
        j = (j + 1) & (s->tabcap - 1);
    }
    return NULL;
}

/* Room in the hash table for one more series: 0, or -1 out of memory.
 * The table is at most half full (32-bit slots: 8 bytes a series). */
static int tab_reserve(store *s)
{
    if ((s->nseries + 1) * 2 <= s->tabcap) return 0;
    size_t nc = s->tabcap ? s->tabcap * 2 : 1024;
    uint32_t *nt = calloc(nc, sizeof *nt);
    if (!nt) return -1;
    for (size_t i = 0; i < s->tabcap; i++) {
        if (!s->tab[i]) continue;
        size_t j = store_series_by_id(s, s->tab[i])->hash & (nc - 1);
        while (nt[j]) j = (j + 1) & (nc - 1);
        nt[j] = s->tab[i];
    }
    free(s->tab);
    s->tab = nt;
    s->tabcap = nc;
    return 0;
}

/* --- tag pair → series (postings) ------------------------------------------------ */

/* A slot of the pair table: 0 empty, else the pair's hash (32 bits) above
 * PAIR_LIST | list index, or its only series' id. */
#define PAIR_LIST    0x80000000u
#define SLOT(h, ref) ((uint64_t)(uint32_t)(h) << 32 | (ref))
static inline uint32_t slot_ref(uint64_t sl)
{
    return (uint32_t)sl;
}

/* Series of a pair slot: how many, and one of them. */
static uint32_t slot_n(const store *s, uint64_t sl)
{
    return slot_ref(sl) & PAIR_LIST ? s->plists[slot_ref(sl) & ~PAIR_LIST].n : 1;
}
static uint32_t slot_any(const store *s, uint64_t sl)
{
    return slot_ref(sl) & PAIR_LIST ? s->plists[slot_ref(sl) & ~PAIR_LIST].ids[0] : slot_ref(sl);
}

/* Does series id have tag k=v? */
static int series_has(store *s, uint32_t id, const char *k, const char *v)
{
    series *se = store_series_by_id(s, id);
    store_tag tags[MAX_TAGS];
    int nt;
    if (!se || store_key_tags(store_series_tags(s, se), se->keylen, tags, &nt) < 0) return 0;
    for (int i = 0; i < nt; i++)
        if (!strcmp(tags[i].key, k)) return !strcmp(tags[i].value, v);
    return 0;
}

/* Room in the pair table for `more` pairs (at most 3/4 full): 0, or -1. */
static int pair_reserve(store *s, size_t more)
{
    while ((s->npairs + more) * 4 > s->pcap * 3) {
        size_t nc = s->pcap ? s->pcap * 2 : 1024;
        uint64_t *nt = calloc(nc, sizeof *nt);
        if (!nt) return -1;
        for (size_t i = 0; i < s->pcap; i++) {
            if (!s->ptab[i]) continue;
            size_t j = (s->ptab[i] >> 32) & (nc - 1);
            while (nt[j]) j = (j + 1) & (nc - 1);
            nt[j] = s->ptab[i];
        }
        free(s->ptab);
        s->ptab = nt;
        s->pcap = nc;
    }
    return 0;
}

/* The slot of pair k=v, or (absent) the empty slot where it would go (the
 * caller made room: pair_reserve). */
static size_t pair_slot(store *s, const char *k, const char *v, uint64_t h)
{
    uint32_t h32 = (uint32_t)h;
    size_t j = h32 & (s->pcap - 1);
    while (s->ptab[j]) {
        if ((uint32_t)(s->ptab[j] >> 32) == h32 && series_has(s, slot_any(s, s->ptab[j]), k, v))
            return j;
        j = (j + 1) & (s->pcap - 1);
    }
    return j;
}

/* The slot of pair k=v when present, else -1 (no allocation). */
static long pair_lookup(store *s, const char *k, const char *v)
{
    if (!s->pcap) return -1;
    uint32_t h32 = (uint32_t)pair_hash(k, v);
    size_t j = h32 & (s->pcap - 1);
    while (s->ptab[j]) {
        if ((uint32_t)(s->ptab[j] >> 32) == h32 && series_has(s, slot_any(s, s->ptab[j]), k, v))
            return (long)j;
        j = (j + 1) & (s->pcap - 1);
    }
    return -1;
}

/* Adds series id to the pair at slot j (h its hash); room was made by the
 * caller: a new plist slot and `fresh` (a vector of 4) for a pair that gets
 * its second id, room in the vector for one with more. */
static void pair_add(store *s, size_t j, uint64_t h, uint32_t id, uint32_t *fresh)
{
    uint64_t sl = s->ptab[j];
    if (!sl) {
        s->ptab[j] = SLOT(h, id);
        s->npairs++;
    } else if (!(slot_ref(sl) & PAIR_LIST)) {
        fresh[0] = slot_ref(sl);
        fresh[1] = id;
        s->plists[s->nplists] = (plist){fresh, 2, 4};
        s->ptab[j] = SLOT(h, PAIR_LIST | (uint32_t)s->nplists++);
    } else {
        plist *l = &s->plists[slot_ref(sl) & ~PAIR_LIST];
        l->ids[l->n++] = id;
    }
}

/* --- adding a series ---------------------------------------------------------------- */

/* Adds a series (tags sorted by key) with a given id; the caller logs it.
 * NULL when out of memory, with the index as it was (but for interned
 * strings and empty pairs, which nothing reads). */
series *store_series_add(store *s, uint64_t id, const char *metric, const store_tag *sorted,
                         int ntags, const uint8_t *key, size_t keylen, uint64_t h)
{
    if (id == 0 || id >= UINT32_MAX) return NULL;
    /* everything that can fail first, then the insertions, which cannot */
    strent *me = store_strmap_find(&s->metrics, metric, store_hash(metric, strlen(metric)), 1);
    if (!me) return NULL;
    mlist *l = me->val;
    if (!l) {
        if (s->nmets == s->capmets) {
            size_t nc = s->capmets ? s->capmets * 2 : 16;
            mlist **nm = realloc(s->mets, nc * sizeof *nm);
            if (!nm) return NULL;
            s->mets = nm;
            s->capmets = nc;
        }
        if (!(l = me->val = calloc(1, sizeof *l))) return NULL;
        l->name = me->s;
        l->index = (uint32_t)s->nmets;
        s->mets[s->nmets++] = l;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 4;
        uint32_t *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) return NULL;
        l->v = nv;
        l->cap = nc;
    }
    uint64_t ph[MAX_TAGS];
    uint32_t *fresh[MAX_TAGS] = {0}; /* the postings vector of a pair that gets its second id */
    int ok = pair_reserve(s, (size_t)ntags) == 0; /* slots stay where they are from here */
    for (int i = 0; i < ntags && ok; i++) {
        ph[i] = pair_hash(sorted[i].key, sorted[i].value);
        if (!store_strmap_find(&s->tagks, sorted[i].key,
                               store_hash(sorted[i].key, strlen(sorted[i].key)), 1)) {
            ok = 0;
            break;
        }
        uint64_t sl = s->ptab[pair_slot(s, sorted[i].key, sorted[i].value, ph[i])];
        /* room for one more id in its postings */
        if (sl && !(slot_ref(sl) & PAIR_LIST)) {
            if (s->nplists + (size_t)i >= s->capplists) {
                size_t nc = s->capplists ? s->capplists * 2 : 64;
                plist *nl = realloc(s->plists, nc * sizeof *nl);
                if (!nl)
                    ok = 0;
                else {
                    s->plists = nl;
                    s->capplists = nc;
                }
            }
            if (ok && !(fresh[i] = malloc(4 * sizeof(uint32_t)))) ok = 0;
        } else if (sl) {
            plist *pl = &s->plists[slot_ref(sl) & ~PAIR_LIST];
            if (pl->n == pl->cap) {
                uint32_t *ni = realloc(pl->ids, pl->cap * 2 * sizeof *ni);
                if (!ni)
                    ok = 0;
                else {
                    pl->ids = ni;
                    pl->cap *= 2;
                }
            }
        }
    }
    size_t ml = strlen(metric) + 1; /* the record keeps the tag part */
    series *se = ok && keylen >= ml && tab_reserve(s) == 0 ? slot_for(s, id) : NULL;
    uint32_t k = se ? arena_copy(s, key + ml, keylen - ml) : UINT32_MAX;
    if (k == UINT32_MAX) {
        for (int i = 0; i < ntags; i++) free(fresh[i]);
        return NULL;
    }
    for (int i = 0; i < ntags; i++)
        pair_add(s, pair_slot(s, sorted[i].key, sorted[i].value, ph[i]), ph[i], (uint32_t)id,
                 fresh[i]);
    memset(se, 0, sizeof *se);
    se->key = k;
    se->keylen = (uint32_t)(keylen - ml);
    se->hash = (uint32_t)h;
    se->id = (uint32_t)id;
    se->metric = l->index;
    size_t j = h & (s->tabcap - 1);
    while (s->tab[j]) j = (j + 1) & (s->tabcap - 1);
    s->tab[j] = (uint32_t)id;
    s->nseries++;
    if (id >= s->next_id) s->next_id = id + 1;
    l->v[l->n++] = (uint32_t)id;
    l->version++;
    uint64_t hm = HEAD_BUDGET / (s->nseries ? s->nseries : 1);
    s->head_max = hm < HEAD_MIN ? HEAD_MIN : hm > HEAD_MAX ? HEAD_MAX : (uint32_t)hm;
    return se;
}

/* Frees the index (store_close). */
void store_index_free(store *s)
{
    for (size_t i = 0; i < s->narena; i++) free(s->arenas[i]);
    free(s->arenas);
    for (size_t i = 0; i < s->nsblocks; i++) free(s->sblocks[i]);
    free(s->sblocks);
    free(s->tab);
    free(s->ptab);
    for (size_t i = 0; i < s->nplists; i++) free(s->plists[i].ids);
    free(s->plists);
    free(s->mets);
    store_strmap_free(&s->metrics, 1);
    store_strmap_free(&s->tagks, 0);
}

/* --- answers ------------------------------------------------------------------------- */

/* The callers' view of a series (tags parsed from its key). */
static int call(store *s, uint32_t id, store_series_cb cb, void *arg)
{
    series *se = store_series_by_id(s, id);
    store_tag tags[MAX_TAGS];
    store_series ss = {id, NULL, tags, 0};
    if (!se || store_key_tags(store_series_tags(s, se), se->keylen, tags, &ss.ntags) < 0) return 0;
    ss.metric = s->mets[se->metric]->name;
    return cb(arg, &ss);
}

static mlist *metric_list(store *s, const char *metric)
{
    strent *e = store_strmap_find(&s->metrics, metric, store_hash(metric, strlen(metric)), 0);
    return e ? e->val : NULL;
}

int store_series_of(store *s, const char *metric, store_series_cb cb, void *arg)
{
    if (!s || !metric) return -1;
    pthread_mutex_lock(&s->mu);
    mlist *l = metric_list(s, metric);
    size_t n = l ? l->n : 0;
    uint32_t *v = malloc((n ? n : 1) * sizeof *v);
    if (v && n) memcpy(v, l->v, n * sizeof *v);
    pthread_mutex_unlock(&s->mu);
    if (!v) return -1;
    /* series are never freed while the store is open, and never change */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) rc = call(s, v[i], cb, arg);
    free(v);
    return rc;
}

int store_series_with(store *s, const char *metric, const store_tag *pairs, int npairs,
                      store_series_cb cb, void *arg)
{
    if (!s || !metric) return -1;
    /* the most selective literal pair, if any */
    pthread_mutex_lock(&s->mu);
    long best = -1;
    int none = 0;
    for (int i = 0; i < npairs && !none; i++) {
        if (!strcmp(pairs[i].key, "*") || !strcmp(pairs[i].value, "*")) continue;
        long j = pair_lookup(s, pairs[i].key, pairs[i].value);
        if (j < 0)
            none = 1;
        else if (best < 0 || slot_n(s, s->ptab[j]) < slot_n(s, s->ptab[best]))
            best = j;
    }
    mlist *l = metric_list(s, metric);
    if (best < 0 || none || !l) {
        pthread_mutex_unlock(&s->mu);
        if (none || !l) return 0;
        return store_series_of(s, metric, cb, arg); /* no literal pair: every series */
    }
    uint64_t sl = s->ptab[best];
    size_t n = slot_n(s, sl);
    uint32_t *v = malloc(n * sizeof *v);
    if (v) {
        if (slot_ref(sl) & PAIR_LIST)
            memcpy(v, s->plists[slot_ref(sl) & ~PAIR_LIST].ids, n * sizeof *v);
        else
            v[0] = slot_ref(sl);
    }
    uint32_t mi = l->index;
    pthread_mutex_unlock(&s->mu);
    if (!v) return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        series *se = store_series_by_id(s, v[i]);
        if (se && se->metric == mi) rc = call(s, v[i], cb, arg);
    }
    free(v);
    return rc;
}

uint64_t store_metric_version(store *s, const char *metric)
{
    if (!s || !metric) return 0;
    pthread_mutex_lock(&s->mu);
    mlist *l = metric_list(s, metric);
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
    size_t cap = kind == STORE_TAGVS ? s->npairs : kind == STORE_TAGKS ? s->tagks.n : s->metrics.n;
    const char **v = malloc((cap ? cap : 1) * sizeof *v);
    size_t n = 0;
    if (v && kind != STORE_TAGVS) {
        strmap *m = kind == STORE_METRICS ? &s->metrics : &s->tagks;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].s && strncmp(m->slots[i].s, prefix, pl) == 0) v[n++] = m->slots[i].s;
    } else if (v) {
        /* tag values: each pair's value, read from one of its series' keys */
        for (size_t i = 0; i < s->pcap; i++) {
            uint64_t sl = s->ptab[i];
            if (!sl) continue;
            series *se = store_series_by_id(s, slot_any(s, sl));
            store_tag tags[MAX_TAGS];
            int nt;
            if (!se || store_key_tags(store_series_tags(s, se), se->keylen, tags, &nt) < 0)
                continue;
            for (int k = 0; k < nt; k++)
                if ((uint32_t)pair_hash(tags[k].key, tags[k].value) == (uint32_t)(sl >> 32) &&
                    strncmp(tags[k].value, prefix, pl) == 0) {
                    v[n++] = tags[k].value;
                    break;
                }
        }
    }
    if (v) qsort(v, n, sizeof *v, cmp_str);
    size_t u = 0; /* distinct (a value may come with several keys) */
    for (size_t i = 0; i < n; i++)
        if (!u || strcmp(v[u - 1], v[i]) != 0) v[u++] = v[i];
    n = u;
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
