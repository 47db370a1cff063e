/* net.c — the entry point of the network plugin (build/jobscope-net.so).
 *
 * The destinations that need libcurl, rabbitmq-c or jansson are built into
 * a shared object of their own, loaded by sink.c only when an output URL
 * needs one, so that a job written to files never pays for those libraries
 * in memory.  A new network destination is one file plus one line here. */
#include "../sink.h"

extern const sink_ops sink_amqp_ops;
extern const sink_ops sink_rabbitmq_http_ops;
extern const sink_ops sink_http_ops;
extern const sink_ops sink_elasticsearch_ops;
extern const sink_ops sink_opentsdb_ops;
extern const sink_ops sink_influx_ops;
extern const sink_ops sink_jobscope_ops;
extern const sink_ops sink_remote_write_ops;

/* Looked up by name with dlsym(); NULL-terminated. */
const sink_ops *const sink_net_backends[] = {
    &sink_amqp_ops,          &sink_rabbitmq_http_ops, &sink_http_ops,
    &sink_elasticsearch_ops, &sink_opentsdb_ops,      &sink_influx_ops,
    &sink_jobscope_ops,      &sink_remote_write_ops,  NULL,
};
