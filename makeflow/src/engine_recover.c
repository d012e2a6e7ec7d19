/* engine_recover.c: restart support. Computes each rule's content key,
 * replays the transaction log to find which rules completed in earlier runs
 * and whether their files are still as recorded, and implements -c (clean).
 * The rules are in doc/makeflow-log-format.md ("Restart rules"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "debug.h"
#include "engine_internal.h"
#include "engine_nested.h"
#include "htc_error.h"
#include "path.h"
#include "sha256.h"
#include "work_queue.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

static void hash_str(struct sha256_ctx *c, const char *s)
{
	sha256_ctx_update(c, s, strlen(s) + 1);
}

uint64_t engine_node_key(const struct dag_node *n, int ordinal)
{
	struct sha256_ctx *c = sha256_ctx_create();
	char hex[SHA256_HEX_SIZE];
	hash_str(c, n->workflow ? n->workflow : n->command ? n->command : "");
	if (n->workflow)
		hash_str(c, n->workflow_args ? n->workflow_args : "");
	hash_str(c, "<inputs>");
	for (int i = 0; i < n->ninputs; i++)
		hash_str(c, n->inputs[i].file->name);
	hash_str(c, "<outputs>");
	for (int i = 0; i < n->noutputs; i++)
		hash_str(c, n->outputs[i].file->name);
	char ord[24];
	snprintf(ord, sizeof ord, "%d", ordinal);
	hash_str(c, ord);
	sha256_ctx_final(c, hex);
	sha256_ctx_delete(c);
	hex[16] = 0;
	return strtoull(hex, NULL, 16);
}

struct key_pair {
	uint64_t key;
	int id;
};

static int cmp_pair(const void *a, const void *b)
{
	const struct key_pair *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->id - y->id;
}

/* Keys for every rule; rules with identical content get distinct ordinals. */
static void compute_keys(struct engine *e)
{
	int n = e->dag->nnodes;
	struct key_pair *p = xmalloc(((size_t)n + 1) * sizeof *p);
	for (int i = 0; i < n; i++) {
		p[i].key = engine_node_key(e->dag->nodes[i], 0);
		p[i].id = i;
		e->extra[i].key = p[i].key;
	}
	qsort(p, (size_t)n, sizeof *p, cmp_pair);
	for (int i = 1, run = 0; i < n; i++) {
		run = (p[i].key == p[i - 1].key) ? run + 1 : 0;
		if (run)
			e->extra[p[i].id].key = engine_node_key(e->dag->nodes[p[i].id], run);
	}
	free(p);
}

struct key_state {
	uint64_t key;
	int state;
	UT_hash_handle hh;
};

/* A file the log says was created but the current workflow no longer names. */
struct orphan {
	int exists;
	UT_hash_handle hh;
	char name[];
};

struct replay {
	struct engine *e;
	struct orphan *orphans;   /* -c only */
	signed char *state_by_id; /* last state of rule id, if the key matched */
	struct key_state *by_key; /* records whose id did not match */
	int clean;                /* replaying for -c */
	/* runs with a run id that the log shows started ('S') and not ended ('E') */
	char (*dead)[TXLOG_RUN_ID_LEN + 1];
	size_t n_dead, dead_cap;
	int run_open; /* the last 'S' had a run id and no 'E' followed it yet */
};

static struct file_rec *file_rec_of(struct dag_file *f)
{
	if (!f->engine)
		f->engine = xcalloc(1, sizeof(struct file_rec));
	return f->engine;
}

