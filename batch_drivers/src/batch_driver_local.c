/* batch_driver_local.c: the "local" driver, which runs each job as `/bin/sh -c COMMAND` on this
 * machine with posix_spawn. Jobs are admitted against the machine's cores, memory, disk and gpus
 * (never overcommitted) and a max-jobs limit, each runs in its own process group so that kills
 * reach its children, and wall-time limits are enforced with a timer. */
#include "batch_driver.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utlist.h>

#include "debug.h"
#include "htc_error.h"
#include "shell_words.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

extern char **environ;

/* How many waiting jobs each scheduling pass looks at (bounded backfill). */
#define LOCAL_SCAN_WINDOW 64

struct local_state;

struct local_job {
	struct batch_job *job; /* NULL once the queue has been destroyed */
	struct local_state *st;
	int64_t cores, memory, disk, gpus; /* what admission charged for it */
	pid_t pid;
	uv_timer_t timer;
	int running;
	int has_timer;
	int open_handles; /* freed when the last handle is closed */
	int timed_out;
	int removed;
	int cores_declared; /* the job asked for a number of cores */
	struct local_job *prev, *next;
};

struct local_state {
	struct batch_queue *q;
	uv_loop_t *loop;
	int64_t max_jobs; /* <= 0: same as cores */
	int64_t cores, memory, disk, gpus;
	int64_t used_cores, used_memory, used_disk, used_gpus;
	int64_t n_running;
	struct local_job *waiting; /* utlist DL, submission order */
	struct local_job *running; /* utlist DL */
	uv_signal_t sigchld;       /* job exits; the state is freed when it closes */
};

static int64_t machine_memory_mb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	char line[256];
	int64_t mb = 0;
	while (fgets(line, sizeof line, f)) {
		long long kb;
		if (sscanf(line, "MemTotal: %lld kB", &kb) == 1) {
			mb = kb / 1024;
			break;
		}
	}
	fclose(f);
	return mb;
}

static int64_t cwd_free_disk_mb(void)
{
	struct statvfs sv;
	if (statvfs(".", &sv) < 0)
		return 0;
	return (int64_t)((unsigned long long)sv.f_bavail * sv.f_frsize / (1024 * 1024));
}

static void state_closed(uv_handle_t *h)
{
	free(h->data);
}

static void on_sigchld(uv_signal_t *h, int signum);

static int local_create(struct batch_queue *q, void **state)
{
	struct local_state *st = xcalloc(1, sizeof *st);
	st->q = q;
	st->loop = batch_queue_loop(q);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	st->cores = n > 0 ? n : 1;
	st->memory = machine_memory_mb();
	st->disk = cwd_free_disk_mb();
	st->gpus = 0;
	st->max_jobs = 0;
	uv_signal_init(st->loop, &st->sigchld);
	st->sigchld.data = st;
	uv_signal_start(&st->sigchld, on_sigchld, SIGCHLD);
	/* It keeps the loop alive only while jobs run (as process handles would). */
	uv_unref((uv_handle_t *)&st->sigchld);
	debug(D_BATCH, "local: %" PRId64 " cores, %" PRId64 " MB memory, %" PRId64 " MB disk",
	      st->cores, st->memory, st->disk);
	*state = st;
	return 0;
}

static int parse_count(const char *value, int64_t min, int64_t *out)
{
	int64_t v;
	if (str_to_int64(value, &v) < 0 || v < min)
		return -EINVAL;
	*out = v;
	return 0;
}

static int local_set_option(void *state, const char *key, const char *value)
{
	struct local_state *st = state;
	if (!strcmp(key, "max-jobs"))
		return parse_count(value, 1, &st->max_jobs);
	if (!strcmp(key, "cores"))
		return parse_count(value, 1, &st->cores);
	if (!strcmp(key, "memory"))
		return parse_count(value, 0, &st->memory);
	if (!strcmp(key, "disk"))
		return parse_count(value, 0, &st->disk);
	if (!strcmp(key, "gpus"))
		return parse_count(value, 0, &st->gpus);
	return -EINVAL;
}

