/* batch_driver_slurm.c: the "slurm" driver. Each job is a Slurm batch job submitted with
 * sbatch --parsable from a generated #!/bin/sh script; every job of a run is named
 * "htc-<run id>" (cluster_run.h). Submissions are throttled (cluster_throttle.h) and run as
 * child processes on the loop, never blocking it; the state of every job of the run comes from
 * one squeue call per interval (cluster_poller.h); a job's exit status comes from its final
 * state in squeue and from the status file its script writes, and where Slurm keeps accounting,
 * from one sacct call per interval for the jobs that ended since the last (with their measured
 * wall time, CPU time and memory). scancel removes jobs, in one call per loop turn. Options and
 * behaviour: doc/batch-slurm.md and doc/batch-driver-interface.md. */
#include "batch_driver.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uthash.h>

#include "atomic_file.h"
#include "buffer.h"
#include "cluster_cmd.h"
#include "cluster_poller.h"
#include "cluster_run.h"
#include "cluster_throttle.h"
#include "debug.h"
#include "full_io.h"
#include "slurm_sacct.h"
#include "slurm_script.h"
#include "slurm_status.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

/* At most this many sbatch processes at once (each takes a few ms of the controller). */
#define SLURM_SBATCH_PARALLEL 8
/* A command that has not answered in this time is killed and counts as failed. */
#define SLURM_CMD_TIMEOUT_MS 120000
/* A job that ended is asked of sacct this many times (one per interval) before it is finished
 * without accounting: slurmctld sends the end of a job to slurmdbd a moment after squeue
 * shows it. */
#define SLURM_SACCT_TRIES 5
/* At most this many job ids in one sacct command line; the rest go in the next call. */
#define SLURM_SACCT_MAX_IDS 2000

enum sjob_state {
	SJ_WAITING,    /* not yet handed to sbatch (throttle) */
	SJ_SUBMITTING, /* sbatch is running */
	SJ_QUEUED,     /* Slurm has it; not seen running yet */
	SJ_RUNNING,    /* seen RUNNING */
	SJ_ENDED,      /* over in squeue, or gone from it: waiting for its accounting */
};

struct sjob {
	struct batch_job *job; /* NULL once completed (removed while sbatch runs) */
	struct slurm *s;
	int state;
	int64_t n;         /* our number for its files */
	char slurm_id[24]; /* "" until sbatch answers */
	int missing;       /* consecutive squeue answers without it */
	int have_final;    /* final holds squeue's final state (SJ_ENDED) */
	struct slurm_job_status final;
	int acct_tries;           /* sacct answers that did not have it over */
	struct slurm_acct acct;   /* from the latest sacct answer */
	struct sjob *prev, *next; /* the list of unfinished jobs, in submission order */
	UT_hash_handle hh;        /* by slurm_id, once submitted */
};

struct slurm {
	struct batch_queue *q;
	uv_loop_t *loop;
	struct slurm_submit_opts sub;
	char *tmp;
	char *work_dir; /* option work-dir; default <cwd>/.htc-slurm */
	char *run_dir;  /* work_dir/<run id>, made at the first submission */
	char cwd[PATH_MAX];
	char run_id[CLUSTER_RUN_ID_LEN + 1];
	char job_name[CLUSTER_JOB_NAME_LEN];
	int have_run;
	int64_t next_n;
	struct cluster_throttle throttle;
	struct cluster_poller *poller;
	double poll_interval_s;
	double status_timeout_s;
	int64_t status_fail_since_us; /* monotonic time of the first failed squeue in a row; 0 */
	int accounting;               /* option accounting: -1 auto, 0 no, 1 yes */
	int use_sacct;                /* decided by slurm_start */
	int sacct_busy;               /* a sacct call is running */
	int sacct_failing;            /* the last sacct call failed (warned once per streak) */
	int sacct_bad_warned;         /* a sacct line that cannot be read was named once */
	struct sjob *head, *tail;     /* unfinished jobs */
	struct sjob *by_id;
	int64_t unfinished; /* jobs handed to sbatch and not finished (for max-jobs) */
	int submitting;     /* sbatch processes running */
	uv_timer_t submit_timer;
	uv_timer_t cancel_timer;
	struct buffer cancel; /* Slurm ids to scancel, space-separated */
	int64_t cancel_n;
	int in_flight; /* commands whose callback has not come yet */
	int destroyed; /* destroy was called; freed when in_flight and handles reach 0 */
	int open_handles;
};

static void submit_some(struct slurm *s);
static void on_submit_timer(uv_timer_t *t);

static void list_add(struct slurm *s, struct sjob *j)
{
	j->prev = s->tail;
	j->next = NULL;
	if (s->tail)
		s->tail->next = j;
	else
		s->head = j;
	s->tail = j;
}

static void list_del(struct slurm *s, struct sjob *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		s->head = j->next;
	if (j->next)
		j->next->prev = j->prev;
	else
		s->tail = j->prev;
	j->prev = j->next = NULL;
}

