/* test_store_faults.c — the store when things go wrong (docs/store.md):
 * a child puts batches and reports each acknowledged one through a pipe, is
 * SIGKILLed, and every acknowledged point is there after reopening, each
 * value bit for bit; a torn
 * or damaged log loses only what it held; out of memory fails the put and
 * the store goes on; a failed log write recovers by itself. */
#include "store_testlib.h"

/* --- crash safety ---------------------------------------------------------- */

static void test_kill_9_loses_no_acknowledged_point(void **st)
{
    (void)st;
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/crash", tmpdir);
    setenv("JOBSCOPE_STORE_SEGMENT_BYTES", "300000", 1);   /* rotations while being killed */
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        char err[256];
        store_config c = {dir, 0, 0, 0, NULL, NULL};
        store *s = store_open(&c, err, sizeof err);
        if (!s) _exit(3);
        static char jobs[64][16];
        static store_tag tags[64][1];
        for (int j = 0; j < 64; j++) {
            snprintf(jobs[j], sizeof jobs[j], "c%d", j);
            tags[j][0] = (store_tag){"job", jobs[j]};
        }
        for (int b = 0;; b++) {
            store_point p[64];
            for (int j = 0; j < 64; j++) p[j] = (store_point){"crash.m", tags[j], 1, 1000LL * b, b + j * 0.5};
            if (store_put(s, p, 64, err, sizeof err) != 0) _exit(4);
            if (write(fd[1], &b, sizeof b) != sizeof b) _exit(5);   /* acknowledged */
        }
    }
    unsetenv("JOBSCOPE_STORE_SEGMENT_BYTES");
    close(fd[1]);
    int acked = -1, b;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (read(fd[0], &b, sizeof b) != sizeof b) fail_msg("the child died early");
        acked = b;
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while (acked < 1000 && (t1.tv_sec - t0.tv_sec) < 10);
    kill(pid, SIGKILL);
    while (read(fd[0], &b, sizeof b) == sizeof b) acked = b;   /* acks written before the kill */
    int status;
    waitpid(pid, &status, 0);
    close(fd[0]);
    assert_true(WIFSIGNALED(status));
    store *s = open_at("crash", 0, 0);
    for (int j = 0; j < 64; j++) {
        char job[16];
        snprintf(job, sizeof job, "c%d", j);
        uint64_t id = series_id(s, "crash.m", job);
        assert_true(id != 0);
        store_points p = {0};
        assert_int_equal(store_read(s, id, INT64_MIN, INT64_MAX, &p), 0);
        if (p.n < (size_t)acked + 1) fail_msg("series %d: %zu points, %d acknowledged", j, p.n, acked + 1);
        for (int i = 0; i <= acked; i++) {
            assert_int_equal(p.ts[i], 1000LL * i);
            assert_true(p.val[i] == i + j * 0.5);
        }
        store_points_free(&p);
    }
    /* a point more in each series after the replay finds its series (keys
     * hash alike at a put, a replay and an open): none is added */
    static char again_jobs[64][16];
    static store_tag again_tags[64][1];
    store_point more[64];
    for (int j = 0; j < 64; j++) {
        snprintf(again_jobs[j], sizeof again_jobs[j], "c%d", j);
        again_tags[j][0] = (store_tag){"job", again_jobs[j]};
        more[j] = (store_point){"crash.m", again_tags[j], 1, 1000LL * (acked + 100000), j};
    }
    char err[256];
    assert_int_equal(store_put(s, more, 64, err, sizeof err), 0);
    store_stats sst;
    store_stats_get(s, &sst);
    assert_int_equal(sst.series, 64);
    store_close(s);
}


/* A log whose tail was torn (a write cut short, garbage after it) replays up
 * to the last whole record, and the store goes on. */
