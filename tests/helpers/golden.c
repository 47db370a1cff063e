/* golden.c — writes every encoding of a fixed set of events into a folder,
 * for tests/integration/22_golden_output.sh, which compares the files byte
 * for byte with tests/golden/.  Used to prove that a refactoring of the
 * metric model or of the sinks changes no output.
 *
 *   golden DIR
 *
 * The events: three kickstart.inv.online samples built by the monitor's own
 * code (tree_metrics_fill) from fixed tree_samples, with annotations from
 * a fixed environment, plus fixed source events (a custom metric, a GPU
 * sample, an end record) for the time-series encoders.  Outputs: ev.jsonl
 * and ev.csv (file sinks), jr.jsonl and jr.csv (JoReMon), influx.txt (line
 * protocol), opentsdb.json (one /api/put body per event), cgroup.jsonl
 * (the cg_* fields the cgroup source adds to a sample, from the v2 and v1
 * fixtures of tests/fixtures/cgroup; $ROOT is the repository, default ".")
 * and gpu.jsonl: the real GPU source against the fake NVML
 * ($JOBSCOPE_NVML_LIBRARY, make fake-nvml) with a fixed script and every
 * optional part on; its events (env, stats, stats.max) and the gpu_* fields
 * it adds to a sample, with what varies from run to run (times, seq, the
 * helper's own pid) replaced by fixed text and the lines sorted.
 *
 * The time-series lines of the samples come from their value sets
 * (tsconv_*_set, as the influx:// and opentsdb:// outputs make them), the
 * fixed source events' from their JSON.  Beside that, every event that
 * carries a value set -- the three samples, samples with the cgroup
 * fixtures' fields, the GPU share, nulls and odd labels, every event of
 * the real GPU source, and every event of a real run (`golden DIR JOB...`
 * runs JOB under the monitor with -G and a --limit: its start event,
 * samples, custom metrics, limit event and end record) -- is encoded both
 * ways with several tag lists, and any difference is printed and makes the
 * helper fail; the last line of its output says "tsconv paths: N encodings
 * compared, D differ" and "real run: N events". */
#include "monitor/emitter.h"
#include "monitor/monitor.h"
#include "proc/tree_metrics.h"
#include "source.h"
#include "gpu/gpu.h"
#include "event/event.h"
#include "proc/proctree.h"
#include "cgroup/cgroup.h"
#include "sink/sink.h"
#include "sink/formats/sbuf.h"
#include "sink/formats/tsconv.h"
#include "model/metric.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern const source_ops gpu_source_ops;

static const char *const cleared_env[] = {
    "PEGASUS_SITE",
    "PEGASUS_WF_UUID",
    "PEGASUS_WF_LABEL",
    "PEGASUS_DAG_JOB_ID",
    "CONDOR_JOBID",
    "PEGASUS_XFORMATION",
    "PEGASUS_TASK_ID",
    "OMPI_COMM_WORLD_RANK",
    "ALPS_APP_PE",
    "PMI_RANK",
    "PMI_ID",
    "MPIRUN_RANK",
    "PMIX_RANK",
    "SLURM_PROCID",
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "PBS_JOBID",
    "LSB_JOBID",
    "JOB_ID",
    "COBALT_JOBID",
    "FLUX_JOB_ID",
    "_CONDOR_JOB_AD",
    "SLURM_ARRAY_TASK_ID",
    "PBS_ARRAYID",
    "LSB_JOBINDEX",
    "SGE_TASK_ID",
};