static int replay_record(const struct txlog_record *r, void *arg)
{
	struct replay *rp = arg;
	struct engine *e = rp->e;
	if (r->type == 'S') {
		rp->run_open = 0;
		if (r->run_id) {
			VEC_RESERVE(rp->dead, rp->dead_cap, rp->n_dead + 1);
			snprintf(rp->dead[rp->n_dead++], TXLOG_RUN_ID_LEN + 1, "%s", r->run_id);
			rp->run_open = 1;
		}
	} else if (r->type == 'E') {
		if (rp->run_open)
			rp->n_dead--;
		rp->run_open = 0;
	} else if (r->type == 'N') {
		if (r->node_id >= 0 && r->node_id < e->dag->nnodes &&
		    e->extra[r->node_id].key == r->key) {
			if (!rp->clean || r->state != TXLOG_NODE_WAITING)
				rp->state_by_id[r->node_id] = (signed char)r->state;
			if (rp->clean && rp->state_by_id[r->node_id] != 0)
				rp->state_by_id[r->node_id] = TXLOG_NODE_RUNNING;
			return 0;
		}
		struct key_state *ks;
		HASH_FIND(hh, rp->by_key, &r->key, sizeof r->key, ks);
		if (!ks) {
			ks = xcalloc(1, sizeof *ks);
			ks->key = r->key;
			HASH_ADD(hh, rp->by_key, key, sizeof ks->key, ks);
		}
		ks->state = rp->clean ? TXLOG_NODE_RUNNING : r->state;
	} else if (r->type == 'F') {
		struct dag_file *f = dag_file_lookup(e->dag, r->name);
		if (!f && rp->clean &&
		    (r->state == TXLOG_FILE_EXISTS || r->state == TXLOG_FILE_DELETED)) {
			struct orphan *o;
			HASH_FIND_STR(rp->orphans, r->name, o);
			if (!o) {
				size_t len = strlen(r->name);
				o = xcalloc(1, sizeof *o + len + 1);
				memcpy(o->name, r->name, len + 1);
				HASH_ADD_STR(rp->orphans, name, o);
			}
			o->exists = r->state == TXLOG_FILE_EXISTS;
		}
		if (!f)
			return 0;
		struct file_rec *fr = file_rec_of(f);
		fr->state = r->state;
		if (r->state != TXLOG_FILE_DELETED) {
			fr->size = r->size;
			fr->mtime_ns = r->mtime_ns;
		}
	}
	return 0;
}

static int last_state(struct replay *rp, int id)
{
	if (rp->state_by_id[id])
		return rp->state_by_id[id];
	struct key_state *ks;
	uint64_t key = rp->e->extra[id].key;
	HASH_FIND(hh, rp->by_key, &key, sizeof key, ks);
	return ks ? ks->state : 0;
}

static void replay_free(struct replay *rp)
{
	struct orphan *o, *otmp;
	HASH_ITER(hh, rp->orphans, o, otmp)
	{
		HASH_DEL(rp->orphans, o);
		free(o);
	}
	struct key_state *ks, *tmp;
	HASH_ITER(hh, rp->by_key, ks, tmp)
	{
		HASH_DEL(rp->by_key, ks);
		free(ks);
	}
	free(rp->state_by_id);
	free(rp->dead);
}

static int read_log(struct replay *rp, const char *path, off_t *good_end, int *torn)
{
	char err[1024];
	int r = txlog_read(path, NULL, replay_record, rp, good_end, torn, err, sizeof err);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		fprintf(stderr, "makeflow: %s\n", err);
		fprintf(stderr, "makeflow: the transaction log cannot be used; move it away to "
		                "start the workflow from scratch\n");
		return -1;
	}
	return 1;
}

/* Is output/source F still as the log recorded it? */
static int file_unchanged(struct dag_file *f, int want_state)
{
	struct file_rec *fr = f->engine;
	if (!fr || fr->state != want_state)
		return 0;
	int64_t size, mtime;
	if (file_stat(f->name, &size, &mtime, NULL) < 0)
		return 0;
	return size == fr->size && mtime == fr->mtime_ns;
}

/* An output that exists but no longer has the size and mtime recorded when
 * its rule completed: someone changed it by hand. */
struct modified {
	struct dag_file *file;
	int64_t size, mtime_ns;
	UT_hash_handle hh; /* keyed by the file pointer */
};

/* Lines about what a restart found and did, on standard output in the form
 * CCTools users know ("deleted FILE"). */
static void say(const char *fmt, const char *name)
{
	printf(fmt, name);
	fflush(stdout);
}

/* Is the output F of a completed rule still usable? 1 when it is as recorded
 * (or collected as garbage), 0 when the rule must make it again. A changed
 * output is kept as the user's version (1) and added to *MOD: the rules that
 * read it run again, as in make. */
