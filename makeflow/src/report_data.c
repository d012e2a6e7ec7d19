/* report_data.c: gathers the run report's data. The log is read with the incremental reader
 * (its callback sees every record, so every attempt of a rule is kept, not only the latest);
 * the workflow, the monitor summaries and the failed-rule directories add what the log does
 * not hold. See report_data.h. */
#include "report_data.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "htc_error.h"
#include "full_io.h"
#include "path.h"
#include "rmsummary.h"
#include "stringtools.h"
#include "vec.h"
#include "workflow_load.h"
#include "xalloc.h"

#include "banned.h"

/* A summary or INFO.json larger than this is not read (a real one is a few kB). */
#define REPORT_MAX_SMALL_FILE (1 << 20)
/* The tail of a kept stderr output: at most this many lines and bytes. */
#define REPORT_TAIL_LINES 20
#define REPORT_TAIL_BYTES 4096
#define REPORT_MAX_NOTES  64

static const char *const outcome_names[REPORT_N_OUTCOMES] = {
    "running", "complete", "failed", "exhausted", "aborted", "retried",
};
static const char *const outcome_colours[REPORT_N_OUTCOMES] = {
    "#f0ad4e", "#5cb85c", "#d9534f", "#8e44ad", "#999999", "#e8a0a0",
};

const char *report_outcome_name(int o)
{
	return o >= 0 && o < REPORT_N_OUTCOMES ? outcome_names[o] : "?";
}

const char *report_outcome_colour(int o)
{
	return o >= 0 && o < REPORT_N_OUTCOMES ? outcome_colours[o] : "#000";
}

void report_note(struct report *r, const char *fmt, ...)
{
	if (r->nnotes >= REPORT_MAX_NOTES)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s)
		VEC_PUSH(r->notes, r->nnotes, r->capnotes, s);
}

/* The latest attempt of RULE that no record has ended, or NULL. */
struct open_attempts {
	size_t *open; /* per rule: index + 1 of its open attempt, 0 when none */
	int64_t n;
};

struct load_ctx {
	struct report *r;
	struct open_attempts oa;
};

static void close_attempt(struct report *r, struct open_attempts *oa, int64_t rule, int64_t t,
                          int outcome)
{
	if (rule < 0 || rule >= oa->n || !oa->open[rule])
		return;
	struct report_attempt *a = &r->attempts[oa->open[rule] - 1];
	a->end_us = t;
	a->outcome = outcome;
	oa->open[rule] = 0;
}

static int on_record(const struct txlog_reader *rd, const struct txlog_record *rec, void *arg)
{
	struct load_ctx *c = arg;
	struct report *r = c->r;
	if (rec->type == 'S') {
		/* a new run: only the latest run's attempts are shown */
		r->nattempts = 0;
		free(c->oa.open);
		c->oa.n = rec->rules;
		c->oa.open = xcalloc((size_t)(rec->rules > 0 ? rec->rules : 1), sizeof *c->oa.open);
		return 0;
	}
	if (rec->type == 'E') {
		for (int64_t i = 0; i < c->oa.n; i++)
			close_attempt(r, &c->oa, i, rec->time_us, REPORT_ABORTED);
		return 0;
	}
	if (rec->type != 'N' || rec->node_id < 0 || rec->node_id >= c->oa.n)
		return 0;
	(void)rd;
	int64_t id = rec->node_id;
	switch (rec->state) {
	case TXLOG_NODE_RUNNING: {
		close_attempt(r, &c->oa, id, rec->time_us, REPORT_RETRIED);
		struct report_attempt a = {.rule = id, .start_us = rec->time_us};
		VEC_PUSH(r->attempts, r->nattempts, r->capattempts, a);
		c->oa.open[id] = r->nattempts;
		break;
	}
	case TXLOG_NODE_COMPLETE:
		close_attempt(r, &c->oa, id, rec->time_us, REPORT_COMPLETE);
		break;
	case TXLOG_NODE_FAILED:
		close_attempt(r, &c->oa, id, rec->time_us,
		              rec->failure && strcmp(rec->failure, "exhausted") == 0
		                  ? REPORT_EXHAUSTED
		                  : REPORT_FAILED);
		break;
	case TXLOG_NODE_ABORTED: close_attempt(r, &c->oa, id, rec->time_us, REPORT_ABORTED); break;
	default: break;
	}
	return 0;
}

