/* slurm_status.c: parsing sbatch and squeue output and mapping final job states onto batch
 * results (slurm_status.h). */
#include "slurm_status.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "stringtools.h"
#include "banned.h"

int slurm_parse_sbatch(const char *out, char id[24])
{
	size_t n = 0;
	while (out[n] >= '0' && out[n] <= '9')
		n++;
	if (n == 0 || n >= 24)
		return -EINVAL;
	const char *rest = out + n;
	if (*rest == ';')
		rest += strcspn(rest, "\n");
	while (*rest == '\n' || *rest == '\r' || *rest == ' ')
		rest++;
	if (*rest)
		return -EINVAL;
	memcpy(id, out, n);
	id[n] = 0;
	return 0;
}

/* Copies the next whitespace-separated word of *P into OUT (LEN bytes); 0, or -EINVAL when
 * there is none or it does not fit. */
static int word(const char **p, char *out, size_t len)
{
	const char *s = *p;
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strcspn(s, " \t\r\n");
	if (n == 0 || n >= len)
		return -EINVAL;
	memcpy(out, s, n);
	out[n] = 0;
	*p = s + n;
	return 0;
}

int slurm_parse_squeue_line(const char *line, struct slurm_job_status *s)
{
	memset(s, 0, sizeof *s);
	const char *p = line;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == 0 || *p == '\n')
		return 1;
	char code[16];
	if (word(&p, s->id, sizeof s->id) < 0 || word(&p, s->state, sizeof s->state) < 0 ||
	    word(&p, code, sizeof code) < 0)
		return -EINVAL;
	/* an array or heterogeneous job would print 12_3 or 12+0: the driver submits neither */
	for (const char *c = s->id; *c; c++)
		if (*c < '0' || *c > '9')
			return -EINVAL;
	for (const char *c = s->state; *c; c++)
		if (!((*c >= 'A' && *c <= 'Z') || *c == '_'))
			return -EINVAL;
	int64_t v;
	if (strcmp(code, "N/A") == 0)
		s->wait_status = -1;
	else if (str_to_int64(code, &v) == 0 && v >= 0 && v <= 0xffff)
		s->wait_status = (int)v;
	else
		return -EINVAL;
	if (word(&p, s->reason, sizeof s->reason) < 0)
		snprintf(s->reason, sizeof s->reason, "None");
	return 0;
}

enum slurm_phase slurm_state_phase(const char *state)
{
	static const char *const pending[] = {
	    "PENDING",       "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED", "CONFIGURING",
	    "RESV_DEL_HOLD", "RESIZING", "SIGNALING",    "STAGE_OUT",   "STOPPED",   NULL};
	static const char *const finished[] = {
	    "COMPLETED", "FAILED",   "CANCELLED", "TIMEOUT",      "OUT_OF_MEMORY", "NODE_FAIL",
	    "BOOT_FAIL", "DEADLINE", "PREEMPTED", "SPECIAL_EXIT", "REVOKED",       NULL};
	if (strcmp(state, "RUNNING") == 0 || strcmp(state, "COMPLETING") == 0)
		return SLURM_RUNNING;
	for (int i = 0; pending[i]; i++)
		if (strcmp(state, pending[i]) == 0)
			return SLURM_PENDING;
	for (int i = 0; finished[i]; i++)
		if (strcmp(state, finished[i]) == 0)
			return SLURM_FINISHED;
	return SLURM_UNKNOWN;
}

static void from_wait_status(int st, struct batch_result *r)
{
	if (WIFSIGNALED(st)) {
		r->exited_normally = 0;
		r->signal = WTERMSIG(st);
	} else {
		r->exited_normally = 1;
		r->exit_code = WEXITSTATUS(st);
	}
}

const char *slurm_result_from_status(const struct slurm_job_status *s, int rc_file_status,
                                     struct batch_result *r)
{
	const char *st = s->state;
	if (strcmp(st, "TIMEOUT") == 0 || strcmp(st, "DEADLINE") == 0) {
		r->exited_normally = 0;
		r->signal = SIGKILL;
		r->exhausted = BATCH_EXHAUSTED_WALL_TIME;
		return NULL;
	}
	if (strcmp(st, "OUT_OF_MEMORY") == 0) {
		r->exited_normally = 0;
		r->signal = SIGKILL;
		r->exhausted = BATCH_EXHAUSTED_MEMORY;
		return NULL;
	}
	if (strcmp(st, "COMPLETED") == 0 || strcmp(st, "FAILED") == 0) {
		if (rc_file_status >= 0) {
			/* the script records its command's $?: 128+N is a signal N */
			if (rc_file_status > 128 && rc_file_status < 128 + 65) {
				r->exited_normally = 0;
				r->signal = rc_file_status - 128;
			} else {
				r->exited_normally = 1;
				r->exit_code = rc_file_status;
			}
			return NULL;
		}
		if (s->wait_status >= 0) {
			from_wait_status(s->wait_status, r);
			return NULL;
		}
		r->exited_normally = 1;
		r->exit_code = strcmp(st, "COMPLETED") == 0 ? 0 : 1;
		return NULL;
	}
	r->exited_normally = 0;
	r->exit_code = -1;
	if (strcmp(st, "CANCELLED") == 0) {
		r->signal = SIGKILL;
		return "the job was cancelled outside makeflow (scancel, or the Slurm "
		       "administrator)";
	}
	if (strcmp(st, "NODE_FAIL") == 0 || strcmp(st, "BOOT_FAIL") == 0)
		return "its node failed";
	if (strcmp(st, "PREEMPTED") == 0)
		return "it was preempted";
	return "Slurm ended it";
}