static int output_ok(struct dag_file *f, struct modified **mod)
{
	struct file_rec *fr = f->engine;
	/* Collected as garbage after its rule completed. Garbage collection never
	 * deletes a final output, so a deleted one was removed by --clean and
	 * must be made again. */
	if (fr && fr->state == TXLOG_FILE_DELETED && !f->is_final_output && !path_exists(f->name))
		return 1;
	if (!fr || fr->state != TXLOG_FILE_EXISTS)
		return 0;
	int64_t size, mtime;
	if (file_stat(f->name, &size, &mtime, NULL) < 0) {
		say("warning: %s was previously created by makeflow, but someone else deleted "
		    "it!\n",
		    f->name);
		return 0;
	}
	if (size == fr->size && mtime == fr->mtime_ns)
		return 1;
	struct modified *m;
	HASH_FIND_PTR(*mod, &f, m);
	if (!m) {
		say("warning: %s was previously created by makeflow, but someone else modified "
		    "it!\n",
		    f->name);
		m = xcalloc(1, sizeof *m);
		m->file = f;
		HASH_ADD_PTR(*mod, file, m);
	}
	m->size = size;
	m->mtime_ns = mtime;
	return 1;
}

static int is_modified(struct modified *mod, struct dag_file *f)
{
	struct modified *m;
	HASH_FIND_PTR(mod, &f, m);
	return m != NULL;
}

/* Acts on the decisions of engine_recover: the rules that were complete and
 * run again are recorded as waiting, the changed files that are kept are
 * recorded with their new size and mtime (so the next start does not see them
 * changed again), and the stale outputs of the rules that run again are
 * deleted, each with a "deleted FILE" line. In this order, so that a kill at
 * any point still leaves every stale rule to run again. */
static void apply_restart(struct engine *e, struct replay *rp, struct modified *mod)
{
	struct dag *d = e->dag;
	for (int id = 0; id < d->nnodes; id++)
		if (!e->extra[id].recovered && last_state(rp, id) == TXLOG_NODE_COMPLETE)
			txlog_node(e->log, id, TXLOG_NODE_WAITING, e->extra[id].key);
	for (struct modified *m = mod; m; m = m->hh.next) {
		struct dag_node *p = m->file->producer;
		if (p && e->extra[p->id].recovered) {
			txlog_file(e->log, TXLOG_FILE_EXISTS, m->size, m->mtime_ns, m->file->name);
			struct file_rec *fr = m->file->engine;
			fr->size = m->size;
			fr->mtime_ns = m->mtime_ns;
		}
	}
	txlog_sync(e->log);
	for (int id = 0; id < d->nnodes; id++) {
		if (e->extra[id].recovered || last_state(rp, id) != TXLOG_NODE_COMPLETE)
			continue;
		struct dag_node *n = d->nodes[id];
		for (int i = 0; i < n->noutputs; i++) {
			struct dag_file *f = n->outputs[i].file;
			if (!path_exists(f->name))
				continue;
			int r = path_rm_rf(f->name);
			if (r < 0) {
				warn("cannot delete the stale file %s: %s", f->name,
				     htc_strerror(r));
				continue;
			}
			txlog_file(e->log, TXLOG_FILE_DELETED, -1, -1, f->name);
			file_rec_of(f)->state = TXLOG_FILE_DELETED;
			say("deleted %s\n", f->name);
		}
	}
}

