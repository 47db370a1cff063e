/* test_store_format.c — stores written by earlier jobscopes (formats 3, 4,
 * 5 and 6, as main wrote them, with 6's log of doubles) are converted at
 * open, once, and read as before; a later format is refused (docs/store.md,
 * "Files"). */
#include "store_testlib.h"

/* A store directory SUB with a chunks.db made by SQL (an old jobscope's
 * schema and rows), open: its path in path. */
static sqlite3 *old_store(const char *sub, const char *sql, char *path, size_t plen)
{
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(path, plen, "%s/chunks.db", dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(
            db, "PRAGMA page_size=32768; PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL;",
            NULL, NULL, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    return db;
}

/* Formats 4 and 5: a rowid table of chunks and an index of it by series. */
#define ROWID_CHUNKS(format)                                                                       \
    "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT);"                                               \
    "CREATE TABLE metrics(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"                     \
    "CREATE TABLE series(id INTEGER PRIMARY KEY, metric INTEGER NOT NULL, tags BLOB NOT NULL);"    \
    "CREATE TABLE chunks(id INTEGER PRIMARY KEY, series INTEGER NOT NULL, t_start INTEGER NOT "    \
    "NULL,"                                                                                        \
    " t_end INTEGER NOT NULL, n INTEGER NOT NULL, ts_ref INTEGER NOT NULL, data BLOB NOT NULL);"   \
    "CREATE TABLE times(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, data BLOB NOT NULL);"       \
    "CREATE INDEX chunks_by_series ON chunks(series, t_end);"                                      \
    "CREATE INDEX times_by_hash ON times(hash);"                                                   \
    "INSERT INTO meta VALUES('format', '" format "');"                                             \
    "INSERT INTO metrics VALUES(7, 'old.m');"

/* A store of format 4, as main wrote it (timestamp parts of modes 0..3,
 * zstd'd), is converted to format 6, then 7, with a line each and reads as
 * before. */
static void test_a_format_4_store_reads_as_before(void **st)
{
    (void)st;
    char path[500];
    sqlite3 *db = old_store("v4", ROWID_CHUNKS("4"), path, sizeof path);
    static const uint8_t tags[] = "host\0n1\0job\0old\0";
    /* main's store_ts_encode(ts, 100, 9) of the timestamps below: mode 3, zstd */
    static const uint8_t main_ts[] = "\x02\x6d\x28\xb5\x2f\xfd\x20\x6d\xad\x00\x00\x78\x64\x02"
                                     "\x80\x80\xe8\xed\xa1\xba\x01\xac\x1f\x0e\x00\x03\x10\x01"
                                     "\x00\xfb\xe4\xea";
    int64_t ts[100];
    double v[100];
    for (int i = 0; i < 100; i++) {
        ts[i] = 1600000000000LL + i * 1000 + (i * 7) % 4;
        v[i] = i * 0.25;
    }
    store_buf vb = {0};
    assert_int_equal(store_val_encode(v, 100, 9, &vb), 0);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO series VALUES(5, 7, ?)", -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(q, 1, tags, sizeof tags - 1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO times VALUES(1, 0, ?)", -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(q, 1, main_ts, sizeof main_ts - 1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    assert_int_equal(
        sqlite3_prepare_v2(db, "INSERT INTO chunks VALUES(1, 5, ?, ?, 100, 1, ?)", -1, &q, NULL),
        SQLITE_OK);
    sqlite3_bind_int64(q, 1, ts[0]);
    sqlite3_bind_int64(q, 2, ts[99]);
    sqlite3_bind_blob(q, 3, vb.p, (int)vb.n, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    sqlite3_close(db);
    store_buf_free(&vb);
    logged[0] = 0;
    store *s = open_logged("v4", 0);
    assert_non_null(strstr(logged, "from format 4 to 6"));
    assert_non_null(strstr(logged, "from format 6 to 7"));
    assert_int_equal(series_id(s, "old.m", "old"), 5);
    store_points p = {0};
    assert_int_equal(store_read(s, 5, INT64_MIN, INT64_MAX, &p), 0);
    assert_int_equal(p.n, 100);
    for (int i = 0; i < 100; i++) assert_true(p.ts[i] == ts[i] && p.val[i] == v[i]);
    char err[256];
    store_tag nt[] = {{"job", "old"}, {"host", "n1"}};
    store_point np = {"old.m", nt, 2, ts[99] + 1000, 99};
    assert_int_equal(store_put(s, &np, 1, err, sizeof err), 0);
    store_close(s); /* settles: the two chunks merged into one, written anew */
    logged[0] = 0;
    s = open_logged("v4", 0);
    assert_null(strstr(logged, "format"));
    p.n = 0;
    assert_int_equal(store_read(s, 5, INT64_MIN, INT64_MAX, &p), 0);
    assert_int_equal(p.n, 101);
    for (int i = 0; i < 100; i++) assert_true(p.ts[i] == ts[i] && p.val[i] == v[i]);
    assert_true(p.ts[100] == ts[99] + 1000 && p.val[100] == 99);
    store_points_free(&p);
    store_close(s);
}

/* A store of format 5, as main c07a513 wrote it: a rowid table of chunks,
 * age their rowid, and an index of them by series.  Format 6 keeps chunks by
 * (series, partition, seq) with no index; the conversion at open must keep
 * each chunk's rank by age, also where an older chunk of the partition ends
 * later than a newer one (the newer's values win where they overlap). */
static void test_a_format_5_store_is_converted_keeping_the_age_of_chunks(void **st)
{
    (void)st;
    char path[500];
    sqlite3 *db = old_store("v5", ROWID_CHUNKS("5"), path, sizeof path);
    static const uint8_t tags_a[] = "host\0n1\0job\0a\0", tags_b[] = "host\0n1\0job\0b\0";
    const int64_t base = 222223LL * 7200000; /* the start of a partition */
    /* rowid order = age: 1 (series 5, partition 0, 100 points), 2 (series 6),
     * 3 (series 5, partition 0, ten of chunk 1's timestamps with new values:
     * it ends earlier than 1), 4 (series 5, the next partition) */
    struct {
        int64_t series, t0;
        int n, first;
        double off;
    } ch[] = {{5, base, 100, 0, 0},
              {6, base, 100, 0, 500},
              {5, base, 10, 50, 1000},
              {5, base + 7200000, 20, 0, 2000}};
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO series VALUES(?, 7, ?)", -1, &q, NULL),
                     SQLITE_OK);
    for (int k = 0; k < 2; k++) {
        sqlite3_bind_int(q, 1, 5 + k);
        sqlite3_bind_blob(q, 2, k ? tags_b : tags_a, (int)sizeof tags_a - 1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(q), SQLITE_DONE);
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    for (int c = 0; c < 4; c++) {
        int64_t ts[100];
        double v[100];
        for (int i = 0; i < ch[c].n; i++) {
            ts[i] = ch[c].t0 + (ch[c].first + i) * 1000LL;
            v[i] = ch[c].off + (ch[c].first + i) * 0.25;
        }
        store_buf tb = {0}, vb = {0};
        assert_int_equal(store_ts_encode(ts, (size_t)ch[c].n, 3, &tb), 0);
        assert_int_equal(store_val_encode(v, (size_t)ch[c].n, 3, &vb), 0);
        assert_int_equal(
            sqlite3_prepare_v2(db, "INSERT INTO times VALUES(?1, 0, ?2)", -1, &q, NULL), SQLITE_OK);
        sqlite3_bind_int(q, 1, c + 1);
        sqlite3_bind_blob(q, 2, tb.p, (int)tb.n, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(q), SQLITE_DONE);
        sqlite3_finalize(q);
        assert_int_equal(sqlite3_prepare_v2(db,
                                            "INSERT INTO chunks VALUES(?1, ?2, ?3, ?4, ?5, ?1, ?6)",
                                            -1, &q, NULL),
                         SQLITE_OK);
        sqlite3_bind_int(q, 1, c + 1);
        sqlite3_bind_int64(q, 2, ch[c].series);
        sqlite3_bind_int64(q, 3, ts[0]);
        sqlite3_bind_int64(q, 4, ts[ch[c].n - 1]);
        sqlite3_bind_int(q, 5, ch[c].n);
        sqlite3_bind_blob(q, 6, vb.p, (int)vb.n, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(q), SQLITE_DONE);
        sqlite3_finalize(q);
        store_buf_free(&tb);
        store_buf_free(&vb);
    }
    sqlite3_close(db);
    for (int round = 0; round < 2; round++) { /* converted; then settled by close, reopened */
        logged[0] = 0;
        store *s = open_logged("v5", 0);
        if (round == 0)
            assert_true(strstr(logged, "from format 5 to 6") &&
                        strstr(logged, "from format 6 to 7"));
        else
            assert_null(strstr(logged, "format"));
        assert_int_equal(series_id(s, "old.m", "a"), 5);
        store_points p = {0};
        assert_int_equal(store_read(s, 5, INT64_MIN, INT64_MAX, &p), 0);
        assert_int_equal(p.n, 120);
        for (int i = 0; i < 100; i++)
            assert_true(p.ts[i] == base + i * 1000LL &&
                        p.val[i] == (i >= 50 && i < 60 ? 1000 : 0) + i * 0.25);
        for (int i = 0; i < 20; i++)
            assert_true(p.ts[100 + i] == base + 7200000 + i * 1000LL &&
                        p.val[100 + i] == 2000 + i * 0.25);
        p.n = 0; /* a range within the second partition */
        assert_int_equal(store_read(s, 5, base + 7200000 + 5000, base + 7200000 + 9000, &p), 0);
        assert_int_equal(p.n, 5);
        assert_true(p.ts[0] == base + 7200000 + 5000 && p.val[4] == 2000 + 9 * 0.25);
        p.n = 0; /* a range within the first: the newer chunk's values */
        assert_int_equal(store_read(s, 5, base + 55000, base + 64000, &p), 0);
        assert_int_equal(p.n, 10);
        assert_true(p.val[0] == 1000 + 55 * 0.25 && p.val[5] == 60 * 0.25);
        p.n = 0;
        assert_int_equal(store_read(s, 6, INT64_MIN, INT64_MAX, &p), 0);
        assert_int_equal(p.n, 100);
        for (int i = 0; i < 100; i++) assert_true(p.val[i] == 500 + i * 0.25);
        int64_t lt;
        double lv;
        assert_int_equal(store_last(s, 5, &lt, &lv), 1);
        assert_true(lt == base + 7200000 + 19000 && lv == 2000 + 19 * 0.25);
        store_points_free(&p);
        store_close(s);
    }
    /* format 9 on disk (8's tables): no index of chunks, seq 1.. within (series,
     * partition) */
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db,
                           "SELECT (SELECT v FROM meta WHERE k='format'), (SELECT count(*) FROM "
                           "sqlite_schema WHERE type='index' AND tbl_name='chunks'), (SELECT "
                           "group_concat(series || ':' || seq) "
                           "FROM chunks)",
                           -1, &q, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "9");
    assert_int_equal(sqlite3_column_int(q, 1), 0);
    assert_string_equal((const char *)sqlite3_column_text(q, 2),
                        "5:1,5:1,6:1"); /* partition 0 merged */
    sqlite3_finalize(q);
    sqlite3_close(db);
}

/* A store of format 3 (tag sets in a table of their own, an index of chunks
 * by end time) is converted at open, once, and reads as before. */
static void test_a_format_3_store_is_converted_and_reads_as_before(void **st)
{
    (void)st;
    char path[500];
    sqlite3 *db = old_store(
        "v3",
        "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT);"
        "CREATE TABLE metrics(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
        "CREATE TABLE tagsets(id INTEGER PRIMARY KEY, tags BLOB NOT NULL UNIQUE);"
        "CREATE TABLE series(id INTEGER PRIMARY KEY, metric INTEGER NOT NULL, tagset INTEGER NOT "
        "NULL);"
        "CREATE TABLE chunks(id INTEGER PRIMARY KEY, series INTEGER NOT NULL, t_start INTEGER NOT "
        "NULL,"
        " t_end INTEGER NOT NULL, n INTEGER NOT NULL, ts_ref INTEGER NOT NULL, data BLOB NOT NULL);"
        "CREATE TABLE times(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, data BLOB NOT NULL);"
        "CREATE INDEX chunks_by_series ON chunks(series, t_end);"
        "CREATE INDEX chunks_by_end ON chunks(t_end);"
        "CREATE INDEX chunks_by_times ON chunks(ts_ref);"
        "CREATE INDEX times_by_hash ON times(hash);"
        "INSERT INTO meta VALUES('format', '3');"
        "INSERT INTO metrics VALUES(7, 'old.m');",
        path, sizeof path);
    static const uint8_t tags[] = "host\0n1\0job\0old\0";
    int64_t ts[100];
    double v[100];
    for (int i = 0; i < 100; i++) {
        ts[i] = 1600000000000LL + i * 1000;
        v[i] = i * 0.25;
    }
    store_buf tb = {0}, vb = {0};
    assert_int_equal(store_ts_encode(ts, 100, 3, &tb), 0);
    assert_int_equal(store_val_encode(v, 100, 3, &vb), 0);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO tagsets VALUES(3, ?)", -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(q, 1, tags, sizeof tags - 1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO series VALUES(5, 7, 3)", NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO times VALUES(1, 0, ?)", -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(q, 1, tb.p, (int)tb.n, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    assert_int_equal(
        sqlite3_prepare_v2(db, "INSERT INTO chunks VALUES(1, 5, ?, ?, 100, 1, ?)", -1, &q, NULL),
        SQLITE_OK);
    sqlite3_bind_int64(q, 1, ts[0]);
    sqlite3_bind_int64(q, 2, ts[99]);
    sqlite3_bind_blob(q, 3, vb.p, (int)vb.n, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    sqlite3_close(db);
    store_buf_free(&tb);
    store_buf_free(&vb);
    logged[0] = 0;
    store *s = open_logged("v3", 0);
    assert_non_null(strstr(logged, "from format 3 to 4"));
    assert_int_equal(series_id(s, "old.m", "old"), 5);
    store_points p = {0};
    assert_int_equal(store_read(s, 5, INT64_MIN, INT64_MAX, &p), 0);
    assert_int_equal(p.n, 100);
    for (int i = 0; i < 100; i++) assert_true(p.ts[i] == ts[i] && p.val[i] == v[i]);
    char err[256];
    store_tag nt[] = {{"job", "old"}, {"host", "n1"}};
    store_point np = {"old.m", nt, 2, ts[99] + 1000, 99}; /* the same series, found by its tags */
    assert_int_equal(store_put(s, &np, 1, err, sizeof err), 0);
    store_close(s);
    logged[0] = 0;
    s = open_logged("v3", 0);
    assert_null(strstr(logged, "format"));
    p.n = 0;
    assert_int_equal(store_read(s, 5, INT64_MIN, INT64_MAX, &p), 0);
    assert_int_equal(p.n, 101);
    store_points_free(&p);
    store_close(s);
}

/* A new store at SUB whose chunks.db says it has this format. */
static void store_labelled(const char *sub, const char *format)
{
    char path[500], sql[100];
    store_close(open_at(sub, 0, 0));
    snprintf(path, sizeof path, "%s/%s/chunks.db", tmpdir, sub);
    snprintf(sql, sizeof sql, "UPDATE meta SET v='%s' WHERE k='format'", format);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* One log record (u32 length, u32 CRC-32C, payload) appended to f. */
static void log_record(FILE *f, const store_buf *payload)
{
    uint32_t len = (uint32_t)payload->n, crc = store_crc32c(0, payload->p, payload->n);
    assert_int_equal(fwrite(&len, 4, 1, f), 1);
    assert_int_equal(fwrite(&crc, 4, 1, f), 1);
    assert_int_equal(fwrite(payload->p, 1, payload->n, f), payload->n);
}

/* A store at SUB labelled FORMAT whose log is one new segment holding only
 * the SERIES record of series 1, old.m{job=a}: the segment, open to append
 * more records. */
static FILE *log_of_one_series(const char *sub, const char *format)
{
    char path[500], cmd[1000];
    store_labelled(sub, format);
    snprintf(cmd, sizeof cmd, "rm -f %s/%s/wal/*.wal", tmpdir, sub);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/%s/wal/0000000000000001.wal", tmpdir, sub);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    static const uint8_t key[] = "old.m\0job\0a\0";
    store_buf r = {0};
    store_buf_varint(&r, 1); /* SERIES: type, id, key length, key */
    store_buf_varint(&r, 1);
    store_buf_varint(&r, sizeof key - 1);
    assert_int_equal(store_buf_reserve(&r, sizeof key), 0);
    memcpy(r.p + r.n, key, sizeof key - 1);
    r.n += sizeof key - 1;
    log_record(f, &r);
    store_buf_free(&r);
    return f;
}

/* A POINTS record (format 6's: values as 8-byte doubles) of series 1 appended
 * to f: n points from t0 a step apart. */
static void log_points_of_doubles(FILE *f, int64_t t0, int64_t step, const double *v, int n)
{
    store_buf r = {0};
    store_buf_varint(&r, 2); /* POINTS: type, id, count, (zigzag(ts step), f64)... */
    store_buf_varint(&r, 1);
    store_buf_varint(&r, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        store_buf_varint(&r, store_zz((uint64_t)(i ? step : t0)));
        assert_int_equal(store_buf_reserve(&r, 8), 0);
        memcpy(r.p + r.n, &v[i], 8);
        r.n += 8;
    }
    log_record(f, &r);
    store_buf_free(&r);
}

/* A store of format 6 whose log, as format 6 wrote it, holds POINTS records
 * (values as 8-byte doubles; format 7 writes decimals): relabelled 7 with one
 * line, and its log replays bit for bit. */
static void test_a_format_6_store_is_relabelled_and_its_log_of_doubles_replays(void **st)
{
    (void)st;
    FILE *f = log_of_one_series("v6", "6"); /* 6's tables (7 has the same) */
    const double v[] = {0.25, -0.0, 1e300, 0.1 + 0.2, 7, 5e-324};
    const int nv = (int)(sizeof v / sizeof v[0]);
    const int64_t t0 = 1700000000000LL;
    log_points_of_doubles(f, t0, 1000, v, nv);
    assert_int_equal(fclose(f), 0);
    for (int round = 0; round < 2; round++) { /* replayed and relabelled; then reopened */
        logged[0] = 0;
        store *s = open_logged("v6", 0);
        if (round == 0)
            assert_non_null(strstr(logged, "from format 6 to 7"));
        else
            assert_null(strstr(logged, "format"));
        assert_null(strstr(logged, "damaged"));
        store_points p = {0};
        assert_int_equal(store_read(s, series_id(s, "old.m", "a"), INT64_MIN, INT64_MAX, &p), 0);
        assert_int_equal(p.n, nv);
        for (int i = 0; i < nv; i++)
            assert_true(p.ts[i] == t0 + 1000 * i && memcmp(&p.val[i], &v[i], 8) == 0);
        store_points_free(&p);
        store_close(s);
    }
}

/* A store of format 8 whose log, as format 8 wrote it, holds POINTS_C
 * records (a run's timestamps and values interleaved; format 9 writes the
 * timestamps first): relabelled 9 with one line, and its log replays bit
 * for bit, decimals and doubles. */
static void test_a_format_8_store_is_relabelled_and_its_interleaved_log_replays(void **st)
{
    (void)st;
    FILE *f = log_of_one_series("v8", "8");
    const int64_t t0 = 1700000000000LL;
    store_buf r = {0};
    store_buf_varint(&r, 5); /* POINTS_C: type, id, count<<4 | k, (zz(ts step), zz(x step))... */
    store_buf_varint(&r, 1);
    store_buf_varint(&r, 3u << 4 | 2); /* 1.25, 1.5, 0.75 as hundredths */
    store_buf_varint(&r, store_zz((uint64_t)t0)), store_buf_varint(&r, store_zz(125));
    store_buf_varint(&r, store_zz(1000)), store_buf_varint(&r, store_zz(25));
    store_buf_varint(&r, store_zz(1000)), store_buf_varint(&r, store_zz((uint64_t)-75));
    store_buf_varint(&r, 1); /* a run of doubles: 0.1 + 0.2 */
    store_buf_varint(&r, 1u << 4 | 15);
    store_buf_varint(&r, store_zz(1000));
    const double odd = 0.1 + 0.2;
    assert_int_equal(store_buf_reserve(&r, 8), 0);
    memcpy(r.p + r.n, &odd, 8);
    r.n += 8;
    log_record(f, &r);
    store_buf_free(&r);
    assert_int_equal(fclose(f), 0);
    const double want[] = {1.25, 1.5, 0.75, 0.1 + 0.2};
    for (int round = 0; round < 2; round++) { /* replayed and relabelled; then reopened */
        logged[0] = 0;
        store *s = open_logged("v8", 0);
        if (round == 0)
            assert_non_null(strstr(logged, "from format 8 to 9"));
        else
            assert_null(strstr(logged, "format"));
        assert_null(strstr(logged, "damaged"));
        store_points p = {0};
        assert_int_equal(store_read(s, series_id(s, "old.m", "a"), INT64_MIN, INT64_MAX, &p), 0);
        assert_int_equal(p.n, 4);
        for (int i = 0; i < 4; i++)
            assert_true(p.ts[i] == t0 + 1000 * i && memcmp(&p.val[i], &want[i], 8) == 0);
        store_points_free(&p);
        store_close(s);
    }
}

/* A log record that checks out (its CRC is right) but was written by no
 * jobscope: timestamp steps that wrap around 2^64, a time out of range, a
 * value that is not finite.  Replay reads it in wrapping arithmetic (no
 * undefined behaviour: the ASan/UBSan run holds it to that), keeps every
 * point a put would take, says how many it did not, and sets the segment
 * aside. */
static void test_a_hostile_log_record_keeps_the_points_a_put_would_take(void **st)
{
    (void)st;
    FILE *f = log_of_one_series("bad", "7");
    const int64_t t0 = 1700000000000LL;
    store_buf r = {0};
    store_buf_varint(&r, 5); /* POINTS_C: type, id, count<<4 | k, (zz(ts step), zz(x step))... */
    store_buf_varint(&r, 1);
    store_buf_varint(&r, 4u << 4 | 0);
    store_buf_varint(&r, store_zz((uint64_t)t0)), store_buf_varint(&r, store_zz(5));
    /* past 2^63: out of range (this addition overflowed int64 before) */
    store_buf_varint(&r, store_zz((uint64_t)INT64_MAX)), store_buf_varint(&r, store_zz(1));
    /* and back: t0 + 1000, kept */
    store_buf_varint(&r, store_zz((uint64_t)(-INT64_MAX + 1000))),
        store_buf_varint(&r, store_zz(1));
    store_buf_varint(&r, store_zz((uint64_t)INT64_MIN)),
        store_buf_varint(&r, store_zz((uint64_t)INT64_MIN));
    log_record(f, &r);
    store_buf_free(&r);
    const double v[] = {NAN, INFINITY, 2.5};
    log_points_of_doubles(f, t0 + 2000, 1000, v, 3);
    assert_int_equal(fclose(f), 0);
    logged[0] = 0;
    store *s = open_logged("bad", 0);
    assert_non_null(strstr(logged, "4 points out of range"));
    assert_non_null(strstr(logged, "is damaged"));
    store_points p = {0};
    assert_int_equal(store_read(s, series_id(s, "old.m", "a"), INT64_MIN, INT64_MAX, &p), 0);
    assert_int_equal(p.n, 3);
    assert_true(p.ts[0] == t0 && p.val[0] == 5);
    assert_true(p.ts[1] == t0 + 1000 && p.val[1] == 7);
    assert_true(p.ts[2] == t0 + 4000 && p.val[2] == 2.5);
    store_points_free(&p);
    store_close(s);
}

/* A store of format 7 (a series row's tags as (key NUL value NUL)*, no
 * tagkeys table) is relabelled 8 with its rows as they are: its series keep
 * their tags, their points and their ids, a put of one finds it, and a new
 * series' row names its keys by number; both kinds read after a reopen. */
static void test_a_format_7_store_keeps_its_series_rows_and_adds_rows_with_keys_by_number(void **st)
{
    (void)st;
    char path[500];
    store *s = open_at("v7", 0, 0);
    store_tag t[] = {{"host", "n1"}, {"job", "j1"}};
    store_point p = {"old.m", t, 2, 1700000000000LL, 1.5};
    char err[256];
    assert_int_equal(store_put(s, &p, 1, err, sizeof err), 0);
    store_close(s);
    /* back to what format 7 wrote */
    snprintf(path, sizeof path, "%s/v7/chunks.db", tmpdir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "UPDATE series SET tags = CAST('host' || char(0) || 'n1' || "
                                  "char(0) || 'job' || char(0) || 'j1' || char(0) AS BLOB);"
                                  "DROP TABLE tagkeys; UPDATE meta SET v='7' WHERE k='format'",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    for (int round = 0; round < 2; round++) { /* converted, a series added; then reopened */
        logged[0] = 0;
        s = open_logged("v7", 0);
        if (round == 0) assert_non_null(strstr(logged, "from format 7 to 8"));
        else assert_null(strstr(logged, "format"));
        uint64_t id = series_id(s, "old.m", "j1");
        assert_int_equal(id, 1);
        store_points pts = {0};
        assert_int_equal(store_read(s, id, INT64_MIN, INT64_MAX, &pts), 0);
        assert_int_equal(pts.n, round == 0 ? 1 : 2);
        store_points_free(&pts);
        if (round == 0) {
            store_point more[] = {{"old.m", t, 2, 1700000001000LL, 2.5},
                                  {"new.m", t, 2, 1700000001000LL, 3.5}};
            assert_int_equal(store_put(s, more, 2, err, sizeof err), 0);
        }
        store_stats sst;
        store_stats_get(s, &sst);
        assert_int_equal(sst.series, 2);
        uint64_t nid = series_id(s, "new.m", "j1");
        assert_int_equal(nid, 2);
        assert_int_equal(store_read(s, nid, INT64_MIN, INT64_MAX, &pts), 0);
        assert_true(pts.n == 1 && pts.val[0] == 3.5);
        store_points_free(&pts);
        store_close(s);
    }
    /* the old row as it was, the new one: 0, key 'host' by number, n1, key 'job', j1 */
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT hex(tags) FROM series ORDER BY id", -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "686F7374006E31006A6F62006A3100");
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "00016E3100026A3100");
    sqlite3_finalize(q);
    sqlite3_close(db);
}

/* Series rows no jobscope wrote (a key number with no row in tagkeys, a
 * value without its NUL, a varint that runs off the row) are not series:
 * the store opens without them, and the good rows keep theirs. */
static void test_series_rows_that_do_not_decode_are_left_out_at_open(void **st)
{
    (void)st;
    char path[500], err[256];
    store *s = open_at("hostile", 0, 0);
    store_tag t[] = {{"host", "n1"}, {"job", "j1"}};
    store_point p = {"good.m", t, 2, 1700000000000LL, 1.5};
    assert_int_equal(store_put(s, &p, 1, err, sizeof err), 0);
    store_close(s);
    snprintf(path, sizeof path, "%s/hostile/chunks.db", tmpdir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO series VALUES(2, 1, X'00096E3100');" /* key 9 */
                                  "INSERT INTO series VALUES(3, 1, X'00016E31');"   /* no NUL */
                                  "INSERT INTO series VALUES(4, 1, X'0081');",      /* varint */
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    s = open_at("hostile", 0, 0);
    store_stats sst;
    store_stats_get(s, &sst);
    assert_int_equal(sst.series, 1);
    uint64_t id = series_id(s, "good.m", "j1");
    assert_int_equal(id, 1);
    store_points pts = {0};
    assert_int_equal(store_read(s, id, INT64_MIN, INT64_MAX, &pts), 0);
    assert_true(pts.n == 1 && pts.val[0] == 1.5);
    store_points_free(&pts);
    store_close(s);
}

/* A store of a format this jobscope does not know (a later one) is refused
 * with one line, untouched: its log may hold records it would misread. */
static void test_a_store_of_a_later_format_is_refused(void **st)
{
    (void)st;
    char dir[400], err[256] = "";
    store_labelled("v10", "10");
    snprintf(dir, sizeof dir, "%s/v10", tmpdir);
    store_config c = {dir, 0, 0, 0, NULL, NULL};
    assert_null(store_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "has format 10; this jobscope reads format 9"));
    assert_null(strchr(err, '\n'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_format_3_store_is_converted_and_reads_as_before,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_format_4_store_reads_as_before, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_format_5_store_is_converted_keeping_the_age_of_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_format_6_store_is_relabelled_and_its_log_of_doubles_replays, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_format_7_store_keeps_its_series_rows_and_adds_rows_with_keys_by_number, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_series_rows_that_do_not_decode_are_left_out_at_open,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_store_of_a_later_format_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_format_8_store_is_relabelled_and_its_interleaved_log_replays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_hostile_log_record_keeps_the_points_a_put_would_take,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