/* The annotations with the real hostname replaced by "node1". */
static int fixed_annotations(annotations *a)
{
    for (size_t i = 0; i < sizeof cleared_env / sizeof cleared_env[0]; i++)
        unsetenv(cleared_env[i]);
    setenv("PEGASUS_WF_UUID", "9c3a7e2e-golden", 1);
    setenv("PEGASUS_WF_LABEL", "diamond", 1);
    setenv("PEGASUS_SITE", "local", 1);
    setenv("PMI_RANK", "3", 1);
    char *tags[] = {"site=test", "comment=a, \"quoted\" value"};
    if (annotations_init(a, "golden-1", tags, 2, 0) != 0) return -1;
    jbuf b;
    jbuf_init(&b, 512);
    jw_str(&b, "hostname", a->hostname);
    if (a->fragment_len < b.len || memcmp(a->fragment, b.p, b.len)) {
        jbuf_free(&b);
        return -1;
    }
    jbuf f;
    jbuf_init(&f, 512);
    jw_str(&f, "hostname", "node1");
    jbuf_put(&f, a->fragment + b.len, a->fragment_len - b.len);
    jbuf_free(&b);
    free(a->fragment);
    free(a->hostname);
    a->fragment = f.p;
    a->fragment_len = f.len;
    a->hostname = strdup("node1");
    return 0;
}

static void fixed_sample(tree_sample *s, int i)
{
    memset(s, 0, sizeof *s);
    s->ts = 1700000000.123456 + i * 1.5;
    s->elapsed = 0.25 + i * 1.5;
    s->c.utime_us = 1234567ULL * (uint64_t)(i + 1);
    s->c.stime_us = 4321ULL * (uint64_t)(i + 1) + 499;
    s->c.rchar = 100000 + 7 * (uint64_t)i;
    s->c.wchar = 2048ULL << i;
    s->c.syscr = 11 + (uint64_t)i;
    s->c.syscw = 5;
    s->c.read_bytes = 4096ULL * (uint64_t)(i + 1);
    s->c.write_bytes = 8192;
    s->c.cancelled_write_bytes = (uint64_t)i;
    s->c.minflt = 300 + (uint64_t)i;
    s->c.majflt = 2;
    s->c.iowait_us = 12345ULL * (uint64_t)i + 5;
    s->c.nvcsw = 40;
    s->c.nivcsw = 3 + (uint64_t)i;
    s->iowait_valid = i != 1;
    s->cpu_percent = i == 2 ? 199.995 : 87.654;
    s->procs = 3 - (uint32_t)i;
    s->threads = 7;
    s->rss_kb = 10240 + 512 * (uint64_t)i;
    s->vm_kb = 204800;
    s->swap_kb = (uint64_t)i;
    s->hwm_kb = 11264;
    s->total_procs = 4;
    s->peak_rss_kb = (tree_peak){11264, 1700000001.623456};
    s->peak_vm_kb = (tree_peak){204800, 1700000000.123456};
    s->peak_cpu_percent = (tree_peak){199.995, 1700000003.123456};
    s->peak_procs = (tree_peak){3, 1700000000.123456};
    s->peak_threads = (tree_peak){7, 1700000000.123456};
    s->root_pid = 4242;
    s->root_start = 1700000000.0;
    s->root_cmd = i == 0 ? "/bin/sh -c 'sort a,b > \"out\"'" : "/bin/sh";
    s->root_cwd = "/scratch/job 1";
    s->user = "alice";
}

/* Fixed events from the sources, as their JSON members (after the
 * annotations: raw members of their sets). */
static const char *const source_events[] = {
    "\"name\":\"loss\",\"value\":0.125,\"level\":1,\"rank\":3,\"pid\":4243,\"tags\":{\"phase\":"
    "\"train\"}",
    "\"id\":0,\"uuid\":\"GPU-1234\",\"name\":\"NVIDIA A100\",\"util\":87,\"mem_used\":1073741824,"
    "\"power_w\":250.5,\"temp_c\":64,\"throttled\":false,\"procs\":[{\"pid\":4243,\"mem\":1024}]",
    "\"exit_type\":\"exited\",\"exit_code\":0,\"status\":0,\"duration\":4.75,\"cpu_efficiency\":0."
    "6174",
};
static const char *const source_names[] = {"jobscope.metric", "gpu.sample", "jobscope.end"};

/* ---- the two ways into the time-series encoders ------------------------ */

static int paths_compared, paths_differ;

/* Encodes one event from its value set and from its JSON, for Influx and
 * OpenTSDB, with several tag lists; counts the differences. */