static void test_torn_log_tail_replays_every_whole_record(void **st)
{
    (void)st;
    char dir[400];
    snprintf(dir, sizeof dir, "%s/torn", tmpdir);
    pid_t pid = fork();
    if (pid == 0) {                 /* puts, then dies without store_close */
        char err[256];
        store_config c = {dir, 0, 0, 0, NULL, NULL};
        store *s = store_open(&c, err, sizeof err);
        if (!s) _exit(3);
        store_tag t[] = {{"job", "t"}};
        for (int b = 0; b < 50; b++) {
            store_point p = {"torn.m", t, 1, 1000LL * b, b * 1.5};
            if (store_put(s, &p, 1, err, sizeof err) != 0) _exit(4);
        }
        raise(SIGKILL);             /* a crash: no close, no exit handlers (nor valgrind's leak check) */
        _exit(5);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* garbage after the last record: a length that runs past the end, then
     * a record with a wrong CRC */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "f=$(ls %s/wal/*.wal | tail -1) && printf '\\377\\377\\000\\000abcd' >> $f && "
             "cp $f %s/copy.wal", dir, dir);
    assert_int_equal(system(cmd), 0);
    store *s = open_at("torn", 0, 0);
    uint64_t id = series_id(s, "torn.m", "t");
    assert_true(id != 0);
    store_points p = {0};
    assert_int_equal(store_read(s, id, INT64_MIN, INT64_MAX, &p), 0);
    assert_int_equal(p.n, 50);
    for (int b = 0; b < 50; b++) assert_true(p.val[b] == b * 1.5);
    char err[256];
    store_tag t[] = {{"job", "t"}};
    store_point q = {"torn.m", t, 1, 1000LL * 50, 75};
    assert_int_equal(store_put(s, &q, 1, err, sizeof err), 0);
    store_close(s);
    s = open_at("torn", 0, 0);
    p.n = 0;
    assert_int_equal(store_read(s, id, INT64_MIN, INT64_MAX, &p), 0);
    assert_int_equal(p.n, 51);
    store_points_free(&p);
    store_close(s);
    /* a record in the middle with a flipped byte: replay keeps every record
     * that checks out (all but the damaged one), and never crashes */
    snprintf(cmd, sizeof cmd, "rm -rf %s/torn2 && mkdir -p %s/torn2/wal && "
             "python3 -c \"import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[len(b)//2]^=0x40; "
             "open(sys.argv[2],'wb').write(b)\" %s/copy.wal %s/torn2/wal/0000000000000001.wal", tmpdir, tmpdir, dir, tmpdir);
    assert_int_equal(system(cmd), 0);
    s = open_at("torn2", 0, 0);
    static found f;
    f.n = 0;
    store_series_of(s, "torn.m", collect, &f);
    if (f.n) {
        p.n = 0;
        assert_int_equal(store_read(s, f.ids[0], INT64_MIN, INT64_MAX, &p), 0);
        assert_true(p.n == 49);
        for (size_t i = 0; i < p.n; i++) assert_true(p.val[i] == p.ts[i] / 1000 * 1.5);
        store_points_free(&p);
    }
    store_close(s);
}

/* Out of memory (issue 24): the store returns "store: out of memory" from the
 * put that could not get memory, never aborts, and goes on once memory is
 * back; every batch it acknowledged is there after reopening.  The child
 * runs under an address-space limit a little above what it uses (not under
 * ASan or valgrind, whose own allocators need the address space). */
static int under_a_checker(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#endif
#endif
    const char *pre = getenv("LD_PRELOAD");
    return pre && strstr(pre, "vgpreload") != NULL;
}

static long vm_size_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

