/* mesos_proto.h: the parts of the Mesos v1 scheduler protocol that are pure data: building call
 * bodies (jansson), reading an offer's resources, deciding whether a job fits an offer, task
 * ids that carry the run id, and mapping a task's final status onto a batch result
 * (doc/batch-mesos.md, "Design"). No I/O, so all of it is unit-tested directly. */
#ifndef HTC_MESOS_PROTO_H
#define HTC_MESOS_PROTO_H

#include <jansson.h>

#include "batch_queue.h"
#include "cluster_run.h"

/* "htc-" + run id + "-" + a number */
#define MESOS_TASK_ID_LEN (CLUSTER_JOB_NAME_LEN + 24)

struct mesos_res {
	double cpus, mem, disk; /* mem and disk in MB */
};

/* {"type": TYPE, "framework_id": {"value": FID}} (FID NULL: no framework_id). New reference. */
json_t *mesos_call_new(const char *type, const char *fid);
/* The SUBSCRIBE call of framework NAME run by USER, resuming framework FID when not NULL. */
json_t *mesos_call_subscribe(const char *name, const char *user, const char *fid,
                             double failover_timeout);
/* {"value": V} (new reference). */
json_t *mesos_id(const char *v);

/* Sums the SCALAR resources cpus, mem and disk of OFFER (an Offer object) into OUT. Returns 0,
 * or -EINVAL when OFFER has no id, agent_id or resources array. */
int mesos_offer_resources(const json_t *offer, struct mesos_res *out);
/* What a job with allocation R asks for: cores (1 when unset), memory (DEFAULT_MEM when unset),
 * disk (DEFAULT_DISK when unset; 0 asks for none). */
void mesos_job_need(const struct batch_resources *r, double default_mem, double default_disk,
                    struct mesos_res *out);
/* 1 when NEED fits in HAVE. */
int mesos_fits(const struct mesos_res *need, const struct mesos_res *have);
/* HAVE minus NEED. */
void mesos_take(struct mesos_res *have, const struct mesos_res *need);
/* The resources array of a TaskInfo for NEED (a zero disk is left out). New reference. */
json_t *mesos_resources_json(const struct mesos_res *need);

/* The shell text a task runs for SPEC (caller frees): enters CWD (the shared working
 * directory), gives the rule a TMPDIR inside $MESOS_SANDBOX, runs SPEC's command with /bin/sh -c
 * and removes that TMPDIR when it ends, exiting with the command's status. */
char *mesos_task_command(const struct batch_job_spec *spec, const char *cwd);
/* The TaskInfo of SPEC as task TASK_ID on AGENT_ID with resources NEED (new reference): its
 * environment is SPEC's env plus CORES, MEMORY and DISK when declared. */
json_t *mesos_task_info(const struct batch_job_spec *spec, const char *task_id,
                        const char *agent_id, const struct mesos_res *need, const char *cwd);

/* "htc-<RUN>-<N>" into OUT. */
void mesos_task_id(const char *run, long long n, char out[MESOS_TASK_ID_LEN]);
/* 1 when TASK_ID is a task of run RUN. */
int mesos_task_of_run(const char *task_id, const char *run);

enum mesos_phase {
	MESOS_PHASE_UNKNOWN, /* a state this driver does not know */
	MESOS_PHASE_WAITING, /* staging, starting */
	MESOS_PHASE_RUNNING,
	MESOS_PHASE_ENDED, /* terminal */
};
enum mesos_phase mesos_state_phase(const char *state);

/* Fills R's exited_normally, exit_code, signal and exhausted from a terminal status (STATE,
 * REASON and MESSAGE may be NULL but STATE). Returns NULL when the job ran its command to an
 * exit status, or a text (caller frees) saying why it did not, for result.error. */
char *mesos_result_from_status(const char *state, const char *reason, const char *message,
                               struct batch_result *r);

#endif
