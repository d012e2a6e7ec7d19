/* engine.c: the makeflow execution engine's core: rule states, the ready
 * queue, dispatch to batch queues, completion handling (output checks,
 * retries, failures), garbage collection and signals. Every event does work
 * proportional to the rules and files it touches, never a scan of the DAG. */
#include "engine.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <uthash.h>

#include "debug.h"
#include "engine_archive.h"
#include "engine_container.h"
#include "engine_internal.h"
#include "engine_longcmd.h"
#include "engine_nested.h"
#include "engine_wrapper.h"
#include "rmsummary.h"
#include "htc_error.h"
#include "path.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

struct job_map {
	int64_t key;
	struct dag_node *node;
	UT_hash_handle hh;
};

void engine_options_init(struct engine_options *o)
{
	memset(o, 0, sizeof *o);
	o->batch_type = "local";
	o->gc = ENGINE_GC_NONE;
	o->gc_count = 1;
	o->gc_size = (int64_t)1 << 30;
	o->allocation_mode = -1;
	o->report_interval_s = 30;
}

const char *engine_node_state_name(int state)
{
	switch (state) {
	case NODE_WAITING: return "waiting";
	case NODE_READY: return "ready";
	case NODE_RUNNING: return "running";
	case NODE_COMPLETE: return "complete";
	case NODE_FAILED: return "failed";
	case NODE_ABORTED: return "aborted";
	default: return "unknown";
	}
}

/* The one place a rule changes state; an impossible transition is a bug. */
static void set_state(struct engine *e, struct dag_node *n, int to)
{
	int from = n->state;
	int ok = 0;
	switch (from) {
	case NODE_WAITING: ok = (to == NODE_READY || to == NODE_COMPLETE); break;
	case NODE_READY: ok = (to == NODE_RUNNING || to == NODE_FAILED); break;
	case NODE_RUNNING:
		ok = (to == NODE_COMPLETE || to == NODE_FAILED || to == NODE_ABORTED ||
		      to == NODE_READY);
		break;
	default: ok = 0;
	}
	if (!ok) {
		fprintf(stderr, "makeflow: internal error: rule %d: %s -> %s\n", n->id,
		        engine_node_state_name(from), engine_node_state_name(to));
		abort();
	}
	debug(D_MAKEFLOW, "rule %d: %s -> %s", n->id, engine_node_state_name(from),
	      engine_node_state_name(to));
	n->state = to;
	(void)e;
}

static void ready_enqueue(struct engine *e, struct dag_node *n)
{
	if (e->ready_len == e->ready_cap) {
		size_t cap = e->ready_cap ? e->ready_cap * 2 : 1024;
		struct dag_node **r = xmalloc(cap * sizeof *r);
		for (size_t i = 0; i < e->ready_len; i++)
			r[i] = e->ready[(e->ready_head + i) % e->ready_cap];
		free(e->ready);
		free(e->parked);
		e->ready = r;
		e->ready_cap = cap;
		e->ready_head = 0;
	}
	e->ready[(e->ready_head + e->ready_len) % e->ready_cap] = n;
	e->ready_len++;
}

static void ready_push(struct engine *e, struct dag_node *n)
{
	set_state(e, n, NODE_READY);
	ready_enqueue(e, n);
}

static struct dag_node *ready_pop(struct engine *e)
{
	struct dag_node *n = e->ready[e->ready_head];
	e->ready_head = (e->ready_head + 1) % e->ready_cap;
	e->ready_len--;
	return n;
}

int file_stat(const char *name, int64_t *size, int64_t *mtime_ns, int *is_dir)
{
	struct stat st;
	if (stat(name, &st) < 0)
		return -errno;
	if (size)
		*size = (int64_t)st.st_size;
	if (mtime_ns)
		*mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (is_dir)
		*is_dir = S_ISDIR(st.st_mode);
	return 0;
}

/* Called after writing to the log: on the first record that could not be written (a full
 * disk), the run stops starting rules and waits for the running ones, so that it ends with
 * a log that a restart resumes from (doc/makeflow-log-format.md, "Durability"). Returns 0
 * while the log is whole, -1 once a record was lost. */
static int log_check(struct engine *e)
{
	int err = txlog_error(e->log);
	if (!err)
		return 0;
	if (!e->log_failed) {
		e->log_failed = 1;
		/* jobs the driver holds but has not started are taken back (logged as aborted
		 * if the disk allows); those running are waited for */
		int removed = 0;
		if (e->queue && batch_queue_waiting(e->queue) > 0) {
			int r = batch_queue_remove_waiting(e->queue);
			removed += r > 0 ? r : 0;
		}
		if (e->local_queue && batch_queue_waiting(e->local_queue) > 0) {
			int r = batch_queue_remove_waiting(e->local_queue);
			removed += r > 0 ? r : 0;
		}
		engine_progress_update(e, -1);
		fprintf(stderr,
		        "makeflow: cannot write the transaction log %s: %s; starting no more rules "
		        "(%d not yet started were removed) and waiting for the %lld running ones\n",
		        e->opt->log_path, strerror(-err), removed,
		        (long long)e->n_running - removed);
	}
	return -1;
}

