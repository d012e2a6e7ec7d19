/* rmon_spawn_async.c: rmon_spawn_start and rmon_spawn_filtered (see rmon_spawn.h). Spawner
 * threads make the clones. A clone with CLONE_VFORK suspends the calling thread until the child
 * has joined its cgroup and called execve; on a busy machine that is a few hundred
 * microseconds, and now and then tens of milliseconds (a move between cgroups may wait for an
 * RCU grace period). A caller that runs an event loop for many tasks would lose that time for
 * all of them; here only the spawner thread waits. The caller sleeps until the kernel has
 * stored the child's pid (CLONE_PARENT_SETTID), which happens once the child exists, with a
 * copy of our descriptors, before it runs.
 *
 * Each seccomp filter has spawner threads of its own, which install it on themselves once:
 * the children they clone inherit it, so a task's start costs no filter compilation in the
 * kernel (rmon_seccomp.h). Unfiltered tasks have theirs. A job holds its own copies of
 * everything the child reads (it shares our memory until its exec); the caller and the spawner
 * thread each hold a reference, and the last one frees it. Two threads share each pool's jobs,
 * so that one slow join does not hold up the next start. */
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

#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

#define MAX_JOB_CGFDS 16
#define SPAWNERS      2
#define MAX_POOLS     8 /* unfiltered, and one per profile in use */

struct job {
	struct job *next;
	struct rmon_spawn_args a;
	char **argv, **env; /* copies; env NULL = ours */
	char *path, *cwd;
	int cgfds[MAX_JOB_CGFDS];
	pid_t ptid; /* the child's pid, written by the kernel when the child exists, or -errno
	             * written by the spawner when the clone failed; a futex */
	int done;   /* 1 once the clone returned (the child has exec'd or exited); a futex */
	int stage, child_err; /* the child's failure, valid once done */
	int refs;             /* atomic */
};

struct pool {
	const struct rmon_seccomp_prog *filter; /* NULL: unfiltered */
	struct job *head, *tail;
	pthread_cond_t cond;
	bool running;
	int failed; /* -errno: the filter could not be installed; its jobs fail */
};

static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool pools[MAX_POOLS];
static size_t n_pools;

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

static void futex_wake(int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void futex_wait(int *word, int value)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

/* Ends J without a child: the clone failed, or the pool's filter could not be installed. */
static void job_fail(struct job *j, int err)
{
	__atomic_store_n(&j->ptid, err, __ATOMIC_RELEASE);
	futex_wake(&j->ptid);
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	futex_wake(&j->done);
}

static void run_jobs(struct pool *p)
{
	for (;;) {
		pthread_mutex_lock(&jobs_lock);
		while (!p->head)
			pthread_cond_wait(&p->cond, &jobs_lock);
		struct job *j = p->head;
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
		int failed = p->failed;
		pthread_mutex_unlock(&jobs_lock);

		if (failed < 0) {
			job_fail(j, failed);
			job_unref(j);
			continue;
		}
		enum rmon_spawn_stage stage;
		int err;
		pid_t pid = rmon_spawn_settid(&j->a, &j->ptid, &stage, &err);
		if (pid < 0) {
			job_fail(j, pid);
		} else {
			/* A failure of the child itself was written to its stderr (a started job)
			 * or is read by the caller (a filtered rmon_spawn); its status says 127. */
			j->stage = (int)stage;
			j->child_err = err;
			__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
			futex_wake(&j->done);
		}
		job_unref(j);
	}
}

static void *sibling_main(void *arg)
{
	run_jobs(arg);
	return NULL;
}

static int start_threads(struct pool *p, int n);

/* A filtered pool's first thread: installs the filter on itself, then starts its sibling,
 * which inherits it. When the filter cannot be installed, every job of the pool fails. */
static void *filtered_main(void *arg)
{
	struct pool *p = arg;
	int e = rmon_seccomp_install_thread(p->filter);
	if (e < 0) {
		warn("cannot install the seccomp filter on the spawner thread: %s",
		     htc_strerror(e));
		pthread_mutex_lock(&jobs_lock);
		p->failed = e;
		pthread_mutex_unlock(&jobs_lock);
	} else if (SPAWNERS > 1) {
		pthread_mutex_lock(&jobs_lock);
		start_threads(p, SPAWNERS - 1);
		pthread_mutex_unlock(&jobs_lock);
	}
	run_jobs(p);
	return NULL;
}

/* After a fork, only the thread that forked exists in the child: new spawners are needed. */
static void forget_spawners(void)
{
	pthread_mutex_init(&jobs_lock, NULL);
	memset(pools, 0, sizeof pools);
	n_pools = 0;
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_spawners);
}

