/* cluster_run.h: the identity of a run as cluster jobs carry it. Every job a run submits is
 * named (Slurm) or labelled (Kubernetes) "htc-<run id>", where the run id is the 32 hex digits
 * makeflow gives each run (HTC_RUN_ID in every job's environment, doc/batch-driver-interface.md
 * section 3b). A restarted makeflow knows from its log the ids of the runs that died, and stops
 * every job bearing one of their names; -c and an interrupt stop the jobs of the current run.
 * A program with no run id (work_queue_factory) gets a random one. */
#ifndef HTC_CLUSTER_RUN_H
#define HTC_CLUSTER_RUN_H

#include <stddef.h>

#define CLUSTER_RUN_ID_LEN 32
#define CLUSTER_JOB_PREFIX "htc-"
/* "htc-" + 32 hex digits + NUL */
#define CLUSTER_JOB_NAME_LEN (sizeof CLUSTER_JOB_PREFIX - 1 + CLUSTER_RUN_ID_LEN + 1)

/* 1 if S is a run id: exactly 32 lowercase hex digits. */
int cluster_run_id_valid(const char *s);
/* Copies the run id from a job's environment list (NULL-terminated "NAME=value" entries, may be
 * NULL) into OUT: the value of HTC_RUN_ID when it is a valid run id. Returns 0, or -ENOENT. */
int cluster_run_id_from_env(const char *const *env, char out[CLUSTER_RUN_ID_LEN + 1]);
/* A fresh random run id (getrandom). Returns 0 or -errno. */
int cluster_run_id_random(char out[CLUSTER_RUN_ID_LEN + 1]);
/* Writes "htc-<ID>" into OUT. */
void cluster_job_name(const char *id, char out[CLUSTER_JOB_NAME_LEN]);
/* The run id in a job NAME of the form above, into OUT; 0, or -EINVAL for any other name. */
int cluster_job_name_run(const char *name, char out[CLUSTER_RUN_ID_LEN + 1]);

#endif