static int64_t max_jobs(const struct local_state *st)
{
	return st->max_jobs > 0 ? st->max_jobs : st->cores;
}

/* Jobs that declare no cores count as one core each, but up to max-jobs of
 * them may run when max-jobs is set above the core count (as with make -j);
 * a job that declares cores only starts within the real core count. */
static int64_t core_limit(const struct local_state *st, const struct local_job *lj)
{
	int64_t j = max_jobs(st);
	if (lj && lj->cores_declared)
		return st->cores;
	return j > st->cores ? j : st->cores;
}

static int fits(const struct local_state *st, const struct local_job *lj)
{
	return st->used_cores + lj->cores <= core_limit(st, lj) &&
	       st->used_memory + lj->memory <= st->memory && st->used_disk + lj->disk <= st->disk &&
	       st->used_gpus + lj->gpus <= st->gpus;
}

static void charge(struct local_state *st, const struct local_job *lj, int sign)
{
	st->used_cores += sign * lj->cores;
	st->used_memory += sign * lj->memory;
	st->used_disk += sign * lj->disk;
	st->used_gpus += sign * lj->gpus;
	st->n_running += sign;
}

static void handle_closed(uv_handle_t *h)
{
	struct local_job *lj = h->data;
	if (--lj->open_handles == 0)
		free(lj);
}

static void close_handles(struct local_job *lj)
{
	if (!lj->has_timer) {
		free(lj);
		return;
	}
	lj->open_handles = 1;
	uv_timer_stop(&lj->timer);
	uv_close((uv_handle_t *)&lj->timer, handle_closed);
}

static void schedule(struct local_state *st);

/* The job's shell has exited: report it and let others start. */
static void job_exited(struct local_job *lj, int64_t exit_status, int term_signal)
{
	struct local_state *st = lj->st;
	struct batch_job *job = lj->job;
	/* background processes the job left in its group go with it */
	kill(-lj->pid, SIGKILL);
	struct batch_result *r = &job->result;
	r->end_us = time_now_us();
	if (term_signal) {
		r->signal = term_signal;
		if (lj->timed_out)
			r->exhausted = BATCH_EXHAUSTED_WALL_TIME;
	} else {
		r->exited_normally = 1;
		r->exit_code = (int)exit_status;
	}
	r->removed = lj->removed;
	int64_t us = r->end_us - r->start_us;
	r->measured.wall_time_s = us > 0 ? (us + 500000) / 1000000 : 0;
	debug(D_BATCH, "local job %" PRId64 " pid %d ended: %s %d%s", job->id, (int)lj->pid,
	      term_signal ? "signal" : "exit", term_signal ? term_signal : (int)exit_status,
	      r->exhausted ? " (wall time exhausted)" : "");
	DL_DELETE(st->running, lj);
	charge(st, lj, -1);
	lj->job = NULL;
	close_handles(lj);
	batch_job_complete(st->q, job);
}

/* SIGCHLD: reap every job whose shell has ended (signals coalesce, so look
 * at all of them), then start what now fits. */
static void on_sigchld(uv_signal_t *h, int signum)
{
	(void)signum;
	struct local_state *st = h->data;
	struct local_job *lj, *tmp;
	int any = 0;
	DL_FOREACH_SAFE(st->running, lj, tmp)
	{
		int status;
		pid_t r;
		do
			r = waitpid(lj->pid, &status, WNOHANG);
		while (r < 0 && errno == EINTR);
		if (r != lj->pid)
			continue;
		any = 1;
		if (WIFSIGNALED(status))
			job_exited(lj, 0, WTERMSIG(status));
		else
			job_exited(lj, WEXITSTATUS(status), 0);
	}
	if (any)
		schedule(st);
	if (!st->running)
		uv_unref((uv_handle_t *)&st->sigchld);
}