int engine_recover(struct engine *e)
{
	struct dag *d = e->dag;
	struct replay rp = {.e = e};
	compute_keys(e);
	rp.state_by_id = xcalloc((size_t)d->nnodes + 1, 1);
	off_t good_end = -1;
	int torn = 0;
	int had = read_log(&rp, e->opt->log_path, &good_end, &torn);
	if (had < 0) {
		replay_free(&rp);
		return -1;
	}
	if (torn)
		notice("%s: ignoring a torn last record (makeflow was stopped while writing it)",
		       e->opt->log_path);
	e->log = txlog_open(e->opt->log_path, d->filename, torn ? good_end : -1);
	if (!e->log) {
		fprintf(stderr, "makeflow: cannot open transaction log %s: %s\n", e->opt->log_path,
		        strerror(errno));
		replay_free(&rp);
		return -1;
	}
	if (!had) {
		replay_free(&rp);
		return 0;
	}
	/* Jobs of a run that was killed may still be running: stop them before their rules
	 * run again. First those it left in a cluster, through the cluster itself
	 * (doc/batch-driver-interface.md section 3b), so that it records them cancelled... */
	for (size_t i = 0; (e->features & BATCH_FEATURE_RUN_LABEL) && i < rp.n_dead; i++)
		if (batch_queue_set_option(e->queue, "stop-run", rp.dead[i]) < 0) {
			fprintf(stderr,
			        "makeflow: the jobs of the earlier run %s could not be stopped "
			        "(above); nothing was run\n",
			        rp.dead[i]);
			replay_free(&rp);
			return -1;
		}
	/* ...then the processes left on this machine (its LOCAL rules, or every rule of a local
	 * batch type) */
	if (engine_stop_orphans(rp.dead, rp.n_dead) < 0) {
		replay_free(&rp);
		return -1;
	}

	/* Visit rules parents-first (by depth, a counting sort). */
	int maxd = d->max_depth < 0 ? 0 : d->max_depth;
	int *start = xcalloc((size_t)maxd + 2, sizeof *start);
	for (int i = 0; i < d->nnodes; i++)
		start[d->nodes[i]->depth + 1]++;
	for (int k = 1; k <= maxd + 1; k++)
		start[k] += start[k - 1];
	struct dag_node **order = xmalloc(((size_t)d->nnodes + 1) * sizeof *order);
	for (int i = 0; i < d->nnodes; i++)
		order[start[d->nodes[i]->depth]++] = d->nodes[i];
	free(start);

	struct modified *mod = NULL;
	for (int k = 0; k < d->nnodes; k++) {
		struct dag_node *n = order[k];
		struct node_extra *x = &e->extra[n->id];
		if (last_state(&rp, n->id) != TXLOG_NODE_COMPLETE)
			continue;
		int ok = 1;
		for (int i = 0; ok && i < n->nparents; i++)
			ok = e->extra[n->parents[i]->id].recovered;
		/* --skip-file-check: the log alone says what is complete (CCTools' meaning) */
		int check = !e->opt->skip_file_check;
		for (int i = 0; check && ok && i < n->ninputs; i++) {
			struct dag_file *f = n->inputs[i].file;
			if (f->is_source)
				ok = file_unchanged(f, TXLOG_FILE_SOURCE);
			else
				ok = !is_modified(mod, f);
		}
		/* every output is looked at, so that each change is reported */
		for (int i = 0; check && i < n->noutputs; i++)
			if (!output_ok(n->outputs[i].file, &mod))
				ok = 0;
		x->recovered = ok;
		if (!ok)
			debug(D_MAKEFLOW, "rule %d was complete but must run again", n->id);
	}

	/* A rule that runs again and needs a file garbage collection removed
	 * makes that file's producer run again too (transitively). */
	size_t top = 0;
	for (int i = 0; i < d->nnodes; i++)
		if (!e->extra[i].recovered)
			order[top++] = d->nodes[i];
	while (top > 0) {
		struct dag_node *n = order[--top];
		for (int i = 0; i < n->ninputs; i++) {
			struct dag_file *f = n->inputs[i].file;
			struct dag_node *p = f->producer;
			if (p && e->extra[p->id].recovered && !path_exists(f->name)) {
				e->extra[p->id].recovered = 0;
				debug(D_MAKEFLOW, "rule %d runs again to recreate %s", p->id,
				      f->name);
				order[top++] = p;
			}
		}
	}
	free(order);
	apply_restart(e, &rp, mod);
	struct modified *m, *mtmp;
	HASH_ITER(hh, mod, m, mtmp)
	{
		HASH_DEL(mod, m);
		free(m);
	}
	replay_free(&rp);
	return 0;
}

void engine_log_sources(struct engine *e)
{
	for (struct dag_file *f = e->dag->files; f; f = f->hh.next) {
		if (!f->is_source || f->nconsumers == 0)
			continue;
		int64_t size, mtime;
		if (file_stat(f->name, &size, &mtime, NULL) < 0)
			continue;
		struct file_rec *fr = f->engine;
		if (fr && fr->state == TXLOG_FILE_SOURCE && fr->size == size &&
		    fr->mtime_ns == mtime)
			continue;
		txlog_file(e->log, TXLOG_FILE_SOURCE, size, mtime, f->name);
		fr = file_rec_of(f);
		fr->state = TXLOG_FILE_SOURCE;
		fr->size = size;
		fr->mtime_ns = mtime;
	}
}

