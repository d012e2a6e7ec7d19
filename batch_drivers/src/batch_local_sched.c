/* batch_local_sched.c: admission and scheduling shared by the local-execution drivers ("local",
 * "cgroups"): waiting/running lists, admission against the machine's resources with bounded
 * backfill, wall-time timers, and the argv and environment each job is started with. The
 * drivers differ only in how they start and kill a job (struct lsched_ops). */
#include "batch_local_sched.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <utlist.h>

#include "debug.h"
#include "htc_error.h"
#include "rmon_seccomp.h"
#include "shell_words.h"
#include "stderr_tap.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

extern char **environ;

/* How many waiting jobs each scheduling pass looks at (bounded backfill). */
#define LSCHED_SCAN_WINDOW 64

int64_t lsched_meminfo_mb(const char *field)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	char line[256];
	size_t len = strlen(field);
	int64_t mb = 0;
	while (fgets(line, sizeof line, f)) {
		long long kb;
		if (!strncmp(line, field, len) && line[len] == ':' &&
		    sscanf(line + len + 1, "%lld", &kb) == 1) {
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

void lsched_init(struct lsched *s, struct batch_queue *q, const char *name,
                 const struct lsched_ops *ops, void *arg, size_t job_size)
{
	memset(s, 0, sizeof *s);
	s->q = q;
	s->loop = batch_queue_loop(q);
	s->name = name;
	s->ops = ops;
	s->arg = arg;
	s->job_size = job_size < sizeof(struct lsched_job) ? sizeof(struct lsched_job) : job_size;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	s->cores = n > 0 ? n : 1;
	s->memory = lsched_meminfo_mb("MemTotal");
	s->disk = cwd_free_disk_mb();
	debug(D_BATCH, "%s: %" PRId64 " cores, %" PRId64 " MB memory, %" PRId64 " MB disk", name,
	      s->cores, s->memory, s->disk);
}

static int parse_count(const char *value, int64_t min, int64_t *out)
{
	int64_t v;
	if (str_to_int64(value, &v) < 0 || v < min)
		return -EINVAL;
	*out = v;
	return 0;
}

int lsched_set_option(struct lsched *s, const char *key, const char *value)
{
	if (!strcmp(key, "max-jobs"))
		return parse_count(value, 1, &s->max_jobs);
	if (!strcmp(key, "cores"))
		return parse_count(value, 1, &s->cores);
	if (!strcmp(key, "memory"))
		return parse_count(value, 0, &s->memory);
	if (!strcmp(key, "disk"))
		return parse_count(value, 0, &s->disk);
	if (!strcmp(key, "gpus"))
		return parse_count(value, 0, &s->gpus);
	if (!strcmp(key, "stderr-tail")) {
		if (strcmp(value, "yes") && strcmp(value, "no"))
			return -EINVAL;
		s->no_stderr_tail = !strcmp(value, "no");
		return 0;
	}
	if (!strcmp(key, "seccomp")) {
		enum rmon_seccomp_profile p;
		if (rmon_seccomp_parse(value, &p) < 0)
			return -EINVAL;
		s->seccomp = (int)p;
		return 0;
	}
	return -ENOENT;
}

static int64_t max_jobs(const struct lsched *s)
{
	return s->max_jobs > 0 ? s->max_jobs : s->cores;
}

/* Jobs that declare no cores count as one core each, but up to max-jobs of
 * them may run when max-jobs is set above the core count (as with make -j);
 * a job that declares cores only starts within the real core count. */
static int64_t core_limit(const struct lsched *s, const struct lsched_job *j)
{
	int64_t n = max_jobs(s);
	if (j && j->cores_declared)
		return s->cores;
	return n > s->cores ? n : s->cores;
}

static int fits(const struct lsched *s, const struct lsched_job *j)
{
	return s->used_cores + j->cores <= core_limit(s, j) &&
	       s->used_memory + j->memory <= s->memory && s->used_disk + j->disk <= s->disk &&
	       s->used_gpus + j->gpus <= s->gpus;
}

static void charge(struct lsched *s, const struct lsched_job *j, int sign)
{
	s->used_cores += sign * j->cores;
	s->used_memory += sign * j->memory;
	s->used_disk += sign * j->disk;
	s->used_gpus += sign * j->gpus;
	s->n_running += sign;
	if (sign > 0)
		s->used_gpu_ids |= j->gpu_ids;
	else
		s->used_gpu_ids &= ~j->gpu_ids;
}

void lsched_charge_memory(struct lsched *s, struct lsched_job *j, int64_t delta)
{
	j->memory += delta;
	s->used_memory += delta;
}

static void handle_closed(uv_handle_t *h)
{
	struct lsched_job *j = h->data;
	if (--j->open_handles == 0)
		free(j);
}

static void close_handles(struct lsched_job *j)
{
	if (j->tap) {
		stderr_tap_finish(j->tap, NULL);
		j->tap = NULL;
	}
	if (!j->has_timer) {
		free(j);
		return;
	}
	j->open_handles = 1;
	uv_timer_stop(&j->timer);
	uv_close((uv_handle_t *)&j->timer, handle_closed);
}

void lsched_job_ended(struct lsched_job *j, int64_t exit_status, int term_signal)
{
	struct lsched *s = j->s;
	struct batch_job *job = j->job;
	struct batch_result *r = &job->result;
	r->end_us = time_now_us();
	if (term_signal) {
		r->signal = term_signal;
		if (j->timed_out)
			r->exhausted |= BATCH_EXHAUSTED_WALL_TIME;
	} else {
		r->exited_normally = 1;
		r->exit_code = (int)exit_status;
	}
	r->removed = j->removed;
	if (j->tap) {
		int ok = !term_signal && exit_status == 0 && !r->exhausted && !r->error;
		stderr_tap_finish(j->tap, ok ? NULL : job);
		j->tap = NULL;
	}
	if (r->measured.wall_time_s < 0) {
		int64_t us = r->end_us - r->start_us;
		r->measured.wall_time_s = us > 0 ? (us + 500000) / 1000000 : 0;
	}
	debug(D_BATCH, "%s job %" PRId64 " ended: %s %d%s%s", s->name, job->id,
	      term_signal ? "signal" : "exit", term_signal ? term_signal : (int)exit_status,
	      r->exhausted & BATCH_EXHAUSTED_WALL_TIME ? " (wall time exhausted)" : "",
	      r->exhausted & BATCH_EXHAUSTED_MEMORY ? " (memory exhausted)" : "");
	DL_DELETE(s->running, j);
	charge(s, j, -1);
	j->job = NULL;
	close_handles(j);
	batch_job_complete(s->q, job);
}

static void wall_time_expired(uv_timer_t *t)
{
	struct lsched_job *j = t->data;
	j->timed_out = 1;
	debug(D_BATCH, "%s job %" PRId64 " exceeded its wall time", j->s->name, j->job->id);
	j->s->ops->kill(j->s->arg, j);
}

/* The lowest N gpu ids that no running job holds (N <= 64). */
static uint64_t pick_gpus(const struct lsched *s, int64_t n)
{
	uint64_t ids = 0;
	for (int i = 0; i < 64 && n > 0; i++)
		if (!(s->used_gpu_ids & (UINT64_C(1) << i))) {
			ids |= UINT64_C(1) << i;
			n--;
		}
	return ids;
}

static void start_job(struct lsched *s, struct lsched_job *j)
{
	struct batch_job *job = j->job;
	j->gpu_ids = pick_gpus(s, j->gpus);
	job->result.start_us = time_now_us();
	int rc = s->ops->start(s->arg, j);
	if (rc < 0) {
		warn("%s: cannot start job %" PRId64 ": %s", s->name, job->id,
		     job->result.error ? job->result.error : htc_strerror(rc));
		if (!job->result.error)
			batch_job_set_error(job, "start: %s", htc_strerror(rc));
		job->result.exit_code = -1;
		job->result.start_us = 0;
		j->job = NULL;
		j->has_timer = 0;
		close_handles(j);
		batch_job_complete(s->q, job);
		return;
	}
	j->running = 1;
	charge(s, j, +1);
	DL_APPEND(s->running, j);
	batch_job_started(s->q, job);
	int64_t wall = job->spec.resources.wall_time_s;
	if (wall > 0) {
		uv_timer_init(s->loop, &j->timer);
		j->timer.data = j;
		j->has_timer = 1;
		uv_timer_start(&j->timer, wall_time_expired, (uint64_t)wall * 1000, 0);
	}
}

void lsched_schedule(struct lsched *s)
{
	struct lsched_job *j = s->waiting, *next;
	for (int scanned = 0; j && scanned < LSCHED_SCAN_WINDOW; scanned++, j = next) {
		if (s->n_running >= max_jobs(s) || s->used_cores >= core_limit(s, NULL))
			break;
		next = j->next;
		if (!fits(s, j))
			continue;
		DL_DELETE(s->waiting, j);
		start_job(s, j);
	}
}

static int64_t need(int64_t declared, int64_t unset)
{
	return declared < 0 ? unset : declared;
}

int lsched_submit(struct lsched *s, struct batch_job *job)
{
	const struct batch_resources *res = &job->spec.resources;
	struct lsched_job *j = xcalloc(1, s->job_size);
	j->cores = res->cores < 1 ? 1 : res->cores;
	j->cores_declared = res->cores >= 1;
	j->memory = need(res->memory_mb, 0);
	j->disk = need(res->disk_mb, 0);
	j->gpus = need(res->gpus, 0);
	if (j->cores > s->cores || j->memory > s->memory || j->disk > s->disk ||
	    j->gpus > s->gpus || j->gpus > 64) {
		debug(D_BATCH,
		      "%s: job needs %" PRId64 " cores %" PRId64 " MB memory %" PRId64
		      " MB disk %" PRId64 " gpus: more than this machine has",
		      s->name, j->cores, j->memory, j->disk, j->gpus);
		free(j);
		return HTC_ELIMIT;
	}
	j->job = job;
	j->s = s;
	job->driver_data = j;
	DL_APPEND(s->waiting, j);
	lsched_schedule(s);
	return 0;
}

int lsched_remove(struct lsched *s, struct batch_job *job)
{
	struct lsched_job *j = job->driver_data;
	if (j->running) {
		/* running: the exit path completes it */
		j->removed = 1;
		s->ops->kill(s->arg, j);
		return 0;
	}
	DL_DELETE(s->waiting, j);
	free(j);
	job->result.removed = 1;
	job->result.signal = SIGKILL;
	batch_job_complete(s->q, job);
	return 0;
}

int lsched_stderr_pipe(struct lsched_job *j)
{
	int fd = -1;
	if (j->s->no_stderr_tail || j->tap)
		return -1;
	j->tap = stderr_tap_open(j->s->loop, &fd);
	if (!j->tap) {
		debug(D_BATCH, "%s job %" PRId64 ": no pipe for its stderr (%s): not captured",
		      j->s->name, j->job->id, strerror(errno));
		return -1;
	}
	return fd;
}

void lsched_destroy(struct lsched *s)
{
	struct lsched_job *j, *tmp;
	DL_FOREACH_SAFE(s->running, j, tmp)
	{
		s->ops->abandon(s->arg, j);
		DL_DELETE(s->running, j);
		j->job = NULL;
		close_handles(j);
	}
	DL_FOREACH_SAFE(s->waiting, j, tmp)
	{
		DL_DELETE(s->waiting, j);
		free(j);
	}
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

char **lsched_command_words(const struct batch_job *job)
{
	char **words = shell_words_simple(job->spec.command);
	if (words && !executable_found(words[0], job->spec.env)) {
		/* Let the shell report "not found" exactly as it would. */
		shell_words_free(words);
		words = NULL;
	}
	return words;
}

/* Whether entry E ("NAME=value" or "NAME") names the variable NAME of length LEN. */
static int names_var(const char *e, const char *name, size_t len)
{
	return !strncmp(e, name, len) && (e[len] == '=' || e[len] == '\0');
}

static int in_list(char *const *list, size_t n, const char *e)
{
	const char *eq = strchr(e, '=');
	size_t len = eq ? (size_t)(eq - e) : strlen(e);
	for (size_t i = 0; i < n; i++)
		if (names_var(list[i], e, len))
			return 1;
	return 0;
}

/* Thread-count variables: set to the allocation unless the job sets them. */
static const char *const thread_vars[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                          "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"};

char **lsched_job_env(const struct lsched_job *j)
{
	const struct batch_job *job = j->job;
	const struct batch_resources *res = &job->spec.resources;
	/* forced: the allocation, which replaces what the job's env says; weak: thread counts,
	 * which the job's env may override */
	char *forced[8], *weak[4];
	size_t n_forced = 0, n_weak = 0;
	if (j->cores_declared) {
		forced[n_forced++] = xasprintf("CORES=%" PRId64, j->cores);
		for (size_t i = 0; i < 4; i++)
			weak[n_weak++] = xasprintf("%s=%" PRId64, thread_vars[i], j->cores);
	}
	if (res->memory_mb >= 0)
		forced[n_forced++] = xasprintf("MEMORY=%" PRId64, res->memory_mb);
	if (res->disk_mb >= 0)
		forced[n_forced++] = xasprintf("DISK=%" PRId64, res->disk_mb);
	if (res->gpus >= 0)
		forced[n_forced++] = xasprintf("GPUS=%" PRId64, res->gpus);
	if (res->gpus > 0) {
		char ids[64 * 3 + 1] = "";
		size_t used = 0;
		for (int i = 0; i < 64; i++)
			if (j->gpu_ids & (UINT64_C(1) << i))
				used += (size_t)snprintf(ids + used, sizeof ids - used, "%s%d",
				                         used ? "," : "", i);
		forced[n_forced++] = xasprintf("CUDA_VISIBLE_DEVICES=%s", ids);
	}
	size_t n_env = 0, n_add = 0;
	while (environ && environ[n_env])
		n_env++;
	char *const *add = (char *const *)job->spec.env;
	while (add && add[n_add])
		n_add++;
	char **env = xcalloc(n_env + n_add + n_forced + n_weak + 1, sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n_env; i++)
		if (!in_list(add, n_add, environ[i]) && !in_list(forced, n_forced, environ[i]) &&
		    !in_list(weak, n_weak, environ[i]))
			env[k++] = xstrdup(environ[i]);
	for (size_t i = 0; i < n_add; i++)
		if (!in_list(forced, n_forced, add[i]))
			env[k++] = xstrdup(add[i]);
	for (size_t i = 0; i < n_weak; i++) {
		if (in_list(add, n_add, weak[i]))
			free(weak[i]);
		else
			env[k++] = weak[i];
	}
	for (size_t i = 0; i < n_forced; i++)
		env[k++] = forced[i];
	env[k] = NULL;
	return env;
}

void lsched_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}
