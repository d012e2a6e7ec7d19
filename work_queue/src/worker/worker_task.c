/* worker_task.c: the task runner of work_queue_worker (see worker_task.h): the life of one task
 * from rmonitor_start to its `task_done` body (the resource ledger is in worker_ledger.c).
 * File-system work after a task ends (output checks, stdout size, sandbox removal) runs in the
 * libuv thread pool, never on the loop. */
#include "worker_task.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug.h"
#include "docker_api.h"
#include "full_io.h"
#include "htc_error.h"
#include "path.h"
#include "rmon_spawn.h"
#include "shell_words.h"
#include "stringtools.h"
#include "timeutil.h"
#include "worker_cpus.h"
#include "worker_ahead.h"
#include "worker_docker.h"
#include "worker_ctr_memory.h"
#include "worker_elastic.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

extern char **environ;

#define CORES_EPSILON 1e-6
#define STDOUT_TAIL   (64 * 1024)
#define STDOUT_NAME   "stdout"
#define TEXT_MAX      WQ_TEXT_SEND_MAX

/* ---- the environment -------------------------------------------------------------------- */

struct envv {
	char **v;
	size_t n, cap;
};

/* Index of NAME in E, or -1. */
static ssize_t env_find(const struct envv *e, const char *name, size_t len)
{
	for (size_t i = 0; i < e->n; i++)
		if (strncmp(e->v[i], name, len) == 0 && e->v[i][len] == '=')
			return (ssize_t)i;
	return -1;
}

/* Sets NAME to VALUE in E (NULL VALUE: removes it). */
static void env_set(struct envv *e, const char *name, const char *value)
{
	size_t len = strlen(name);
	ssize_t i = env_find(e, name, len);
	if (!value) {
		if (i >= 0) {
			free(e->v[i]);
			memmove(&e->v[i], &e->v[i + 1], (e->n - (size_t)i - 1) * sizeof *e->v);
			e->n--;
		}
		return;
	}
	char *entry = xasprintf("%s=%s", name, value);
	if (i >= 0) {
		free(e->v[i]);
		e->v[i] = entry;
		return;
	}
	VEC_RESERVE(e->v, e->cap, e->n + 2);
	e->v[e->n++] = entry;
}

/* CORES as text: an integer, or up to three decimals without trailing zeros. */
static void format_cores(double cores, char *buf, size_t size)
{
	snprintf(buf, size, "%.3f", cores);
	char *dot = strchr(buf, '.');
	if (!dot)
		return;
	char *end = buf + strlen(buf) - 1;
	while (end > dot && *end == '0')
		*end-- = 0;
	if (end == dot)
		*end = 0;
}

char **worker_task_env(const char *const *base, const struct worker_alloc *alloc,
                       const char *tmpdir, const struct wq_env_var *env, size_t nenv)
{
	struct envv e = {0};
	if (!base)
		base = (const char *const *)environ;
	for (size_t i = 0; base && base[i]; i++) {
		const char *eq = strchr(base[i], '=');
		if (!eq || eq == base[i])
			continue;
		char *name = xstrndup(base[i], (size_t)(eq - base[i]));
		env_set(&e, name, eq + 1);
		free(name);
	}
	if (alloc) {
		char buf[64];
		format_cores(alloc->res.cores, buf, sizeof buf);
		env_set(&e, "CORES", buf);
		snprintf(buf, sizeof buf, "%" PRId64, alloc->res.memory);
		env_set(&e, "MEMORY", buf);
		snprintf(buf, sizeof buf, "%" PRId64, alloc->res.disk);
		env_set(&e, "DISK", buf);
		snprintf(buf, sizeof buf, "%d", alloc->ngpus);
		env_set(&e, "GPUS", buf);
		double threads = ceil(alloc->res.cores - CORES_EPSILON);
		snprintf(buf, sizeof buf, "%.0f", threads >= 1 ? threads : 1);
		env_set(&e, "OMP_NUM_THREADS", buf);
		char ids[WORKER_GPUS_MAX * 4 + 1] = "";
		size_t off = 0;
		for (int i = 0; i < alloc->ngpus; i++)
			off += (size_t)snprintf(ids + off, sizeof ids - off, "%s%d", i ? "," : "",
			                        alloc->gpu_ids[i]);
		env_set(&e, "CUDA_VISIBLE_DEVICES", ids);
	}
	if (tmpdir)
		env_set(&e, "TMPDIR", tmpdir);
	for (size_t i = 0; i < nenv; i++)
		env_set(&e, env[i].name, env[i].value);
	if (!e.v)
		e.v = xcalloc(1, sizeof *e.v);
	e.v[e.n] = NULL;
	return e.v;
}

void worker_task_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

/* ---- running a task ----------------------------------------------------------------------- */

enum task_state {
	TS_RUNNING,  /* the monitor runs the tree */
	TS_ENDING,   /* the tree is gone; work in the thread pool */
	TS_DONE,     /* DONE called (or about to be) */
	TS_DELETING, /* worker_task_delete: removing the sandbox, then free */
};