/* Removes the directories above NAME that are now empty (the ones makeflow
 * made for outputs in subdirectories), up to the working directory. */
static void remove_empty_parents(const char *name)
{
	char *dir = path_dirname(name);
	while (strcmp(dir, ".") && strcmp(dir, "/") && rmdir(dir) == 0) {
		char *up = path_dirname(dir);
		free(dir);
		dir = up;
	}
	free(dir);
}

static int remove_created(const char *name, struct txlog *log, int64_t *removed)
{
	int r = path_rm_rf(name);
	if (r < 0) {
		warn("cannot remove %s: %s", name, htc_strerror(r));
		return -1;
	}
	(*removed)++;
	say("deleted %s\n", name); /* the line CCTools prints for each, on standard output */
	if (log)
		txlog_file(log, TXLOG_FILE_DELETED, -1, -1, name);
	if (strchr(name, '/'))
		remove_empty_parents(name);
	return 0;
}

struct swept_dir {
	char *dir;
	UT_hash_handle hh;
};

/* Removes the partial outputs that Work Queue masters killed during a transfer left in the
 * directories of the workflow's outputs (only those whose master is gone); how many. */
static int64_t clean_partials(struct dag *d)
{
	struct swept_dir *set = NULL, *s, *tmp;
	int64_t n = 0;
	for (int id = 0; id < d->nnodes; id++) {
		struct dag_node *nd = d->nodes[id];
		for (int i = 0; i < nd->noutputs; i++) {
			char *dir = path_dirname(nd->outputs[i].file->name);
			HASH_FIND_STR(set, dir, s);
			if (s) {
				free(dir);
				continue;
			}
			s = xcalloc(1, sizeof *s);
			s->dir = dir;
			HASH_ADD_KEYPTR(hh, set, s->dir, strlen(s->dir), s);
			int r = work_queue_clean_partials(dir);
			n += r > 0 ? r : 0;
		}
	}
	HASH_ITER(hh, set, s, tmp)
	{
		HASH_DEL(set, s);
		free(s->dir);
		free(s);
	}
	return n;
}

static void on_no_job(struct batch_queue *q, int64_t id, const struct batch_result *r, void *arg)
{
	(void)q;
	(void)id;
	(void)r;
	(void)arg;
}

/* -c with a batch type whose jobs carry the run id (-T slurm, -T k8s): the jobs that the N
 * runs in IDS, which started and never ended, left in the cluster are stopped too, with the
 * driver options OPTS ("key=value", NULL-terminated; where the cluster is). 0, or -1 (said). */
static int stop_cluster_runs(const char *type, const char *const *opts,
                             char (*ids)[TXLOG_RUN_ID_LEN + 1], size_t n)
{
	if (!type || n == 0)
		return 0;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct batch_queue *q = batch_queue_create(&loop, type, on_no_job, NULL);
	int rc = 0;
	if (q && (batch_queue_features(q) & BATCH_FEATURE_RUN_LABEL)) {
		for (const char *const *o = opts; rc == 0 && o && *o; o++) {
			const char *eq = strchr(*o, '=');
			char *k = xstrndup(*o, eq ? (size_t)(eq - *o) : strlen(*o));
			if (batch_queue_set_option(q, k, eq ? eq + 1 : "") < 0) {
				fprintf(stderr, "makeflow: -T %s does not accept %s\n", type, *o);
				rc = -1;
			}
			free(k);
		}
		/* stop-run reaches the cluster itself: a start would also need what only running
		 * rules need (-T k8s: the image) */
		for (size_t i = 0; rc == 0 && i < n; i++)
			if (batch_queue_set_option(q, "stop-run", ids[i]) < 0)
				rc = -1;
		if (rc < 0)
			fprintf(stderr,
			        "makeflow: the %s jobs of an earlier run could not be stopped "
			        "(above)\n",
			        type);
	}
	batch_queue_delete(q);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return rc;
}