static void test_out_of_memory_fails_the_put_and_the_store_goes_on(void **st)
{
    (void)st;
    if (under_a_checker()) skip();
    char dir[400];
    snprintf(dir, sizeof dir, "%s/oom", tmpdir);
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        char err[256] = "";
        store_config c = {dir, 0, 0, 0, NULL, NULL};
        store *s = store_open(&c, err, sizeof err);
        if (!s) _exit(3);
        enum { B = 4096 };
        static store_point p[B];
        static store_tag tags[B][2];
        static char names[B][24];
        struct rlimit lim;
        getrlimit(RLIMIT_AS, &lim);
        struct rlimit low = {(rlim_t)(vm_size_kb() + 24 * 1024) * 1024, lim.rlim_max};
        if (setrlimit(RLIMIT_AS, &low) < 0) _exit(6);
        int failed = -1;
        for (int b = 0; b < 100000 && failed < 0; b++) { /* new series in every batch */
            for (int j = 0; j < B; j++) {
                snprintf(names[j], sizeof names[j], "b%dj%d", b, j);
                tags[j][0] = (store_tag){"job", names[j]};
                tags[j][1] = (store_tag){"host", "n1"};
                p[j] = (store_point){"oom.m", tags[j], 2, 1000LL * b, b + j};
            }
            if (store_put(s, p, B, err, sizeof err) != 0) failed = b;
            else if (write(fd[1], &b, sizeof b) != sizeof b) _exit(5); /* acknowledged */
        }
        if (failed < 0 || !strstr(err, "out of memory")) _exit(7);
        setrlimit(RLIMIT_AS, &lim); /* memory is back: the same batch again */
        if (store_put(s, p, B, err, sizeof err) != 0) _exit(8);
        if (write(fd[1], &failed, sizeof failed) != sizeof failed) _exit(5);
        store_close(s);
        _exit(0);
    }
    close(fd[1]);
    int b, nacked = 0, last = -1;
    static int acked[100001];
    (void)last;
    while (read(fd[0], &b, sizeof b) == sizeof b) acked[nacked++] = last = b;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the child %s %d", WIFEXITED(status) ? "exited" : "died of signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    assert_true(nacked >= 2);
    store *s = open_at("oom", 0, 0);
    /* the first and a middle batch acknowledged under the limit, and the one
     * that failed, put again once memory was back */
    int check[] = {acked[0], acked[nacked / 2], last};
    for (int c = 0; c < 3; c++) {
        char job[24];
        snprintf(job, sizeof job, "b%dj4095", check[c]);
        uint64_t id = job_series(s, "oom.m", job);
        assert_true(id != 0);
        store_points pts = {0};
        assert_int_equal(store_read(s, id, INT64_MIN, INT64_MAX, &pts), 0);
        assert_int_equal(pts.n, 1);
        assert_true(pts.ts[0] == 1000LL * check[c] && pts.val[0] == check[c] + 4095);
        store_points_free(&pts);
    }
    store_close(s);
}

/* A child opens the store at dir, calls put (which returns 0 once its
 * puts are acknowledged) and is SIGKILLed: what the store holds then is in
 * its log only. */
static void puts_then_kill_9(const char *dir, int (*put)(store *s))
{
    pid_t pid = fork();
    if (pid == 0) {
        char err[256];
        store_config c = {dir, 0, 0, 0, NULL, NULL};
        store *s = store_open(&c, err, sizeof err);
        if (!s) _exit(3);
        if (put(s) != 0) _exit(4);
        raise(SIGKILL);
        _exit(5);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* One batch of 40 points to each of three series: the log holds, in order,
 * SERIES a, POINTS a, SERIES b, POINTS b, SERIES c, POINTS c. */
static int three_batches(store *s)
{
    char err[256];
    const char *jobs[] = {"a", "b", "c"};
    for (int b = 0; b < 3; b++) {
        store_tag tg[] = {{"job", jobs[b]}};
        store_point p[40];
        for (int i = 0; i < 40; i++) p[i] = (store_point){"dmg.m", tg, 1, 1000LL * i, b * 100 + i};
        if (store_put(s, p, 40, err, sizeof err) != 0) return -1;
    }
    return 0;
}

/* Flips one byte of the (only) log segment of dir at offset off (from the
 * end when negative). */
static void flip_log_byte(const char *dir, long off)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import sys,glob; f=sorted(glob.glob(sys.argv[1]+'/wal/*.wal'))[-1]; "
             "b=bytearray(open(f,'rb').read()); o=int(sys.argv[2]); b[o]^=0x20; open(f,'wb').write(b)\" %s %ld",
             dir, off);
    assert_int_equal(system(cmd), 0);
}

static size_t points_of(store *s, const char *job, double first)
{
    uint64_t id = series_id(s, "dmg.m", job);
    if (!id) return 0;
    store_points p = {0};
    assert_int_equal(store_read(s, id, INT64_MIN, INT64_MAX, &p), 0);
    for (size_t i = 0; i < p.n; i++) assert_true(p.ts[i] == 1000LL * (int64_t)i && p.val[i] == first + i);
    size_t n = p.n;
    store_points_free(&p);
    return n;
}

/* Issue 23.8: a 1-byte flip at offset 12 of a log segment (in the first
 * series' record) after three acknowledged puts and kill -9 lost all three
 * batches, deleted the segment and said nothing.  What the checksums prove
 * good is kept, the damaged segment is moved aside, logged and counted. */
