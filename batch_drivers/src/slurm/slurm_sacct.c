/* slurm_sacct.c: parsing sacct -P lines, merging a job's lines and turning its accounting into a
 * batch result (slurm_sacct.h). */
#include "slurm_sacct.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm_status.h"
#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

#define SACCT_FIELDS 10

/* A non-negative decimal integer of at most 9 digits from *P; -1 when there is none. */
static int64_t digits(const char **p)
{
	int64_t v = 0;
	int n = 0;
	while (**p >= '0' && **p <= '9' && n < 10) {
		v = v * 10 + (**p - '0');
		(*p)++;
		n++;
	}
	return n == 0 || n > 9 ? -1 : v;
}

int slurm_parse_duration(const char *text, double *seconds)
{
	const char *p = text;
	int64_t days = 0, part[3];
	int n = 0;
	const char *dash = strchr(text, '-');
	if (dash) {
		days = digits(&p);
		if (days < 0 || p != dash)
			return -EINVAL;
		p++;
	}
	for (;;) {
		if (n == 3)
			return -EINVAL;
		part[n] = digits(&p);
		if (part[n] < 0)
			return -EINVAL;
		n++;
		if (*p != ':')
			break;
		p++;
	}
	double frac = 0;
	if (*p == '.') {
		const char *f = ++p;
		int64_t v = digits(&p);
		if (v < 0)
			return -EINVAL;
		frac = (double)v / pow(10, (double)(p - f));
	}
	if (*p || (dash && n != 3))
		return -EINVAL;
	double s = 0;
	for (int i = 0; i < n; i++) {
		if (i > 0 && part[i] > 59)
			return -EINVAL;
		s = s * 60 + (double)part[i];
	}
	*seconds = (double)days * 86400 + s + frac;
	return 0;
}

int slurm_parse_size(const char *text, int64_t bare_unit, int64_t *bytes, int *per_cpu)
{
	char *end = NULL;
	if (!(*text >= '0' && *text <= '9'))
		return -EINVAL;
	double v = strtod(text, &end);
	if (end == text || !(v >= 0) || v > 1e18)
		return -EINVAL;
	double unit = (double)bare_unit;
	static const char units[] = "KMGTP";
	const char *u = *end ? strchr(units, *end) : NULL;
	if (u) {
		unit = pow(1024, (double)(u - units + 1));
		end++;
	}
	int pc = 0;
	if (*end == 'c' || *end == 'n' || *end == '?') {
		pc = *end == 'c';
		end++;
	}
	if (*end || v * unit > 9e18)
		return -EINVAL;
	*bytes = (int64_t)(v * unit + 0.5);
	if (per_cpu)
		*per_cpu = pc;
	return 0;
}

/* Copies STATE without a " by UID" suffix into OUT (24 bytes); 0, or -EINVAL. */
static int parse_state(const char *state, char out[24])
{
	size_t n = strcspn(state, " ");
	if (n == 0 || n >= 24)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!((state[i] >= 'A' && state[i] <= 'Z') || state[i] == '_'))
			return -EINVAL;
	if (state[n] && strncmp(state + n, " by ", 4) != 0)
		return -EINVAL;
	memcpy(out, state, n);
	out[n] = 0;
	return 0;
}

/* "CODE:SIGNAL" */
static int parse_exit(const char *text, int *code, int *sig)
{
	const char *p = text;
	int64_t c = digits(&p);
	if (c < 0 || c > 255 || *p != ':')
		return -EINVAL;
	p++;
	int64_t s = digits(&p);
	if (s < 0 || s > 255 || *p)
		return -EINVAL;
	*code = (int)c;
	*sig = (int)s;
	return 0;
}

/* An integer field (AllocCPUS, Start, End as seconds); -1 when empty or not a number
 * ("Unknown", "None", a date printed another way). */
static int64_t int_or_unknown(const char *text)
{
	int64_t v;
	if (!*text || str_to_int64(text, &v) < 0 || v < 0)
		return -1;
	return v;
}