enum work_kind { WORK_FINISH, WORK_REMOVE };

struct worker_task {
	uv_loop_t *loop;
	int64_t id, try_;
	json_t *msg;
	struct wq_task_output *outs; /* names point into MSG */
	size_t nouts;
	int64_t stdout_max;
	struct worker_alloc alloc;
	struct worker_sandbox *sb;
	char *stdout_path;
	struct rmonitor *m;
	pid_t pid;
	worker_task_done_fn done;
	worker_task_ended_fn ended;
	void *arg;
	enum task_state state;
	bool cancelled, deleted, keep_sandbox, sandbox_removed, work_busy;
	bool container; /* run by the container runner: its record is read at the end */
	/* the file the runner writes its container's id to (NULL without containers), and for a
	 * container of its own the engine, so that one whose runner was killed with the task is
	 * removed at once (NULL otherwise) */
	char *ctr_id_file;
	struct docker_api *ctr_api;
	enum work_kind work_kind;
	uv_work_t work;
	uv_timer_t *timer; /* defers DONE of a task that could not start */
	int64_t t_started;
	struct worker_task_result res;
	struct worker_cpus *cpus;       /* where HELD came from, or NULL */
	cpu_set_t held;                 /* the cpus of its cpuset */
	struct worker_elastic_task *el; /* its growth and throttle while it runs, or NULL */
	bool report_grown;
};

/* The task's tree is gone (or is being killed): its cpus are free for the next task. */
static void give_cpus(struct worker_task *t)
{
	if (t->cpus)
		worker_cpus_give(t->cpus, &t->held);
	t->cpus = NULL;
}

static void task_free(struct worker_task *t)
{
	struct worker_task_result *r = &t->res;
	for (size_t i = 0; i < r->noutputs; i++) {
		free(r->outputs[i].missing);
		if (r->outputs[i].fd >= 0)
			close(r->outputs[i].fd);
	}
	free(r->outputs);
	for (size_t i = 0; i < r->nexhausted; i++)
		free(r->exhausted[i]);
	free(r->exhausted);
	free(r->text);
	json_decref(r->container);
	json_decref(r->grown);
	rmsummary_clear(&r->summary);
	worker_sandbox_delete(t->sb);
	free(t->stdout_path);
	free(t->ctr_id_file);
	free(t->outs);
	json_decref(t->msg);
	free(t);
}

static void timer_closed(uv_handle_t *h)
{
	free(h);
}

static void call_done(struct worker_task *t)
{
	t->state = TS_DONE;
	if (t->done)
		t->done(t, t->arg);
}

static void on_deferred_done(uv_timer_t *h)
{
	struct worker_task *t = h->data;
	uv_close((uv_handle_t *)h, timer_closed);
	t->timer = NULL;
	call_done(t);
}

/* The task could not start: it ends as sandbox_error with TEXT (taken), DONE from the loop. */
static void fail_start(struct worker_task *t, char *text)
{
	warn("task %" PRId64 ".%" PRId64 ": %s", t->id, t->try_, text);
	t->res.outcome = WQ_OUTCOME_SANDBOX_ERROR;
	t->res.text = text;
	t->res.t_ended = time_now_us();
	t->state = TS_ENDING;
	t->timer = xmalloc(sizeof *t->timer);
	uv_timer_init(t->loop, t->timer);
	t->timer->data = t;
	uv_timer_start(t->timer, on_deferred_done, 0, 0);
}

/* Whether output O is wanted given how the task ended. */
static bool output_wanted(const struct worker_task *t, const struct wq_task_output *o)
{
	bool success = t->res.outcome == WQ_OUTCOME_EXITED && t->res.exit_status == 0;
	switch (o->when) {
	case WQ_WHEN_SUCCESS: return success;
	case WQ_WHEN_FAILURE: return !success;
	case WQ_WHEN_ALWAYS:
	default: return true;
	}
}

