/* joremon.h — JoReMon's row formats (CC-IN2P3), so that existing plotting
 * notebooks read jobscope output unchanged.  Each sample becomes three rows,
 * Type joremon.CPUInfo, joremon.IOInfo and joremon.MemInfo, read from the
 * sample's metric set (src/model/metric.h). */
#ifndef JOBSCOPE_JOREMON_H
#define JOBSCOPE_JOREMON_H

#include "../../event/event.h"
#include "../../model/metric.h"

enum { JOREMON_CPU, JOREMON_IO, JOREMON_MEM, JOREMON_NTYPES };

/* What a writer remembers between samples: PeakCPUPercent. */
typedef struct joremon_state {
    double peak_cpu;
} joremon_state;
/* Call once per sample, before writing its rows. */
void joremon_state_update(joremon_state *st, const mset *s);
/* --mode: TYPES is a mask of (1 << JOREMON_CPU/IO/MEM), 0 = all. */
int joremon_type_selected(unsigned types, int type);

/* One JSON object (no newline) in JoReMon's field order. */
void joremon_json(jbuf *out, const mset *s, const annotations *ann, int type,
                  const joremon_state *st);
/* CSV header / one CSV row (no newline): the columns of the selected row
 * types, sorted by name as JoReMon's CSV writer does; cells of other types
 * are empty. */
void joremon_csv_header(jbuf *out, unsigned types);
void joremon_csv_row(jbuf *out, const mset *s, const annotations *ann, int type, unsigned types,
                     const joremon_state *st);
/* RFC 3339 local time, as Go's time.Time marshals (RFC3339Nano: trailing
 * zeros of the fraction dropped). */
size_t joremon_timestamp(char *out, size_t n, double ts);

#endif