static char *job_file(struct slurm *s, int64_t n, const char *suffix)
{
	return xasprintf("%s/job-%" PRId64 "%s", s->run_dir, n, suffix);
}

static void remove_files(struct slurm *s, int64_t n)
{
	static const char *const suffixes[] = {".sh", ".out", ".rc", ".rc.tmp"};
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		char *p = job_file(s, n, suffixes[i]);
		unlink(p);
		free(p);
	}
}

static void maybe_free(struct slurm *s)
{
	if (!s->destroyed || s->in_flight > 0 || s->open_handles > 0)
		return;
	buffer_free(&s->cancel);
	free(s->tmp);
	free(s->work_dir);
	free(s->run_dir);
	free(s);
}

static void on_handle_closed(uv_handle_t *h)
{
	struct slurm *s = h->data;
	s->open_handles--;
	maybe_free(s);
}

/* ---- cancellation: one scancel per loop turn for every id queued in it ---- */

static void on_scancel_done(const struct cluster_cmd_result *r, void *arg)
{
	char line[CLUSTER_CMD_LINE];
	struct slurm *s = arg;
	s->in_flight--;
	if (r->fail || r->exit_status != 0)
		warn("slurm: scancel failed: %s",
		     r->fail ? r->fail : cluster_cmd_first_line(r->err, line));
	maybe_free(s);
}

static void flush_cancel(uv_timer_t *t)
{
	struct slurm *s = t->data;
	if (s->cancel_n == 0)
		return;
	char **argv = str_split_ws(buffer_tostring(&s->cancel), NULL);
	size_t n = 0;
	while (argv[n])
		n++;
	char **full = xcalloc(n + 3, sizeof *full);
	full[0] = "scancel";
	for (size_t i = 0; i < n; i++)
		full[i + 1] = argv[i];
	debug(D_BATCH, "slurm: scancel %s", buffer_tostring(&s->cancel));
	if (cluster_cmd_run(s->loop, full, NULL, SLURM_CMD_TIMEOUT_MS, on_scancel_done, s) == 0)
		s->in_flight++;
	free(full);
	str_free_argv(argv);
	buffer_clear(&s->cancel);
	s->cancel_n = 0;
}

static void cancel_later(struct slurm *s, const char *slurm_id)
{
	buffer_printf(&s->cancel, "%s ", slurm_id);
	if (s->cancel_n++ == 0 && !s->destroyed)
		uv_timer_start(&s->cancel_timer, flush_cancel, 0, 0);
}

/* ---- completion ---- */

static void finish(struct slurm *s, struct sjob *j)
{
	if (j->slurm_id[0]) {
		HASH_DEL(s->by_id, j);
		s->unfinished--;
	}
	list_del(s, j);
	if (j->job) {
		j->job->driver_data = NULL;
		batch_job_complete(s->q, j->job);
	}
	free(j);
	/* the next submissions go from the loop, not from inside this call chain */
	if (!s->destroyed && !uv_is_active((uv_handle_t *)&s->submit_timer))
		uv_timer_start(&s->submit_timer, on_submit_timer, 0, 0);
}

/* Completes J with a driver-level error (the job did not run as asked). */
static void fail_job(struct slurm *s, struct sjob *j, const char *fmt, const char *what)
{
	if (j->job) {
		struct batch_result *r = &j->job->result;
		r->exited_normally = 0;
		r->exit_code = -1;
		r->end_us = time_now_us();
		batch_job_set_error(j->job, fmt, what);
	}
	finish(s, j);
}

/* The exit status the job's script recorded, or -1. */
static int read_rc_file(struct slurm *s, struct sjob *j)
{
	char *p = job_file(s, j->n, ".rc");
	FILE *f = fopen(p, "r");
	free(p);
	if (!f)
		return -1;
	int v = -1;
	if (fscanf(f, "%d", &v) != 1 || v < 0 || v > 255)
		v = -1;
	fclose(f);
	return v;
}

/* Completes J, whose result is filled, ended in STATE (REASON; WHY is NULL or an error). */
static void complete_job(struct slurm *s, struct sjob *j, const char *state, const char *reason,
                         const char *why)
{
	struct batch_result *r = &j->job->result;
	if (why)
		batch_job_set_error(j->job, "slurm: job %s ended %s (%s): %s", j->slurm_id, state,
		                    reason, why);
	if (r->exhausted)
		notice("slurm: job %s ended %s (%s): over its %s", j->slurm_id, state, reason,
		       (r->exhausted & BATCH_EXHAUSTED_MEMORY) ? "memory" : "wall time");
	if (why || r->exhausted || !r->exited_normally || r->exit_code != 0) {
		char *out = job_file(s, j->n, ".out");
		notice("slurm: job %s of %s: its output is in %s", j->slurm_id,
		       j->job->spec.tag ? j->job->spec.tag : "no tag", out);
		char *tail = full_read_tail(out, BATCH_TAIL_LINES, BATCH_TAIL_BYTES);
		if (tail)
			batch_job_set_stderr_tail(j->job, tail, strlen(tail));
		free(tail);
		free(out);
	} else {
		remove_files(s, j->n);
	}
	finish(s, j);
}