/* Outputs, stdout size, disk state (on the loop for a few outputs, else in the thread pool). */
static void finish_outputs(struct worker_task *t)
{
	struct worker_task_result *r = &t->res;
	if (t->container && !r->container) {
		/* an engine that died under the task: the worker's failure, not the task's */
		r->container = worker_container_record_read(worker_sandbox_path(t->sb));
		const char *lost = worker_container_engine_lost(r->container);
		if (lost) {
			r->outcome = WQ_OUTCOME_SANDBOX_ERROR;
			free(r->text);
			r->text = xstrdup(lost);
			return;
		}
	}
	r->outputs = xcalloc(t->nouts + 1, sizeof *r->outputs);
	r->noutputs = t->nouts;
	for (size_t i = 0; i < t->nouts; i++) {
		const struct wq_task_output *o = &t->outs[i];
		struct worker_task_output *x = &r->outputs[i];
		x->fd = -1;
		if (!output_wanted(t, o)) {
			x->kind = WQ_DONE_SKIPPED;
			continue;
		}
		int fd = -1;
		char *missing = NULL;
		bool as_dir = o->dir;
		int rc = worker_sandbox_check_output(t->sb, o->name, as_dir, &fd, &missing);
		if (rc == -EINVAL && !o->dir && o->dir_ok && !o->watch) {
			/* `dirout`: a file output the task made a directory goes back as one (a
			 * FIFO or a device stays "not a regular file") */
			char *why = NULL;
			if (worker_sandbox_check_output(t->sb, o->name, true, &fd, &why) == 0) {
				free(missing);
				missing = NULL;
				rc = 0;
				as_dir = true;
			} else if (why && strncmp(why, "is not a directory", 18) != 0) {
				free(missing);
				missing = why; /* a directory with a link inside, say */
				why = NULL;
			}
			free(why);
		}
		if (rc == 0) {
			x->kind = as_dir ? WQ_DONE_DIR : WQ_DONE_XFER;
			x->fd = fd;
		} else {
			x->kind = WQ_DONE_MISSING;
			x->missing =
			    missing ? missing
			            : xasprintf("cannot open: %s: %s", o->name, htc_strerror(rc));
		}
	}

	struct stat st;
	int64_t size = stat(t->stdout_path, &st) == 0 ? (int64_t)st.st_size : 0;
	r->stdout_size = size;
	if (size <= t->stdout_max) {
		r->stdout_head = size;
		r->stdout_tail = 0;
	} else {
		int64_t tail = t->stdout_max / 2 < STDOUT_TAIL ? t->stdout_max / 2 : STDOUT_TAIL;
		r->stdout_head = t->stdout_max - tail;
		r->stdout_tail = tail;
		r->stdout_truncated = true;
	}
	r->stdout_omitted = size - r->stdout_head - r->stdout_tail;

	int64_t fs_size = -1, fs_free = -1;
	if (worker_fs_figures(worker_sandbox_path(t->sb), &fs_size, &fs_free) == 0)
		r->disk_full = fs_free < worker_disk_reserve_mb(fs_size);
}

static void work_run(uv_work_t *w)
{
	struct worker_task *t = w->data;
	if (t->work_kind == WORK_FINISH) {
		finish_outputs(t);
	} else if (t->sb && !t->sandbox_removed) {
		worker_sandbox_recycle(t->sb);
		t->sandbox_removed = true;
	}
}

static void queue_work(struct worker_task *t, enum work_kind kind);

static void work_after(uv_work_t *w, int status)
{
	(void)status;
	struct worker_task *t = w->data;
	t->work_busy = false;
	if (t->deleted) {
		if (t->sb && !t->keep_sandbox && !t->sandbox_removed && status == 0) {
			queue_work(t, WORK_REMOVE);
			return;
		}
		task_free(t);
		return;
	}
	if (t->work_kind == WORK_FINISH) {
		struct worker_task_result *r = &t->res;
		if (r->stdout_truncated)
			debug(D_WORKER,
			      "task %" PRId64 ".%" PRId64 ": stdout of %" PRId64
			      " bytes cut to stdout_max %" PRId64 ": %" PRId64 " bytes dropped",
			      t->id, t->try_, r->stdout_size, t->stdout_max, r->stdout_omitted);
	}
	call_done(t);
}

/* Checking a few outputs is a handful of stats in the task's own sandbox on the worker's disk:
 * cheaper on the loop than the thread pool's round trip (a wakeup of a pool thread, then of the
 * loop), which is on the path of every result. More outputs are checked in the pool. */
#define INLINE_OUTPUTS_MAX 16
/* The same for emptying a sandbox the monitor measured small at the end (at most this many MB):
 * up to this many entries and no directory on the loop, the rest in the pool. */
#define INLINE_RECYCLE_MB      16.0
#define INLINE_RECYCLE_ENTRIES 32

static bool recycled_here(struct worker_task *t)
{
	const struct worker_task_result *r = &t->res;
	if (!t->sb || t->sandbox_removed || !r->has_summary || r->summary.v[RM_DISK] < 0 ||
	    r->summary.v[RM_DISK] > INLINE_RECYCLE_MB)
		return false;
	if (worker_sandbox_recycle_small(t->sb, INLINE_RECYCLE_ENTRIES) < 0)
		return false; /* the pool finishes it, or removes it */
	t->sandbox_removed = true;
	return true;
}