/* Starts N threads for P (with jobs_lock held; a filtered pool's first thread is its
 * filtered_main): every signal blocked in them, so none is delivered there and the children
 * they make start with all signals blocked until they reset them. 0 when one was started. */
static int start_threads(struct pool *p, int n)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int r = 0, made = 0;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		void *(*fn)(void *) =
		    p->filter && !p->running && i == 0 ? filtered_main : sibling_main;
		r = pthread_create(&t, &at, fn, p);
		if (r != 0)
			break;
		made++;
		if (fn == filtered_main)
			break; /* it starts the others once the filter is on */
	}
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!made)
		return -r;
	p->running = true;
	return 0;
}

/* The pool of FILTER, started when new (with jobs_lock held); NULL with *ERR on failure. */
static struct pool *pool_for(const struct rmon_seccomp_prog *filter, int *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, register_atfork);
	struct pool *p = NULL;
	for (size_t i = 0; i < n_pools && !p; i++)
		if (pools[i].filter == filter)
			p = &pools[i];
	if (!p) {
		if (n_pools == MAX_POOLS) {
			*err = -EMFILE;
			return NULL;
		}
		p = &pools[n_pools++];
		memset(p, 0, sizeof *p);
		p->filter = filter;
		pthread_cond_init(&p->cond, NULL);
	}
	if (!p->running) {
		int r = start_threads(p, SPAWNERS);
		if (r < 0) {
			*err = r;
			return NULL;
		}
	}
	return p;
}

/* Queues a copy of A on its pool; the job has two references (the caller's and the pool's).
 * NULL with *ERR when it cannot be queued. */
static struct job *submit(const struct rmon_spawn_args *a, int *err)
{
	if (!a->argv || !a->argv[0] || a->n_cgroup_fds > MAX_JOB_CGFDS) {
		*err = -EINVAL;
		return NULL;
	}
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
	j->a.seccomp = NULL; /* the pool's threads have it: their children inherit it */
	j->refs = 2;

	pthread_mutex_lock(&jobs_lock);
	struct pool *p = pool_for(a->seccomp, err);
	if (!p) {
		pthread_mutex_unlock(&jobs_lock);
		j->refs = 1;
		job_unref(j);
		return NULL;
	}
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&jobs_lock);
	return j;
}

pid_t rmon_spawn_start(const struct rmon_spawn_args *a)
{
	int err = 0;
	struct rmon_spawn_args copy = *a;
	copy.say_cgroup_error = 1;
	struct job *j = submit(&copy, &err);
	if (!j)
		return err;
	/* Until the child exists: the spawner's wakeup and the clone's copy of our process. The
	 * word leaves 0 once (the kernel's pid, or the spawner's -errno), and whoever changes it
	 * wakes us afterwards (the child, first thing, or the spawner): we sleep instead of
	 * spinning, which matters when many workers share few cores. */
	pid_t pid;
	while ((pid = __atomic_load_n(&j->ptid, __ATOMIC_ACQUIRE)) == 0)
		futex_wait(&j->ptid, 0);
	job_unref(j);
	return pid;
}

pid_t rmon_spawn_filtered(const struct rmon_spawn_args *a, enum rmon_spawn_stage *stage,
                          int *child_err)
{
	*stage = RMON_SPAWN_OK;
	*child_err = 0;
	int err = 0;
	struct job *j = submit(a, &err);
	if (!j)
		return err;
	while (__atomic_load_n(&j->done, __ATOMIC_ACQUIRE) == 0)
		futex_wait(&j->done, 0);
	pid_t pid = __atomic_load_n(&j->ptid, __ATOMIC_ACQUIRE);
	if (pid > 0) {
		*stage = (enum rmon_spawn_stage)j->stage;
		*child_err = j->child_err;
	}
	job_unref(j);
	return pid;
}
