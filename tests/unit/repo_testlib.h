/* repo_testlib.h — what the repository's unit tests share
 * (test_repo_blocks.c, test_repo_pending.c): a repository opened at a
 * path, and a count read from its SQLite file beside it. */
#ifndef REPO_TESTLIB_H
#define REPO_TESTLIB_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>

#include "repo/repo.h"

static repo *open_at(const char *path)
{
    char err[256];
    repo *r = repo_open(path, err, sizeof err);
    if (!r) fprintf(stderr, "%s\n", err);
    assert_non_null(r);
    return r;
}

/* An SQL count on the file (the repository closed or not: WAL readers). */
static long long count_of(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long n = -1;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

#endif