/* An environment entry NAME=value a job may be given (a shell variable name). */
static int env_name_ok(const char *entry)
{
	const char *eq = strchr(entry, '=');
	if (!eq || eq == entry)
		return 0;
	for (const char *p = entry; p < eq; p++)
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (p > entry && *p >= '0' && *p <= '9')))
			return 0;
	return 1;
}

/* ---- garbage collection ------------------------------------------------ */

static int collectable(const struct engine *e, const struct dag_file *f)
{
	return e->opt->gc != ENGINE_GC_NONE && f->producer && !f->is_source &&
	       !f->is_final_output && !f->is_extra_input;
}

static void gc_collect(struct engine *e)
{
	for (size_t i = 0; i < e->n_collectable; i++) {
		struct dag_file *f = e->collectable[i];
		if (f->ref_count > 0)
			continue; /* needed again (a producer re-ran) */
		int64_t size = 0;
		if (file_stat(f->name, &size, NULL, NULL) < 0)
			continue;
		int r = path_rm_rf(f->name);
		if (r < 0) {
			warn("cannot delete intermediate file %s: %s", f->name, htc_strerror(r));
			continue;
		}
		debug(D_MAKEFLOW, "gc: deleted %s (%lld bytes)", f->name, (long long)size);
		if (e->log) {
			txlog_file(e->log, TXLOG_FILE_DELETED, -1, -1, f->name);
			log_check(e);
		}
		e->gc_files++;
		e->gc_bytes += size;
		engine_storage_deleted(e, f, size);
	}
	e->n_collectable = 0;
}

static void gc_add(struct engine *e, struct dag_file *f)
{
	VEC_PUSH(e->collectable, e->n_collectable, e->collectable_cap, f);
}

static void gc_maybe(struct engine *e)
{
	if (e->n_collectable == 0)
		return;
	switch (e->opt->gc) {
	case ENGINE_GC_REF_CNT:
	case ENGINE_GC_ALL:
		if ((int64_t)e->n_collectable >= (e->opt->gc_count > 0 ? e->opt->gc_count : 1))
			gc_collect(e);
		break;
	case ENGINE_GC_ON_DEMAND: {
		struct statvfs sv;
		if (statvfs(".", &sv) == 0 &&
		    (int64_t)sv.f_bavail * (int64_t)sv.f_frsize < e->opt->gc_size)
			gc_collect(e);
		break;
	}
	default: break;
	}
}

/* ---- submission ---------------------------------------------------------- */

static void node_fail(struct engine *e, struct dag_node *n);
static void node_complete(struct engine *e, struct dag_node *n);
static int outputs_ok(struct engine *e, struct dag_node *n);

/* N's outputs came from the archive: it completes without running. */
static void archive_restored(struct engine *e, struct dag_node *n)
{
	struct node_extra *x = &e->extra[n->id];
	if (e->log && txlog_node(e->log, n->id, TXLOG_NODE_RUNNING, x->key) < 0) {
		log_check(e);
		ready_enqueue(e, n);
		return;
	}
	x->attempts++;
	x->start_us = x->end_us = time_now_us();
	set_state(e, n, NODE_RUNNING);
	debug(D_MAKEFLOW, "rule %d (line %d): outputs restored from the archive", n->id, n->line);
	if (outputs_ok(e, n))
		node_complete(e, n);
	else
		node_fail(e, n);
}

static void prepare_output_dirs(const struct dag_node *n)
{
	for (int i = 0; i < n->noutputs; i++) {
		const char *name = n->outputs[i].file->name;
		const char *slash = strrchr(name, '/');
		if (!slash || slash == name)
			continue;
		char *dir = path_dirname(name);
		path_mkdir_p(dir, 0777);
		free(dir);
	}
}