static void complete_from_status(struct slurm *s, struct sjob *j, const struct slurm_job_status *st)
{
	struct batch_result *r = &j->job->result;
	int64_t now = time_now_us();
	if (!r->start_us)
		r->start_us = now;
	r->end_us = now;
	r->measured.wall_time_s = (r->end_us - r->start_us + 500000) / 1000000;
	const char *why = slurm_result_from_status(st, read_rc_file(s, j), r);
	complete_job(s, j, st->state, st->reason, why);
}

/* Completes J from its final accounting (j->acct): exit status, times and measurements. */
static void complete_from_acct(struct slurm *s, struct sjob *j)
{
	const struct slurm_acct *a = &j->acct;
	struct batch_result *r = &j->job->result;
	int64_t now = time_now_us();
	if (!r->start_us)
		r->start_us = now;
	r->end_us = now;
	debug(D_BATCH,
	      "slurm: job %s: sacct: %s, exit %d:%d, elapsed %.0f s, CPU %.2f s, MaxRSS %lld KB, "
	      "ReqMem %lld MB, AllocCPUS %lld",
	      j->slurm_id, a->state, a->exit_code, a->exit_signal, a->elapsed_s, a->cpu_s,
	      (long long)a->max_rss_kb, (long long)a->req_mem_mb, (long long)a->alloc_cpus);
	const char *why = slurm_result_from_acct(j->slurm_id, a, read_rc_file(s, j), r);
	complete_job(s, j, a->state, "sacct", why);
}

/* ---- status: one squeue per interval for every job of the run ---- */

/* Completes J from the exit status its script recorded; 0, or -1 when there is none (the
 * job has not ended, or was killed before it could write it). */
static int complete_from_rc_file(struct slurm *s, struct sjob *j)
{
	int rc = read_rc_file(s, j);
	if (rc < 0)
		return -1;
	struct slurm_job_status st;
	memset(&st, 0, sizeof st);
	snprintf(st.id, sizeof st.id, "%s", j->slurm_id);
	snprintf(st.state, sizeof st.state, "%s", rc == 0 ? "COMPLETED" : "FAILED");
	snprintf(st.reason, sizeof st.reason, "status file");
	st.wait_status = -1;
	complete_from_status(s, j, &st);
	return 0;
}

/* Finishes an ended job without accounting: from squeue's final state when squeue showed it,
 * else from its status file, else as lost. */
static void finish_without_acct(struct slurm *s, struct sjob *j)
{
	if (j->have_final)
		complete_from_status(s, j, &j->final);
	else if (complete_from_rc_file(s, j) < 0)
		fail_job(s, j,
		         s->use_sacct
		             ? "slurm: job %s is no longer known to squeue, accounting has "
		               "no end for it, and its script recorded no exit status (it "
		               "was removed from Slurm, or its node lost it)"
		             : "slurm: job %s is no longer known to squeue and its script "
		               "recorded no exit status (it was removed from Slurm, or its "
		               "node lost it)",
		         j->slurm_id);
}

/* J is over in squeue (ST, its final line) or gone from it (ST NULL): with accounting, it
 * waits for the next sacct call; without, it is finished now as before. */
static void job_ended(struct slurm *s, struct sjob *j, const struct slurm_job_status *st)
{
	if (st) {
		j->final = *st;
		j->have_final = 1;
	}
	if (!s->use_sacct) {
		if (st)
			complete_from_status(s, j, st);
		else if (complete_from_rc_file(s, j) < 0 && j->missing >= 3)
			finish_without_acct(s, j);
		return;
	}
	if (j->state != SJ_ENDED) {
		j->state = SJ_ENDED;
		j->acct_tries = 0;
	}
}

