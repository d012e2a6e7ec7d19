/* slurm_status.h: reading Slurm's answers for the slurm driver: the job id sbatch --parsable
 * prints, the lines of the one squeue call that covers every job of a run, and what a job's
 * final state means as a batch result (doc/batch-slurm.md, "Status and exit codes"). Pure
 * functions over text, so they are unit-tested without a cluster. */
#ifndef HTC_SLURM_STATUS_H
#define HTC_SLURM_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "batch_queue.h"

/* The squeue --Format list the driver asks for, and the widths its parser expects. */
#define SLURM_SQUEUE_FORMAT "JobID:24,State:20,exit_code:12,Reason:200"

enum slurm_phase {
	SLURM_PENDING,  /* waiting in Slurm (PENDING, REQUEUED, SUSPENDED, CONFIGURING...) */
	SLURM_RUNNING,  /* RUNNING, or COMPLETING: its processes may still run */
	SLURM_FINISHED, /* a final state: the job is over */
	SLURM_UNKNOWN,  /* a state this driver does not know (said in the error) */
};

struct slurm_job_status {
	char id[24];      /* Slurm job id as printed */
	char state[24];   /* e.g. COMPLETED, FAILED, TIMEOUT, OUT_OF_MEMORY */
	int wait_status;  /* squeue's exit_code: a waitpid-style status; -1 unknown */
	char reason[128]; /* squeue's reason, e.g. NonZeroExitCode, TimeLimit */
};

/* Parses sbatch --parsable's output ("ID" or "ID;CLUSTER", then a newline) into ID (24 bytes).
 * Returns 0, or -EINVAL when it is not that. */
int slurm_parse_sbatch(const char *out, char id[24]);

/* Parses one line of squeue -h -O SLURM_SQUEUE_FORMAT. Returns 0, 1 for a blank line, or
 * -EINVAL for a line that is not such a line. */
int slurm_parse_squeue_line(const char *line, struct slurm_job_status *s);

/* What phase a Slurm job STATE is in. */
enum slurm_phase slurm_state_phase(const char *state);

/* Fills R (already batch_result_init'ed) for a FINISHED job from its status S and, when
 * RC_FILE_STATUS >= 0, the exit status the job's own script recorded (which wins for
 * COMPLETED and FAILED, as it is the command's). Returns NULL, or an error text (static) that
 * the caller sets as the result's error, e.g. for NODE_FAIL. */
const char *slurm_result_from_status(const struct slurm_job_status *s, int rc_file_status,
                                     struct batch_result *r);

#endif