static void submit(struct engine *e, struct dag_node *n)
{
	struct node_extra *x = &e->extra[n->id];
	int use_local = n->local && e->local_queue;
	struct batch_queue *q = use_local ? e->local_queue : e->queue;

	if (!(e->features & BATCH_FEATURE_VIRTUAL_OUTPUTS))
		prepare_output_dirs(n);

	/* a nested workflow: quoted command, args file as an extra input, the chain of
	 * parents in the environment (engine_nested.h) */
	struct engine_nested_job nj = {0};
	if (n->workflow) {
		char nerr[512];
		if (engine_nested_prepare(e->opt->self_exe, e->dag, n, &nj, nerr, sizeof nerr) <
		    0) {
			free(x->last_error);
			x->last_error = xstrdup(nerr);
			x->last_exit_code = -1;
			set_state(e, n, NODE_RUNNING);
			node_fail(e, n);
			return;
		}
	}
	struct batch_file *in = xcalloc((size_t)n->ninputs + 2, sizeof *in);
	struct batch_file *out = xcalloc((size_t)n->noutputs + 1, sizeof *out);
	for (int i = 0; i < n->ninputs; i++) {
		in[i].local_name = n->inputs[i].file->name;
		in[i].remote_name = n->inputs[i].remote_name;
	}
	size_t n_in = (size_t)n->ninputs;
	if (nj.args_file)
		in[n_in++].local_name = nj.args_file;
	for (int i = 0; i < n->noutputs; i++) {
		out[i].local_name = n->outputs[i].file->name;
		out[i].remote_name = n->outputs[i].remote_name;
	}
	int nenv = n->env ? n->env->count : 0;
	/* --send-environment: a remote job gets makeflow's environment, under the rule's own */
	int send = e->opt->send_environment && !use_local &&
	           !(e->features & BATCH_FEATURE_LOCAL_EXECUTION);
	size_t nsend = 0;
	for (char **p = environ; send && *p; p++)
		nsend++;
	const char **env = xcalloc(nsend + (size_t)nenv + 4, sizeof *env);
	size_t ne = 0;
	for (char **p = environ; send && *p; p++)
		if (env_name_ok(*p))
			env[ne++] = *p;
	for (int i = 0; i < nenv; i++)
		env[ne++] = n->env->vars[i];
	env[ne++] = e->run_env; /* the run id every job carries (doc/batch-driver-interface.md) */
	for (int i = 0; i < 2 && nj.env[i]; i++)
		env[ne++] = nj.env[i];
	char *wcmd =
	    engine_wrap_command(e->opt->wrappers, nj.command ? nj.command : n->command, n->id);
	const char *cmd = wcmd ? wcmd : nj.command;
	if (e->archive && !n->workflow &&
	    engine_archive_lookup(e->archive, n, cmd ? cmd : n->command)) {
		free(in);
		free(out);
		free(env);
		free(wcmd);
		engine_nested_clear(&nj);
		archive_restored(e, n);
		return;
	}
	char tag[64];
	snprintf(tag, sizeof tag, "rule %d (line %d)", n->id, n->line);

	struct batch_job_spec spec = {
	    .command = cmd ? cmd : n->command,
	    .inputs = in,
	    .n_inputs = n_in,
	    .outputs = out,
	    .n_outputs = (size_t)n->noutputs,
	    .env = env,
	    .resources = {n->resources.cores, n->resources.memory, n->resources.disk,
	                  n->resources.gpus, n->resources.wall_time},
	    .max_resources = {-1, -1, -1, -1, -1},
	    .category = n->category ? n->category->name : NULL,
	    .batch_options = n->batch_options ? n->batch_options : e->opt->batch_options,
	    .tag = tag,
	};

	/* a command too long for one argument of sh -c runs from a script */
	struct engine_longcmd lc = {0};
	int lr = 0;
	if (!(e->features & BATCH_FEATURE_VIRTUAL_OUTPUTS))
		lr = engine_longcmd_prepare(e->opt->log_path, n->id, spec.command,
		                            use_local ||
		                                (e->features & BATCH_FEATURE_LOCAL_EXECUTION),
		                            (e->features & BATCH_FEATURE_REMOTE_RENAME) != 0, &lc);
	if (lr < 0) {
		free(x->last_error);
		x->last_error = xasprintf("cannot write the script of its %zu-byte command: %s",
		                          strlen(spec.command), htc_strerror(lr));
		x->last_exit_code = -1;
		free(in);
		free(out);
		free(env);
		free(wcmd);
		engine_nested_clear(&nj);
		set_state(e, n, NODE_RUNNING);
		node_fail(e, n);
		return;
	}
	if (lr > 0) {
		spec.command = lc.command;
		if (lc.needs_input) {
			in[n_in].local_name = lc.script;
			in[n_in].remote_name = lc.input_remote;
			spec.n_inputs = ++n_in;
		}
	}
	x->long_cmd = lr > 0;

	struct engine_container ct;
	char *in_container = NULL;
	if (engine_container_of(e->opt, n, &ct)) {
		char *cerr = NULL;
		in_container = engine_container_apply(
		    e->opt, &ct, (e->features & BATCH_FEATURE_CONTAINERS) != 0, spec.command, &spec,
		    in, &n_in, e->opt->log_path, &cerr);
		if (cerr) {
			free(x->last_error);
			x->last_error = cerr;
			x->last_exit_code = -1;
			free(in);
			free(out);
			free(env);
			free(wcmd);
			engine_nested_clear(&nj);
			engine_longcmd_clear(&lc);
			set_state(e, n, NODE_RUNNING);
			node_fail(e, n);
			return;
		}
		if (in_container)
			spec.command = in_container;
	}
	char *wrapped = engine_alloc_prepare(e, n, spec.command, &spec);
	if (wrapped)
		spec.command = wrapped;

	if (e->log && txlog_node(e->log, n->id, TXLOG_NODE_RUNNING, x->key) < 0) {
		/* not started: a job the log does not show as running could not be found
		 * again by a restart */
		log_check(e);
		ready_enqueue(e, n);
		free(in);
		free(out);
		free(env);
		free(wcmd);
		engine_nested_clear(&nj);
		free(wrapped);
		free(in_container);
		engine_longcmd_clear(&lc);
		return;
	}
	x->attempts++;
	set_state(e, n, NODE_RUNNING);
	int64_t id = batch_queue_submit(q, &spec);
	free(in);
	free(out);
	free(env);
	free(wcmd);
	engine_nested_clear(&nj);
	free(wrapped);
	free(in_container);
	if (lr > 0)
		engine_longcmd_clear(&lc);
	if (id < 0) {
		if (x->long_cmd) {
			engine_longcmd_done(e->opt->log_path, n->id);
			x->long_cmd = 0;
		}
		free(x->last_error);
		if (id == HTC_ELIMIT) {
			/* only what the rule asks for: unset values are not the cause */
			char want[160] = "";
			size_t w = 0;
			static const char *const fmt[] = {"cores %lld", "memory %lld MB",
			                                  "disk %lld MB", "gpus %lld"};
			for (int k = 0; k < 4; k++) {
				int64_t v = *dag_resources_field(&n->resources, k);
				if (v < 0 || w >= sizeof want)
					continue;
				if (w)
					w += (size_t)snprintf(want + w, sizeof want - w, ", ");
				if (w < sizeof want)
					w += (size_t)snprintf(want + w, sizeof want - w, fmt[k],
					                      (long long)v);
			}
			x->last_error =
			    xasprintf("needs more resources than the %s queue can ever give (%s)",
			              batch_queue_type(q), want);
		} else
			x->last_error = xasprintf("cannot submit to %s: %s", batch_queue_type(q),
			                          htc_strerror((int)id));
		x->last_exit_code = -1;
		node_fail(e, n);
		return;
	}
	x->job_id = id;
	x->on_local_queue = use_local;
	struct job_map *m = xmalloc(sizeof *m);
	m->key = id * 2 + use_local;
	m->node = n;
	HASH_ADD(hh, e->jobs, key, sizeof m->key, m);
	e->n_running++;
	if (!use_local)
		e->n_submitted_remote++;
	debug(D_MAKEFLOW, "rule %d submitted as job %lld to %s", n->id, (long long)id,
	      batch_queue_type(q));
}