static void compare_paths(const char *json, size_t len, const mset *set, const annotations *ann)
{
    static const char *const keeps[] = {NULL, "job_id,pid", "hostname,id",
                                        "exe,vendor,job_util_source,rank"};
    for (size_t k = 0; k < sizeof keeps / sizeof keeps[0]; k++) {
        tsconv_ann a;
        if (tsconv_ann_init(&a, ann->fragment, ann->fragment_len, keeps[k]) != 0) {
            fprintf(stderr, "golden: tsconv_ann_init failed\n");
            paths_differ++;
            continue;
        }
        for (int f = 0; f < 2; f++) {
            sbuf js = {0}, ss = {0};
            int nj = f ? tsconv_opentsdb_points(&js, json, len, keeps[k])
                       : tsconv_influx_line(&js, json, len, keeps[k]);
            int ns = f ? tsconv_opentsdb_set(&ss, set, &a, keeps[k])
                       : tsconv_influx_set(&ss, set, &a, keeps[k]);
            if (ns < 0) { /* left to the JSON path (a raw member): nothing to compare */
                if (!k && !f) printf("tsconv declined: %s\n", set->event);
                sbuf_free(&js);
                sbuf_free(&ss);
                continue;
            }
            paths_compared++;
            if (nj != ns || js.len != ss.len || (js.len && memcmp(js.p, ss.p, js.len))) {
                paths_differ++;
                fprintf(stderr,
                        "golden: the %s encoding of %s differs (tags %s):\n  json %d: %s\n  set  "
                        "%d: %s\n",
                        f ? "OpenTSDB" : "Influx", set->event, keeps[k] ? keeps[k] : "all", nj,
                        js.p ? js.p : "", ns, ss.p ? ss.p : "");
            }
            sbuf_free(&js);
            sbuf_free(&ss);
        }
        tsconv_ann_free(&a);
    }
}

/* A sink that compares the two paths for every event with a value set. */
static const annotations *compare_ann;
static int compared_events;
static int compare_write(sink *s, const js_event *ev)
{
    if (ev->metrics) compare_paths(ev->json, ev->len, ev->metrics, compare_ann);
    compared_events++;
    return 0;
}
static void compare_close(sink *s)
{
    (void)s;
}
static const sink_ops compare_ops = {
    .name = "compare",
    .match = NULL,
    .open = NULL,
    .write = compare_write,
    .flush = NULL,
    .close = compare_close,
};
static sink compare_sink = {.ops = &compare_ops};

static int write_file(const char *dir, const char *name, const char *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return -1;
    }
    fwrite(p, 1, n, f);
    return fclose(f);
}