static void on_sacct_done(const struct cluster_cmd_result *r, void *arg)
{
	char line[CLUSTER_CMD_LINE];
	struct slurm *s = arg;
	s->in_flight--;
	s->sacct_busy = 0;
	if (s->destroyed) {
		maybe_free(s);
		return;
	}
	if (r->fail || r->exit_status != 0) {
		if (!s->sacct_failing)
			warn(
			    "slurm: sacct failed: %s; the jobs that ended are finished from squeue "
			    "and their status files, without measurements",
			    r->fail ? r->fail : cluster_cmd_first_line(r->err, line));
		s->sacct_failing = 1;
		for (struct sjob *j = s->head, *nx; j; j = nx) {
			nx = j->next;
			if (j->state == SJ_ENDED && j->job)
				finish_without_acct(s, j);
		}
		return;
	}
	if (s->sacct_failing)
		notice("slurm: sacct answers again");
	s->sacct_failing = 0;
	for (struct sjob *j = s->head; j; j = j->next)
		if (j->state == SJ_ENDED)
			slurm_acct_init(&j->acct);
	const char *p = r->out;
	while (*p) {
		size_t n = strcspn(p, "\n");
		char *text = xstrndup(p, n);
		p += n;
		if (*p)
			p++;
		struct slurm_sacct_line l;
		int pr = slurm_parse_sacct_line(text, &l);
		if (pr < 0 && !s->sacct_bad_warned++)
			warn("slurm: sacct printed a line this driver cannot read: '%s' (further "
			     "ones are in the debug log)",
			     text);
		else if (pr < 0)
			debug(D_BATCH, "slurm: sacct line not read: '%s'", text);
		free(text);
		if (pr != 0)
			continue;
		struct sjob *j;
		HASH_FIND_STR(s->by_id, l.job_id, j);
		if (j && j->state == SJ_ENDED)
			slurm_acct_merge(&j->acct, &l);
	}
	for (struct sjob *j = s->head, *nx; j; j = nx) {
		nx = j->next;
		if (j->state != SJ_ENDED || !j->job)
			continue;
		if (slurm_acct_final(&j->acct))
			complete_from_acct(s, j);
		else if (++j->acct_tries >= SLURM_SACCT_TRIES) {
			debug(D_BATCH, "slurm: job %s: no end in accounting after %d sacct calls",
			      j->slurm_id, j->acct_tries);
			finish_without_acct(s, j);
		}
	}
}

/* One sacct for the jobs that ended (at most SLURM_SACCT_MAX_IDS), unless one is running. */
static void start_sacct(struct slurm *s)
{
	if (s->sacct_busy || !s->use_sacct)
		return;
	struct buffer ids;
	buffer_init(&ids, 0);
	int n = 0;
	for (struct sjob *j = s->head; j && n < SLURM_SACCT_MAX_IDS; j = j->next)
		if (j->state == SJ_ENDED)
			buffer_printf(&ids, "%s%s", n++ ? "," : "", j->slurm_id);
	if (n > 0) {
		char *argv[] = {"env",
		                "SLURM_TIME_FORMAT=%s",
		                "sacct",
		                "-n",
		                "-P",
		                "-j",
		                (char *)buffer_tostring(&ids),
		                "-o",
		                SLURM_SACCT_FORMAT,
		                NULL};
		debug(D_BATCH, "slurm: sacct for %d jobs", n);
		if (cluster_cmd_run(s->loop, argv, NULL, SLURM_CMD_TIMEOUT_MS, on_sacct_done, s) ==
		    0) {
			s->in_flight++;
			s->sacct_busy = 1;
		}
	}
	buffer_free(&ids);
}

/* Slurm cannot be asked any more: the jobs whose script recorded how they ended complete with
 * it (a rule that ran to its end is not lost), the others fail with WHAT. */
static void all_fail(struct slurm *s, const char *what)
{
	while (s->head) {
		struct sjob *j = s->head;
		if (j->state == SJ_ENDED && j->job) {
			finish_without_acct(s, j);
			continue;
		}
		if (j->slurm_id[0] && complete_from_rc_file(s, j) == 0)
			continue;
		if (j->slurm_id[0])
			cancel_later(s, j->slurm_id);
		fail_job(s, j, "slurm: %s", what);
	}
}