static void check_done(struct engine *e);

/* Allocation WARMUP: while N's category has no measurement, one rule of it runs (alone, at the
 * maximum) and the others wait for what it measures. */
static int held_for_warmup(struct engine *e, const struct dag_node *n)
{
	if (!engine_alloc_warming(e, n))
		return 0;
	for (struct job_map *m = e->jobs; m; m = m->hh.next)
		if (m->node->category == n->category)
			return 1;
	return 0;
}

static void dispatch(struct engine *e)
{
	/* parked rules get another look, behind those already ready */
	for (size_t i = 0; i < e->n_parked; i++)
		ready_enqueue(e, e->parked[i]);
	e->n_parked = 0;
	while (!e->aborting && !e->log_failed && e->ready_len > 0) {
		struct dag_node *n = e->ready[e->ready_head];
		if (held_for_warmup(e, n)) {
			VEC_PUSH(e->parked, e->n_parked, e->cap_parked, ready_pop(e));
			continue;
		}
		int use_local = n->local && e->local_queue;
		if (engine_storage_full(e, use_local ? e->local_queue : e->queue))
			break;
		if (!use_local) {
			int64_t limit = e->opt->max_remote_jobs;
			if (e->features & BATCH_FEATURE_LOCAL_EXECUTION) {
				/* The local driver admits by resources itself; keep a
				 * window of waiting jobs so it can backfill. */
				limit =
				    (e->opt->max_local_jobs > 0 ? e->opt->max_local_jobs : 64) + 64;
			}
			if (limit > 0 && e->n_submitted_remote >= limit)
				break;
			/* A sized rule gets its allocation when submitted: hold it back while
			 * the driver still has jobs waiting, so it is sized with the latest
			 * measurements rather than queued with an old allocation. */
			if ((e->features & BATCH_FEATURE_LOCAL_EXECUTION) &&
			    engine_alloc_is_sized(e, n) && batch_queue_waiting(e->queue) > 0)
				break;
		}
		ready_pop(e);
		submit(e, n);
	}
	check_done(e);
}

/* ---- completion ---------------------------------------------------------- */

static void describe_failure(const struct node_extra *x, char *buf, size_t len)
{
	if (x->last_error)
		snprintf(buf, len, "%s", x->last_error);
	else if (x->last_exhausted)
		snprintf(buf, len, "exceeded its resource allocation");
	else if (x->last_signal)
		snprintf(buf, len, "killed by signal %d (%s)", x->last_signal,
		         strsignal(x->last_signal));
	else
		snprintf(buf, len, "exit code %d", x->last_exit_code);
}

/* How the rule failed, as the log's one word (txlog_node_failed). */
static void failure_word(const struct node_extra *x, char *buf, size_t len)
{
	if (x->last_exhausted)
		snprintf(buf, len, "exhausted");
	else if (x->last_error)
		snprintf(buf, len, "error");
	else if (x->last_signal)
		snprintf(buf, len, "signal:%d", x->last_signal);
	else
		snprintf(buf, len, "exit:%d", x->last_exit_code);
}

/* The lines of TAIL, each as "  | LINE". */
static void print_tail(const char *tail)
{
	fprintf(stderr, "makeflow: the last lines it wrote:\n");
	for (const char *p = tail; *p;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		fprintf(stderr, "  | %.*s\n", len, p);
		p += len + (nl != NULL);
	}
}