/* One JSON object per fixture: the cg_* fields of a sample. */
static int cgroup_fields(const char *dir)
{
    const char *root = getenv("ROOT");
    char fx[4][1024], v2[1024];
    if (!root || !*root) root = ".";
    snprintf(v2, sizeof v2, "%s/tests/fixtures/cgroup/v2/job", root);
    static const char *const v1[4] = {"memory", "cpuacct", "blkio", "pids"};
    for (int i = 0; i < 4; i++)
        snprintf(fx[i], sizeof fx[i], "%s/tests/fixtures/cgroup/v1/%s/job", root, v1[i]);
    const char *dirs[CG_V1_N] = {
        [CG_V1_MEMORY] = fx[0],
        [CG_V1_CPUACCT] = fx[1],
        [CG_V1_BLKIO] = fx[2],
        [CG_V1_PIDS] = fx[3],
    };
    cgroup *cgs[2] = {cgroup_v2_open(v2), cgroup_v1_open(dirs, "/job")};
    jbuf b, ev;
    jbuf_init(&b, 4096);
    jbuf_init(&ev, 4096);
    annotations ann;
    emitter em; /* no sinks: emitter_send only writes the event */
    if (fixed_annotations(&ann) != 0) return -1;
    emitter_init(&em, &ann);
    for (int i = 0; i < 2; i++) {
        cg_stats st;
        if (!cgs[i] || cgs[i]->ops->read(cgs[i], &st) != 0) {
            fprintf(stderr, "golden: cannot read the cgroup fixture (ROOT=%s)\n", root);
            return -1;
        }
        jw_obj_open(&b, NULL);
        mset set;
        mset_init(&set);
        mset_clear(&set, EV_SAMPLE, 0);
        cgroup_sample_fields(&set, &st);
        mset_write_json(&b, &set);
        jw_obj_close(&b);
        jbuf_putc(&b, '\n');
        b.comma = 0;
        /* a whole sample as the monitor and its sources write it (tree,
         * total_processes, cg_* with the cg_io rows, gpu_*), with nulls
         * (--null-missing, no GPU utilisation) and labels to escape */
        static const char *const exes[2] = {"/opt/a b,c=d\"q\\/run",
                                            "/opt/b\xff\xc3(d/\xe2\x82\xacrun"};
        tree_sample smp;
        fixed_sample(&smp, 1);
        tree_metrics_fill(&set, &smp, 4242, exes[i], 1);
        mset_u64(&set, M_TOTAL_PROCESSES, 9);
        cgroup_sample_fields(&set, &st);
        mset_u64(&set, M_GPU_MEM, 1u << 20);
        if (i)
            mset_f64(&set, M_GPU_UTIL, 42.25);
        else
            mset_null(&set, M_GPU_UTIL);
        emitter_send(&em, &set, &ev);
        compare_paths(ev.p, ev.len, &set, &em.ann);
        mset_free(&set);
        cgs[i]->ops->free(cgs[i]);
    }
    int rc = write_file(dir, "cgroup.jsonl", b.p, b.len);
    jbuf_free(&b);
    jbuf_free(&ev);
    emitter_close(&em, 1);
    return rc;
}

/* Replaces every match of re's first group in line by `by`. */
static void mask(char *line, const char *re, const char *by)
{
    regex_t r;
    if (regcomp(&r, re, REG_EXTENDED) != 0) return;
    char out[65536];
    size_t o = 0;
    const char *p = line;
    regmatch_t m[2];
    while (regexec(&r, p, 2, m, p == line ? 0 : REG_NOTBOL) == 0 && m[1].rm_so >= 0) {
        size_t n = (size_t)m[1].rm_so, bl = strlen(by);
        if (o + n + bl + 1 >= sizeof out) break;
        memcpy(out + o, p, n);
        memcpy(out + o + n, by, bl);
        o += n + bl;
        p += m[1].rm_eo;
        if (m[0].rm_eo == 0) break;
    }
    size_t rest = strlen(p);
    if (o + rest + 1 < sizeof out) {
        memcpy(out + o, p, rest + 1);
        memcpy(line, out, o + rest + 1);
    }
    regfree(&r);
}

static int cmp_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sources' ctx->emit: into the helper's emitter. */
static uint64_t golden_emit(monitor_ctx *ctx, const mset *ev)
{
    return emitter_send(ctx->monitor, ev, NULL);
}

/* The GPU source against the fake NVML: three devices, the helper itself
 * as the job (a member of its own process tree) using device 0; device 2
 * answers neither process samples, temperature nor PCIe (unknown fields). */
