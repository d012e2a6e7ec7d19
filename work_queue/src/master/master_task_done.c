/* master_task_done.c: task_done on the Work Queue master (doc/work-queue-protocol.md 5.6,
 * doc/work-queue-api.md 2.3): checked against the transfers the worker opened, held until they
 * are stored, then turned into a result or a retry: outputs committed, stdout read, the
 * measured resources, growth and container times taken over, exhaustion noted for the
 * category, and the objects of per-task URL inputs dropped from the worker. */
#include "master_internal.h"
#include "master_images.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "rmsummary.h"
#include "timeutil.h"
#include "wq_msg.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

/* True when every transfer task_done D names has been stored or has failed here (the receiver
 * writes off the loop thread, so its end can come after the task_done message). */
bool master_dispatch_done_ready(struct mtask *m, const struct wq_task_done *d)
{
	for (size_t k = 0; k < d->noutputs; k++) {
		const struct wq_done_output *o = &d->outputs[k];
		if ((o->kind != WQ_DONE_XFER && o->kind != WQ_DONE_DIR) || o->index >= m->n_outputs)
			continue;
		const struct mtask_recv *r = &m->outs[o->index];
		if ((r->xfer == (uint32_t)o->xfer && !r->finished) || r->watch_inflight > 0)
			return false;
	}
	if (d->stdout_xfer > 0 && m->out_stdout.xfer == (uint32_t)d->stdout_xfer &&
	    !m->out_stdout.finished)
		return false;
	return true;
}

/* Protocol 7.4: every transfer task_done D names must have been opened (xfer_begin or dir_begin,
 * accepted or refused) on this connection for that output, or for M's stdout. Begins are handled
 * as they arrive, before the task_done that follows them on the same connection, so a name with
 * no begin is a worker's lie, not a race. Returns 0, or -1 with the violation text in WHY. */
int master_dispatch_done_check(const struct mtask *m, const struct wq_task_done *d, char *why,
                               size_t len)
{
	for (size_t k = 0; k < d->noutputs; k++) {
		const struct wq_done_output *o = &d->outputs[k];
		/* an output the task does not have is refused at its begin and missing here */
		if ((o->kind != WQ_DONE_XFER && o->kind != WQ_DONE_DIR) || o->index < 0 ||
		    o->index >= m->n_outputs)
			continue;
		const struct mtask_recv *r = &m->outs[o->index];
		if (r->watching || r->watch_broken)
			continue; /* increments: watch_complete judges the last one */
		if (r->xfer == 0 || r->xfer != (uint32_t)o->xfer) {
			snprintf(why, len,
			         "task_done for task %d names transfer %lld for output %lld, which "
			         "was never opened",
			         m->id, (long long)o->xfer, (long long)o->index);
			return -1;
		}
	}
	if (d->stdout_xfer > 0 && m->out_stdout.xfer != (uint32_t)d->stdout_xfer) {
		snprintf(
		    why, len,
		    "task_done for task %d names transfer %lld for its stdout, which was never "
		    "opened",
		    m->id, (long long)d->stdout_xfer);
		return -1;
	}
	return 0;
}

/* ---- task results ------------------------------------------------------------------------- */

static char *read_stdout(const char *path, const struct wq_task_done *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size > WQ_STDOUT_MAX) {
		close(fd);
		return NULL;
	}
	size_t n = (size_t)st.st_size;
	char *buf = xmalloc(n + 1);
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	buf[got] = 0;
	if (d->stdout_truncated && d->stdout_head >= 0 && (size_t)d->stdout_head <= got) {
		int64_t omitted = d->stdout_size - (int64_t)got;
		char *r =
		    xasprintf("%.*s\n[work queue: %lld bytes omitted]\n%s", (int)d->stdout_head,
		              buf, (long long)omitted, buf + d->stdout_head);
		free(buf);
		return r;
	}
	return buf;
}

/* A watched output at task_done: the last transfer named O->xfer was stored, no increment
 * failed, and the final path holds exactly O->size bytes. */
static bool watch_complete(struct mworker *w, struct mtask *m, struct work_queue_file *f,
                           const struct mtask_recv *slot, const struct wq_done_output *o)
{
	struct stat st;
	const char *why = NULL;
	if (slot->watch_broken || !slot->ok)
		why = "a part failed";
	else if (slot->xfer != (uint32_t)o->xfer)
		why = "its last transfer is not the one task_done names";
	else if (o->size < 0 || slot->watch_done != o->size)
		why = "task_done gives another size";
	else if (stat(f->source, &st) < 0 || st.st_size != o->size)
		why = "the file does not have the announced size";
	if (why) {
		warn("%s: task %d watched output %s: %s (received %lld, announced %lld)", w->label,
		     m->id, f->source, why, (long long)slot->watch_done, (long long)o->size);
		return false;
	}
	if (w->q->txlog)
		master_txlog_transfer(w->q->txlog, 1, m->id, f->remote, o->size, 0, 0);
	return true;
}