static void node_fail(struct engine *e, struct dag_node *n)
{
	struct node_extra *x = &e->extra[n->id];
	set_state(e, n, NODE_FAILED);
	if (e->log) {
		char how[TXLOG_MAX_FAILURE + 1];
		failure_word(x, how, sizeof how);
		txlog_node_failed(e->log, n->id, x->key, how);
		log_check(e);
	}
	e->n_failed++;
	VEC_PUSH(e->failed, e->n_failed_list, e->failed_cap, n);
	char why[512];
	describe_failure(x, why, sizeof why);
	engine_progress_update(e, -1);
	fprintf(stderr, "makeflow: %s:%d: rule %d failed: %s\n", e->dag->filename, n->line, n->id,
	        why);
	/* a rule run here had its stderr on the terminal already */
	if (x->last_stderr && !x->on_local_queue && !(e->features & BATCH_FEATURE_LOCAL_EXECUTION))
		print_tail(x->last_stderr);
	engine_failed_keep(e, n);
}

static void node_complete(struct engine *e, struct dag_node *n)
{
	struct node_extra *x = &e->extra[n->id];
	if (e->log) {
		/* outputs_ok() has just stat()ed every output into e->ostat. The rule is
		 * recorded complete only after all its outputs were recorded: a restart
		 * trusts a completion only with its outputs' sizes and times. */
		int lost = 0;
		for (int i = 0; i < n->noutputs; i++)
			if (txlog_file(e->log, TXLOG_FILE_EXISTS, e->ostat[i].size,
			               e->ostat[i].mtime_ns, n->outputs[i].file->name) < 0)
				lost = 1;
		if (!lost)
			txlog_node(e->log, n->id, TXLOG_NODE_COMPLETE, x->key);
		log_check(e);
	}
	if (!(e->features & BATCH_FEATURE_VIRTUAL_OUTPUTS))
		for (int i = 0; i < n->noutputs; i++)
			engine_storage_created(e, n->outputs[i].file, e->ostat[i].size);
	set_state(e, n, NODE_COMPLETE);
	e->n_complete++;
	for (int i = 0; i < n->nchildren; i++) {
		struct dag_node *c = n->children[i];
		if (c->state != NODE_WAITING)
			continue;
		if (--c->unfinished_parents == 0)
			ready_push(e, c);
	}
	for (int i = 0; i < n->ninputs; i++) {
		struct dag_file *f = n->inputs[i].file;
		if (--f->ref_count == 0 && collectable(e, f))
			gc_add(e, f);
	}
	gc_maybe(e);
}

/* Checks a finished job's outputs; returns 1 if all are there. */
static int outputs_ok(struct engine *e, struct dag_node *n)
{
	struct node_extra *x = &e->extra[n->id];
	if (e->features & BATCH_FEATURE_VIRTUAL_OUTPUTS)
		return 1;
	VEC_RESERVE(e->ostat, e->ostat_cap, (size_t)n->noutputs);
	for (int i = 0; i < n->noutputs; i++) {
		const char *name = n->outputs[i].file->name;
		int64_t size = 0, mtime = 0;
		int is_dir = 0;
		if (file_stat(name, &size, &mtime, &is_dir) < 0) {
			free(x->last_error);
			x->last_error = xasprintf("exited 0 but did not create output '%s'", name);
			return 0;
		}
		if (e->opt->zero_length_is_missing && !is_dir && size == 0) {
			free(x->last_error);
			x->last_error = xasprintf("output '%s' is empty (-z)", name);
			return 0;
		}
		e->ostat[i].size = size;
		e->ostat[i].mtime_ns = mtime;
	}
	return 1;
}

static void decide(struct engine *e, struct dag_node *n, const struct batch_result *r,
                   struct rmsummary *measured, int may_wait);

static void on_complete(struct batch_queue *q, int64_t job_id, const struct batch_result *r,
                        void *arg)
{
	struct engine *e = arg;
	int64_t key = job_id * 2 + (q == e->local_queue && e->local_queue ? 1 : 0);
	struct job_map *m;
	HASH_FIND(hh, e->jobs, &key, sizeof key, m);
	if (!m) {
		warn("completion for unknown job %lld ignored", (long long)job_id);
		return;
	}
	struct dag_node *n = m->node;
	HASH_DEL(e->jobs, m);
	free(m);
	struct node_extra *x = &e->extra[n->id];
	e->n_running--;
	if (!x->on_local_queue)
		e->n_submitted_remote--;
	if (x->long_cmd) {
		engine_longcmd_done(e->opt->log_path, n->id);
		x->long_cmd = 0;
	}
	struct batch_result eff;
	struct rmsummary measured;
	rmsummary_init(&measured);
	engine_alloc_result(e, n, r, &eff, &measured);
	r = &eff;
	if (r->seccomp_denied)
		fprintf(stderr, "makeflow: %s:%d: rule %d: system calls refused by seccomp: %s\n",
		        e->dag->filename, n->line, n->id, r->seccomp_denied);
	x->start_us = r->start_us;
	x->end_us = r->end_us;
	x->last_exit_code = r->exit_code;
	x->last_signal = r->signal;
	x->last_exhausted = r->exhausted;
	free(x->last_error);
	x->last_error = r->error ? xstrdup(r->error) : NULL;
	free(x->last_stderr);
	x->last_stderr = r->stderr_tail ? xstrdup(r->stderr_tail) : NULL;
	if (r->exhausted && !r->error) {
		const struct batch_resources *a = &x->alloc;
		if (r->exhausted & BATCH_EXHAUSTED_WALL_TIME)
			x->last_error = xstrdup("exceeded its wall time limit");
		else if ((r->exhausted & BATCH_EXHAUSTED_MEMORY) && a->memory_mb >= 0)
			x->last_error =
			    xasprintf("exceeded its resource allocation (memory %lld MB)",
			              (long long)a->memory_mb);
		else if ((r->exhausted & BATCH_EXHAUSTED_DISK) && a->disk_mb >= 0)
			x->last_error = xasprintf("exceeded its resource allocation (disk %lld MB)",
			                          (long long)a->disk_mb);
		else
			x->last_error = xstrdup("exceeded its resource allocation");
	}

	decide(e, n, r, &measured, 1);
	rmsummary_clear(&measured);
	dispatch(e);
}

