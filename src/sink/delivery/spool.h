/* spool.h — the on-disk queue of events a destination has not accepted yet.
 *
 * One file per destination and jobscope process, created only when needed:
 *
 *     JSSPOOL1 00000000000000000123\n      magic + offset of the first unsent record
 *     url amqp://user:***@host/vhost/ex\n   the destination, password removed
 *     <seq>\t<event name>\t<event JSON>\n   one record per event, oldest first
 *     ...
 *
 * Records are appended at the end and consumed from the read offset, which
 * is rewritten in place (20 digits) after each delivered batch, so a crash
 * replays at most one batch (at-least-once).  When everything is delivered
 * the file is cut back to its header.  An incomplete last line (a crash in
 * the middle of a write) is discarded on open.  The file is flock()ed while
 * in use so that `jobscope flush` never races a running jobscope. */
#ifndef JOBSCOPE_SPOOL_H
#define JOBSCOPE_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct pub_item { /* one event, borrowed pointers */
    uint64_t seq;
    const char *name;
    const char *json;
    size_t len;
    /* the backend's own encoding, made when the event was queued
     * (publisher_set_encoder): enc_n points or lines in enc_len bytes;
     * enc NULL when there is none (always, for a record read from a spool,
     * which holds the JSON only) */
    const char *enc;
    size_t enc_len;
    int enc_n;
} pub_item;

typedef struct spool {
    int fd;
    char *path;
    off_t header_len;
    off_t read_off; /* first record not yet delivered */
    off_t end_off;  /* end of the last complete record */
    long pending;   /* records in [read_off, end_off) */
    long skipped;   /* malformed lines passed over (never sent) */
    off_t skip_hwm; /* end of the last one counted */
} spool;

#define SPOOL_MAGIC "JSSPOOL1 "

/* Creates a new spool file (O_EXCL, mode 0600) for the destination label. */
int spool_create(spool *s, const char *path, const char *label, char *err, size_t errlen);
/* Opens an existing spool; *label gets a new copy of its destination. */
int spool_open(spool *s, const char *path, char **label, char *err, size_t errlen);
/* Appends one record. 0, or -1 (errno set). */
int spool_append(spool *s, uint64_t seq, const char *name, const char *json, size_t len);
/* Reads up to max records from the read offset: fills items (pointing into
 * *buf, which it (re)allocates; caller frees) and ends[i] = file offset after
 * record i.  Returns the number read, or -1. */
int spool_read(spool *s, int max, pub_item *items, off_t *ends, char **buf, size_t *bufcap);
/* Marks everything before off as delivered (n records); cuts the file back
 * to its header when nothing is left. */
int spool_consume(spool *s, off_t off, long n);
static inline long long spool_pending_bytes(const spool *s)
{
    return (long long)(s->end_off - s->read_off);
}
/* Closes; removes the file when nothing is pending. Returns 1 if removed. */
int spool_close(spool *s);

#endif
