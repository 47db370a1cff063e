/* ksstat.c — kickstart's statinfo: a file it names, a descriptor it shares
 * or a temporary file it made, stat'ed when the record is written, with the
 * data a temporary file captured (the job's stdout and stderr, the metadata
 * the job wrote), and for -s files the output flag and the sha256.
 *
 * The record's fields, in kickstart's order: error, lfn, then one of
 * temporary_name/descriptor, file_name (the real path) or
 * descriptor_number, then mode ... group from stat(2), output/sha256/
 * checksum_timing for a final file, data_truncated and data for a
 * temporary file. */
#include "kickstart.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int ksstat_file(ks_stat *s, const char *name, int openmode, int truncate, int preserve)
{
    memset(s, 0, sizeof *s);
    s->source = KS_FILE;
    s->fd = -1;
    s->openmode = openmode;
    s->truncate = truncate;
    s->preserve = preserve;
    if (!(s->name = strdup(name))) return s->error = ENOMEM, -1;
    int rc = stat(name, &s->st);
    s->error = rc ? errno : 0;
    return rc;
}

int ksstat_handle(ks_stat *s, int fd)
{
    memset(s, 0, sizeof *s);
    s->source = KS_HANDLE;
    s->fd = fd;
    int rc = fstat(fd, &s->st);
    s->error = rc ? errno : 0;
    return rc;
}

int ksstat_temp(ks_stat *s, const char *dir, const char *prefix)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    size_t n = strlen(dir) + strlen(prefix) + 16;
    if (!(s->name = malloc(n))) return s->error = ENOMEM, -1;
    snprintf(s->name, n, "%s/%s.XXXXXX", dir, prefix);
    s->fd = mkostemp(s->name, O_CLOEXEC | O_APPEND);
    if (s->fd < 0) {
        s->error = errno;
        free(s->name);
        s->name = NULL;
        return -1;
    }
    s->source = KS_TEMP;
    fstat(s->fd, &s->st);
    return 0;
}

void ksstat_set_lfn(ks_stat *s, const char *lfn)
{
    free(s->lfn);
    s->lfn = lfn ? strdup(lfn) : NULL;
}

/* ^NAME: an existing NAME becomes NAME.000 (the first free of .000-.999). */
static void preserve_file(const char *name)
{
    if (access(name, F_OK) != 0) return;
    size_t n = strlen(name) + 8;
    char *to = malloc(n);
    if (!to) return;
    for (int i = 0; i < 1000; i++) {
        snprintf(to, n, "%s.%03d", name, i);
        if (access(to, F_OK) != 0) {
            rename(name, to);
            break;
        }
    }
    free(to);
}

int ksstat_update(ks_stat *s)
{
    if (s->source == KS_FILE && s->truncate) {
        if (s->preserve) preserve_file(s->name);
        int fd = open(s->name, (s->openmode & O_ACCMODE) | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd >= 0) close(fd);
        s->truncate = 0;
    }
    if (s->source == KS_INVALID) return -1;
    int rc = s->source == KS_FILE ? stat(s->name, &s->st) : fstat(s->fd, &s->st);
    s->error = rc ? errno : 0;
    return rc;
}

int ksstat_job_fd(const ks_stat *s, int *opened)
{
    *opened = -1;
    if (s->source == KS_HANDLE || s->source == KS_TEMP) return s->fd;
    if (s->source != KS_FILE) return -1;
    int mode = s->openmode;
    /* the job's end of stdout/stderr appends: the file was truncated once */
    if ((mode & O_ACCMODE) != O_RDONLY) mode |= O_APPEND;
    *opened = open(s->name, mode | O_CLOEXEC, 0666);
    return *opened;
}

void ksstat_free(ks_stat *s)
{
    if (s->source == KS_TEMP) {
        close(s->fd);
        unlink(s->name);
    }
    free(s->name);
    free(s->lfn);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

/* ---- the record ------------------------------------------------------------ */

/* Seconds as kickstart writes a file time: local time and its offset. */
static void put_isotime(FILE *out, time_t t)
{
    struct tm lt;
    localtime_r(&t, &lt);
    char b[32];
    strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &lt);
    long off = lt.tm_gmtoff;
    fprintf(out, "%s%+03ld:%02ld", b, off / 3600, labs(off) / 60 % 60);
}