/* --wait-for-files-upto: a rule that exited 0 whose outputs are not visible yet (a shared file
 * system's delay) is checked again, every 100 ms doubling up to 1 s, until they appear or the
 * time is up. It counts as running meanwhile. */
struct output_wait {
	uv_timer_t timer;
	struct engine *e;
	struct dag_node *n;
	struct batch_result r; /* without its strings (none on this path) */
	struct rmsummary measured;
	int64_t deadline_us;
	uint64_t delay_ms;
};

static void output_wait_closed(uv_handle_t *h)
{
	free(h->data);
}

static void output_wait_tick(uv_timer_t *t)
{
	struct output_wait *w = t->data;
	struct engine *e = w->e;
	int ok = outputs_ok(e, w->n);
	if (!ok && !e->aborting && time_monotonic_us() < w->deadline_us) {
		w->delay_ms = w->delay_ms * 2 > 1000 ? 1000 : w->delay_ms * 2;
		uv_timer_start(t, output_wait_tick, w->delay_ms, 0);
		return;
	}
	e->n_running--;
	decide(e, w->n, &w->r, &w->measured, 0);
	rmsummary_clear(&w->measured);
	uv_close((uv_handle_t *)t, output_wait_closed);
	dispatch(e);
}

static int output_wait_start(struct engine *e, struct dag_node *n, const struct batch_result *r,
                             const struct rmsummary *measured)
{
	if (e->aborting)
		return 0;
	struct output_wait *w = xcalloc(1, sizeof *w);
	w->e = e;
	w->n = n;
	w->r = *r;
	w->r.error = NULL;
	rmsummary_init(&w->measured);
	rmsummary_copy(&w->measured, measured);
	w->deadline_us = time_monotonic_us() + (int64_t)e->opt->wait_for_files_s * 1000000;
	w->delay_ms = 100;
	uv_timer_init(&e->loop, &w->timer);
	w->timer.data = w;
	uv_timer_start(&w->timer, output_wait_tick, w->delay_ms, 0);
	e->n_running++;
	debug(D_MAKEFLOW, "rule %d: waiting up to %d s for its outputs", n->id,
	      e->opt->wait_for_files_s);
	return 1;
}

static void decide(struct engine *e, struct dag_node *n, const struct batch_result *r,
                   struct rmsummary *measured, int may_wait)
{
	struct node_extra *x = &e->extra[n->id];
	int exited_ok = r->exited_normally && r->exit_code == 0 && !r->exhausted && !r->error;
	if (may_wait && e->opt->wait_for_files_s > 0 && !r->removed && exited_ok &&
	    !outputs_ok(e, n) && output_wait_start(e, n, r, measured))
		return;
	if (r->removed) {
		set_state(e, n, NODE_ABORTED);
		if (e->log) {
			txlog_node(e->log, n->id, TXLOG_NODE_ABORTED, x->key);
			log_check(e);
		}
		e->n_aborted++;
	} else if (exited_ok && outputs_ok(e, n)) {
		free(x->last_error);
		x->last_error = NULL;
		engine_alloc_record(e, n, r, measured, 1);
		if (e->archive)
			engine_archive_store(e->archive, n);
		node_complete(e, n);
	} else if (!e->aborting && r->exhausted && !r->error) {
		/* A re-run with more resources is not one of the -r retries; an explicit limit
		 * that was exceeded is a permanent failure (the same allocation would fail
		 * again). */
		if (engine_alloc_exhausted(e, n, r, measured)) {
			x->attempts--;
			set_state(e, n, NODE_READY);
			ready_enqueue(e, n);
		} else {
			node_fail(e, n);
		}
	} else if (!e->aborting && x->attempts <= e->opt->retries) {
		char why[512];
		describe_failure(x, why, sizeof why);
		notice("rule %d (line %d) failed (%s); retrying, attempt %d of %d", n->id, n->line,
		       why, x->attempts + 1, e->opt->retries + 1);
		engine_alloc_record(e, n, r, measured, 0);
		set_state(e, n, NODE_READY);
		ready_enqueue(e, n);
	} else {
		engine_alloc_record(e, n, r, measured, -1);
		node_fail(e, n);
	}
}

/* ---- run loop ------------------------------------------------------------- */

static void close_cb(uv_handle_t *h)
{
	(void)h;
}

static void close_walk_cb(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, close_cb);
}

