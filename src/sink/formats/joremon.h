/* joremon.h — JoReMon's row formats (CC-IN2P3), so that existing plotting
 * notebooks read jobscope output unchanged.  Each sample becomes three rows,
 * Type joremon.CPUInfo, joremon.IOInfo and joremon.MemInfo, read from the
 * sample's metric set (src/model/metric.h). */
#ifndef JOBSCOPE_JOREMON_H
#define JOBSCOPE_JOREMON_H

#include "../../event/event.h"
#include "../../model/metric.h"

enum { JOREMON_CPU, JOREMON_IO, JOREMON_MEM, JOREMON_NTYPES };

/* One JSON object (no newline) in JoReMon's field order. */
void joremon_json(jbuf *out, const mset *s, const annotations *ann, int type);
/* CSV header / one CSV row (no newline): the union of all columns, sorted by
 * name as JoReMon's CSV writer does; cells of other types are empty. */
void joremon_csv_header(jbuf *out);
void joremon_csv_row(jbuf *out, const mset *s, const annotations *ann, int type);
/* RFC 3339 local time with nanoseconds, as Go's time.Time marshals. */
size_t joremon_timestamp(char *out, size_t n, double ts);

#endif