static void wall_time_expired(uv_timer_t *t)
{
	struct local_job *lj = t->data;
	lj->timed_out = 1;
	debug(D_BATCH, "local job %" PRId64 " pid %d exceeded its wall time", lj->job->id,
	      (int)lj->pid);
	kill(-lj->pid, SIGKILL);
}

/* The inherited environment with the job's entries added (they replace same-named ones). The
 * strings are borrowed; only the array is allocated. */
static char **build_env(const char *const *add)
{
	size_t n_env = 0, n_add = 0;
	while (environ && environ[n_env])
		n_env++;
	while (add && add[n_add])
		n_add++;
	char **env = xcalloc(n_env + n_add + 1, sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n_env; i++) {
		const char *e = environ[i];
		const char *eq = strchr(e, '=');
		size_t len = eq ? (size_t)(eq - e) : strlen(e);
		int replaced = 0;
		for (size_t j = 0; j < n_add && !replaced; j++)
			replaced = !strncmp(add[j], e, len) && add[j][len] == '=';
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < n_add; j++)
		env[k++] = (char *)add[j];
	env[k] = NULL;
	return env;
}

/* Whether PROG would be found by execvp with the inherited PATH. A job that
 * sets its own PATH always goes through the shell. */
static int executable_found(const char *prog, const char *const *jobenv)
{
	for (const char *const *e = jobenv; e && *e; e++)
		if (!strncmp(*e, "PATH=", 5))
			return 0;
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		char full[4096];
		int n = snprintf(full, sizeof full, "%.*s/%s", (int)len, len ? path : ".", prog);
		if (n > 0 && (size_t)n < sizeof full && access(full, X_OK) == 0)
			return 1;
		path += len;
		if (*path == ':')
			path++;
	}
	return 0;
}

static void start_job(struct local_state *st, struct local_job *lj)
{
	struct batch_job *job = lj->job;
	char *sh_args[] = {"sh", "-c", (char *)job->spec.command, NULL};
	/* A command of plain words is exec'd directly, as make does: one exec
	 * instead of two per job. Anything else goes through /bin/sh. */
	char **words = shell_words_simple(job->spec.command);
	if (words && !executable_found(words[0], job->spec.env)) {
		/* Let the shell report "not found" exactly as it would. */
		shell_words_free(words);
		words = NULL;
	}
	char **env = build_env(job->spec.env);
	/* posix_spawn (a vfork in glibc) instead of fork: no copy of makeflow's
	 * page tables and no copy-on-write faults afterwards. The job gets its
	 * own session and process group, default signals, an empty signal mask,
	 * and /dev/null as stdin. */
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawnattr_init(&at);
	sigset_t none, defaults;
	sigemptyset(&none);
	sigfillset(&defaults);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &defaults);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
	                                  POSIX_SPAWN_SETSIGDEF);
	job->result.start_us = time_now_us();
	pid_t pid = -1;
	int rc = words ? posix_spawnp(&pid, words[0], &fa, &at, words, env)
	               : posix_spawn(&pid, "/bin/sh", &fa, &at, sh_args, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	shell_words_free(words);
	free(env);
	if (rc != 0) {
		warn("local: cannot spawn job %" PRId64 ": %s", job->id, strerror(rc));
		batch_job_set_error(job, "spawn: %s", strerror(rc));
		job->result.exit_code = -1;
		job->result.start_us = 0;
		lj->job = NULL;
		lj->has_timer = 0;
		close_handles(lj);
		batch_job_complete(st->q, job);
		return;
	}
	lj->pid = pid;
	uv_ref((uv_handle_t *)&st->sigchld);
	lj->running = 1;
	charge(st, lj, +1);
	DL_APPEND(st->running, lj);
	batch_job_started(st->q, job);
	int64_t wall = job->spec.resources.wall_time_s;
	if (wall > 0) {
		uv_timer_init(st->loop, &lj->timer);
		lj->timer.data = lj;
		lj->has_timer = 1;
		uv_timer_start(&lj->timer, wall_time_expired, (uint64_t)wall * 1000, 0);
	}
	debug(D_BATCH, "local job %" PRId64 " started as pid %d", job->id, (int)lj->pid);
}