static void check_done(struct engine *e)
{
	if (e->finished || e->n_running > 0)
		return;
	if (e->ready_len > 0 && !e->aborting && !e->log_failed && !e->storage_stuck)
		return;
	e->finished = 1;
	uv_timer_stop(&e->progress_timer);
	uv_timer_stop(&e->sync_timer);
	uv_signal_stop(&e->sig_int);
	uv_signal_stop(&e->sig_term);
	uv_stop(&e->loop);
}

static void on_sync_timer(uv_timer_t *t)
{
	struct engine *e = t->data;
	txlog_sync(e->log);
	log_check(e);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct engine *e = s->data;
	if (e->aborting) {
		fprintf(stderr, "\nmakeflow: second signal (%s): exiting now\n", strsignal(signum));
		batch_queue_delete(e->queue);
		batch_queue_delete(e->local_queue);
		if (e->log) {
			txlog_end(e->log, 2, "killed");
			txlog_close(e->log);
		}
		_exit(1);
	}
	e->aborting = 1;
	engine_progress_update(e, -1);
	fprintf(stderr, "\nmakeflow: received %s: removing %lld running jobs (again to exit now)\n",
	        strsignal(signum), (long long)e->n_running);
	if (e->queue)
		batch_queue_remove_all(e->queue);
	if (e->local_queue)
		batch_queue_remove_all(e->local_queue);
	check_done(e);
}

struct txlog_lock *engine_lock(const char *log_path)
{
	long holder = 0;
	struct txlog_lock *l = txlog_lock(log_path, &holder);
	if (l)
		return l;
	if (errno == EWOULDBLOCK && holder > 0)
		fprintf(stderr,
		        "makeflow: the workflow is already being run: its transaction log %s is "
		        "locked by process %ld (%s.lock)\n",
		        log_path, holder, log_path);
	else if (errno == EWOULDBLOCK)
		fprintf(stderr,
		        "makeflow: the workflow is already being run: its transaction log %s is "
		        "locked by another process (%s.lock)\n",
		        log_path, log_path);
	else
		fprintf(stderr, "makeflow: cannot lock the transaction log %s (%s.lock): %s\n",
		        log_path, log_path, strerror(errno));
	return NULL;
}

static void engine_free(struct engine *e)
{
	struct job_map *m, *tmp;
	HASH_ITER(hh, e->jobs, m, tmp)
	{
		HASH_DEL(e->jobs, m);
		free(m);
	}
	if (e->extra) {
		for (int i = 0; i < e->dag->nnodes; i++) {
			free(e->extra[i].last_error);
			free(e->extra[i].last_stderr);
		}
	}
	free(e->extra);
	free(e->ready);
	free(e->parked);
	free(e->collectable);
	free(e->failed);
	free(e->ostat);
	for (struct dag_file *f = e->dag->files; f; f = f->hh.next) {
		free(f->engine);
		f->engine = NULL;
	}
}