static void on_squeue_done(const struct cluster_cmd_result *r, void *arg)
{
	char line[CLUSTER_CMD_LINE];
	struct slurm *s = arg;
	s->in_flight--;
	if (s->destroyed) {
		maybe_free(s);
		return;
	}
	if (r->fail || r->exit_status != 0) {
		const char *said = r->fail ? r->fail : cluster_cmd_first_line(r->err, line);
		int64_t now = time_monotonic_us();
		if (s->status_fail_since_us == 0) {
			s->status_fail_since_us = now;
			warn("slurm: squeue failed: %s (retrying for %.0f s)", said,
			     s->status_timeout_s);
		}
		if ((double)(now - s->status_fail_since_us) / 1e6 >= s->status_timeout_s) {
			char *what =
			    xasprintf("Slurm did not answer squeue for %.0f s: %s; the jobs "
			              "still in Slurm are cancelled if it can be reached",
			              s->status_timeout_s, said);
			warn("%s", what);
			all_fail(s, what);
			free(what);
			s->status_fail_since_us = 0;
		}
		cluster_poller_done(s->poller, s->head != NULL);
		return;
	}
	if (s->status_fail_since_us)
		notice("slurm: squeue answers again");
	s->status_fail_since_us = 0;
	/* mark every submitted job missing until a line names it */
	for (struct sjob *j = s->head; j; j = j->next)
		if (j->slurm_id[0])
			j->missing++;
	const char *p = r->out;
	int bad = 0;
	while (*p) {
		size_t n = strcspn(p, "\n");
		char *text = xstrndup(p, n);
		p += n;
		if (*p)
			p++;
		struct slurm_job_status st;
		int pr = slurm_parse_squeue_line(text, &st);
		if (pr < 0 && !bad++)
			warn("slurm: squeue printed a line this driver cannot read: '%s'", text);
		free(text);
		if (pr != 0)
			continue;
		struct sjob *j;
		HASH_FIND_STR(s->by_id, st.id, j);
		if (!j || j->state == SJ_ENDED)
			continue;
		j->missing = 0;
		switch (slurm_state_phase(st.state)) {
		case SLURM_PENDING: break;
		case SLURM_RUNNING:
			if (j->state != SJ_RUNNING) {
				j->state = SJ_RUNNING;
				batch_job_started(s->q, j->job);
			}
			break;
		case SLURM_FINISHED: job_ended(s, j, &st); break;
		default:
			if (!bad++)
				warn("slurm: job %s is in state %s, which this driver does not "
				     "know; "
				     "it is waited for",
				     st.id, st.state);
		}
	}
	/* A job that has left squeue (the controller forgets finished jobs after MinJobAge, or
	 * lost it): its status file says how its command ended, if it ran. */
	for (struct sjob *j = s->head, *nx; j; j = nx) {
		nx = j->next;
		if (!j->slurm_id[0] || j->missing < 2 || j->state == SJ_ENDED)
			continue;
		job_ended(s, j, NULL);
	}
	start_sacct(s);
	cluster_poller_done(s->poller, s->head != NULL);
}

static void poll_status(void *arg)
{
	struct slurm *s = arg;
	char name[CLUSTER_JOB_NAME_LEN + 8];
	snprintf(name, sizeof name, "%s", s->job_name);
	char *argv[] = {"squeue", "-h", "-t", "all", "-n", name, "-O", SLURM_SQUEUE_FORMAT, NULL};
	if (cluster_cmd_run(s->loop, argv, NULL, SLURM_CMD_TIMEOUT_MS, on_squeue_done, s) == 0)
		s->in_flight++;
	else
		cluster_poller_done(s->poller, s->head != NULL);
}

/* ---- submission ---- */

static void on_sbatch_done(const struct cluster_cmd_result *r, void *arg)
{
	char line[CLUSTER_CMD_LINE];
	struct sjob *j = arg;
	struct slurm *s = j->s;
	s->in_flight--;
	s->submitting--;
	char id[24];
	int ok = !r->fail && r->exit_status == 0 && slurm_parse_sbatch(r->out, id) == 0;
	if (s->destroyed) {
		if (ok) {
			/* the queue is gone: this job must not outlive it */
			char *argv[] = {"scancel", id, NULL};
			struct cluster_cmd_result cr;
			cluster_cmd_run_sync(argv, 30000, &cr);
			cluster_cmd_result_free(&cr);
		}
		free(j);
		maybe_free(s);
		return;
	}
	if (!ok) {
		const char *said = r->fail               ? r->fail
		                   : r->exit_status != 0 ? cluster_cmd_first_line(r->err, line)
		                                         : cluster_cmd_first_line(r->out, line);
		if (!*said)
			said = "no reason given";
		if (j->job)
			warn("slurm: sbatch refused job %" PRId64 ": %s", j->job->id, said);
		fail_job(s, j, "slurm: sbatch refused the job: %s", said);
		return;
	}
	snprintf(j->slurm_id, sizeof j->slurm_id, "%s", id);
	HASH_ADD_STR(s->by_id, slurm_id, j);
	s->unfinished++;
	if (!j->job) { /* removed while sbatch ran */
		cancel_later(s, id);
		finish(s, j);
		return;
	}
	j->state = SJ_QUEUED;
	debug(D_BATCH, "slurm: job %" PRId64 " is Slurm job %s", j->job->id, id);
	cluster_poller_kick(s->poller);
	submit_some(s);
}