static void put_stat(FILE *out, int in, const struct stat *st)
{
    fprintf(out, "%*smode: 0o%o\n", in, "", (unsigned)st->st_mode);
    fprintf(out, "%*ssize: %lld\n", in, "", (long long)st->st_size);
    fprintf(out, "%*sinode: %llu\n", in, "", (unsigned long long)st->st_ino);
    fprintf(out, "%*snlink: %llu\n", in, "", (unsigned long long)st->st_nlink);
    fprintf(out, "%*sblksize: %lld\n", in, "", (long long)st->st_blksize);
    fprintf(out, "%*sblocks: %lld\n", in, "", (long long)st->st_blocks);
    const char *k[3] = {"mtime", "atime", "ctime"};
    time_t t[3] = {st->st_mtime, st->st_atime, st->st_ctime};
    for (int i = 0; i < 3; i++) {
        fprintf(out, "%*s%s: ", in, "", k[i]);
        put_isotime(out, t[i]);
        fputc('\n', out);
    }
    char buf[4096];
    struct passwd pw, *pwp = NULL;
    struct group gr, *grp = NULL;
    fprintf(out, "%*suid: %u\n", in, "", (unsigned)st->st_uid);
    if (getpwuid_r(st->st_uid, &pw, buf, sizeof buf, &pwp) == 0 && pwp) {
        fprintf(out, "%*suser: ", in, "");
        ksyaml_plain(out, pw.pw_name);
        fputc('\n', out);
    }
    fprintf(out, "%*sgid: %u\n", in, "", (unsigned)st->st_gid);
    if (getgrgid_r(st->st_gid, &gr, buf, sizeof buf, &grp) == 0 && grp) {
        fprintf(out, "%*sgroup: ", in, "");
        ksyaml_plain(out, gr.gr_name);
        fputc('\n', out);
    }
}

/* Where the statinfo came from: a temporary file, a name or a descriptor. */
static void put_source(FILE *out, int in, const ks_stat *s)
{
    if (s->source == KS_TEMP) {
        fprintf(out, "%*stemporary_name: ", in, "");
        ksyaml_plain(out, s->name);
        fprintf(out, "\n%*sdescriptor: %d\n", in, "", s->fd);
    } else if (s->source == KS_FILE) {
        char *real = realpath(s->name, NULL);
        fprintf(out, "%*sfile_name: ", in, "");
        ksyaml_plain(out, real ? real : s->name);
        fputc('\n', out);
        free(real);
    } else {
        fprintf(out, "%*sdescriptor_number: %d\n", in, "", s->fd);
    }
}

/* -s files: "output: True", the checksum, or integrity_error (an error). */
static int put_checksum(FILE *out, int in, const ks_stat *s)
{
    fprintf(out, "%*soutput: True\n", in, "");
    char hex[65];
    double secs = 0;
    char *real = realpath(s->name, NULL);
    int rc = kssum_sha256(real ? real : s->name, hex, &secs);
    free(real);
    if (rc != 0) {
        fprintf(out, "%*sintegrity_error: failed creating a checksum\n", in, "");
        return 1;
    }
    fprintf(out, "%*ssha256: %s\n%*schecksum_timing: %.2f\n", in, "", hex, in, "", secs);
    return 0;
}

/* The captured data of a temporary file as a literal block. */
static void put_data(FILE *out, int in, const ks_stat *s, const ks_data_opts *d)
{
    size_t size = (size_t)s->st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, s->fd, 0);
    if (map == MAP_FAILED) return;
    size_t max = d->truncatable ? d->max : SIZE_MAX;
    int truncated = ksyaml_count_chars(map, size) > max;
    fprintf(out, "%*sdata_truncated: %s\n%*sdata: |\n", in, "", truncated ? "true" : "false", in,
            "");
    ksyaml_block(out, in + 2, map, size, max);
    munmap(map, size);
}

int ksstat_write(FILE *out, int indent, const char *id, ks_stat *s, const ks_data_opts *d)
{
    if (s->source == KS_INVALID) return 0;
    int files = !strcmp(id, "initial") || !strcmp(id, "final");
    int in = indent + 2, errors = 0;
    if (s->source == KS_TEMP) ksstat_update(s);
    fprintf(out, "%*s", indent, "");
    ksyaml_plain(out, files ? (s->lfn ? s->lfn : s->name) : id);
    fputs(":\n", out);
    if (s->error) fprintf(out, "%*serror: %d\n", in, "", s->error);
    if (s->lfn) {
        fprintf(out, "%*slfn: ", in, "");
        ksyaml_quoted(out, s->lfn);
        fputc('\n', out);
    }
    if (s->error == ENOENT && !strcmp(id, "kickstart"))
        fprintf(out, "%*snote: ignore error - it is just a warning\n", in, "");
    put_source(out, in, s);
    if (!s->error) put_stat(out, in, &s->st);
    if (!s->error && !strcmp(id, "final")) errors += put_checksum(out, in, s);
    if (d && d->include && s->source == KS_TEMP && !s->error && s->st.st_size > 0 &&
        (!d->truncatable || d->max > 0))
        put_data(out, in, s, d);
    return errors;
}
