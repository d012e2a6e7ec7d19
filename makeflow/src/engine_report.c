/* engine_report.c: what the engine tells people: a live status line on a
 * terminal (or a plain line every few seconds otherwise), the list of failed
 * rules at the end, the CCTools text summary written with -f and the JSON
 * summary written with --summary-json. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "debug.h"
#include "engine_internal.h"
#include "htc_error.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

#define PLAIN_INTERVAL_MS 5000
#define TTY_INTERVAL_MS   250

/* Jobs the batch system says have started: for the local drivers when their
 * process runs, for wq when the master reports the task running. */
static int64_t started_jobs(struct engine *e)
{
	int64_t n = 0;
	if (e->queue)
		n += (int64_t)batch_queue_running(e->queue);
	if (e->local_queue)
		n += (int64_t)batch_queue_running(e->local_queue);
	return n < e->n_running ? n : e->n_running;
}

/* The live line: "queued" rules are submitted and not started yet, "waiting"
 * ones are not submitted (their inputs are not ready, or a limit holds them). */
static void format_line(struct engine *e, char *buf, size_t len)
{
	int64_t total = e->dag->nnodes;
	int64_t done = e->n_complete;
	int64_t waiting = total - done - e->n_failed - e->n_running - e->n_aborted;
	int64_t running = started_jobs(e);
	int64_t queued = e->n_running - running;
	double elapsed = (double)(time_now_us() - e->start_us) / 1e6;
	int64_t ran = done - e->n_recovered;
	double rate = elapsed > 0 ? (double)ran / elapsed : 0;
	char eta[32] = "-";
	if (rate > 0 && waiting + e->n_running > 0) {
		int64_t secs = (int64_t)((double)(waiting + e->n_running) / rate);
		time_format_duration(secs, eta, sizeof eta);
	}
	snprintf(buf, len,
	         "%lld/%lld done, %lld running, %lld queued, %lld waiting, %lld failed | %.1f "
	         "rules/s | ETA %s",
	         (long long)done, (long long)total, (long long)running, (long long)queued,
	         (long long)waiting, (long long)e->n_failed, rate, eta);
}

/* The last line, once nothing runs: what became of every rule and how long
 * it took, without a rate or an estimate. */
static void format_final(struct engine *e, char *buf, size_t len)
{
	int64_t total = e->dag->nnodes;
	int64_t ran = e->n_complete - e->n_recovered;
	int64_t not_run = total - e->n_complete - e->n_failed - e->n_aborted;
	char took[32];
	double elapsed = (double)(time_now_us() - e->start_us) / 1e6;
	if (elapsed < 60)
		snprintf(took, sizeof took, "%.2f s", elapsed);
	else
		time_format_duration((int64_t)elapsed, took, sizeof took);
	int n = snprintf(buf, len, "%lld/%lld done", (long long)e->n_complete, (long long)total);
	if (n > 0 && e->n_recovered > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " (%lld ran, %lld done before)",
		              (long long)ran, (long long)e->n_recovered);
	if (n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", %lld failed", (long long)e->n_failed);
	if (n > 0 && e->n_aborted > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", %lld removed", (long long)e->n_aborted);
	if (n > 0 && not_run > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", %lld not run", (long long)not_run);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " in %s", took);
}

/* force: 1 = print now; -1 = clear the live line (before other output). */
void engine_progress_update(struct engine *e, int force)
{
	if (e->opt->progress == ENGINE_PROGRESS_QUIET)
		return;
	if (force < 0) {
		if (e->tty && e->progress_shown) {
			fputs("\r\033[K", stderr);
			e->progress_shown = 0;
		}
		return;
	}
	char line[256];
	format_line(e, line, sizeof line);
	if (e->tty) {
		fprintf(stderr, "\r\033[K%s", line);
		e->progress_shown = 1;
	} else {
		fprintf(stderr, "makeflow: %s\n", line);
	}
	fflush(stderr);
}

static void on_progress(uv_timer_t *t)
{
	engine_progress_update(t->data, 1);
}

void engine_progress_start(struct engine *e)
{
	if (e->opt->progress == ENGINE_PROGRESS_QUIET)
		return;
	e->tty = e->opt->progress == ENGINE_PROGRESS_AUTO && isatty(STDERR_FILENO);
	unsigned ms = e->tty ? TTY_INTERVAL_MS : PLAIN_INTERVAL_MS;
	uv_timer_start(&e->progress_timer, on_progress, ms, ms);
}

void engine_progress_stop(struct engine *e)
{
	if (e->opt->progress == ENGINE_PROGRESS_QUIET)
		return;
	engine_progress_update(e, -1);
	char line[256];
	format_final(e, line, sizeof line);
	fprintf(stderr, "makeflow: %s\n", line);
}

