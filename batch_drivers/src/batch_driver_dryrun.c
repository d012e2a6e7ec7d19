/* batch_driver_dryrun.c: the "dryrun" driver, which runs nothing. It appends each job to a shell
 * script, quoted so that running the script with sh does what the real run would do, and
 * completes every job with exit 0 on the next loop turn, all pending jobs in one pass. */
#include "batch_driver.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "debug.h"
#include "timeutil.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

#define DRYRUN_DEFAULT_SCRIPT BATCH_DRYRUN_SCRIPT

struct dryrun_state {
	struct batch_queue *q;
	char *script;
	FILE *f;
	uv_idle_t *idle; /* heap-allocated: freed by its close callback */
	/* jobs written but not yet completed; a removed job leaves a NULL slot */
	struct batch_job **pending;
	size_t n_pending, cap_pending;
};

static void idle_closed(uv_handle_t *h)
{
	free(h);
}

static void complete_pending(uv_idle_t *idle);

static int dryrun_create(struct batch_queue *q, void **state)
{
	struct dryrun_state *st = xcalloc(1, sizeof *st);
	st->q = q;
	st->script = xstrdup(DRYRUN_DEFAULT_SCRIPT);
	st->idle = xmalloc(sizeof *st->idle);
	uv_idle_init(batch_queue_loop(q), st->idle);
	st->idle->data = st;
	*state = st;
	return 0;
}

static int dryrun_set_option(void *state, const char *key, const char *value)
{
	struct dryrun_state *st = state;
	if (!strcmp(key, "script")) {
		if (!value[0])
			return -EINVAL;
		free(st->script);
		st->script = xstrdup(value);
		return 0;
	}
	return -EINVAL;
}

/* Writes S single-quoted for sh: every ' becomes '\''. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (const char *p; (p = strchr(s, '\'')); s = p + 1) {
		fwrite(s, 1, (size_t)(p - s), f);
		fputs("'\\''", f);
	}
	fputs(s, f);
	fputc('\'', f);
}

/* Writes S inside a comment line: newlines become spaces. NULL is written as "-". */
static void put_comment(FILE *f, const char *s)
{
	if (!s) {
		fputc('-', f);
		return;
	}
	for (; *s; s++)
		fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static void put_files(FILE *f, const char *what, const struct batch_file *files, size_t n)
{
	if (!n)
		return;
	fprintf(f, "# %s:", what);
	for (size_t i = 0; i < n; i++) {
		fputc(' ', f);
		put_comment(f, files[i].local_name);
		if (files[i].remote_name && strcmp(files[i].remote_name, files[i].local_name)) {
			fputs("->", f);
			put_comment(f, files[i].remote_name);
		}
	}
	fputc('\n', f);
}

static int open_script(struct dryrun_state *st)
{
	st->f = fopen(st->script, "a");
	if (!st->f) {
		int err = errno;
		warn("dryrun: cannot open %s: %s", st->script, strerror(err));
		return -err;
	}
	struct stat sb;
	if (fstat(fileno(st->f), &sb) == 0 && sb.st_size == 0)
		fputs("#!/bin/sh\nset -e\n", st->f);
	return 0;
}

static void write_job(FILE *f, const struct batch_job *job)
{
	const struct batch_job_spec *s = &job->spec;
	const struct batch_resources *r = &s->resources;
	fprintf(f, "\n# job %" PRId64 ": tag=", job->id);
	put_comment(f, s->tag);
	fputs(" category=", f);
	put_comment(f, s->category);
	fprintf(f,
	        " cores=%" PRId64 " memory_mb=%" PRId64 " disk_mb=%" PRId64 " gpus=%" PRId64
	        " wall_time_s=%" PRId64 "\n",
	        r->cores, r->memory_mb, r->disk_mb, r->gpus, r->wall_time_s);
	if (s->batch_options) {
		fputs("# batch_options: ", f);
		put_comment(f, s->batch_options);
		fputc('\n', f);
	}
	put_files(f, "inputs", s->inputs, s->n_inputs);
	put_files(f, "outputs", s->outputs, s->n_outputs);
	fputs("(\n", f);
	for (size_t i = 0; s->env && s->env[i]; i++) {
		/* the generic layer checked NAME=value with NAME an identifier */
		const char *eq = strchr(s->env[i], '=');
		fprintf(f, "export %.*s=", (int)(eq - s->env[i]), s->env[i]);
		put_quoted(f, eq + 1);
		fputc('\n', f);
	}
	fputs("exec /bin/sh -c ", f);
	put_quoted(f, s->command);
	fputs("\n)\n", f);
}

static int dryrun_submit(void *state, struct batch_job *job)
{
	struct dryrun_state *st = state;
	if (!st->f) {
		int rc = open_script(st);
		if (rc < 0)
			return rc;
	}
	write_job(st->f, job);
	VEC_RESERVE(st->pending, st->cap_pending, st->n_pending + 1);
	job->driver_data = (void *)(uintptr_t)st->n_pending;
	st->pending[st->n_pending++] = job;
	uv_idle_start(st->idle, complete_pending);
	return 0;
}

static void complete_pending(uv_idle_t *idle)
{
	struct dryrun_state *st = idle->data;
	uv_idle_stop(idle);
	int failed = st->f && (fflush(st->f) != 0 || ferror(st->f));
	if (failed) {
		warn("dryrun: cannot write %s: %s", st->script, strerror(errno));
		clearerr(st->f);
	}
	int64_t now = time_now_us();
	for (size_t i = 0; i < st->n_pending; i++) {
		struct batch_job *job = st->pending[i];
		if (!job)
			continue;
		struct batch_result *r = &job->result;
		r->start_us = r->end_us = now;
		if (failed) {
			batch_job_set_error(job, "cannot write dryrun script %s", st->script);
			r->exit_code = 1;
		} else {
			r->exited_normally = 1;
			r->exit_code = 0;
		}
		batch_job_complete(st->q, job);
	}
	st->n_pending = 0;
}

static int dryrun_remove(void *state, struct batch_job *job)
{
	struct dryrun_state *st = state;
	size_t i = (size_t)(uintptr_t)job->driver_data;
	if (i >= st->n_pending || st->pending[i] != job)
		return -ENOENT;
	st->pending[i] = NULL;
	job->result.removed = 1;
	job->result.signal = SIGKILL;
	batch_job_complete(st->q, job);
	return 0;
}

static void dryrun_destroy(void *state)
{
	struct dryrun_state *st = state;
	if (st->f && fclose(st->f) != 0)
		warn("dryrun: cannot write %s: %s", st->script, strerror(errno));
	uv_idle_stop(st->idle);
	uv_close((uv_handle_t *)st->idle, idle_closed);
	free(st->pending);
	free(st->script);
	free(st);
}

const struct batch_driver batch_driver_dryrun = {
    .name = "dryrun",
    .features = BATCH_FEATURE_ABSOLUTE_PATHS | BATCH_FEATURE_VIRTUAL_OUTPUTS | BATCH_FEATURE_REMOVE,
    .create = dryrun_create,
    .set_option = dryrun_set_option,
    .submit = dryrun_submit,
    .remove = dryrun_remove,
    .destroy = dryrun_destroy,
};