static void test_a_damaged_log_record_loses_only_what_it_held(void **st)
{
    (void)st;
    char dir[400], path[600];
    snprintf(dir, sizeof dir, "%s/dmg", tmpdir);
    puts_then_kill_9(dir, three_batches);
    flip_log_byte(dir, 12);
    logged[0] = 0;
    store *s = open_logged("dmg", 0);
    assert_int_equal(points_of(s, "a", 0), 0); /* its series record was the damaged one */
    assert_int_equal(points_of(s, "b", 100), 40);
    assert_int_equal(points_of(s, "c", 200), 40);
    store_stats stt;
    store_stats_get(s, &stt);
    assert_int_equal(stt.damaged_segments, 1);
    assert_non_null(strstr(logged, "damaged"));
    snprintf(path, sizeof path, "%s/damaged/0000000000000001.wal", dir);
    assert_int_equal(access(path, F_OK), 0);  /* moved aside, for a look */
    store_close(s);
    /* reopened: the same points, nothing damaged any more */
    logged[0] = 0;
    s = open_logged("dmg", 0);
    assert_int_equal(points_of(s, "b", 100), 40);
    assert_int_equal(points_of(s, "c", 200), 40);
    store_stats_get(s, &stt);
    assert_int_equal(stt.damaged_segments, 0);
    assert_null(strstr(logged, "damaged"));
    store_close(s);

    /* a flip in the middle batch's points: the first and the last batch stay */
    snprintf(dir, sizeof dir, "%s/dmg2", tmpdir);
    puts_then_kill_9(dir, three_batches);
    struct stat sb;
    char seg[600];
    snprintf(seg, sizeof seg, "%s/wal/0000000000000001.wal", dir);
    assert_int_equal(stat(seg, &sb), 0);
    flip_log_byte(dir, (long)sb.st_size / 2);
    logged[0] = 0;
    s = open_logged("dmg2", 0);
    assert_int_equal(points_of(s, "a", 0), 40);
    assert_int_equal(points_of(s, "c", 200), 40);
    store_stats_get(s, &stt);
    assert_int_equal(stt.damaged_segments, 1);
    store_close(s);
}

/* Issue 23.17: once a write of the log failed (a full file system), every
 * later put failed until a restart, and nothing said so.  The store retries
 * by itself, says so once each way, reports it in store_stats, and what it
 * acknowledged before and after is there after a kill -9.  The child's files
 * are limited in size (RLIMIT_FSIZE: EFBIG, as ENOSPC would be). */
/* Values that do not compress (the log is zstd-compressed). */
static double noisy(int b, int i)
{
    return b + (double)(((unsigned)i * 2654435761u + (unsigned)b * 40503u) % 1000003u) / 1000003.0;
}