static void queue_work(struct worker_task *t, enum work_kind kind)
{
	t->work_kind = kind;
	t->work.data = t;
	t->work_busy = true;
	if ((kind == WORK_FINISH && t->nouts <= INLINE_OUTPUTS_MAX) ||
	    (kind == WORK_REMOVE && recycled_here(t))) {
		work_run(&t->work);      /* nothing left to do for a recycled sandbox */
		work_after(&t->work, 0); /* may free T */
		return;
	}
	int r = uv_queue_work(t->loop, &t->work, work_run, work_after);
	if (r < 0) {
		/* cannot happen with a valid loop; do it here rather than lose the task */
		warn("task %" PRId64 ".%" PRId64 ": uv_queue_work: %s", t->id, t->try_,
		     uv_strerror(r));
		work_run(&t->work);
		work_after(&t->work, 0);
	}
}

static void left_removed(int outcome, const char *err, void *arg)
{
	char *label = arg;
	if (outcome < 0)
		warn("%s: cannot remove its container: %s", label, err ? err : "unknown error");
	else
		debug(D_WORKER, "%s: its container removed", label);
	free(label);
}

/* A task killed (a limit, a cancel) took its runner with it: its own container, stopped by
 * the same kill when nested in the task's cgroup, is removed now rather than when the worker
 * ends, in the thread pool (the engine may be slow to answer; the task's result does not wait
 * for it, and the worker does not end before it is done). */
static void remove_left_container(struct worker_task *t)
{
	if (!t->ctr_api)
		return;
	char *label = xasprintf("task %" PRId64 ".%" PRId64, t->id, t->try_);
	char *err = NULL;
	int r = worker_ctr_memory_remove_left_async(t->loop, docker_api_socket(t->ctr_api),
	                                            t->ctr_id_file, left_removed, label, &err);
	if (r < 0) {
		warn("%s: %s", label, err);
		free(err);
	}
	if (r <= 0)
		free(label);
}

static void on_monitor_done(struct rmonitor *m, const struct rmsummary *s, void *arg)
{
	struct worker_task *t = arg;
	struct worker_task_result *r = &t->res;
	rmsummary_copy(&r->summary, s);
	r->has_summary = true;
	r->t_ended = s->v[RM_END] > 0 ? (int64_t)s->v[RM_END] : time_now_us();
	switch (s->exit_type) {
	case RM_EXIT_NORMAL:
		r->outcome = WQ_OUTCOME_EXITED;
		r->exit_status = s->exit_status;
		/* its container killed by the kernel at the container's own limit (the runner says
		 * so on stderr): the task's memory was exhausted, as at the limit of its cgroup */
		if (t->container && s->exit_status == WORKER_DOCKER_EXIT_OOM) {
			r->outcome = WQ_OUTCOME_EXHAUSTED;
			r->signal = SIGKILL;
			r->exhausted = xcalloc(2, sizeof *r->exhausted);
			r->exhausted[r->nexhausted++] = xstrdup(rmsummary_field_name(RM_MEMORY));
		}
		break;
	case RM_EXIT_SIGNAL:
		r->outcome = WQ_OUTCOME_SIGNALED;
		r->signal = s->signal > 0 ? s->signal : SIGKILL;
		break;
	case RM_EXIT_LIMITS:
		r->outcome = WQ_OUTCOME_EXHAUSTED;
		r->signal = s->signal > 0 ? s->signal : SIGKILL;
		r->exhausted = xcalloc(RM_N_FIELDS + 1, sizeof *r->exhausted);
		for (int f = 0; f < RM_N_FIELDS; f++)
			if (s->limits_exceeded[f] >= 0)
				r->exhausted[r->nexhausted++] = xstrdup(rmsummary_field_name(f));
		break;
	case RM_EXIT_NONE:
	default:
		r->outcome = WQ_OUTCOME_SANDBOX_ERROR;
		r->text = xstrdup("the resource monitor gave no exit status");
		break;
	}
	rmonitor_delete(m);
	t->m = NULL;
	if (s->exit_type != RM_EXIT_NORMAL)
		remove_left_container(t);
	if (t->el) {
		if (t->report_grown)
			r->grown = worker_elastic_task_json(t->el);
		worker_elastic_task_remove(t->el);
		t->el = NULL;
	}
	give_cpus(t);
	t->state = TS_ENDING;
	debug(D_WORKER, "task %" PRId64 ".%" PRId64 " ended%s: exit_type %d status %d signal %d",
	      t->id, t->try_, t->cancelled ? " (cancelled)" : "", (int)s->exit_type, s->exit_status,
	      s->signal);
	/* before queue_work, which may call DONE at once (and DONE may free T) */
	if (t->ended)
		t->ended(t, t->arg);
	queue_work(t, t->cancelled ? WORK_REMOVE : WORK_FINISH);
}

/* The path in the sandbox of the image archive a task's container names (the input whose
 * object it is), or NULL when it names an image of the engine. Caller frees. */
static char *worker_task_container_archive(const struct wq_task_msg *msg, const char *work)
{
	if (!msg->container_image)
		return NULL;
	for (size_t i = 0; i < msg->ninputs; i++)
		if (msg->inputs[i].from == WQ_FROM_CACHE &&
		    strcmp(msg->inputs[i].object, msg->container_image) == 0)
			return path_join(work, msg->inputs[i].name);
	return NULL; /* the parser checked that it is an input */
}