int engine_run(struct dag *d, const struct engine_options *o)
{
	/* a nested makeflow stops with its parent (engine_nested.h) */
	int guarded = engine_nested_guard();
	if (guarded >= 0)
		return guarded;
	struct engine eng;
	struct engine *e = &eng;
	memset(e, 0, sizeof *e);
	e->dag = d;
	e->opt = o;
	e->exit_status = 1;
	e->start_us = time_now_us();
	uv_loop_init(&e->loop);
	int rr = txlog_new_run_id(e->run_id);
	if (rr < 0) {
		fprintf(stderr, "makeflow: cannot make a run id: %s\n", strerror(-rr));
		goto out;
	}
	snprintf(e->run_env, sizeof e->run_env, "HTC_RUN_ID=%.32s", e->run_id);

	const char *type = o->batch_type ? o->batch_type : "local";
	e->queue = batch_queue_create(&e->loop, type, on_complete, e);
	if (!e->queue) {
		char why[512];
		if (batch_queue_type_check(type, why, sizeof why) == 0)
			snprintf(why, sizeof why, "the %s batch queue could not be created: %s",
			         type, strerror(errno));
		fprintf(stderr, "makeflow: %s\n", why);
		goto out;
	}
	e->features = batch_queue_features(e->queue);
	if (engine_apply_options(e, e->queue, 0) < 0)
		goto out;
	if (batch_queue_start(e->queue) < 0) {
		fprintf(stderr,
		        "makeflow: the %s batch queue could not start (above); nothing was run\n",
		        type);
		goto out;
	}
	e->features = batch_queue_features(e->queue); /* with what start found */
	if (!(e->features & (BATCH_FEATURE_LOCAL_EXECUTION | BATCH_FEATURE_VIRTUAL_OUTPUTS))) {
		e->local_queue = batch_queue_create(&e->loop, "local", on_complete, e);
		if (!e->local_queue || engine_apply_options(e, e->local_queue, 1) < 0)
			goto out;
	}
	if (engine_prepare(e) < 0 || engine_check_features(e) < 0 || engine_check_sources(e) < 0 ||
	    engine_alloc_init(e) < 0)
		goto out;

	e->extra = xcalloc((size_t)d->nnodes + 1, sizeof *e->extra);
	if (!(e->features & BATCH_FEATURE_VIRTUAL_OUTPUTS)) {
		if (!(e->lock = engine_lock(o->log_path)) || engine_recover(e) < 0)
			goto out;
		txlog_start(e->log, (int64_t)getpid(), d->nnodes, e->run_id);
		engine_log_sources(e);
		log_check(e);
	} else {
		for (int i = 0; i < d->nnodes; i++)
			e->extra[i].key = engine_node_key(d->nodes[i], 0);
	}

	/* Initial states: recovered rules are complete; count unfinished parents. */
	for (int i = 0; i < d->nnodes; i++) {
		struct dag_node *n = d->nodes[i];
		if (e->extra[i].recovered) {
			set_state(e, n, NODE_COMPLETE);
			e->n_complete++;
			e->n_recovered++;
		}
	}
	for (struct dag_file *f = d->files; f; f = f->hh.next) {
		f->ref_count = 0;
		for (int i = 0; i < f->nconsumers; i++)
			if (f->consumers[i]->state != NODE_COMPLETE)
				f->ref_count++;
		if (f->ref_count == 0 && f->nconsumers > 0 && collectable(e, f) &&
		    path_exists(f->name))
			gc_add(e, f);
	}
	for (int i = 0; i < d->nnodes; i++) {
		struct dag_node *n = d->nodes[i];
		if (n->state == NODE_COMPLETE)
			continue;
		n->unfinished_parents = 0;
		for (int k = 0; k < n->nparents; k++)
			if (n->parents[k]->state != NODE_COMPLETE)
				n->unfinished_parents++;
		if (n->unfinished_parents == 0)
			ready_push(e, n);
	}
	engine_storage_init(e);
	if (e->n_recovered > 0)
		notice("%lld of %d rules are already complete from an earlier run",
		       (long long)e->n_recovered, d->nnodes);
	gc_maybe(e);

	uv_signal_init(&e->loop, &e->sig_int);
	uv_signal_init(&e->loop, &e->sig_term);
	e->sig_int.data = e->sig_term.data = e;
	uv_signal_start(&e->sig_int, on_signal, SIGINT);
	uv_signal_start(&e->sig_term, on_signal, SIGTERM);
	uv_timer_init(&e->loop, &e->sync_timer);
	e->sync_timer.data = e;
	if (e->log)
		uv_timer_start(&e->sync_timer, on_sync_timer, 1000, 1000);
	uv_timer_init(&e->loop, &e->progress_timer);
	e->progress_timer.data = e;
	engine_progress_start(e);
	engine_advertise_start(e); /* -C was checked with the options: a failure is only said */
	engine_status_page_start(e);
	engine_report_page_start(e);

	dispatch(e);
	if (!e->finished)
		uv_run(&e->loop, UV_RUN_DEFAULT);

	if (o->gc == ENGINE_GC_ALL) {
		for (struct dag_file *f = d->files; f; f = f->hh.next)
			if (f->ref_count == 0 && collectable(e, f) && f->producer &&
			    f->producer->state == NODE_COMPLETE)
				gc_add(e, f);
		gc_collect(e);
	} else if (o->gc == ENGINE_GC_ON_DEMAND) {
		gc_maybe(
		    e); /* only while free disk is short, as during the run (CCTools keeps them) */
	} else if (o->gc != ENGINE_GC_NONE) {
		gc_collect(e);
	}
	engine_progress_stop(e);
	engine_report_dryrun(e);
	/* the words CCTools prints when a run ends with every rule complete (scripts look for
	 * them), whether the rules ran now or before */
	if (d->nnodes > 0 && e->n_complete == d->nnodes && !e->log_failed) {
		printf("nothing left to do.\n");
		fflush(stdout);
	}

	int all = e->n_complete == d->nnodes && !e->log_failed;
	e->exit_status = all ? 0 : 1;
	if (e->log)
		txlog_end(
		    e->log, all ? 0 : (e->aborting ? 2 : 1),
		    all ? "complete"
		        : (e->aborting ? "aborted" : (e->log_failed ? "log-error" : "failed")));
	if (e->log_failed)
		fprintf(stderr,
		        "makeflow: stopped because the transaction log %s could not be written "
		        "(%s); run makeflow again once there is space: it resumes from the log\n",
		        o->log_path, strerror(-txlog_error(e->log)));
	engine_advertise_final(e);
	engine_status_page_write(e);
	engine_alloc_report(e);
	engine_archive_report(e->archive);
	engine_report_failures(e);
	if (o->summary_path && engine_write_text_summary(e) < 0)
		e->exit_status = 1;
	if (o->summary_json_path && engine_write_json_summary(e) < 0)
		e->exit_status = 1;

out:
	if (e->log) {
		txlog_close(e->log);
		e->log = NULL;
	}
	txlog_unlock(e->lock);
	e->lock = NULL;
	engine_advertise_free(e);
	engine_status_page_free(e);
	engine_report_page_free(e);
	batch_queue_delete(e->queue);
	batch_queue_delete(e->local_queue);
	uv_walk(&e->loop, close_walk_cb, NULL);
	/* a run that finished before the loop ever ran (every rule complete already) left the
	 * loop's stop flag set: the first uv_run only clears it */
	while (uv_run(&e->loop, UV_RUN_DEFAULT) != 0)
		;
	uv_loop_close(&e->loop);
	engine_alloc_free(e);
	engine_archive_delete(e->archive);
	engine_free(e);
	return e->exit_status;
}