/* Renames received outputs into place. Returns false if one is missing. */
static bool commit_outputs(struct mworker *w, struct mtask *m, const struct wq_task_done *d)
{
	bool ok = true;
	for (size_t k = 0; k < d->noutputs; k++) {
		const struct wq_done_output *o = &d->outputs[k];
		struct work_queue_file *f = master_worker_nth_file(m->t->outputs, (int)o->index);
		if (!f) {
			ok = false;
			continue;
		}
		if (o->kind == WQ_DONE_SKIPPED)
			continue;
		if (o->kind == WQ_DONE_MISSING) {
			debug(D_WQ, "%s: task %d output %s missing: %s", MW_NAME(w), m->id,
			      f->remote, o->text ? o->text : "");
			ok = false;
			continue;
		}
		struct mtask_recv *slot = &m->outs[o->index];
		if (slot->watching && o->kind == WQ_DONE_XFER) {
			if (!watch_complete(w, m, f, slot, o))
				ok = false;
			continue;
		}
		if (!slot->tmp || !slot->ok || slot->xfer != (uint32_t)o->xfer) {
			if (slot->refused)
				snprintf(m->t->last_error, sizeof m->t->last_error,
				         "output %s not received: %s", f->remote, slot->refused);
			ok = false;
			continue;
		}
		struct stat st;
		bool had = lstat(f->source, &st) == 0;
		if (slot->is_dir || (had && S_ISDIR(st.st_mode))) {
			/* a directory, or a file where an earlier run left a directory: rename()
			 * replaces neither, so the old one goes aside first and is deleted after */
			char *old = xasprintf("%s.wq-old-%d", f->source, (int)getpid());
			bool aside = false, good = true;
			if (had && rename(f->source, old) < 0) {
				warn("%s: cannot move %s aside: %s", w->label, f->source,
				     strerror(errno));
				good = false;
			} else {
				aside = had;
			}
			if (good && rename(slot->tmp, f->source) < 0) {
				warn("%s: cannot rename output to %s: %s", w->label, f->source,
				     strerror(errno));
				good = false;
				if (aside && rename(old, f->source) == 0)
					aside = false; /* the old one is back */
			}
			if (aside && good)
				path_rm_rf(old);
			else if (aside)
				warn("%s: the old %s is kept as %s", w->label, f->source, old);
			free(old);
			if (!good)
				ok = false;
		} else if (rename(slot->tmp, f->source) < 0) {
			warn("%s: cannot rename output to %s: %s", w->label, f->source,
			     strerror(errno));
			ok = false;
		}
		if (ok && w->q->sync_outputs) {
			char *dir = path_dirname(f->source);
			int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd >= 0) {
				fsync(dfd);
				close(dfd);
			}
			free(dir);
		}
		if (ok) {
			free(slot->tmp);
			slot->tmp = NULL;
			if (w->q->txlog)
				master_txlog_transfer(w->q->txlog, 1, m->id, f->remote, 0, 0, 0);
		}
	}
	return ok;
}

static uint64_t exhausted_bits(const struct wq_task_done *d, bool *wall)
{
	uint64_t bits = 0;
	*wall = false;
	for (size_t k = 0; k < d->nexhausted; k++) {
		int f = rmsummary_field_lookup(d->exhausted[k]);
		if (f >= 0)
			bits |= UINT64_C(1) << f;
		if (f == RM_WALL_TIME)
			*wall = true;
	}
	return bits;
}

/* The resources a try may run without a limit on (0 in `task`, protocol 5.3). */
#define UNLIMITABLE ((UINT64_C(1) << RM_MEMORY) | (UINT64_C(1) << RM_DISK))

/* The sized resources in BITS (1 << RM_*), as "memory, disk", into BUF. */
static void exhausted_names(uint64_t bits, char *buf, size_t len)
{
	static const int order[] = {RM_CORES, RM_MEMORY, RM_DISK, RM_GPUS};
	size_t n = 0;
	buf[0] = 0;
	for (int k = 0; k < 4 && n < len; k++) {
		if (!((bits >> order[k]) & 1))
			continue;
		int w = snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
		                 rmsummary_field_name(order[k]));
		n += w > 0 ? (size_t)w : 0;
	}
	if (!buf[0])
		snprintf(buf, len, "its resources");
}