static void test_a_failed_log_write_recovers_by_itself(void **st)
{
    (void)st;
    char dir[400];
    snprintf(dir, sizeof dir, "%s/full", tmpdir);
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        signal(SIGXFSZ, SIG_IGN);
        char err[256] = "";
        logged[0] = 0;
        store *s = open_logged("full", 0);
        store_tag tg[] = {{"job", "f"}};
        store_point p[200];
        struct rlimit lim, low;
        getrlimit(RLIMIT_FSIZE, &lim);
        low = (struct rlimit){64 << 10, lim.rlim_max}; /* the log may grow to 64 KiB */
        if (setrlimit(RLIMIT_FSIZE, &low) < 0) _exit(6);
        int b, failed = 0;
        for (b = 0; b < 10000 && !failed; b++) {
            for (int i = 0; i < 200; i++) p[i] = (store_point){"full.m", tg, 1, 200000LL * b + 1000 * i, noisy(b, i)};
            if (store_put(s, p, 200, err, sizeof err) != 0)
                failed = 1;
            else if (write(fd[1], &b, sizeof b) != sizeof b)
                _exit(5);
        }
        store_stats stt;
        store_stats_get(s, &stt);
        if (!failed || stt.writable || !strstr(stt.error, "cannot write the log")) _exit(7);
        if (!strstr(logged, "cannot write the log")) _exit(8);
        if (store_put(s, p, 200, err, sizeof err) == 0) _exit(9); /* still full */
        setrlimit(RLIMIT_FSIZE, &lim);                             /* space again */
        int ok = 0;
        for (int tries = 0; tries < 40 && !ok; tries++) {
            ok = store_put(s, p, 200, err, sizeof err) == 0;
            if (!ok) usleep(100000);
        }
        if (!ok) _exit(10);
        b--;
        if (write(fd[1], &b, sizeof b) != sizeof b) _exit(5);
        for (b = b + 1; b < 60; b++) { /* and goes on */
            for (int i = 0; i < 200; i++) p[i] = (store_point){"full.m", tg, 1, 200000LL * b + 1000 * i, noisy(b, i)};
            if (store_put(s, p, 200, err, sizeof err) != 0) _exit(11);
            if (write(fd[1], &b, sizeof b) != sizeof b) _exit(5);
        }
        store_stats_get(s, &stt);
        if (!stt.writable || stt.write_failures < 1) _exit(12);
        if (!strstr(logged, "writable again")) _exit(13);
        raise(SIGKILL);
        _exit(14);
    }
    close(fd[1]);
    int b, maxb = -1, n = 0;
    while (read(fd[0], &b, sizeof b) == sizeof b) {
        if (b > maxb) maxb = b;
        n++;
    }
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status))
        fail_msg("the child exited %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    assert_int_equal(maxb, 59);
    logged[0] = 0;
    store *s = open_logged("full", 0);
    uint64_t id = series_id(s, "full.m", "f");
    store_points p = {0};
    assert_int_equal(store_read(s, id, INT64_MIN, INT64_MAX, &p), 0);
    assert_int_equal(p.n, 60 * 200); /* every acknowledged batch (a failed one was put again) */
    for (size_t i = 0; i < p.n; i++) assert_true(p.ts[i] == 1000LL * (int64_t)i && p.val[i] == noisy((int)(i / 200), (int)(i % 200)));
    store_points_free(&p);
    store_stats stt;
    store_stats_get(s, &stt);
    assert_int_equal(stt.damaged_segments, 0); /* the torn write was cut off, not left in the log */
    store_close(s);
}

/* Values of every kind, logged as decimals where they are one (POINTS_C)
 * and as doubles where not, come back bit for bit from the log alone after
 * kill -9: signed zeros, the ends of the decimal range, tiny and huge
 * doubles, and series whose coding changes within one put. */
static const double odd_values[] = {
    0, -0.0, 0.1, -2.75, 7, 1e-9, 1.5e-10, 123456789.123456789, 9007199254740992.0,
    -9007199254740992.0, 9007199254740994.0, 1e300, -1e-300, 5e-324, DBL_MAX, -DBL_MAX,
    0.30000000000000004, 3.14159, 42.5, 1e15 + 0.5, 99999999.99999999, -0.000001};
#define N_ODD (sizeof odd_values / sizeof odd_values[0])

static double odd_value(int series, int i)
{
    /* series 0: the list in order; 1: reversed; 2: alternating with a
     * decimal; 3: the list's decimals as steps of one coding */
    switch (series) {
    case 0: return odd_values[i % N_ODD];
    case 1: return odd_values[N_ODD - 1 - i % N_ODD];
    case 2: return i % 2 ? 0.5 * i : odd_values[i / 2 % N_ODD];
    default: return i * 0.001;
    }
}

/* Two puts to each of four series of odd values: new series, then known. */
static int odd_puts(store *s)
{
    char err[256];
    const char *jobs[] = {"s0", "s1", "s2", "s3"};
    for (int round = 0; round < 2; round++)
        for (int j = 0; j < 4; j++) {
            store_tag tg[] = {{"job", jobs[j]}};
            store_point p[3 * N_ODD];
            for (int i = 0; i < (int)(3 * N_ODD); i++) {
                int k = round * (int)(3 * N_ODD) + i;
                p[i] = (store_point){"odd.m", tg, 1, 1000LL * k, odd_value(j, k)};
            }
            if (store_put(s, p, 3 * N_ODD, err, sizeof err) != 0) return -1;
        }
    return 0;
}

static void test_every_value_replays_bit_for_bit_from_the_log(void **st)
{
    (void)st;
    char dir[400];
    snprintf(dir, sizeof dir, "%s/odd", tmpdir);
    puts_then_kill_9(dir, odd_puts);
    store *s = open_at("odd", 0, 0);
    for (int j = 0; j < 4; j++) {
        char job[16];
        snprintf(job, sizeof job, "s%d", j);
        store_points p = {0};
        assert_int_equal(store_read(s, series_id(s, "odd.m", job), INT64_MIN, INT64_MAX, &p), 0);
        assert_int_equal(p.n, 6 * N_ODD);
        for (int i = 0; i < (int)p.n; i++) {
            double want = odd_value(j, i);
            if (p.ts[i] != 1000LL * i || memcmp(&p.val[i], &want, sizeof want) != 0)
                fail_msg("series %d, point %d: %lld %.17g, put %lld %.17g", j, i, (long long)p.ts[i],
                         p.val[i], 1000LL * i, want);
        }
        store_points_free(&p);
    }
    store_close(s);
}