char **worker_task_container_argv(const struct worker_docker *dk, const struct wq_task_msg *msg,
                                  const char *work, bool *own)
{
	*own = false;
	if (dk && msg->has_container) {
		char *archive = worker_task_container_archive(msg, work);
		struct worker_container_spec cs = {
		    .image = msg->container_name,
		    .archive = archive,
		    .key = msg->container_image,
		    .shared = msg->container_mode == WQ_CONTAINER_SHARED,
		};
		char **v = worker_docker_argv_spec(dk, work, msg->command, &cs);
		free(archive);
		*own = !cs.shared;
		return v;
	}
	if (dk && worker_docker_image(dk)) {
		*own = !worker_docker_shared(dk);
		return worker_docker_argv(dk, work, NULL, msg->command);
	}
	return NULL;
}

struct worker_task *worker_task_start(const struct worker_task_params *p,
                                      const struct wq_task_msg *msg, struct worker_sandbox *sb,
                                      const struct worker_alloc *alloc, worker_task_done_fn done,
                                      void *arg)
{
	struct worker_task *t = xcalloc(1, sizeof *t);
	t->loop = p->loop;
	t->id = msg->id;
	t->try_ = msg->try_;
	t->msg = json_incref(msg->msg);
	t->nouts = msg->noutputs;
	t->outs = xcalloc(msg->noutputs + 1, sizeof *t->outs);
	if (msg->noutputs)
		memcpy(t->outs, msg->outputs, msg->noutputs * sizeof *t->outs);
	t->stdout_max = msg->stdout_max < 0 ? WQ_STDOUT_DEFAULT : msg->stdout_max;
	if (t->stdout_max > WQ_STDOUT_MAX)
		t->stdout_max = WQ_STDOUT_MAX;
	if (alloc)
		t->alloc = *alloc;
	t->sb = sb;
	t->pid = -1;
	t->done = done;
	t->ended = p->ended;
	t->arg = arg;
	t->state = TS_RUNNING;
	rmsummary_init(&t->res.summary);
	int64_t now = time_now_us();
	t->res.t_received = p->t_received > 0 ? p->t_received : now;
	t->res.t_inputs_ready = p->t_inputs_ready > 0 ? p->t_inputs_ready : now;

	if (!sb) {
		int e = p->sandbox_err < 0 ? p->sandbox_err : -EIO;
		fail_start(t, xasprintf("cannot create the sandbox of task %" PRId64 ".%" PRId64
		                        ": %s",
		                        t->id, t->try_, htc_strerror(e)));
		return t;
	}
	t->stdout_path = path_join(worker_sandbox_path(sb), STDOUT_NAME);

	/* A recycled sandbox keeps its stdout file (a plain file with one link, emptied). */
	int out_fd = openat(worker_sandbox_fd(sb), STDOUT_NAME,
	                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out_fd < 0)
		out_fd = -errno;
	if (out_fd < 0) {
		fail_start(t,
		           xasprintf("cannot create %s: %s", t->stdout_path, htc_strerror(out_fd)));
		return t;
	}
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0) {
		int e = -errno;
		close(out_fd);
		fail_start(t, xasprintf("cannot open /dev/null: %s", htc_strerror(e)));
		return t;
	}

	/* A task whose allocation may change while it runs gets a file that follows it, beside its
	 * working directory (doc/elasticity.md, "The adaptive view"); the variable comes last, so
	 * the task's own environment cannot move it. */
	char *view = p->elastic && p->charged
	                 ? xasprintf("%s/" WORKER_TASK_VIEW_FILE, worker_sandbox_path(sb))
	                 : NULL;
	struct wq_env_var *envs = xcalloc(msg->nenv + 3, sizeof *envs);
	if (msg->nenv)
		memcpy(envs, msg->env, msg->nenv * sizeof *envs);
	size_t nenvs = msg->nenv;
	if (view)
		envs[nenvs++] = (struct wq_env_var){"HTC_ALLOCATION_FILE", view};
	/* A task that may grow and runs in a container of its own: the container's own memory
	 * limit is what it may grow to, and the task's cgroup, which the container is nested in
	 * and which the worker grows, holds it to its allocation meanwhile (worker_runner.c). Not
	 * nested, or lent cores (--cpu-grow), the worker follows the container itself: its CPU
	 * quota (and, not nested, its memory) through the engine (worker_ctr_memory.h). */
	char grow_max[32];
	bool grows = view && p->docker && msg->max_memory > t->alloc.res.memory;
	bool lends =
	    view && p->docker && worker_elastic_lends_cores(p->elastic) > t->alloc.res.cores;
	bool nests = p->docker && worker_docker_nests(p->docker);
	if (grows) {
		snprintf(grow_max, sizeof grow_max, "%" PRId64, msg->max_memory);
		envs[nenvs++] = (struct wq_env_var){WORKER_TASK_CONTAINER_MAX_ENV, grow_max};
	}
	bool follows = lends || (grows && !nests);
	/* every container of its own tells its id, so that one left by a killed runner is
	 * removed at once */
	if (p->docker) {
		t->ctr_id_file = xasprintf("%s/" WORKER_CTR_ID_FILE, worker_sandbox_path(sb));
		envs[nenvs++] = (struct wq_env_var){WORKER_CTR_ID_ENV, t->ctr_id_file};
	}
	char **env =
	    worker_task_env(p->base_env, &t->alloc, worker_sandbox_tmp_path(sb), envs, nenvs);
	free(envs);
	/* A command of plain words whose program is found is exec'd directly: the same as
	 * /bin/sh -c, one exec fewer. Anything else (and a program not found, which must give the
	 * shell's exit status 127) goes through the shell. */
	const char *sh_argv[] = {"/bin/sh", "-c", msg->command, NULL};
	const char *const *argv = sh_argv;
	char **words = shell_words_simple(msg->command);
	char *prog = NULL;
	if (words) {
		prog = rmon_spawn_lookup(words[0], (const char *const *)env);
		if (prog && access(prog, X_OK) == 0) {
			argv = (const char *const *)words;
		} else {
			free(prog);
			prog = NULL;
		}
	}
	/* --docker/--docker-preserve: the monitored process is the runner (the worker binary in
	 * its --container-run mode), which runs the command in a container nested in the task's
	 * cgroup (doc/work-queue-docker.md); with a container made ahead, the agent's client. */
	bool own = false;
	char **dargv =
	    worker_task_container_argv(p->docker, msg, worker_sandbox_work_path(sb), &own);
	if (dargv && own && worker_ahead_alive(p->ahead))
		dargv = worker_docker_ahead_argv(p->docker, dargv, worker_ahead_pid(p->ahead),
		                                 worker_ahead_dir(p->ahead),
		                                 worker_sandbox_work_path(sb));
	if (dargv && own)
		t->ctr_api = worker_docker_api(p->docker);
	if (dargv) {
		t->container = true;
		argv = (const char *const *)dargv;
		free(prog);
		prog = xstrdup(dargv[0]); /* the runner, or the agent's client before it */
	}
	const char *dirs[] = {worker_sandbox_path(sb), NULL};
	struct rmonitor_spec spec;
	rmonitor_spec_init(&spec);
	spec.argv = argv;
	spec.path = prog; /* found above: not searched again */
	spec.env = (const char *const *)env;
	spec.cwd = worker_sandbox_work_path(sb);
	spec.stdin_fd = null_fd;
	spec.stdout_fd = out_fd;
	spec.stderr_fd = out_fd;
	spec.new_session = 1;
	spec.spawn_async = 1; /* the loop does not wait for the join and exec */
	spec.measure_dirs = dirs;
	spec.cgroups = p->cgroups;
	spec.interval_s = p->interval_s;
	spec.clock = p->clock;
	spec.seccomp_profile = p->seccomp;
	spec.no_proc_events = !p->proc_events;
	const struct wq_resources *res = &t->alloc.res;
	if (res->memory > 0)
		spec.limits.v[RM_MEMORY] = (double)res->memory;
	if (res->disk > 0)
		spec.limits.v[RM_DISK] =
		    (double)(res->disk + (p->linked_mb > 0 ? p->linked_mb : 0));
	if (res->cores > 0)
		spec.limits.v[RM_CORES] = res->cores;
	if (msg->wall_time > 0)
		spec.limits.v[RM_WALL_TIME] = (double)msg->wall_time;
	char cpulist[256] = "";
	if (p->cpus && p->cgroups != RMONITOR_CGROUPS_OFF &&
	    worker_cpus_take(p->cpus, res->cores, &t->held, cpulist, sizeof cpulist) > 0) {
		t->cpus = p->cpus;
		spec.cpuset = cpulist;
	}
	char task_id[64];
	snprintf(task_id, sizeof task_id, "%" PRId64 ".%" PRId64, t->id, t->try_);
	if (p->elastic && p->charged) {
		t->el = worker_elastic_task_add(p->elastic, task_id, p->charged, msg->max_memory,
		                                view, p->resized, arg);
		t->report_grown = p->report_grown;
		spec.at_memory_limit = worker_elastic_at_limit;
		spec.at_memory_limit_arg = t->el;
		double iv = worker_elastic_interval(p->elastic);
		if (spec.interval_s <= 0 || spec.interval_s > iv)
			spec.interval_s = iv;
		if (own && follows)
			worker_elastic_task_container(
			    t->el,
			    worker_ctr_memory_create(worker_docker_api(p->docker), t->ctr_id_file,
			                             NULL, NULL),
			    !nests);
	}

	int err = 0;
	t->t_started = time_now_us();
	t->m = rmonitor_start(t->loop, &spec, on_monitor_done, t, &err);
	worker_task_env_free(env);
	shell_words_free(words);
	worker_docker_argv_free(dargv);
	free(prog);
	free(view);
	close(null_fd);
	close(out_fd);
	if (t->el && t->m) {
		worker_elastic_task_bind(t->el, t->m);
	} else if (t->el) {
		worker_elastic_task_remove(t->el);
		t->el = NULL;
	}
	if (!t->m) {
		fail_start(t, xasprintf("cannot start task %s under the resource monitor: %s",
		                        task_id, htc_strerror(err < 0 ? err : -EIO)));
		return t;
	}
	t->res.t_started = t->t_started;
	t->pid = rmonitor_pid(t->m);
	char cores[64];
	format_cores(res->cores, cores, sizeof cores);
	debug(D_WORKER,
	      "task %s started as pid %d in %s (%s cores, %" PRId64 " MB memory, %" PRId64
	      " MB disk, %d gpus, wall_time %" PRId64 " s%s)",
	      task_id, (int)t->pid, worker_sandbox_work_path(sb), cores, res->memory, res->disk,
	      t->alloc.ngpus, msg->wall_time, rmonitor_uses_cgroups(t->m) ? ", cgroup" : "");
	return t;
}