static int make_run_dir(struct slurm *s)
{
	if (!s->work_dir)
		s->work_dir = xasprintf("%s/.htc-slurm", s->cwd);
	s->run_dir = xasprintf("%s/%s", s->work_dir, s->run_id);
	if ((mkdir(s->work_dir, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(s->run_dir, 0755) < 0 && errno != EEXIST)) {
		int e = errno;
		warn("slurm: cannot make the directory of job scripts %s: %s", s->run_dir,
		     strerror(e));
		free(s->run_dir);
		s->run_dir = NULL;
		return -e;
	}
	return 0;
}

static void start_sbatch(struct slurm *s, struct sjob *j)
{
	const struct batch_job_spec *spec = &j->job->spec;
	char *script = job_file(s, j->n, ".sh");
	char *rc = job_file(s, j->n, ".rc");
	char *out = job_file(s, j->n, ".out");
	char *text = slurm_script_text(spec, s->cwd, rc);
	int w = atomic_file_write(script, text, strlen(text), 0755);
	free(text);
	if (w < 0) {
		fail_job(s, j, "slurm: cannot write the job script: %s", strerror(-w));
		goto out;
	}
	char *cmd = slurm_sbatch_command(&s->sub, spec, s->job_name, s->cwd, out, script);
	debug(D_BATCH, "slurm: job %" PRId64 ": %s", j->job->id, cmd);
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	j->state = SJ_SUBMITTING;
	j->job->result.submit_us = time_now_us();
	if (cluster_cmd_run(s->loop, argv, NULL, SLURM_CMD_TIMEOUT_MS, on_sbatch_done, j) == 0) {
		s->in_flight++;
		s->submitting++;
	} else {
		fail_job(s, j, "slurm: cannot run sbatch: %s", strerror(errno));
	}
	free(cmd);
out:
	free(script);
	free(rc);
	free(out);
}

static void on_submit_timer(uv_timer_t *t)
{
	submit_some(t->data);
}

static void submit_some(struct slurm *s)
{
	for (struct sjob *j = s->head, *nx; j; j = nx) {
		nx = j->next;
		if (j->state != SJ_WAITING)
			continue;
		if (s->submitting >= SLURM_SBATCH_PARALLEL)
			return;
		int64_t wait_ms = 0, now = time_monotonic_us();
		if (!cluster_throttle_may(&s->throttle, now, s->unfinished + s->submitting,
		                          &wait_ms)) {
			if (wait_ms >= 0 && !uv_is_active((uv_handle_t *)&s->submit_timer))
				uv_timer_start(&s->submit_timer, on_submit_timer, (uint64_t)wait_ms,
				               0);
			return;
		}
		cluster_throttle_take(&s->throttle, now);
		start_sbatch(s, j);
	}
}

/* ---- driver operations ---- */

static int slurm_create(struct batch_queue *q, void **state)
{
	struct slurm *s = xcalloc(1, sizeof *s);
	s->q = q;
	s->loop = batch_queue_loop(q);
	if (!getcwd(s->cwd, sizeof s->cwd)) {
		int e = errno;
		free(s);
		return -e;
	}
	cluster_throttle_init(&s->throttle, 50, 0);
	s->poll_interval_s = 1;
	s->status_timeout_s = 60;
	s->accounting = -1;
	buffer_init(&s->cancel, 0);
	s->poller = cluster_poller_new(s->loop, 1000, poll_status, s);
	uv_timer_init(s->loop, &s->submit_timer);
	uv_timer_init(s->loop, &s->cancel_timer);
	s->submit_timer.data = s->cancel_timer.data = s;
	*state = s;
	return 0;
}

static int parse_bool(const char *v, int *out)
{
	static const char *const yes[] = {"on", "yes", "true", "1"}, *const no[] = {"off", "no",
	                                                                            "false", "0"};
	for (int i = 0; i < 4; i++) {
		if (strcmp(v, yes[i]) == 0)
			return *out = 1, 0;
		if (strcmp(v, no[i]) == 0)
			return *out = 0, 0;
	}
	return -EINVAL;
}

/* Stops every job of run ID (a run that died): scancel by name, then waits until squeue no
 * longer shows any of them running or pending. Blocking: done once, before any job of this
 * run. */
static int stop_run(const char *id)
{
	char line[CLUSTER_CMD_LINE];
	char name[CLUSTER_JOB_NAME_LEN];
	cluster_job_name(id, name);
	char *cancel[] = {"scancel", "-n", name, NULL};
	struct cluster_cmd_result r;
	if (cluster_cmd_run_sync(cancel, 60000, &r) < 0 || r.exit_status != 0) {
		warn("slurm: cannot cancel the jobs %s of an earlier run: %s", name,
		     r.fail ? r.fail : cluster_cmd_first_line(r.err, line));
		cluster_cmd_result_free(&r);
		return -EIO;
	}
	cluster_cmd_result_free(&r);
	int64_t deadline = time_monotonic_us() + 120 * 1000000LL;
	for (;;) {
		char *list[] = {"squeue", "-h", "-n", name, "-t", "PD,R,CG,S,CF,RQ,RH,RS,SI,SO,ST",
		                "-o",     "%i", NULL};
		if (cluster_cmd_run_sync(list, 60000, &r) < 0 || r.exit_status != 0) {
			warn("slurm: cannot list the jobs %s of an earlier run: %s", name,
			     r.fail ? r.fail : cluster_cmd_first_line(r.err, line));
			cluster_cmd_result_free(&r);
			return -EIO;
		}
		int left = *str_trim((char *)r.out) != 0;
		cluster_cmd_result_free(&r);
		if (!left)
			break;
		if (time_monotonic_us() > deadline) {
			warn("slurm: jobs %s of an earlier run are still in Slurm after 120 s",
			     name);
			return -ETIMEDOUT;
		}
		usleep(200000);
	}
	notice("slurm: the jobs of the earlier run %s are gone", id);
	return 0;
}

static int slurm_set_option(void *state, const char *key, const char *value)
{
	struct slurm *s = state;
	int r = cluster_throttle_set_option(&s->throttle, key, value);
	if (r <= 0)
		return r;
	if (strcmp(key, "ignore-memory-spec") == 0)
		return parse_bool(value, &s->sub.ignore_memory);
	if (strcmp(key, "safe-submit") == 0)
		return parse_bool(value, &s->sub.safe_submit);
	if (strcmp(key, "tmp") == 0) {
		if (!*value)
			return -EINVAL;
		free(s->tmp);
		s->tmp = xstrdup(value);
		s->sub.tmp = s->tmp;
		return 0;
	}
	if (strcmp(key, "work-dir") == 0) {
		if (value[0] != '/')
			return -EINVAL;
		free(s->work_dir);
		s->work_dir = xstrdup(value);
		return 0;
	}
	if (strcmp(key, "poll-interval") == 0 || strcmp(key, "status-timeout") == 0) {
		double v;
		if (str_to_double(value, &v) < 0 || v < 0.05 || v > 86400)
			return -EINVAL;
		if (key[0] == 'p') {
			s->poll_interval_s = v;
			cluster_poller_set_interval(s->poller, (int64_t)(v * 1000));
		} else {
			s->status_timeout_s = v;
		}
		return 0;
	}
	if (strcmp(key, "accounting") == 0) {
		if (strcmp(value, "auto") == 0)
			s->accounting = -1;
		else if (parse_bool(value, &s->accounting) < 0)
			return -EINVAL;
		return 0;
	}
	if (strcmp(key, "stop-run") == 0) {
		if (!cluster_run_id_valid(value))
			return -EINVAL;
		return stop_run(value) < 0 ? -EIO : 0;
	}
	return -EINVAL;
}

/* Whether sacct answers (once, at start): with accounting=auto a cluster without accounting
 * (or whose slurmdbd does not answer, said in a warning) is used without it; with
 * accounting=yes that stops the start. */
static int detect_accounting(struct slurm *s)
{
	char line[CLUSTER_CMD_LINE];
	s->use_sacct = 0;
	if (s->accounting == 0)
		return 0;
	char *argv[] = {"sacct", "-n", "-P", "-j", "1", "-o", "JobID", NULL};
	struct cluster_cmd_result r;
	int rc = cluster_cmd_run_sync(argv, 60000, &r);
	const char *said = rc < 0 ? r.fail : cluster_cmd_first_line(r.err, line);
	int err = 0;
	if (rc == 0 && r.exit_status == 0) {
		s->use_sacct = 1;
		debug(D_BATCH, "slurm: accounting answers: exit codes and measurements from sacct");
	} else if (s->accounting == 1) {
		warn("slurm: accounting=yes, but sacct does not answer: %s", said);
		err = -EHOSTUNREACH;
	} else if (rc < 0) {
		/* no sacct at all (a site without the accounting client): as without accounting */
		debug(D_BATCH, "slurm: %s: jobs are followed without accounting", said);
	} else if (!strstr(said, "accounting storage is disabled")) {
		warn("slurm: Slurm's accounting does not answer (sacct said: %s); jobs are "
		     "followed without it",
		     said);
	}
	cluster_cmd_result_free(&r);
	return err;
}

/* sbatch, squeue and scancel must be there and the controller must answer, so that a
 * cluster that cannot be used is reported before anything runs. */
static int slurm_start(void *state)
{
	char line[CLUSTER_CMD_LINE];
	struct slurm *s = state;
	char *argv[] = {"squeue", "-h", "-o", "%i", "-j", "1", NULL};
	struct cluster_cmd_result r;
	int rc = cluster_cmd_run_sync(argv, 60000, &r);
	if (rc < 0) {
		warn("slurm: %s (is Slurm installed? squeue, sbatch and scancel must be in PATH)",
		     r.fail);
		cluster_cmd_result_free(&r);
		return rc;
	}
	/* "Invalid job id specified" is the controller answering */
	if (r.exit_status != 0 && !strstr(r.err, "Invalid job id")) {
		warn("slurm: the Slurm controller does not answer: squeue said: %s",
		     r.fail ? r.fail : cluster_cmd_first_line(r.err, line));
		cluster_cmd_result_free(&r);
		return -EHOSTUNREACH;
	}
	cluster_cmd_result_free(&r);
	return detect_accounting(s);
}

/* Where accounting answers, results carry measured cores and memory. */
static unsigned slurm_started_features(void *state)
{
	struct slurm *s = state;
	return s->use_sacct ? BATCH_FEATURE_MEASURE : 0;
}

static int slurm_submit(void *state, struct batch_job *job)
{
	struct slurm *s = state;
	if (!s->have_run) {
		if (cluster_run_id_from_env(job->spec.env, s->run_id) < 0) {
			int r = cluster_run_id_random(s->run_id);
			if (r < 0)
				return r;
		}
		cluster_job_name(s->run_id, s->job_name);
		int r = make_run_dir(s);
		if (r < 0)
			return r;
		s->have_run = 1;
		debug(D_BATCH, "slurm: jobs of this run are named %s", s->job_name);
	}
	struct sjob *j = xcalloc(1, sizeof *j);
	j->job = job;
	j->s = s;
	j->n = ++s->next_n;
	j->state = SJ_WAITING;
	job->driver_data = j;
	list_add(s, j);
	submit_some(s);
	return 0;
}

static int slurm_remove(void *state, struct batch_job *job)
{
	struct slurm *s = state;
	struct sjob *j = job->driver_data;
	if (!j)
		return -ENOENT;
	struct batch_result *r = &job->result;
	r->removed = 1;
	r->exited_normally = 0;
	r->signal = SIGKILL;
	r->end_us = time_now_us();
	job->driver_data = NULL;
	j->job = NULL;
	batch_job_complete(s->q, job);
	if (j->state == SJ_SUBMITTING)
		return 0; /* on_sbatch_done cancels it once its id is known */
	if (j->slurm_id[0] && j->state != SJ_ENDED)
		cancel_later(s, j->slurm_id);
	remove_files(s, j->n);
	finish(s, j);
	return 0;
}

static void slurm_destroy(void *state)
{
	char line[CLUSTER_CMD_LINE];
	struct slurm *s = state;
	s->destroyed = 1;
	/* every job of this run still in Slurm, in one scancel */
	for (struct sjob *j = s->head; j; j = j->next)
		if (j->slurm_id[0] && j->state != SJ_ENDED)
			cancel_later(s, j->slurm_id);
	if (s->cancel_n > 0) {
		buffer_printf(&s->cancel, "%s", "");
		char **ids = str_split_ws(buffer_tostring(&s->cancel), NULL);
		size_t n = 0;
		while (ids[n])
			n++;
		char **argv = xcalloc(n + 2, sizeof *argv);
		argv[0] = "scancel";
		for (size_t i = 0; i < n; i++)
			argv[i + 1] = ids[i];
		struct cluster_cmd_result r;
		if (cluster_cmd_run_sync(argv, 30000, &r) < 0 || r.exit_status != 0)
			warn("slurm: could not cancel %zu jobs of this run (%s): %s", n,
			     buffer_tostring(&s->cancel),
			     r.fail ? r.fail : cluster_cmd_first_line(r.err, line));
		cluster_cmd_result_free(&r);
		free(argv);
		str_free_argv(ids);
		buffer_clear(&s->cancel);
		s->cancel_n = 0;
	}
	/* a job whose sbatch has not answered yet may already be in Slurm: by the run's name
	 * (one that sbatch accepts after this is cancelled when its answer comes, if the loop
	 * still runs) */
	if (s->submitting > 0 && s->have_run) {
		struct passwd *pw = getpwuid(getuid());
		char *argv[] = {"scancel", "-n", s->job_name, "-u", pw ? pw->pw_name : "root",
		                NULL};
		struct cluster_cmd_result r;
		if (cluster_cmd_run_sync(argv, 30000, &r) < 0 || r.exit_status != 0)
			warn("slurm: could not cancel the jobs named %s: %s", s->job_name,
			     r.fail ? r.fail : cluster_cmd_first_line(r.err, line));
		cluster_cmd_result_free(&r);
	}
	while (s->head) {
		struct sjob *j = s->head;
		list_del(s, j);
		if (j->slurm_id[0])
			HASH_DEL(s->by_id, j);
		if (j->job)
			j->job->driver_data = NULL;
		if (j->state == SJ_SUBMITTING)
			j->job = NULL; /* freed by on_sbatch_done */
		else
			free(j);
	}
	if (s->run_dir) {
		rmdir(s->run_dir);
		rmdir(s->work_dir);
	}
	cluster_poller_delete(s->poller);
	s->open_handles = 2;
	uv_timer_stop(&s->submit_timer);
	uv_timer_stop(&s->cancel_timer);
	uv_close((uv_handle_t *)&s->submit_timer, on_handle_closed);
	uv_close((uv_handle_t *)&s->cancel_timer, on_handle_closed);
}

const struct batch_driver batch_driver_slurm = {
    .name = "slurm",
    .features = BATCH_FEATURE_ABSOLUTE_PATHS | BATCH_FEATURE_WALL_TIME | BATCH_FEATURE_REMOVE |
                BATCH_FEATURE_MEMORY_LIMIT | BATCH_FEATURE_RUN_LABEL,
    .create = slurm_create,
    .destroy = slurm_destroy,
    .set_option = slurm_set_option,
    .start = slurm_start,
    .started_features = slurm_started_features,
    .submit = slurm_submit,
    .remove = slurm_remove,
};