void engine_report_dryrun(struct engine *e)
{
	const char *type = e->opt->batch_type ? e->opt->batch_type : "local";
	if (strcmp(type, "dryrun") != 0 || e->n_complete - e->n_recovered <= 0)
		return;
	char *script = engine_dryrun_script(e);
	int64_t n = e->n_complete - e->n_recovered;
	fprintf(stderr,
	        "makeflow: dry run: the commands of %lld rule%s were written to %s (nothing ran; "
	        "sh %s runs them)\n",
	        (long long)n, n == 1 ? "" : "s", script, script);
	free(script);
}

char *engine_dryrun_script(const struct engine *e)
{
	const char *script = NULL;
	for (const char *const *o = e->opt->batch_opts; o && *o; o++)
		if (strncmp(*o, "script=", 7) == 0)
			script = *o + 7;
	return script ? xstrdup(script) : xasprintf("%s.sh", e->dag->filename);
}

static void describe(struct engine *e, struct dag_node *n, char *buf, size_t len)
{
	struct node_extra *x = &e->extra[n->id];
	if (x->last_error)
		snprintf(buf, len, "%s", x->last_error);
	else if (x->last_signal)
		snprintf(buf, len, "killed by signal %d", x->last_signal);
	else
		snprintf(buf, len, "exit code %d", x->last_exit_code);
}

static int64_t count_blocked(struct engine *e)
{
	int64_t n = 0;
	for (int i = 0; i < e->dag->nnodes; i++)
		if (e->dag->nodes[i]->state == NODE_WAITING)
			n++;
	return n;
}

void engine_report_failures(struct engine *e)
{
	if (e->aborting)
		fprintf(
		    stderr,
		    "makeflow: workflow aborted: %lld rules complete, %lld removed while running\n",
		    (long long)e->n_complete, (long long)e->n_aborted);
	if (e->n_failed_list == 0)
		return;
	fprintf(stderr, "makeflow: %zu rule%s failed:\n", e->n_failed_list,
	        e->n_failed_list == 1 ? "" : "s");
	for (size_t i = 0; i < e->n_failed_list; i++) {
		struct dag_node *n = e->failed[i];
		char why[512];
		describe(e, n, why, sizeof why);
		fprintf(stderr, "  %s:%d: rule %d: %s (after %d attempt%s)\n", e->dag->filename,
		        n->line, n->id, why, e->extra[n->id].attempts,
		        e->extra[n->id].attempts == 1 ? "" : "s");
	}
	int64_t blocked = count_blocked(e);
	if (blocked)
		fprintf(stderr,
		        "makeflow: %lld rules did not run because a rule they depend on failed\n",
		        (long long)blocked);
	if (e->opt->log_path)
		fprintf(stderr, "makeflow: details are in the transaction log %s\n",
		        e->opt->log_path);
}

