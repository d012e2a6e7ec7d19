/* slurm_sacct.h: reading Slurm's accounting for the slurm driver: the lines of one batched
 * `sacct -j ID,ID,... -n -P -o SLURM_SACCT_FORMAT` (a job's own line and its step lines, .batch,
 * .extern, .0), merged into one record per job, and that record as a batch result with its
 * measured wall time, cores and memory (doc/batch-slurm.md, "Accounting"). Pure functions over
 * text, unit-tested without a cluster. */
#ifndef HTC_SLURM_SACCT_H
#define HTC_SLURM_SACCT_H

#include <stdint.h>

#include "batch_queue.h"

/* The sacct --format list the driver asks for; Start and End are read as seconds since the
 * epoch (the driver runs sacct with SLURM_TIME_FORMAT=%s), anything else there as unknown. */
#define SLURM_SACCT_FORMAT "JobID,State,ExitCode,Elapsed,TotalCPU,MaxRSS,ReqMem,AllocCPUS,Start,End"

/* What accounting says about one job, merged from its lines. -1 where unknown. */
struct slurm_acct {
	int have_job;       /* the job's own line was seen */
	char state[24];     /* the job's state without " by UID" (CANCELLED by 0 -> CANCELLED) */
	int exit_code;      /* ExitCode's code (the batch script's status) */
	int exit_signal;    /* ExitCode's signal, 0 when none */
	double elapsed_s;   /* Elapsed */
	double cpu_s;       /* TotalCPU: user + system CPU time of every step */
	int64_t max_rss_kb; /* largest MaxRSS of the batch and numbered steps (not .extern) */
	int64_t req_mem_mb; /* ReqMem, per node (a per-CPU request times AllocCPUS) */
	int64_t alloc_cpus; /* AllocCPUS */
	int64_t start_s;    /* Start, seconds since the epoch */
	int64_t end_s;      /* End */
};

/* One line of sacct -P output, split. */
struct slurm_sacct_line {
	char job_id[24]; /* "12" of "12.batch" */
	char step[24];   /* "batch", "extern", "0", or "" for the job's own line */
	char state[24];  /* without " by UID" */
	int exit_code, exit_signal;
	double elapsed_s, cpu_s;
	int64_t max_rss_kb, req_mem_mb, alloc_cpus, start_s, end_s;
	int req_mem_per_cpu; /* ReqMem ended in 'c' (older Slurm: per CPU) */
};

/* "[DD-][HH:]MM:SS[.fff]" (Elapsed, TotalCPU) into seconds. 0, or -EINVAL. */
int slurm_parse_duration(const char *text, double *seconds);

/* A size such as MaxRSS ("220K", "1.50G", "0") or ReqMem ("2000M", "4000Mc") into bytes; a
 * number without a unit is in BARE_UNIT bytes (MaxRSS: 1, ReqMem: 1 MB). *PER_CPU (may be
 * NULL) is set when the text ends in 'c'; 'n' (per node) and '?' (Slurm 22.05 for a job that
 * asked for no memory: per node or per CPU unknown) are accepted too. 0, or -EINVAL. */
int slurm_parse_size(const char *text, int64_t bare_unit, int64_t *bytes, int *per_cpu);

/* Parses one line of sacct -n -P -o SLURM_SACCT_FORMAT. Empty fields are unknown (-1), and
 * so is a ReqMem this parser cannot read (it is only reported).
 * Returns 0, 1 for a blank line, or -EINVAL for a line that is not such a line. */
int slurm_parse_sacct_line(const char *line, struct slurm_sacct_line *l);

/* Clears A to "nothing known yet". */
void slurm_acct_init(struct slurm_acct *a);

/* Merges line L (of A's job) into A: the job's own line gives the state, exit code, times,
 * CPU time, request and CPUs; step lines give MaxRSS (the largest, .extern left out). */
void slurm_acct_merge(struct slurm_acct *a, const struct slurm_sacct_line *l);

/* 1 when A holds the job's own line in a final state (the job is over in accounting). */
int slurm_acct_final(const struct slurm_acct *a);

/* Fills R (already batch_result_init'ed) for job ID from its final accounting A and, when
 * RC_FILE_STATUS >= 0, the status the job's script recorded (it wins for COMPLETED and FAILED,
 * as with squeue): the exit status or exhaustion as slurm_result_from_status decides, the
 * start and end times, measured wall time (Elapsed), CPU time (TotalCPU), cores (CPU time /
 * wall time, rounded, at least 1) and memory (MaxRSS, MB rounded up). Returns NULL or an
 * error text (static), as slurm_result_from_status. */
const char *slurm_result_from_acct(const char *id, const struct slurm_acct *a, int rc_file_status,
                                   struct batch_result *r);

#endif