/* Starts, in submission order, every job within the first LOCAL_SCAN_WINDOW waiting ones that
 * fits what is free. */
static void schedule(struct local_state *st)
{
	struct local_job *lj = st->waiting, *next;
	for (int scanned = 0; lj && scanned < LOCAL_SCAN_WINDOW; scanned++, lj = next) {
		if (st->n_running >= max_jobs(st) || st->used_cores >= core_limit(st, NULL))
			break;
		next = lj->next;
		if (!fits(st, lj))
			continue;
		DL_DELETE(st->waiting, lj);
		start_job(st, lj);
	}
}

static int64_t need(int64_t declared, int64_t unset)
{
	return declared < 0 ? unset : declared;
}

static int local_submit(void *state, struct batch_job *job)
{
	struct local_state *st = state;
	const struct batch_resources *res = &job->spec.resources;
	struct local_job *lj = xcalloc(1, sizeof *lj);
	lj->cores = res->cores < 1 ? 1 : res->cores;
	lj->cores_declared = res->cores >= 1;
	lj->memory = need(res->memory_mb, 0);
	lj->disk = need(res->disk_mb, 0);
	lj->gpus = need(res->gpus, 0);
	if (lj->cores > st->cores || lj->memory > st->memory || lj->disk > st->disk ||
	    lj->gpus > st->gpus) {
		debug(D_BATCH,
		      "local: job needs %" PRId64 " cores %" PRId64 " MB memory %" PRId64
		      " MB disk %" PRId64 " gpus: more than this machine has",
		      lj->cores, lj->memory, lj->disk, lj->gpus);
		free(lj);
		return HTC_ELIMIT;
	}
	lj->job = job;
	lj->st = st;
	job->driver_data = lj;
	DL_APPEND(st->waiting, lj);
	schedule(st);
	return 0;
}

static int local_remove(void *state, struct batch_job *job)
{
	struct local_state *st = state;
	struct local_job *lj = job->driver_data;
	if (lj->running) {
		/* running: the exit callback completes it */
		lj->removed = 1;
		kill(-lj->pid, SIGKILL);
		return 0;
	}
	DL_DELETE(st->waiting, lj);
	free(lj);
	job->result.removed = 1;
	job->result.signal = SIGKILL;
	batch_job_complete(st->q, job);
	return 0;
}

static void local_destroy(void *state)
{
	struct local_state *st = state;
	struct local_job *lj, *tmp;
	DL_FOREACH_SAFE(st->running, lj, tmp)
	{
		pid_t pid = lj->pid;
		kill(-pid, SIGKILL);
		/* reap the shell now: its handle is closed below, so libuv will not */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		DL_DELETE(st->running, lj);
		lj->job = NULL;
		close_handles(lj);
	}
	DL_FOREACH_SAFE(st->waiting, lj, tmp)
	{
		DL_DELETE(st->waiting, lj);
		free(lj);
	}
	uv_signal_stop(&st->sigchld);
	uv_close((uv_handle_t *)&st->sigchld, state_closed);
}

const struct batch_driver batch_driver_local = {
    .name = "local",
    .features = BATCH_FEATURE_ABSOLUTE_PATHS | BATCH_FEATURE_LOCAL_EXECUTION |
                BATCH_FEATURE_WALL_TIME | BATCH_FEATURE_ADMISSION | BATCH_FEATURE_REMOVE,
    .create = local_create,
    .set_option = local_set_option,
    .submit = local_submit,
    .remove = local_remove,
    .destroy = local_destroy,
};