int engine_write_json_summary(struct engine *e)
{
	json_t *s = json_object();
	char when[64];
	const char *status = e->n_complete == e->dag->nnodes ? "complete"
	                     : e->aborting                   ? "aborted"
	                                                     : "failed";
	json_object_set_new(s, "workflow", json_string(e->dag->filename));
	json_object_set_new(s, "status", json_string(status));
	json_object_set_new(s, "batch_type",
	                    json_string(e->opt->batch_type ? e->opt->batch_type : "local"));
	time_format_iso8601(e->start_us, when, sizeof when);
	json_object_set_new(s, "start", json_string(when));
	int64_t end = time_now_us();
	time_format_iso8601(end, when, sizeof when);
	json_object_set_new(s, "end", json_string(when));
	json_object_set_new(s, "wall_time_s", json_real((double)(end - e->start_us) / 1e6));
	json_t *rules = json_object();
	json_object_set_new(rules, "total", json_integer(e->dag->nnodes));
	json_object_set_new(rules, "complete", json_integer(e->n_complete));
	json_object_set_new(rules, "recovered", json_integer(e->n_recovered));
	json_object_set_new(rules, "ran", json_integer(e->n_complete - e->n_recovered));
	json_object_set_new(rules, "failed", json_integer(e->n_failed));
	json_object_set_new(rules, "aborted", json_integer(e->n_aborted));
	json_object_set_new(rules, "not_run", json_integer(count_blocked(e)));
	json_object_set_new(s, "rules", rules);
	json_t *cats = engine_alloc_json(e);
	if (cats)
		json_object_set_new(s, "categories", cats);
	json_t *failed = json_array();
	for (size_t i = 0; i < e->n_failed_list; i++) {
		struct dag_node *n = e->failed[i];
		struct node_extra *x = &e->extra[n->id];
		char why[512];
		describe(e, n, why, sizeof why);
		json_t *f = json_object();
		json_object_set_new(f, "id", json_integer(n->id));
		json_object_set_new(f, "line", json_integer(n->line));
		json_object_set_new(f, "command", json_string(n->command ? n->command : ""));
		json_object_set_new(f, "exit_code", json_integer(x->last_exit_code));
		json_object_set_new(f, "signal", json_integer(x->last_signal));
		json_object_set_new(f, "attempts", json_integer(x->attempts));
		json_object_set_new(f, "reason", json_string(why));
		json_array_append_new(failed, f);
	}
	json_object_set_new(s, "failed_rules", failed);
	json_t *gc = json_object();
	json_object_set_new(gc, "files_deleted", json_integer(e->gc_files));
	json_object_set_new(gc, "bytes_deleted", json_integer(e->gc_bytes));
	json_object_set_new(s, "garbage_collection", gc);
	char *text = json_dumps(s, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(s);
	if (!text)
		return -ENOMEM;
	size_t len = strlen(text);
	char *withnl = xmalloc(len + 2);
	memcpy(withnl, text, len);
	withnl[len] = '\n';
	free(text);
	int r = atomic_file_write(e->opt->summary_json_path, withnl, len + 1, 0644);
	free(withnl);
	if (r < 0)
		fprintf(stderr, "makeflow: cannot write summary %s: %s\n",
		        e->opt->summary_json_path, htc_strerror(r));
	return r;
}

/* A size as the CCTools summary writes it: one decimal and a binary unit ("3.0", "4.9 K"). */
static void cctools_size(int64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = {"", " K", " M", " G", " T", " P", " E"};
	double v = (double)bytes;
	int i = 0;
	while (v >= 1024 && i < 6) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%.1f%s", v, unit[i]);
}

/* The files the CCTools summary lists as "Output files": those a rule of the workflow created
 * and another rule reads, that exist at the end, in the order of their rules. */
static void list_outputs(struct engine *e, FILE *f)
{
	int header = 0;
	for (int i = 0; i < e->dag->nnodes; i++) {
		struct dag_node *n = e->dag->nodes[i];
		if (n->state != NODE_COMPLETE)
			continue;
		for (int k = 0; k < n->noutputs; k++) {
			struct dag_file *df = n->outputs[k].file;
			int64_t size = 0, mtime = 0;
			int is_dir = 0;
			if (df->nconsumers == 0 || file_stat(df->name, &size, &mtime, &is_dir) < 0)
				continue;
			if (!header)
				fputs("Output files:\n", f);
			header = 1;
			char sz[32];
			cctools_size(size, sz, sizeof sz);
			fprintf(f, "\t%s\t%s\n", df->name, sz);
		}
	}
}

int engine_write_text_summary(struct engine *e)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -errno;
	for (const char *const *a = e->opt->argv; a && *a; a++)
		fprintf(f, "%s ", *a);
	fputc('\n', f);
	char when[64] = "";
	time_t now = time(NULL);
	struct tm tm;
	if (localtime_r(&now, &tm))
		strftime(when, sizeof when, "%a %b %e %H:%M:%S %Y", &tm);
	int64_t secs = (time_now_us() - e->start_us) / 1000000;
	int64_t total = e->dag->nnodes;
	int64_t not_run = total - e->n_complete - e->n_failed;
	fprintf(f, "Workflow completed:\t %s\n", when);
	fprintf(f, "Total runtime:\t\t %lld:%02lld:%02lld\n", (long long)(secs / 3600),
	        (long long)(secs / 60 % 60), (long long)(secs % 60));
	fprintf(f, "Workflow file:\t\t %s\n", e->dag->filename);
	fprintf(f, "Number of tasks:\t %lld\n", (long long)total);
	fprintf(f, "Completed tasks:\t %lld/%lld\n", (long long)e->n_complete, (long long)total);
	if (not_run > 0)
		fprintf(f, "Tasks not run:\t\t %lld/%lld\n", (long long)not_run, (long long)total);
	if (e->n_failed > 0) {
		fprintf(f, "Failed tasks:\t\t %lld/%lld\n", (long long)e->n_failed,
		        (long long)total);
		for (size_t i = 0; i < e->n_failed_list; i++)
			fprintf(f, "\t%s\n", e->failed[i]->command ? e->failed[i]->command : "");
	}
	list_outputs(e, f);
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	int r = atomic_file_write(e->opt->summary_path, text, len, 0644);
	free(text);
	if (r < 0)
		fprintf(stderr, "makeflow: cannot write summary %s: %s\n", e->opt->summary_path,
		        htc_strerror(r));
	return r;
}