static int gpu_fields(const char *dir)
{
    if (!getenv("JOBSCOPE_NVML_LIBRARY")) {
        fprintf(stderr, "golden: JOBSCOPE_NVML_LIBRARY (the fake NVML) is not set\n");
        return -1;
    }
    char script[4096], raw[4096], nosys[4096];
    snprintf(script, sizeof script, "%s/nvml.script", dir);
    snprintf(raw, sizeof raw, "%s/gpu-raw.jsonl", dir);
    snprintf(nosys, sizeof nosys, "%s/nosys", dir);
    remove(raw);
    FILE *f = fopen(script, "w");
    if (!f) {
        perror(script);
        return -1;
    }
    fprintf(f,
            "devices 3\nunsupported 2 nvmlDeviceGetProcessUtilization\n"
            "unsupported 2 nvmlDeviceGetTemperature\nunsupported 2 nvmlDeviceGetPcieThroughput\n"
            "name 0 NVIDIA A100-SXM4-40GB\nutil 0 95 30\nutil 1 10 5\n"
            "proc 0 %d 268435456 40 7 1 2\ngproc 0 %d 1048576\nproc 0 1 1073741824 90 20 0 0\n"
            "proc 1 1 4096 3 1 0 0\n",
            (int)getpid(), (int)getpid());
    fclose(f);
    setenv("FAKE_NVML_SCRIPT", script, 1);
    setenv("JOBSCOPE_SYSFS_ROOT", nosys, 1);
    unsetenv("FAKE_NVML_LOG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("NVIDIA_VISIBLE_DEVICES");

    annotations ann;
    emitter em;
    if (fixed_annotations(&ann) != 0) return -1;
    emitter_init(&em, &ann);
    sink_options so;
    memset(&so, 0, sizeof so);
    so.format = FORMAT_AUTO;
    so.ann = &em.ann;
    char err[512];
    sink *out = sink_open(raw, &so, err, sizeof err);
    if (!out) {
        fprintf(stderr, "golden: %s\n", err);
        return -1;
    }
    emitter_add_sink(&em, out);
    compare_ann = &em.ann;
    emitter_add_sink(&em, &compare_sink); /* gpu.stats: both time-series paths */

    proctree *tree = proctree_new(NULL, PROCTREE_ATTACH, getpid(), 1000);
    tree_sample ts;
    if (!tree || proctree_sample(tree, &ts) != 0) {
        fprintf(stderr, "golden: proctree\n");
        return -1;
    }
    mset set;
    mset_init(&set);
    monitor_ctx ctx = {.emit = golden_emit,
                       .ann = &em.ann,
                       .monitor = &em,
                       .tree = tree,
                       .root = getpid(),
                       .run_mode = 1,
                       .interval = 1000,
                       .quiet = 1};
    gpu_source_config cfg = {.mode = 1, .graphics_procs = 1, .proc_util = 1, .pcie = 1};
    source *src = gpu_source_ops.open(&ctx, &cfg);
    if (!src) {
        fprintf(stderr, "golden: the GPU source did not open\n");
        return -1;
    }
    gpu_source_ops.start(src, &ctx);
    /* the sample hook adds nothing until every device was sampled once */
    jbuf b;
    jbuf_init(&b, 1024);
    for (int i = 0; i < 500; i++) {
        mset_clear(&set, EV_SAMPLE, 0);
        gpu_source_ops.sample(src, &ctx, &ts, &set);
        if (set.v[M_GPU_UTIL].set) break;
        usleep(10000);
    }
    gpu_source_ops.stop(src, &ctx);
    jbuf_putc(&b, '{');
    mset_write_json(&b, &set);
    jbuf_putc(&b, '}');
    mset_free(&set);
    gpu_source_ops.close(src);
    emitter_close(&em, 1);
    proctree_free(tree);

    /* every line, with the varying parts fixed, sorted */
    char *lines[64];
    int n = 0;
    lines[n++] = strndup(b.p, b.len);
    jbuf_free(&b);
    f = fopen(raw, "r");
    if (!f) {
        perror(raw);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0 && n < 64) {
        if (line[len - 1] == '\n') line[--len] = 0;
        char *l = malloc(65536);
        snprintf(l, 65536, "%s", line);
        lines[n++] = l;
    }
    free(line);
    fclose(f);
    char pid[32];
    snprintf(pid, sizeof pid, "\"pid\":(%d)[,}]", (int)getpid());
    jbuf o;
    jbuf_init(&o, 8192);
    for (int i = 0; i < n; i++) {
        mask(lines[i], "\"ts\":([0-9.]+)", "TS");
        mask(lines[i], "\"seq\":([0-9]+)", "SEQ");
        mask(lines[i], "\"sampling_duration\":([0-9.]+)", "DT");
        mask(lines[i], "\"sample_ts\":([0-9]+)", "T");
        mask(lines[i], "\"job_gpu_seconds\":([0-9.]+)", "S");
        mask(lines[i], pid, "PID");
    }
    qsort(lines, (size_t)n, sizeof lines[0], cmp_lines);
    for (int i = 0; i < n; i++) {
        jbuf_puts(&o, lines[i]);
        jbuf_putc(&o, '\n');
        free(lines[i]);
    }
    int rc = write_file(dir, "gpu.jsonl", o.p, o.len);
    jbuf_free(&o);
    remove(raw);
    remove(script);
    return rc;
}

/* A real run of argv under the monitor, with the GPU source (the fake NVML,
 * one device), a --limit that every sample exceeds (measure only: one
 * jobscope.limit event) and the custom-metrics socket: every event it makes
 * goes through the comparing sink.  Its events go to DIR/run.jsonl too. */
static int real_run(const char *dir, char **argv)
{
    char script[4096], out[4096];
    snprintf(script, sizeof script, "%s/nvml-run.script", dir);
    snprintf(out, sizeof out, "%s/run.jsonl", dir);
    remove(out);
    FILE *f = fopen(script, "w");
    if (!f) {
        perror(script);
        return -1;
    }
    fprintf(f, "devices 1\nutil 0 50 10\n");
    fclose(f);
    setenv("FAKE_NVML_SCRIPT", script, 1);
    char *tags[] = {"site=test", "comment=a, \"quoted\" value"};
    annotations ann; /* the monitor's own, made from the same inputs */
    if (annotations_init(&ann, "golden-run", tags, 2, 0) != 0) return -1;
    compare_ann = &ann;
    compared_events = 0;
    static const char *const limits[] = {"rss=1"};
    monitor_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.argv = argv;
    cfg.interval = 0.05;
    cfg.outputs[cfg.noutputs++] = out;
    cfg.sinks[cfg.nsinks++] = &compare_sink;
    cfg.job_id = "golden-run";
    cfg.tags = tags;
    cfg.ntags = 2;
    cfg.quiet = 1;
    cfg.no_serve = 1;
    cfg.flush_timeout = 1;
    cfg.kill_grace = 1;
    cfg.sampler = "procfs";
    cfg.limits.specs = limits;
    cfg.limits.nspecs = 1;
    cfg.limits.measure_only = 1;
    cfg.gpu.mode = 1;
    cfg.metrics.telemetry_level = 1;
    cfg.metrics.scan_output = 1;
    monitor *m = monitor_new(&cfg);
    if (!m) return -1;
    int rc = monitor_run(m);
    annotations_free(&ann);
    remove(script);
    printf("real run: %d events, exit status %d\n", compared_events, rc);
    return rc == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: golden DIR [CMD ARG...]\n");
        return 2;
    }
    const char *dir = argv[1];
    setenv("TZ", "UTC", 1);
    tzset();

    annotations ann;
    if (fixed_annotations(&ann) != 0) {
        fprintf(stderr, "golden: annotations\n");
        return 1;
    }
    emitter em;
    emitter_init(&em, &ann);
    static const struct {
        const char *file;
        enum sink_format fmt;
    } outs[] = {
        {"ev.jsonl", FORMAT_AUTO},
        {"ev.csv", FORMAT_AUTO},
        {"jr.jsonl", FORMAT_JOREMON_JSON},
        {"jr.csv", FORMAT_JOREMON_CSV},
    };
    sink_options so[4];
    for (int i = 0; i < 4; i++) {
        char path[4096], err[512];
        snprintf(path, sizeof path, "%s/%s", dir, outs[i].file);
        remove(path);
        memset(&so[i], 0, sizeof so[i]);
        so[i].format = outs[i].fmt;
        so[i].ann = &em.ann;
        sink *s = sink_open(path, &so[i], err, sizeof err);
        if (!s) {
            fprintf(stderr, "golden: %s\n", err);
            return 1;
        }
        emitter_add_sink(&em, s);
    }

    jbuf b;
    jbuf_init(&b, 2048);
    tree_sample smp[3];
    mset set[3], e;
    for (int i = 0; i < 3; i++) {
        fixed_sample(&smp[i], i);
        mset_init(&set[i]);
        tree_metrics_fill(&set[i], &smp[i], 4242, i ? "/usr/bin/python3" : NULL, 0);
        emitter_send(&em, &set[i], &b);
        compare_paths(b.p, b.len, &set[i], &em.ann);
    }
    mset_init(&e);
    for (int i = 0; i < 3; i++) {
        mset_clear(&e, source_names[i], 1700000005.5 + i);
        mset_put_raw(&e, source_events[i], strlen(source_events[i]));
        emitter_send(&em, &e, NULL);
    }
    mset_free(&e);
    jbuf_free(&b);
    /* the time-series encodings: the samples' from their value sets (as the
     * outputs make them), the other lines' from their JSON */
    tsconv_ann all, jp, hi;
    if (tsconv_ann_init(&all, em.ann.fragment, em.ann.fragment_len, NULL) != 0 ||
        tsconv_ann_init(&jp, em.ann.fragment, em.ann.fragment_len, "job_id,pid") != 0 ||
        tsconv_ann_init(&hi, em.ann.fragment, em.ann.fragment_len, "hostname,id") != 0) {
        fprintf(stderr, "golden: tsconv_ann_init\n");
        return 1;
    }
    emitter_close(&em, 1); /* frees the annotations */

    char path[4096];
    snprintf(path, sizeof path, "%s/ev.jsonl", dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    sbuf influx = {0}, tsdb = {0}, tsdb_some = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    for (int ln = 0; (n = getline(&line, &cap, f)) > 0; ln++) {
        if (line[n - 1] == '\n') line[--n] = 0;
        sbuf body = {0}, some = {0};
        int pts, spts;
        if (ln < 3) {
            if (tsconv_influx_set(&influx, &set[ln], &all, NULL) < 0 ||
                tsconv_influx_set(&influx, &set[ln], &jp, "job_id,pid") < 0) {
                fprintf(stderr, "golden: the set path declined sample %d\n", ln);
                return 1;
            }
            pts = tsconv_opentsdb_set(&body, &set[ln], &all, NULL);
            spts = tsconv_opentsdb_set(&some, &set[ln], &hi, "hostname,id");
        } else {
            tsconv_influx_line(&influx, line, (size_t)n, NULL);
            tsconv_influx_line(&influx, line, (size_t)n, "job_id,pid");
            pts = tsconv_opentsdb_points(&body, line, (size_t)n, NULL);
            spts = tsconv_opentsdb_points(&some, line, (size_t)n, "hostname,id");
        }
        if (pts > 0) {
            sbuf_putc(&body, ']');
            sbuf_put(&tsdb, body.p, body.len);
            sbuf_putc(&tsdb, '\n');
        }
        sbuf_free(&body);
        if (spts > 0) {
            sbuf_putc(&some, ']');
            sbuf_put(&tsdb_some, some.p, some.len);
            sbuf_putc(&tsdb_some, '\n');
        }
        sbuf_free(&some);
    }
    free(line);
    fclose(f);
    sbuf_put(&tsdb, tsdb_some.p ? tsdb_some.p : "", tsdb_some.len);
    int rc = write_file(dir, "influx.txt", influx.p ? influx.p : "", influx.len) |
             write_file(dir, "opentsdb.json", tsdb.p ? tsdb.p : "", tsdb.len);
    sbuf_free(&influx);
    sbuf_free(&tsdb);
    sbuf_free(&tsdb_some);
    tsconv_ann_free(&all);
    tsconv_ann_free(&jp);
    tsconv_ann_free(&hi);
    for (int i = 0; i < 3; i++) mset_free(&set[i]);
    if (cgroup_fields(dir) != 0) rc = 1;
    if (gpu_fields(dir) != 0) rc = 1;
    if (argc > 2 && real_run(dir, argv + 2) != 0) rc = 1;
    printf("tsconv paths: %d encodings compared, %d differ\n", paths_compared, paths_differ);
    if (paths_differ) rc = 1;
    return rc ? 1 : 0;
}