static int read_log(struct report *r, char *err, size_t errlen)
{
	struct load_ctx c = {.r = r};
	struct txlog_reader *rd = txlog_reader_create(r->log_path, on_record, &c);
	int rc = txlog_reader_read_file(rd, r->log_path);
	if (rc == 0 && txlog_reader_lines(rd) == 0) {
		snprintf(err, errlen, "%s: no complete line: not a makeflow transaction log",
		         r->log_path);
		rc = HTC_ECORRUPT;
	} else if (rc < 0) {
		snprintf(err, errlen, "%s", txlog_reader_error(rd));
	}
	if (rc == 0) {
		const struct txlog_progress *p = txlog_reader_progress(rd);
		r->progress = *p;
		r->workflow_name = p->workflow ? xstrdup(p->workflow) : NULL;
		r->progress.workflow = r->workflow_name;
		r->progress.end_reason = NULL;
		r->nrules = p->rules;
		r->rules = xcalloc((size_t)(r->nrules > 0 ? r->nrules : 1), sizeof *r->rules);
		for (int64_t i = 0; i < r->nrules; i++) {
			const struct txlog_rule *tr = txlog_reader_rule(rd, i);
			struct report_rule *rr = &r->rules[i];
			rr->state = tr ? tr->state : 0;
			if (tr)
				snprintf(rr->failure, sizeof rr->failure, "%s", tr->failure);
			rr->category = "(unknown)";
			rr->exit_status = -1;
			for (int k = 0; k < REPORT_N_RES; k++)
				rr->alloc[k] = rr->peak[k] = -1;
		}
		if (txlog_reader_partial(rd))
			report_note(
			    r, "the log ends with an incomplete line (makeflow is running, or was "
			       "stopped while writing); it was left out");
		if (p->rules == 0)
			report_note(r, "the log records no run (no 'S' record)");
	}
	/* after an error no rule table was made: the attempts read before it are not counted */
	for (size_t i = 0; rc == 0 && i < r->nattempts; i++) {
		struct report_attempt *a = &r->attempts[i];
		r->rules[a->rule].attempts++;
		if (!r->t0_us || a->start_us < r->t0_us)
			r->t0_us = a->start_us;
		if (a->end_us > r->t1_us)
			r->t1_us = a->end_us;
	}
	if (!r->t0_us)
		r->t0_us = r->progress.start_us;
	if (r->progress.last_us > r->t1_us)
		r->t1_us = r->progress.last_us;
	free(c.oa.open);
	txlog_reader_delete(rd);
	return rc;
}