int slurm_parse_sacct_line(const char *line, struct slurm_sacct_line *l)
{
	memset(l, 0, sizeof *l);
	size_t len = strcspn(line, "\r\n");
	if (len == 0)
		return 1;
	char *copy = xstrndup(line, len);
	char *f[SACCT_FIELDS + 1];
	int n = 0;
	char *p = copy;
	for (;;) {
		if (n > SACCT_FIELDS)
			goto bad;
		f[n++] = p;
		char *bar = strchr(p, '|');
		if (!bar)
			break;
		*bar = 0;
		p = bar + 1;
	}
	/* sacct -P ends each line with a separator only with --delimiter tricks; accept both */
	if (n == SACCT_FIELDS + 1 && *f[SACCT_FIELDS] == 0)
		n--;
	if (n != SACCT_FIELDS)
		goto bad;
	/* JobID: digits, then .step */
	const char *id = f[0];
	size_t idn = strspn(id, "0123456789");
	if (idn == 0 || idn >= sizeof l->job_id || (id[idn] && id[idn] != '.'))
		goto bad;
	memcpy(l->job_id, id, idn);
	if (id[idn] == '.') {
		const char *step = id + idn + 1;
		if (!*step || strlen(step) >= sizeof l->step)
			goto bad;
		snprintf(l->step, sizeof l->step, "%s", step);
	}
	if (parse_state(f[1], l->state) < 0)
		goto bad;
	l->exit_code = -1;
	if (*f[2] && parse_exit(f[2], &l->exit_code, &l->exit_signal) < 0)
		goto bad;
	l->elapsed_s = l->cpu_s = -1;
	if (*f[3] && slurm_parse_duration(f[3], &l->elapsed_s) < 0)
		goto bad;
	if (*f[4] && slurm_parse_duration(f[4], &l->cpu_s) < 0)
		goto bad;
	int64_t b;
	l->max_rss_kb = l->req_mem_mb = -1;
	if (*f[5]) {
		if (slurm_parse_size(f[5], 1, &b, NULL) < 0)
			goto bad;
		l->max_rss_kb = (b + 1023) / 1024;
	}
	/* ReqMem is only reported: a form this parser does not know leaves it unknown */
	if (*f[6] && slurm_parse_size(f[6], 1 << 20, &b, &l->req_mem_per_cpu) == 0)
		l->req_mem_mb = (b + (1 << 20) - 1) >> 20;
	l->alloc_cpus = int_or_unknown(f[7]);
	l->start_s = int_or_unknown(f[8]);
	l->end_s = int_or_unknown(f[9]);
	free(copy);
	return 0;
bad:
	free(copy);
	return -EINVAL;
}

void slurm_acct_init(struct slurm_acct *a)
{
	memset(a, 0, sizeof *a);
	a->exit_code = -1;
	a->elapsed_s = a->cpu_s = -1;
	a->max_rss_kb = a->req_mem_mb = a->alloc_cpus = a->start_s = a->end_s = -1;
}

void slurm_acct_merge(struct slurm_acct *a, const struct slurm_sacct_line *l)
{
	if (l->step[0]) {
		if (strcmp(l->step, "extern") != 0 && l->max_rss_kb > a->max_rss_kb)
			a->max_rss_kb = l->max_rss_kb;
		return;
	}
	a->have_job = 1;
	snprintf(a->state, sizeof a->state, "%s", l->state);
	a->exit_code = l->exit_code;
	a->exit_signal = l->exit_signal;
	a->elapsed_s = l->elapsed_s;
	a->cpu_s = l->cpu_s;
	a->alloc_cpus = l->alloc_cpus;
	a->req_mem_mb = l->req_mem_mb;
	if (l->req_mem_per_cpu && l->req_mem_mb >= 0 && l->alloc_cpus > 0)
		a->req_mem_mb = l->req_mem_mb * l->alloc_cpus;
	a->start_s = l->start_s;
	a->end_s = l->end_s;
	if (l->max_rss_kb > a->max_rss_kb)
		a->max_rss_kb = l->max_rss_kb;
}

int slurm_acct_final(const struct slurm_acct *a)
{
	return a->have_job && slurm_state_phase(a->state) == SLURM_FINISHED;
}

const char *slurm_result_from_acct(const char *id, const struct slurm_acct *a, int rc_file_status,
                                   struct batch_result *r)
{
	struct slurm_job_status st;
	memset(&st, 0, sizeof st);
	snprintf(st.id, sizeof st.id, "%s", id);
	snprintf(st.state, sizeof st.state, "%s", a->state);
	snprintf(st.reason, sizeof st.reason, "sacct");
	st.wait_status = -1;
	if (a->exit_code >= 0)
		st.wait_status = a->exit_signal > 0 ? a->exit_signal : a->exit_code << 8;
	const char *why = slurm_result_from_status(&st, rc_file_status, r);
	if (a->start_s > 0 && a->end_s >= a->start_s) {
		r->start_us = a->start_s * 1000000;
		r->end_us = a->end_s * 1000000;
	}
	if (a->elapsed_s >= 0) {
		r->measured.wall_time_s = (int64_t)llround(a->elapsed_s);
		/* the engine reads the wall time from start and end: make them say Elapsed */
		if (r->end_us > 0)
			r->start_us = r->end_us - (int64_t)llround(a->elapsed_s * 1e6);
	}
	if (a->cpu_s >= 0) {
		r->cpu_time_s = a->cpu_s;
		if (a->elapsed_s > 0) {
			int64_t c = (int64_t)llround(a->cpu_s / a->elapsed_s);
			r->measured.cores = c < 1 ? 1 : c;
		}
	}
	if (a->max_rss_kb >= 0)
		r->measured.memory_mb = (a->max_rss_kb + 1023) / 1024;
	return why;
}
