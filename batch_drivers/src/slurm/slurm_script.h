/* slurm_script.h: what the slurm driver hands to sbatch for one job: the job script (a
 * #!/bin/sh script that enters the working directory, sets the job's environment, runs the
 * rule's command with /bin/sh -c and records its exit status in a status file), and the
 * sbatch command line (resources from the job's allocation, the run's job name, then the user's
 * -B text as shell words, as CCTools passes it). doc/batch-slurm.md describes both. */
#ifndef HTC_SLURM_SCRIPT_H
#define HTC_SLURM_SCRIPT_H

#include "batch_queue.h"

struct slurm_submit_opts {
	int ignore_memory; /* --ignore-memory-spec: no --mem */
	int safe_submit;   /* --safe-submit-mode: no resources at all */
	const char *tmp;   /* --tmp VALUE, or NULL */
};

/* The job script for SPEC, run in CWD; its command's exit status goes to RC_PATH (written to
 * RC_PATH.tmp then renamed, so a reader sees it whole or not at all). Caller frees. */
char *slurm_script_text(const struct batch_job_spec *spec, const char *cwd, const char *rc_path);

/* The shell text that submits SCRIPT_PATH: "sbatch --parsable --job-name=NAME ... OPTIONS
 * 'SCRIPT'", where OPTIONS is SPEC's batch_options (the -B text) taken as shell words.
 * Caller frees. */
char *slurm_sbatch_command(const struct slurm_submit_opts *o, const struct batch_job_spec *spec,
                           const char *job_name, const char *cwd, const char *out_path,
                           const char *script_path);

#endif