/* The workflow: as given, else as the log names it (relative to here, then beside the log). */
static void load_workflow(struct report *r, const struct report_input *in)
{
	char *cands[2] = {NULL, NULL};
	if (in->dag) {
		r->dag = in->dag;
		r->workflow_path = xstrdup(in->dag->filename);
		if (r->dag->nnodes != r->nrules) {
			report_note(r,
			            "the workflow has %d rules but the log's latest run had %lld: "
			            "categories, lines and the DAG are not shown",
			            r->dag->nnodes, (long long)r->nrules);
			r->dag = NULL;
			return;
		}
		goto fill;
	}
	if (in->workflow) {
		cands[0] = xstrdup(in->workflow);
	} else if (r->workflow_name) {
		cands[0] = xstrdup(r->workflow_name);
		if (!path_is_absolute(r->workflow_name)) {
			char *dir = path_dirname(r->log_path);
			char *base = path_basename(r->workflow_name);
			cands[1] = path_join(dir, base);
			free(dir);
			free(base);
		}
	} else {
		report_note(r, "the log names no workflow file: categories, lines and the DAG are "
		               "not shown");
		return;
	}
	char err[1024] = "";
	for (int i = 0; i < 2 && cands[i] && !r->dag; i++) {
		if (!path_exists(cands[i]))
			continue;
		struct workflow_source src = {.path = cands[i], .format = WORKFLOW_MAKE};
		if (in->src_template) {
			src = *in->src_template;
			src.path = cands[i];
		} else if (str_has_suffix(cands[i], ".json")) {
			src.format = WORKFLOW_JSON;
		}
		r->dag = workflow_load(&src, err, sizeof err);
		r->own_dag = r->dag != NULL;
		if (r->dag)
			r->workflow_path = xstrdup(cands[i]);
	}
	if (!r->dag && err[0])
		report_note(r,
		            "the workflow could not be loaded (%s): categories, lines and the DAG "
		            "are not shown",
		            err);
	else if (!r->dag)
		report_note(r,
		            "the workflow file %s was not found: categories, lines and the DAG are "
		            "not shown",
		            cands[0]);
	else if (r->dag->nnodes != r->nrules) {
		report_note(r,
		            "the workflow %s has %d rules but its latest run had %lld: it changed "
		            "since; categories, lines and the DAG are not shown",
		            r->workflow_path, r->dag->nnodes, (long long)r->nrules);
		dag_delete(r->dag);
		r->dag = NULL;
	}
	free(cands[0]);
	free(cands[1]);
	if (!r->dag)
		return;
fill:
	for (int64_t i = 0; i < r->nrules; i++) {
		const struct dag_node *n = r->dag->nodes[i];
		struct report_rule *rr = &r->rules[i];
		rr->category = n->category ? n->category->name : "default";
		rr->line = n->line;
		rr->command = n->command;
		rr->alloc[REPORT_MEM] = n->resources.memory >= 0 ? (double)n->resources.memory : -1;
		rr->alloc[REPORT_CORES] = n->resources.cores >= 0 ? (double)n->resources.cores : -1;
		rr->alloc[REPORT_DISK] = n->resources.disk >= 0 ? (double)n->resources.disk : -1;
	}
}

/* Reads a small file whole (NUL-terminated; caller frees), or NULL. */
static char *read_small(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = xmalloc(max + 1);
	size_t n = fread(buf, 1, max, f);
	buf[n] = 0;
	fclose(f);
	if (len)
		*len = n;
	return buf;
}

static void load_summaries(struct report *r, const char *dir)
{
	if (!dir) {
		report_note(r, "no resource measurements: run makeflow with --monitor DIR and give "
		               "DIR to makeflow_report");
		return;
	}
	if (!path_exists(dir)) {
		report_note(r, "the monitor directory %s does not exist: no resource measurements",
		            dir);
		return;
	}
	int bad = 0;
	for (int64_t i = 0; i < r->nrules; i++) {
		char name[64];
		snprintf(name, sizeof name, "resource-rule-%lld.summary", (long long)i);
		char *path = path_join(dir, name);
		char *text = read_small(path, REPORT_MAX_SMALL_FILE, NULL);
		if (!text) {
			free(path);
			continue;
		}
		struct rmsummary m;
		char err[256] = "";
		rmsummary_init(&m);
		if (rmsummary_from_json(text, &m, err, sizeof err) < 0) {
			if (bad++ < 5)
				report_note(r, "%s: %s (left out)", path, err);
		} else {
			struct report_rule *rr = &r->rules[i];
			rr->measured = 1;
			r->measured_rules++;
			rr->peak[REPORT_MEM] = m.v[RM_MEMORY];
			rr->peak[REPORT_CORES] = m.v[RM_CORES];
			rr->peak[REPORT_DISK] = m.v[RM_DISK];
			rr->wall_s = m.v[RM_WALL_TIME];
			rr->host = m.host ? xstrdup(m.host) : NULL;
			rr->exhausted = m.exit_type == RM_EXIT_LIMITS;
			if (m.exit_type == RM_EXIT_NORMAL)
				rr->exit_status = m.exit_status;
			else
				rr->signal = m.signal;
		}
		rmsummary_clear(&m);
		free(text);
		free(path);
	}
	if (bad > 5)
		report_note(r, "... and %d more summaries that do not parse", bad - 5);
	/* the summary of a rule's latest attempt says it exceeded its allocation, which the log
	 * may record as another failure */
	for (size_t i = r->nattempts; i-- > 0;) {
		struct report_attempt *a = &r->attempts[i];
		if (r->rules[a->rule].exhausted && a->outcome == REPORT_FAILED)
			a->outcome = REPORT_EXHAUSTED;
	}
	if (!r->measured_rules)
		report_note(r,
		            "the monitor directory %s holds no resource-rule-N.summary of this "
		            "run",
		            dir);
}

