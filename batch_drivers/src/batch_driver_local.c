/* batch_driver_local.c: the "local" driver, which runs each job as `/bin/sh -c COMMAND` on this
 * machine with posix_spawn. Admission (cores, memory, disk, gpus, max-jobs), backfill and
 * wall-time limits come from the shared local scheduler (batch_local_sched.c); this file only
 * starts each job in its own session and process group, so that kills reach its children, and
 * reaps it from a SIGCHLD watcher. */
#include "batch_driver.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utlist.h>

#include "batch_local_sched.h"
#include "debug.h"
#include "htc_error.h"
#include "rmon_seccomp.h"
#include "stringtools.h"
#include "rmon_spawn.h"
#include "shell_words.h"
#include "xalloc.h"
#include "banned.h"

struct local_job {
	struct lsched_job base; /* first: the scheduler allocates and frees the record */
	pid_t pid;
	struct rmon_seccomp_watch *watch; /* option seccomp: the job's refused calls */
};

struct local_state {
	struct lsched s;
	uv_signal_t sigchld; /* job exits; the state is freed when it closes */
};

static void state_closed(uv_handle_t *h)
{
	free(h->data);
}

/* SIGCHLD: reap every job whose shell has ended (signals coalesce, so look
 * at all of them), then start what now fits. */
static void on_sigchld(uv_signal_t *h, int signum)
{
	(void)signum;
	struct local_state *st = h->data;
	struct lsched_job *j, *tmp;
	int any = 0;
	DL_FOREACH_SAFE(st->s.running, j, tmp)
	{
		struct local_job *lj = (struct local_job *)j;
		int status;
		pid_t r;
		do
			r = waitpid(lj->pid, &status, WNOHANG);
		while (r < 0 && errno == EINTR);
		if (r != lj->pid)
			continue;
		any = 1;
		/* background processes the job left in its group go with it */
		kill(-lj->pid, SIGKILL);
		if (lj->watch) {
			char **denied = rmon_seccomp_watch_denied(lj->watch);
			batch_job_set_seccomp_denied(j->job, (const char *const *)denied);
			str_free_argv(denied);
			rmon_seccomp_watch_delete(lj->watch);
			lj->watch = NULL;
		}
		if (WIFSIGNALED(status))
			lsched_job_ended(j, 0, WTERMSIG(status));
		else
			lsched_job_ended(j, WEXITSTATUS(status), 0);
	}
	if (any)
		lsched_schedule(&st->s);
	if (!st->s.running)
		uv_unref((uv_handle_t *)&st->sigchld);
}

/* Starts ARGV under the seccomp profile of the queue (doc/seccomp.md) with the resource
 * monitor's spawner, whose threads for that profile have the filter; the job's refused calls
 * are answered and recorded for it by a watch. Returns the pid or -errno. */
static pid_t start_filtered(struct local_state *st, struct local_job *lj, const char *const *argv,
                            const char *const *env, int err_fd)
{
	int err = 0;
	const struct rmon_seccomp_prog *prog = rmon_seccomp_prog_get(st->s.seccomp, &err);
	if (!prog)
		return err < 0 ? err : -EINVAL;
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct rmon_spawn_args a = {
	    .argv = argv,
	    .env = env,
	    .stdin_fd = null_fd,
	    .stdout_fd = -1,
	    .stderr_fd = err_fd,
	    .new_session = 1,
	    .seccomp = prog,
	};
	/* Registered first: the job may make a refused call before its pid is set. */
	lj->watch = rmon_seccomp_watch_start(prog, NULL);
	pid_t pid = null_fd < 0 ? -errno : rmon_spawn_start(&a);
	if (null_fd >= 0)
		close(null_fd);
	if (pid > 0) {
		rmon_seccomp_watch_set_pid(lj->watch, pid);
	} else {
		rmon_seccomp_watch_delete(lj->watch);
		lj->watch = NULL;
	}
	return pid;
}