/* Puts of one point to each of eight series, the shape of a line's fields,
 * made without waiting and made durable by a sync after each half: two
 * group commits (the first with the series' records, the second of points
 * alone), whose points the log gathers into one run a series
 * (store_wal_group.c).
 * The runs gathered had different codings: decimals of more digits in some
 * (scaled up), a double's bits in some, a decimal past 2^53 once scaled
 * (doubles then), and a timestamp put twice (the later value kept).  After
 * kill -9 every series reads back bit for bit as the store had it. */
#define N_LINES 240
static double line_value(int series, int i)
{
    switch (series) {
    case 0: return odd_value(0, i);                  /* every kind, in turn */
    case 1: return odd_value(2, i);                  /* decimals and doubles */
    case 2: return odd_value(3, i);                  /* 0.001 steps: 1 to 3 digits */
    case 3: return i % 2 ? 0.5 : 5e15 + i;           /* scaled past 2^53 */
    case 4: return (double)(i * 7919 % 1000003);     /* integers: one coding */
    case 5: return i % 3 ? i * 0.25 : i;             /* 0 and 2 digits */
    case 6: return i;                                /* every timestamp twice */
    default: return i % 10 ? 1.0 : -1.5;
    }
}
static int64_t line_ts(int series, int i) { return series == 6 ? 1000LL * (i / 2) : 1000LL * i; }

static int line_puts(store *s)
{
    char err[256];
    static char jobs[8][16];
    static store_tag tg[8][1];
    for (int j = 0; j < 8; j++) {
        snprintf(jobs[j], sizeof jobs[j], "l%d", j);
        tg[j][0] = (store_tag){"job", jobs[j]};
    }
    uint64_t ticket = 0;
    for (int i = 0; i < N_LINES; i++) {
        store_point p[8];
        for (int j = 0; j < 8; j++) p[j] = (store_point){"line.m", tg[j], 1, line_ts(j, i), line_value(j, i)};
        if (store_put_nowait(s, p, 8, &ticket, err, sizeof err) != 0) return -1;
        /* two commits: the second has no new series (its records are points only) */
        if (i == N_LINES / 2 - 1 && store_sync(s, ticket, err, sizeof err) != 0) return -1;
    }
    return store_sync(s, ticket, err, sizeof err);
}

static void test_a_group_commit_gathered_by_series_replays_bit_for_bit(void **st)
{
    (void)st;
    char dir[400];
    snprintf(dir, sizeof dir, "%s/lines", tmpdir);
    puts_then_kill_9(dir, line_puts);
    store *s = open_at("lines", 0, 0);
    for (int j = 0; j < 8; j++) {
        char job[16];
        snprintf(job, sizeof job, "l%d", j);
        store_points p = {0};
        assert_int_equal(store_read(s, series_id(s, "line.m", job), INT64_MIN, INT64_MAX, &p), 0);
        assert_int_equal(p.n, j == 6 ? N_LINES / 2 : N_LINES);
        for (int i = 0; i < (int)p.n; i++) {
            int k = j == 6 ? 2 * i + 1 : i; /* the later of the two */
            double want = line_value(j, k);
            if (p.ts[i] != line_ts(j, k) || memcmp(&p.val[i], &want, sizeof want) != 0)
                fail_msg("series %d, point %d: %lld %.17g, put %lld %.17g", j, i, (long long)p.ts[i],
                         p.val[i], (long long)line_ts(j, k), want);
        }
        store_points_free(&p);
    }
    store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill_9_loses_no_acknowledged_point, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_value_replays_bit_for_bit_from_the_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_group_commit_gathered_by_series_replays_bit_for_bit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_log_tail_replays_every_whole_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_memory_fails_the_put_and_the_store_goes_on, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_damaged_log_record_loses_only_what_it_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_log_write_recovers_by_itself, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