static int is_stderr_name(const char *name)
{
	return str_has_suffix(name, ".err") || str_has_suffix(name, ".stderr") ||
	       str_has_suffix(name, ".log");
}

static void load_failed(struct report *r, const char *base)
{
	for (int64_t i = 0; i < r->nrules; i++) {
		struct report_rule *rr = &r->rules[i];
		if (rr->state != TXLOG_NODE_FAILED)
			continue;
		char name[64];
		snprintf(name, sizeof name, "makeflow.failed.%lld", (long long)i);
		char *dir = path_join(base, name);
		char *info_path = path_join(dir, "INFO.json");
		char *text = read_small(info_path, REPORT_MAX_SMALL_FILE, NULL);
		if (text) {
			rr->failed_dir = xstrdup(dir);
			json_error_t je;
			json_t *info = json_loads(text, 0, &je);
			if (!info) {
				report_note(r, "%s:%d: %s", info_path, je.line, je.text);
			} else {
				json_t *ec = json_object_get(info, "exit_code");
				if (json_is_integer(ec) && rr->exit_status < 0)
					rr->exit_status = (int)json_integer_value(ec);
				/* what makeflow captured of the failed try's stderr (or output) */
				const char *st =
				    json_string_value(json_object_get(info, "stderr_tail"));
				if (st && *st)
					rr->stderr_tail = xstrdup(st);
				json_t *outs = json_object_get(info, "outputs");
				size_t k;
				json_t *o;
				json_array_foreach(outs, k, o)
				{
					const char *dn =
					    json_string_value(json_object_get(o, "dag_name"));
					if (!dn || !is_stderr_name(dn) || rr->stderr_tail)
						continue;
					char *kept = path_join(dir, dn);
					rr->stderr_tail = full_read_tail(kept, REPORT_TAIL_LINES,
					                                 REPORT_TAIL_BYTES);
					free(kept);
				}
				json_decref(info);
			}
			free(text);
		}
		free(info_path);
		free(dir);
	}
}

struct report *report_load(const struct report_input *in, char *err, size_t errlen)
{
	struct report *r = xcalloc(1, sizeof *r);
	r->log_path = xstrdup(in->log);
	if (read_log(r, err, errlen) < 0) {
		report_delete(r);
		return NULL;
	}
	load_workflow(r, in);
	load_summaries(r, in->monitor_dir);
	char *base = in->failed_dir ? xstrdup(in->failed_dir) : path_dirname(r->log_path);
	load_failed(r, base);
	free(base);
	return r;
}

void report_delete(struct report *r)
{
	if (!r)
		return;
	for (int64_t i = 0; i < r->nrules; i++) {
		free(r->rules[i].host);
		free(r->rules[i].stderr_tail);
		free(r->rules[i].failed_dir);
	}
	for (size_t i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	free(r->rules);
	free(r->attempts);
	if (r->own_dag)
		dag_delete(r->dag);
	free(r->log_path);
	free(r->workflow_path);
	free(r->workflow_name);
	free(r);
}