int worker_task_cancel(struct worker_task *t)
{
	if (!t || t->state != TS_RUNNING || !t->m)
		return -ESRCH;
	t->cancelled = true;
	debug(D_WORKER, "task %" PRId64 ".%" PRId64 ": cancelled, killing its tree", t->id,
	      t->try_);
	return rmonitor_kill(t->m, SIGKILL);
}

void worker_task_delete(struct worker_task *t, bool keep_sandbox)
{
	if (!t || t->deleted)
		return;
	t->deleted = true;
	t->keep_sandbox = keep_sandbox;
	if (t->m) {
		rmonitor_delete(t->m); /* kills the whole tree; DONE is not called */
		t->m = NULL;
	}
	worker_elastic_task_remove(t->el);
	t->el = NULL;
	give_cpus(t);
	if (t->timer) {
		uv_timer_stop(t->timer);
		uv_close((uv_handle_t *)t->timer, timer_closed);
		t->timer = NULL;
	}
	for (size_t i = 0; i < t->res.noutputs; i++)
		if (t->res.outputs[i].fd >= 0) {
			close(t->res.outputs[i].fd);
			t->res.outputs[i].fd = -1;
		}
	t->state = TS_DELETING;
	if (t->work_busy)
		return; /* work_after continues */
	if (t->sb && !keep_sandbox && !t->sandbox_removed) {
		queue_work(t, WORK_REMOVE);
		return;
	}
	task_free(t);
}