int engine_clean(struct dag *d, const char *log_path, enum engine_clean_mode mode,
                 const char *self_exe, const char *batch_type, const char *const *batch_opts)
{
	struct engine eng;
	struct engine *e = &eng;
	memset(e, 0, sizeof *e);
	e->dag = d;
	e->extra = xcalloc((size_t)d->nnodes + 1, sizeof *e->extra);
	compute_keys(e);
	struct replay rp = {.e = e, .clean = 1};
	rp.state_by_id = xcalloc((size_t)d->nnodes + 1, 1);
	int status = 0;
	struct txlog_lock *lock = engine_lock(log_path);
	if (!lock) {
		status = 1;
		goto out;
	}
	int had = read_log(&rp, log_path, NULL, NULL);
	if (had < 0) {
		status = 1;
		goto out;
	}
	/* jobs of the dead runs that could not be stopped: the log, which names those runs, is
	 * kept, so that a later -c can stop them */
	int keep_log = stop_cluster_runs(batch_type, batch_opts, rp.dead, rp.n_dead) < 0;
	if (keep_log)
		status = 1;
	struct txlog *log = NULL;
	if (had && mode != ENGINE_CLEAN_ALL)
		log = txlog_open(log_path, d->filename, -1);
	int64_t removed = 0;
	for (int id = 0; had && id < d->nnodes; id++) {
		struct dag_node *n = d->nodes[id];
		/* Started by this workflow, or (when its command has changed since)
		 * its outputs are recorded as created. */
		int started = last_state(&rp, id) != 0;
		/* a nested workflow cleans what it made itself, as its parent is asked to */
		if (n->workflow && started) {
			static const char *const words[] = {[ENGINE_CLEAN_ALL] = "all",
			                                    [ENGINE_CLEAN_OUTPUTS] = "outputs",
			                                    [ENGINE_CLEAN_INTERMEDIATES] =
			                                        "intermediates"};
			if (mode <= ENGINE_CLEAN_INTERMEDIATES &&
			    engine_nested_clean(self_exe, d, n, words[mode]) < 0)
				status = 1;
		}
		for (int i = 0; i < n->noutputs; i++) {
			struct dag_file *f = n->outputs[i].file;
			const struct file_rec *fr = f->engine;
			if (!started && !(fr && fr->state == TXLOG_FILE_EXISTS))
				continue;
			if (f->is_source)
				continue;
			if (mode == ENGINE_CLEAN_OUTPUTS && !f->is_final_output)
				continue;
			if (mode == ENGINE_CLEAN_INTERMEDIATES && f->is_final_output)
				continue;
			if (!path_exists(f->name))
				continue;
			if (remove_created(f->name, log, &removed) < 0)
				status = 1;
		}
		if (mode == ENGINE_CLEAN_ALL) {
			char dir[64];
			snprintf(dir, sizeof dir, "makeflow.failed.%d", id);
			if (path_exists(dir))
				path_rm_rf(dir);
		}
	}
	/* Files an earlier version of the workflow created (all mode only: we
	 * cannot tell whether they were outputs or intermediates). */
	if (mode == ENGINE_CLEAN_ALL) {
		struct orphan *o, *otmp;
		HASH_ITER(hh, rp.orphans, o, otmp)
		{
			if (o->exists && path_exists(o->name) &&
			    remove_created(o->name, log, &removed) < 0)
				status = 1;
		}
	}
	txlog_close(log);
	removed += clean_partials(d);
	if (mode == ENGINE_CLEAN_ALL && had && !keep_log) {
		if (unlink(log_path) < 0 && errno != ENOENT) {
			warn("cannot remove %s: %s", log_path, strerror(errno));
			status = 1;
		}
	}
	notice("removed %lld files%s", (long long)removed,
	       mode == ENGINE_CLEAN_ALL && had && !keep_log ? " and the transaction log"
	       : keep_log ? "; the transaction log is kept (it names the runs whose jobs are "
	                    "still in the cluster)"
	                  : "");
out:
	txlog_unlock(lock);
	replay_free(&rp);
	for (struct dag_file *f = d->files; f; f = f->hh.next) {
		free(f->engine);
		f->engine = NULL;
	}
	free(e->extra);
	return status;
}