static int local_start(void *arg, struct lsched_job *j)
{
	struct local_state *st = arg;
	struct local_job *lj = (struct local_job *)j;
	struct batch_job *job = j->job;
	char *sh_args[] = {"sh", "-c", (char *)job->spec.command, NULL};
	/* A command of plain words is exec'd directly, as make does: one exec
	 * instead of two per job. Anything else goes through /bin/sh. */
	char **words = lsched_command_words(job);
	char **env = lsched_job_env(j);
	/* posix_spawn (a vfork in glibc) instead of fork: no copy of makeflow's
	 * page tables and no copy-on-write faults afterwards. The job gets its
	 * own session and process group, default signals, an empty signal mask,
	 * /dev/null as stdin, and the scheduler's stderr pipe as stderr. */
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	int err_fd = lsched_stderr_pipe(j);
	if (err_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	posix_spawnattr_init(&at);
	sigset_t none, defaults;
	sigemptyset(&none);
	sigfillset(&defaults);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &defaults);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
	                                  POSIX_SPAWN_SETSIGDEF);
	pid_t pid = -1;
	if (st->s.seccomp) {
		const char *sh_argv[] = {"/bin/sh", "-c", job->spec.command, NULL};
		pid = start_filtered(st, lj, words ? (const char *const *)words : sh_argv,
		                     (const char *const *)env, err_fd);
		if (err_fd >= 0)
			close(err_fd);
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&at);
		shell_words_free(words);
		lsched_env_free(env);
		if (pid < 0) {
			batch_job_set_error(job, "cannot start under seccomp profile %s: %s",
			                    rmon_seccomp_name(st->s.seccomp), htc_strerror(pid));
			return pid;
		}
		goto started;
	}
	int rc = words ? posix_spawnp(&pid, words[0], &fa, &at, words, env)
	               : posix_spawn(&pid, "/bin/sh", &fa, &at, sh_args, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	shell_words_free(words);
	lsched_env_free(env);
	if (err_fd >= 0)
		close(err_fd);
	if (rc != 0) {
		batch_job_set_error(job, "spawn: %s", strerror(rc));
		return -rc;
	}
started:
	lj->pid = pid;
	uv_ref((uv_handle_t *)&st->sigchld);
	debug(D_BATCH, "local job %" PRId64 " started as pid %d", job->id, (int)pid);
	return 0;
}

static void local_kill(void *arg, struct lsched_job *j)
{
	(void)arg;
	kill(-((struct local_job *)j)->pid, SIGKILL);
}

static void local_abandon(void *arg, struct lsched_job *j)
{
	(void)arg;
	pid_t pid = ((struct local_job *)j)->pid;
	kill(-pid, SIGKILL);
	rmon_seccomp_watch_delete(((struct local_job *)j)->watch);
	((struct local_job *)j)->watch = NULL;
	/* reap the shell now: its watcher is closed, so nobody else will */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static const struct lsched_ops local_ops = {
    .start = local_start,
    .kill = local_kill,
    .abandon = local_abandon,
};

static int local_create(struct batch_queue *q, void **state)
{
	struct local_state *st = xcalloc(1, sizeof *st);
	lsched_init(&st->s, q, "local", &local_ops, st, sizeof(struct local_job));
	uv_signal_init(st->s.loop, &st->sigchld);
	st->sigchld.data = st;
	uv_signal_start(&st->sigchld, on_sigchld, SIGCHLD);
	/* It keeps the loop alive only while jobs run (as process handles would). */
	uv_unref((uv_handle_t *)&st->sigchld);
	*state = st;
	return 0;
}

static int local_set_option(void *state, const char *key, const char *value)
{
	int rc = lsched_set_option(&((struct local_state *)state)->s, key, value);
	return rc == -ENOENT ? -EINVAL : rc;
}

static int local_submit(void *state, struct batch_job *job)
{
	return lsched_submit(&((struct local_state *)state)->s, job);
}

static int local_remove(void *state, struct batch_job *job)
{
	return lsched_remove(&((struct local_state *)state)->s, job);
}

static void local_destroy(void *state)
{
	struct local_state *st = state;
	lsched_destroy(&st->s);
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