int64_t worker_task_id(const struct worker_task *t)
{
	return t->id;
}

int64_t worker_task_try(const struct worker_task *t)
{
	return t->try_;
}

pid_t worker_task_pid(const struct worker_task *t)
{
	return t->pid;
}

bool worker_task_cancelled(const struct worker_task *t)
{
	return t->cancelled;
}

const struct rmsummary *worker_task_current(const struct worker_task *t)
{
	return t->m && t->state == TS_RUNNING ? rmonitor_current(t->m) : NULL;
}

struct worker_sandbox *worker_task_sandbox(const struct worker_task *t)
{
	return t->sb;
}

json_t *worker_task_running_json(const struct worker_task *t)
{
	json_t *gpus = json_array();
	for (int i = 0; i < t->alloc.ngpus; i++)
		json_array_append_new(gpus, json_integer(t->alloc.gpu_ids[i]));
	return json_pack("{s:s,s:I,s:I,s:I,s:o}", "m", "task_running", "id", (json_int_t)t->id,
	                 "try", (json_int_t)t->try_, "at",
	                 (json_int_t)(t->t_started > 0 ? t->t_started : time_now_us()), "gpus",
	                 gpus);
}

const struct worker_task_result *worker_task_result(const struct worker_task *t)
{
	if (t->state != TS_DONE || t->cancelled)
		return NULL;
	return &t->res;
}

const char *worker_task_stdout_path(const struct worker_task *t)
{
	return t->stdout_path;
}

/* The whole range, or -EIO when the file is shorter than when it was measured. */
static int pread_all(int fd, char *buf, size_t len, off_t off)
{
	ssize_t n = full_pread(fd, buf, len, off);
	return n < 0 ? (int)n : (size_t)n < len ? -EIO : 0;
}

