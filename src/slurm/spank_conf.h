/* spank_conf.h — what the Slurm plugin (jobscope_spank.c) decides before it
 * starts a monitor: the site's settings (the arguments of its plugstack.conf
 * line), the user's `--jobscope=...` of sbatch/srun/salloc, and the command
 * line of the `jobscope attach` it starts for each task.
 *
 * Kept apart from the plugin and free of Slurm's headers so that unit tests
 * (tests/unit/test_slurm.c) check every rule without a cluster.  Nothing here
 * allocates: the plugin prepares everything before it forks inside
 * slurmstepd (a threaded process, where a child may only make async-signal-
 * safe calls until it executes). */
#ifndef JOBSCOPE_SPANK_CONF_H
#define JOBSCOPE_SPANK_CONF_H

#include <stddef.h>
#include <sys/types.h>

#define SPANK_CONF_MAX_OUTPUTS 8
#define SPANK_CONF_STR         512

typedef struct spank_conf {
    char jobscope[SPANK_CONF_STR]; /* the jobscope binary */
    char outputs[SPANK_CONF_MAX_OUTPUTS][SPANK_CONF_STR];
    int noutputs;
    double interval;     /* 0: jobscope's default */
    double min_interval; /* the shortest interval a user may ask for */
    int level;           /* --telemetry-level; -1: jobscope's default */
    int gpu;             /* -G */
    int enabled;         /* the site's default: every step, or only on request */
    int serve;           /* stream to the node's jobscope serve when one answers */
    int extern_step;     /* also watch the extern step (pam_slurm_adopt's ssh sessions) */
    char spool_dir[SPANK_CONF_STR];
    char log[SPANK_CONF_STR]; /* the monitors' stderr; "" = /dev/null, and -q */
} spank_conf;

/* The site's defaults, then plugstack.conf's words (`key=value`):
 *   jobscope=PATH  output=URL|PATH (repeatable)  interval=S  min_interval=S
 *   level=N  gpu=yes|no  default=on|off  serve=yes|no  extern=yes|no
 *   spool=DIR  log=PATH
 * 0, or -1 with a one-line reason in err (the plugin then logs it and
 * watches nothing: a bad site line never fails a job). */
void spank_conf_defaults(spank_conf *c, const char *jobscope);
int spank_conf_site(spank_conf *c, int argc, char *const *argv, char *err, size_t errlen);

/* The user's --jobscope=ITEM[,ITEM...]: off, on, interval=S, gpu, nogpu.
 * Applied on top of the site's settings; 0, or -1 with err (sbatch then
 * refuses the option with that message). */
int spank_conf_user(spank_conf *c, const char *arg, char *err, size_t errlen);

/* Who the task is, from Slurm: strings ("" when unknown). */
typedef struct spank_task_ids {
    char job_id[32];        /* the events' job_id: Slurm's unique id (SLURM_JOB_ID) */
    char raw_job_id[32];    /* Slurm's own unique id (sacct JobIDRaw) */
    char step[32];          /* 0, 1, ..., batch, extern, interactive */
    char task[16];          /* global task rank */
    char array_job_id[32];  /* "" unless an array element */
    char array_task_id[16]; /* "" unless an array element */
    char user[64], account[64], partition[64], cluster[64];
    char alloc_cores[128]; /* cores of the job on this node, Slurm's list form */
    char alloc_mem_mb[24]; /* memory of the job on this node, MB */
    char step_cores[128];  /* the same for the step */
    char step_mem_mb[24];
} spank_task_ids;

/* Builds `jobscope attach ...` for the task `pid` into argv (at most max
 * entries including the final NULL), its strings in buf.  status_fd: the
 * descriptor the exit status will be written to.  Returns the number of
 * arguments, or -1 when buf or argv is too small. */
int spank_conf_argv(const spank_conf *c, const spank_task_ids *ids, pid_t pid, int status_fd,
                    char **argv, int max, char *buf, size_t buflen);

#endif