/* A try of M ended exhausted (D): the task's error text names each resource with
 * what it was given and what was measured, and the measured summary marks them exceeded (so that
 * a caller reading limits_exceeded knows which), whatever the worker's summary said. */
static void exhausted_note(struct mtask *m, const struct wq_task_done *d)
{
	struct work_queue_task *t = m->t;
	if (!t->resources_measured) {
		t->resources_measured = xmalloc(sizeof *t->resources_measured);
		rmsummary_init(t->resources_measured);
	}
	char *text = xstrdup("exceeded its allocation:");
	int named = 0;
	for (size_t k = 0; k < d->nexhausted; k++) {
		int f = rmsummary_field_lookup(d->exhausted[k]);
		if (f < 0)
			continue;
		double given = t->resources_allocated ? t->resources_allocated->v[f] : -1;
		if ((m->unlimited >> f) & 1)
			given = -1;
		double used = t->resources_measured->v[f];
		if (t->resources_measured->limits_exceeded[f] < 0)
			t->resources_measured->limits_exceeded[f] = given >= 0 ? given : 0;
		const char *sep = named++ ? "," : "";
		char *n;
		if (given >= 0 && used >= 0)
			n = xasprintf("%s%s %s %g %s (used %g)", text, sep, d->exhausted[k], given,
			              rmsummary_field_unit(f), used);
		else if (given >= 0)
			n = xasprintf("%s%s %s %g %s", text, sep, d->exhausted[k], given,
			              rmsummary_field_unit(f));
		else
			n = xasprintf("%s%s %s", text, sep, d->exhausted[k]);
		free(text);
		text = n;
	}
	snprintf(t->last_error, sizeof t->last_error, "%s", text);
	free(text);
}

/* A failure that is the task's own: re-run (try + 1) while max_retries allows, then
 * MAX_RETRIES. */
static void own_failure(struct mworker *w, struct mtask *m, enum work_queue_result result)
{
	struct work_queue_task *t = m->t;
	if (t->max_retries <= 0) {
		master_worker_finish(w, m, result);
		return;
	}
	if (m->try_ > t->max_retries) {
		master_worker_finish(w, m, WORK_QUEUE_RESULT_MAX_RETRIES);
		return;
	}
	if (m->w == w) {
		master_sched_task_release(w->q->sched, m->st, master_queue_now());
		master_worker_detach(w, m);
	}
	master_worker_clear_recv(m);
	debug(D_WQ, "%s: task %d failed (%s): try %d of %d", MW_NAME(w), m->id,
	      work_queue_result_str(result), m->try_ + 1, t->max_retries + 1);
	m->try_++;
	if (w->q->txlog)
		master_txlog_task(w->q->txlog, m->id, "WAITING", "RETRY", NULL);
	master_queue_task_requeue(w->q, m);
}

/* The objects of M's URL inputs that are not cached (WORK_QUEUE_NOCACHE: named for M alone,
 * master_prepare.c) leave W's cache now that M is done there: one `cache_drop`. */
static void drop_per_task_urls(struct mworker *w, struct mtask *m)
{
	json_t *names = NULL;
	int i = 0;
	for (struct work_queue_file *f = m->t->inputs; f; f = f->next, i++) {
		if (f->kind != WORK_QUEUE_FILE_URL || (f->flags & WORK_QUEUE_CACHE) ||
		    !m->objects || i >= m->n_inputs || !m->objects[i])
			continue;
		if (!names)
			names = json_array();
		json_array_append_new(names, json_string(m->objects[i]));
		struct mobject *o = master_worker_object_find(w, m->objects[i]);
		if (o)
			master_worker_object_free(w, o);
	}
	if (!names)
		return;
	json_t *msg = json_pack("{s:s,s:o,s:s}", "m", "cache_drop", "objects", names, "reason",
	                        "a URL input that is not cached");
	int rc = msg ? wq_conn_send_msg(w->c, msg) : -ENOMEM;
	json_decref(msg);
	if (rc < 0)
		debug(D_WQ, "%s: cache_drop: %s", MW_NAME(w), htc_strerror(rc));
}