int worker_task_stdout_read(const struct worker_task *t, char **buf, size_t *len)
{
	const struct worker_task_result *r = worker_task_result(t);
	*buf = NULL;
	*len = 0;
	if (!r || !t->stdout_path)
		return -ENOENT;
	int fd = open(t->stdout_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t n = (size_t)(r->stdout_head + r->stdout_tail);
	char *b = xmalloc(n + 1);
	int rc = pread_all(fd, b, (size_t)r->stdout_head, 0);
	if (rc == 0 && r->stdout_tail > 0)
		rc = pread_all(fd, b + r->stdout_head, (size_t)r->stdout_tail,
		               (off_t)(r->stdout_size - r->stdout_tail));
	close(fd);
	if (rc < 0) {
		free(b);
		return rc;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

static const char *outcome_name(enum wq_outcome o)
{
	switch (o) {
	case WQ_OUTCOME_EXITED: return "exited";
	case WQ_OUTCOME_SIGNALED: return "signaled";
	case WQ_OUTCOME_EXHAUSTED: return "exhausted";
	case WQ_OUTCOME_INPUT_MISSING: return "input_missing";
	case WQ_OUTCOME_SANDBOX_ERROR:
	default: return "sandbox_error";
	}
}

/* TEXT cut to the protocol's send limit at a UTF-8 boundary. */
static json_t *text_json(const char *text)
{
	size_t len = strlen(text);
	return json_stringn(text, wq_msg_utf8_cut(text, len, TEXT_MAX));
}

json_t *worker_task_done_json(const struct worker_task *t, const int64_t *output_xfers,
                              int64_t stdout_xfer)
{
	const struct worker_task_result *r = worker_task_result(t);
	if (!r)
		return NULL;
	json_t *o = json_pack("{s:s,s:I,s:I,s:s}", "m", "task_done", "id", (json_int_t)t->id, "try",
	                      (json_int_t)t->try_, "outcome", outcome_name(r->outcome));
	switch (r->outcome) {
	case WQ_OUTCOME_EXITED:
		json_object_set_new(o, "exit_status", json_integer(r->exit_status));
		break;
	case WQ_OUTCOME_SIGNALED: json_object_set_new(o, "signal", json_integer(r->signal)); break;
	case WQ_OUTCOME_EXHAUSTED: {
		json_object_set_new(o, "signal", json_integer(r->signal));
		json_t *a = json_array();
		for (size_t i = 0; i < r->nexhausted; i++)
			json_array_append_new(a, json_string(r->exhausted[i]));
		json_object_set_new(o, "exhausted", a);
		break;
	}
	case WQ_OUTCOME_INPUT_MISSING:
	case WQ_OUTCOME_SANDBOX_ERROR:
	default:
		json_object_set_new(o, "text", text_json(r->text ? r->text : "sandbox error"));
		break;
	}
	if (r->outcome != WQ_OUTCOME_SANDBOX_ERROR) {
		json_t *so = json_pack("{s:I,s:b,s:I}", "size", (json_int_t)r->stdout_size,
		                       "truncated", (int)r->stdout_truncated, "xfer",
		                       (json_int_t)(stdout_xfer > 0 ? stdout_xfer : 0));
		if (r->stdout_truncated)
			json_object_set_new(so, "head", json_integer(r->stdout_head));
		json_object_set_new(o, "stdout", so);
		json_t *outs = json_array();
		for (size_t i = 0; i < r->noutputs; i++) {
			const struct worker_task_output *x = &r->outputs[i];
			json_t *e = json_pack("{s:I}", "index", (json_int_t)i);
			int64_t id = output_xfers ? output_xfers[i] : 0;
			switch (x->kind) {
			case WQ_DONE_XFER:
			case WQ_DONE_DIR:
				if (id > 0) {
					json_object_set_new(e,
					                    x->kind == WQ_DONE_DIR ? "dir" : "xfer",
					                    json_integer(id));
				} else {
					char *m =
					    xasprintf("could not be sent: %s", t->outs[i].name);
					json_object_set_new(e, "missing", text_json(m));
					free(m);
				}
				break;
			case WQ_DONE_MISSING:
				json_object_set_new(e, "missing", text_json(x->missing));
				break;
			case WQ_DONE_SKIPPED:
			default: json_object_set_new(e, "skipped", json_true()); break;
			}
			json_array_append_new(outs, e);
		}
		json_object_set_new(o, "outputs", outs);
	}
	if (r->has_summary) {
		char *text = rmsummary_to_json(&r->summary, 0, 1);
		json_t *s = text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
		free(text);
		if (s)
			json_object_set_new(o, "summary", s);
	}
	json_t *times = json_object();
	json_object_set_new(times, "received", json_integer(r->t_received));
	json_object_set_new(times, "inputs_ready", json_integer(r->t_inputs_ready));
	if (r->t_started > 0)
		json_object_set_new(times, "started", json_integer(r->t_started));
	if (r->t_ended > 0)
		json_object_set_new(times, "ended", json_integer(r->t_ended));
	json_object_set_new(times, "reported", json_integer(time_now_us()));
	json_object_set_new(o, "times", times);
	json_object_set_new(o, "disk_full", json_boolean(r->disk_full));
	if (r->container)
		json_object_set(o, "container", r->container);
	if (r->grown)
		json_object_set(o, "grown", r->grown);
	return o;
}
