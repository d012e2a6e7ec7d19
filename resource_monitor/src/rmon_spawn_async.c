/* rmon_spawn_async.c: rmon_spawn_start (see rmon_spawn.h). One spawner thread per process
 * makes the clones. A clone with CLONE_VFORK suspends the calling thread until the child has
 * joined its cgroup and called execve; on a busy machine that is a few hundred microseconds,
 * and now and then tens of milliseconds (a move between cgroups may wait for an RCU grace
 * period). A caller that runs an event loop for many tasks would lose that time for all of
 * them; here only the spawner thread waits. The caller waits until the kernel has stored the
 * child's pid (CLONE_PARENT_SETTID), which happens once the child exists, with a copy of our
 * descriptors, before it runs.
 *
 * A job holds its own copies of everything the child reads (it shares our memory until its
 * exec); the caller and the spawner thread each hold a reference, and the last one frees it.
 * Two spawner threads share the jobs, so that one slow join does not hold up the next start. */
#include "rmon_spawn.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

#define MAX_JOB_CGFDS 16
#define SPAWNERS      2

struct job {
	struct job *next;
	struct rmon_spawn_args a;
	char **argv, **env; /* copies; env NULL = ours */
	char *path, *cwd;
	int cgfds[MAX_JOB_CGFDS];
	pid_t ptid; /* the child's pid, written by the kernel when the child exists, or -errno
	             * written by the spawner when the clone failed; a futex */
	int refs;   /* atomic */
};

static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_cond = PTHREAD_COND_INITIALIZER;
static struct job *jobs_head, *jobs_tail;
static bool spawner_running;

static void job_unref(struct job *j)
{
	if (__atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	str_free_argv(j->argv);
	str_free_argv(j->env);
	free(j->path);
	free(j->cwd);
	free(j);
}

static void *spawner_main(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&jobs_lock);
		while (!jobs_head)
			pthread_cond_wait(&jobs_cond, &jobs_lock);
		struct job *j = jobs_head;
		jobs_head = j->next;
		if (!jobs_head)
			jobs_tail = NULL;
		pthread_mutex_unlock(&jobs_lock);

		enum rmon_spawn_stage stage;
		int err;
		pid_t pid = rmon_spawn_settid(&j->a, &j->ptid, &stage, &err);
		if (pid < 0) {
			__atomic_store_n(&j->ptid, pid, __ATOMIC_RELEASE);
			syscall(SYS_futex, &j->ptid, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
		}
		/* A failure of the child itself was written to its stderr; its status says 127. */
		job_unref(j);
	}
	return NULL;
}

/* After a fork, only the thread that forked exists in the child: a new spawner is needed. */
static void forget_spawner(void)
{
	spawner_running = false;
	jobs_head = jobs_tail = NULL;
	pthread_mutex_init(&jobs_lock, NULL);
	pthread_cond_init(&jobs_cond, NULL);
}

/* Starts the spawner threads (with jobs_lock held): every signal blocked in it, so none is
 * delivered there and the children it makes start with all signals blocked until they reset
 * them. */
static int start_spawner(void)
{
	static bool atfork_done;
	if (!atfork_done) {
		pthread_atfork(NULL, NULL, forget_spawner);
		atfork_done = true;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int r = 0, made = 0;
	for (int i = 0; i < SPAWNERS; i++) {
		pthread_t t;
		r = pthread_create(&t, &at, spawner_main, NULL);
		if (r != 0)
			break;
		made++;
	}
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!made)
		return -r;
	spawner_running = true;
	return 0;
}

pid_t rmon_spawn_start(const struct rmon_spawn_args *a)
{
	if (!a->argv || !a->argv[0] || a->n_cgroup_fds > MAX_JOB_CGFDS)
		return -EINVAL;
	struct job *j = xcalloc(1, sizeof *j);
	j->argv = str_dup_argv(a->argv);
	j->env = str_dup_argv(a->env);
	j->path = a->path ? xstrdup(a->path) : NULL;
	j->cwd = a->cwd ? xstrdup(a->cwd) : NULL;
	if (a->n_cgroup_fds > 0)
		memcpy(j->cgfds, a->cgroup_fds, (size_t)a->n_cgroup_fds * sizeof *j->cgfds);
	j->a = *a;
	j->a.argv = (const char *const *)j->argv;
	j->a.env = (const char *const *)j->env;
	j->a.path = j->path;
	j->a.cwd = j->cwd;
	j->a.cgroup_fds = j->cgfds;
	j->a.say_cgroup_error = 1;
	j->refs = 2;

	pthread_mutex_lock(&jobs_lock);
	if (!spawner_running) {
		int r = start_spawner();
		if (r < 0) {
			pthread_mutex_unlock(&jobs_lock);
			j->refs = 1;
			job_unref(j);
			return r;
		}
	}
	if (jobs_tail)
		jobs_tail->next = j;
	else
		jobs_head = j;
	jobs_tail = j;
	pthread_cond_signal(&jobs_cond);
	pthread_mutex_unlock(&jobs_lock);

	/* Until the child exists: the spawner's wakeup and the clone's copy of our process. The
	 * word leaves 0 once (the kernel's pid, or the spawner's -errno), and whoever changes it
	 * wakes us afterwards (the child, first thing, or the spawner): we sleep instead of
	 * spinning, which matters when many workers share few cores. */
	pid_t pid;
	while ((pid = __atomic_load_n(&j->ptid, __ATOMIC_ACQUIRE)) == 0)
		syscall(SYS_futex, &j->ptid, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	job_unref(j);
	return pid;
}