void master_dispatch_handle_done(struct mworker *w, struct mtask *m, const struct wq_task_done *d)
{
	struct work_queue *q = w->q;
	struct work_queue_task *t = m->t;
	drop_per_task_urls(w, m);
	double now = master_queue_now();
	t->time_when_retrieval = time_now_us();
	if (d->t_started >= 0 && d->t_ended >= d->t_started) {
		t->time_workers_execute_last = d->t_ended - d->t_started;
		t->time_workers_execute_all += t->time_workers_execute_last;
	}
	if (d->summary) {
		char *text = json_dumps(d->summary, JSON_COMPACT);
		if (!t->resources_measured) {
			t->resources_measured = xmalloc(sizeof *t->resources_measured);
			rmsummary_init(t->resources_measured);
		}
		char err[128];
		if (text && rmsummary_from_json(text, t->resources_measured, err, sizeof err) < 0)
			debug(D_WQ, "%s: task %d: bad summary: %s", MW_NAME(w), m->id, err);
		free(text);
	}
	if (d->container) {
		static const char *const keys[] = {"load_s", "create_s", "run_s", "delete_s"};
		double *fields[] = {&t->container_load_time, &t->container_create_time,
		                    &t->container_run_time, &t->container_delete_time};
		for (int k = 0; k < 4; k++) {
			json_t *x = json_object_get(d->container, keys[k]);
			*fields[k] = json_is_number(x) ? json_number_value(x) : -1;
		}
		json_t *ss = json_object_get(d->container, "shared_start_s");
		if (json_is_number(ss))
			t->container_create_time = json_number_value(ss);
	}
	t->memory_grown = -1;
	t->memory_grow_steps = 0;
	t->cores_grown = -1;
	t->cores_held_avg = -1;
	t->memory_held_avg = -1;
	if (d->grown) {
		json_t *mb = json_object_get(d->grown, "memory_mb");
		json_t *steps = json_object_get(d->grown, "steps");
		json_t *cores = json_object_get(d->grown, "cores");
		json_t *held = json_object_get(d->grown, "memory_avg_mb");
		if (json_is_number(held) && json_number_value(held) > 0 &&
		    json_number_value(held) < 1e12)
			t->memory_held_avg = json_number_value(held);
		t->memory_grown = json_is_integer(mb) ? json_integer_value(mb) : -1;
		if (json_is_number(cores) && json_number_value(cores) > 0 &&
		    json_number_value(cores) < 1e6) {
			t->cores_grown = json_number_value(cores);
			json_t *avg = json_object_get(d->grown, "cores_avg");
			if (json_is_number(avg) && json_number_value(avg) > 0 &&
			    json_number_value(avg) <= t->cores_grown)
				t->cores_held_avg = json_number_value(avg);
			debug(
			    D_WQ,
			    "%s: task %d was lent idle cores: its CPU quota reached %g cores, %.3g "
			    "on average",
			    MW_NAME(w), m->id, t->cores_grown, t->cores_held_avg);
		}
		t->memory_grow_steps = json_is_integer(steps) && json_integer_value(steps) > 0 &&
		                               json_integer_value(steps) < 1000000
		                           ? (int)json_integer_value(steps)
		                           : 0;
	}
	if (m->out_stdout.ok && m->out_stdout.tmp) {
		free(t->output);
		t->output = read_stdout(m->out_stdout.tmp, d);
	}
	struct category *cat = master_sched_category(q->sched, t->category);
	for (int i = 0; i < t->memory_grow_steps; i++)
		category_record_limit_raise(cat); /* the next allocation learns from it */
	double wall = t->time_workers_execute_last / 1e6;
	bool was_retry = master_sched_task_level(m->st) == CATEGORY_LEVEL_MAX;
	/* The category's measured wall time decides whether its tasks are prefetched. */
	if ((d->outcome == WQ_OUTCOME_EXITED || d->outcome == WQ_OUTCOME_SIGNALED ||
	     d->outcome == WQ_OUTCOME_EXHAUSTED) &&
	    d->t_started >= 0 && d->t_ended >= d->t_started)
		master_sched_category_record_time(q->sched, t->category, wall);

	switch (d->outcome) {
	case WQ_OUTCOME_EXITED: {
		t->return_status = (int)d->exit_status;
		if (d->exit_status != 0 && d->disk_full && !m->disk_full_retried) {
			/* the disk filled up: probably not the task's fault; once more, same try */
			m->disk_full_retried = true;
			master_sched_task_release(q->sched, m->st, now);
			master_worker_back_to_ready(w, m);
			return;
		}
		/* Outputs that came back are committed either way. A non-zero exit is the
		 * application's to judge (SUCCESS with return_status): outputs it did not make
		 * are its consequence, not OUTPUT_MISSING. */
		bool ok = commit_outputs(w, m, d) || d->exit_status != 0;
		if (t->resources_measured)
			category_accumulate(cat, t->resources_measured);
		category_record(cat, t->resources_allocated, t->resources_measured, wall, 0,
		                was_retry, ok ? 1 : -1);
		if (ok)
			master_abort_record(q, t->category,
			                    wall > 0 ? wall : now - m->running_since);
		if (ok)
			master_worker_finish(w, m, WORK_QUEUE_RESULT_SUCCESS);
		else
			own_failure(w, m, WORK_QUEUE_RESULT_OUTPUT_MISSING);
		break;
	}
	case WQ_OUTCOME_SIGNALED:
		t->return_status = (int)d->signal;
		category_record(cat, t->resources_allocated, t->resources_measured, wall, 0,
		                was_retry, -1);
		own_failure(w, m, WORK_QUEUE_RESULT_SIGNAL);
		break;
	case WQ_OUTCOME_EXHAUSTED: {
		bool wall_hit;
		uint64_t bits = exhausted_bits(d, &wall_hit);
		if (wall_hit && t->running_time_max > 0) {
			own_failure(w, m, WORK_QUEUE_RESULT_TASK_MAX_RUN_TIME);
			break;
		}
		exhausted_note(m, d);
		if (t->resources_measured)
			category_accumulate(cat, t->resources_measured);
		t->exhausted_attempts++;
		q->stats.tasks_exhausted_attempts++;
		/* Sizes the master chose (nothing declared them: a share or the whole of a worker
		 * whose free disk may be small at that moment) are no promise of the task's: a
		 * try that exceeds only those runs again with no limit on them, in every mode. */
		uint64_t loose = master_sched_task_chosen(m->st) & UNLIMITABLE & ~m->unlimited;
		if (bits && (bits & ~loose) == 0) {
			category_record(cat, t->resources_allocated, t->resources_measured, wall, 1,
			                was_retry, 0);
			master_sched_task_release(q->sched, m->st, now);
			master_worker_detach(w, m);
			master_worker_clear_recv(m);
			m->unlimited |= bits;
			m->try_++;
			t->last_error[0] = 0; /* the next try's own outcome speaks */
			for (int f = 0; f < RM_N_FIELDS; f++)
				if ((bits >> f) & 1)
					t->resources_measured->limits_exceeded[f] = -1;
			char names[64];
			exhausted_names(bits, names, sizeof names);
			notice("%s: task %d exceeded the %s the master chose: try %d without that "
			       "limit",
			       w->label, m->id, names, m->try_);
			if (q->txlog)
				master_txlog_task(q->txlog, m->id, "WAITING", "MAX_RESOURCES",
				                  NULL);
			master_sched_task_requeue(q->sched, m->st, CATEGORY_LEVEL_MAX);
			m->state = MTASK_READY;
			master_queue_request_pass(q);
			break;
		}
		int again = master_sched_task_exhausted(q->sched, m->st, bits, now);
		category_record(cat, t->resources_allocated, t->resources_measured, wall, 1,
		                was_retry, again == 1 ? 0 : -1);
		master_worker_detach(w, m);
		master_worker_clear_recv(m);
		if (again == 1) {
			m->try_++;
			m->state = MTASK_READY;
			if (q->txlog)
				master_txlog_task(q->txlog, m->id, "WAITING", "MAX_RESOURCES",
				                  NULL);
			master_queue_request_pass(q);
		} else {
			own_failure(w, m, WORK_QUEUE_RESULT_RESOURCE_EXHAUSTION);
		}
		break;
	}
	case WQ_OUTCOME_INPUT_MISSING: {
		const char *tx = d->text ? d->text : "-";
		char *shown = wq_msg_escape(tx, strlen(tx), 1024, false);
		warn("%s: task %d: input %" PRId64 " missing on the worker: %s", w->label, m->id,
		     d->missing_input, shown);
		free(shown);
		master_worker_finish(w, m, WORK_QUEUE_RESULT_INPUT_MISSING);
		break;
	}
	case WQ_OUTCOME_SANDBOX_ERROR:
		warn("%s: task %d: the worker could not run it (%s): back to the queue", w->label,
		     m->id, d->text ? d->text : "-");
		master_sched_task_release(q->sched, m->st, now);
		master_worker_back_to_ready(w, m);
		/* tasks that fail together because the worker's container engine is down (it
		 * said so first) do not make a broken worker */
		if (master_images_engine_up(w) && ++w->sandbox_errors >= 3)
			master_worker_end(w, false, "three sandbox errors in a row", 60);
		return;
	}
	if (d->outcome != WQ_OUTCOME_SANDBOX_ERROR)
		w->sandbox_errors = 0;
}
