/* rmon_spawn.c: starts the first process of a monitored task inside its cgroup (see
 * rmon_spawn.h). clone(CLONE_VM | CLONE_VFORK) runs a small function on its own stack that
 * writes "0" into the cgroup.procs descriptors (moving itself), resets signals, sets up
 * stdio and the directory and calls execve; the parent is suspended until the exec or the
 * _exit, so the child is in its cgroup before the program's first instruction and no fork
 * of it can escape (race-free on v1 and v2 alike). Because memory is shared until then, the
 * child reports a failure by writing into the parent's context (as glibc's posix_spawn
 * does) instead of through a pipe; the parent reads it when clone returns. */
#include "rmon_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "debug.h"
#include "xalloc.h"
#include "banned.h"

#define CHILD_STACK (256 * 1024)

extern char **environ;

struct child_ctx {
	const struct rmon_spawn_args *a;
	const char *path;     /* resolved program, NULL = not found */
	char *const *argv;    /* argv for execve */
	char *const *envp;    /* environment for execve */
	char *const *sh_argv; /* /bin/sh PATH ARGS... for a script without #! (ENOEXEC) */
	const char *errmsg;   /* "htc: cannot execute 'x': " prefix for the child's stderr */
	const char *cgmsg;    /* the same for a failure to join the cgroup */
	int say_fd;           /* where child_say writes: 2, or the task's stderr before dup2 */
	pid_t *wake;          /* the parent's CLONE_PARENT_SETTID word: a futex waiter is woken */
	volatile int stage;   /* written by the child (shared memory until exec) */
	volatile int err;
};

/* Programs found before, like a shell's hash table: NAME under the same PATH is searched for
 * again only when the file found is no longer an executable regular file. A task runner
 * starts the same few programs over and over, and each search stats every directory of PATH
 * before the one that has it. Only absolute results are kept (an empty PATH element means
 * the working directory, which changes). */
#define LOOKUP_CACHE 16
static struct lookup_entry {
	char *path_env, *name, *found;
} lookup_cache[LOOKUP_CACHE];
static unsigned lookup_next;
static pthread_mutex_t lookup_lock = PTHREAD_MUTEX_INITIALIZER;

static int is_executable_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* The entry of NAME under PATH_ENV, or NULL. Called with lookup_lock held. */
static struct lookup_entry *lookup_entry_of(const char *path_env, const char *name)
{
	for (int i = 0; i < LOOKUP_CACHE; i++) {
		struct lookup_entry *e = &lookup_cache[i];
		if (e->found && strcmp(e->name, name) == 0 && strcmp(e->path_env, path_env) == 0)
			return e;
	}
	return NULL;
}

/* A copy of what NAME under PATH_ENV was found as, still executable; NULL otherwise. */
static char *lookup_cached(const char *path_env, const char *name)
{
	pthread_mutex_lock(&lookup_lock);
	struct lookup_entry *e = lookup_entry_of(path_env, name);
	char *found = e ? xstrdup(e->found) : NULL;
	pthread_mutex_unlock(&lookup_lock);
	if (found && !is_executable_file(found)) {
		free(found);
		found = NULL;
	}
	return found;
}

static void lookup_remember(const char *path_env, const char *name, const char *found)
{
	if (found[0] != '/')
		return;
	pthread_mutex_lock(&lookup_lock);
	struct lookup_entry *e = lookup_entry_of(path_env, name);
	if (!e)
		e = &lookup_cache[lookup_next++ % LOOKUP_CACHE];
	free(e->path_env);
	free(e->name);
	free(e->found);
	e->path_env = xstrdup(path_env);
	e->name = xstrdup(name);
	e->found = xstrdup(found);
	pthread_mutex_unlock(&lookup_lock);
}

char *rmon_spawn_lookup(const char *name, const char *const *env)
{
	if (!name || !*name)
		return NULL;
	if (strchr(name, '/'))
		return xstrdup(name);
	const char *path = NULL;
	if (env) {
		for (size_t i = 0; env[i]; i++)
			if (strncmp(env[i], "PATH=", 5) == 0)
				path = env[i] + 5;
	} else {
		path = getenv("PATH");
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	char *cached = lookup_cached(path, name);
	if (cached)
		return cached;
	char *not_exec = NULL;
	const char *p = path;
	for (;;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		char *cand =
		    len ? xasprintf("%.*s/%s", (int)len, p, name) : xasprintf("./%s", name);
		struct stat st;
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(cand, X_OK) == 0) {
				free(not_exec);
				lookup_remember(path, name, cand);
				return cand;
			}
			if (!not_exec) {
				not_exec = cand;
				cand = NULL;
			}
		}
		free(cand);
		if (!colon)
			break;
		p = colon + 1;
	}
	return not_exec;
}

static void child_say(struct child_ctx *c, int err)
{
	if (!c->errmsg)
		return;
	const char *why = strerrordesc_np(err);
	int fd = c->say_fd;
	if (write(fd, c->errmsg, strlen(c->errmsg)) < 0 ||
	    write(fd, why ? why : "error", why ? strlen(why) : 5) < 0 || write(fd, "\n", 1) < 0)
		return;
}

__attribute__((no_sanitize_address)) static int child_main(void *arg)
{
	struct child_ctx *c = arg;
	const struct rmon_spawn_args *a = c->a;

	/* The kernel has stored our pid in the parent's word before we run: whoever waits on it
	 * (rmon_spawn_start) may go on now. Same memory (CLONE_VM), so a private futex. */
	if (c->wake)
		syscall(SYS_futex, c->wake, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);

	for (int i = 0; i < a->n_cgroup_fds; i++) {
		if (write(a->cgroup_fds[i], "0", 1) != 1) {
			c->err = errno;
			c->stage = RMON_SPAWN_CGROUP;
			if (a->say_cgroup_error) {
				c->errmsg = c->cgmsg;
				c->say_fd = a->stderr_fd >= 0 ? a->stderr_fd : 2; /* before dup2 */
				child_say(c, c->err);
			}
			_exit(127);
		}
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &sa, NULL); /* the few reserved by libc fail harmlessly */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	if (a->new_session && setsid() < 0)
		goto setup_failed;

	int src[3] = {a->stdin_fd, a->stdout_fd, a->stderr_fd};
	/* A source that is itself one of 0..2 (but not its target) is moved out of the way
	 * first, so that no dup2 overwrites a source still needed. */
	for (int i = 0; i < 3; i++) {
		if (src[i] >= 0 && src[i] < 3 && src[i] != i) {
			int moved = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
			if (moved < 0)
				goto setup_failed;
			for (int j = i + 1; j < 3; j++)
				if (src[j] == src[i])
					src[j] = moved;
			src[i] = moved;
		}
	}
	for (int i = 0; i < 3; i++) {
		if (src[i] < 0)
			continue;
		if (src[i] == i) {
			int fl = fcntl(i, F_GETFD);
			if (fl < 0 || fcntl(i, F_SETFD, fl & ~FD_CLOEXEC) < 0)
				goto setup_failed;
		} else if (dup2(src[i], i) < 0) {
			goto setup_failed;
		}
	}
	if (a->cwd && chdir(a->cwd) < 0)
		goto setup_failed;

	if (!c->path) {
		c->err = ENOENT;
		c->stage = RMON_SPAWN_EXEC;
		child_say(c, ENOENT);
		_exit(127);
	}
	execve(c->path, c->argv, c->envp);
	if (errno == ENOEXEC)
		execve("/bin/sh", c->sh_argv, c->envp);
	c->err = errno;
	c->stage = RMON_SPAWN_EXEC;
	child_say(c, c->err);
	_exit(127);

setup_failed:
	c->err = errno;
	c->stage = RMON_SPAWN_SETUP;
	child_say(c, c->err);
	_exit(127);
}

pid_t rmon_spawn(const struct rmon_spawn_args *a, enum rmon_spawn_stage *stage, int *child_err)
{
	if (a->seccomp)
		return rmon_spawn_filtered(a, stage, child_err);
	return rmon_spawn_settid(a, NULL, stage, child_err);
}

pid_t rmon_spawn_settid(const struct rmon_spawn_args *a, pid_t *ptid, enum rmon_spawn_stage *stage,
                        int *child_err)
{
	*stage = RMON_SPAWN_OK;
	*child_err = 0;
	/* A filter is the spawner thread's to have (rmon_spawn_filtered): never run without it. */
	if (!a->argv || !a->argv[0] || a->seccomp)
		return -EINVAL;
	size_t argc = 0;
	while (a->argv[argc])
		argc++;

	struct child_ctx c;
	memset(&c, 0, sizeof c);
	c.a = a;
	/* One lookup per start: none when the caller has done it. */
	char *path = a->path ? xstrdup(a->path) : rmon_spawn_lookup(a->argv[0], a->env);
	c.path = path;
	c.argv = (char *const *)a->argv;
	c.envp = a->env ? (char *const *)a->env : environ;
	char **sh = xcalloc(argc + 2, sizeof *sh);
	sh[0] = (char *)"/bin/sh";
	sh[1] = path ? path : (char *)a->argv[0];
	for (size_t i = 1; i < argc; i++)
		sh[i + 1] = (char *)a->argv[i];
	c.sh_argv = sh;
	char *msg = xasprintf("htc: cannot execute '%s': ", a->argv[0]);
	c.errmsg = msg;
	char *cgmsg = a->say_cgroup_error
	                  ? xasprintf("htc: cannot move '%s' into its cgroup: ", a->argv[0])
	                  : NULL;
	c.cgmsg = cgmsg;
	c.say_fd = 2;
	c.wake = ptid;

	/* The child's stack is kept for the next start of this thread: the thread is suspended
	 * while the child uses it (CLONE_VFORK), so it is never used twice at once. */
	static __thread void *kept_stack;
	void *stack = kept_stack;
	if (!stack)
		stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
		             MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		int e = -errno;
		free(path);
		free(sh);
		free(msg);
		free(cgmsg);
		return e;
	}
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	/* With PTID the kernel stores the child's pid there as soon as the child exists, before it
	 * runs (rmon_spawn_start waits for that, not for the exec). */
	int flags = CLONE_VM | CLONE_VFORK | SIGCHLD | (ptid ? CLONE_PARENT_SETTID : 0);
	pid_t pid = clone(child_main, (char *)stack + CHILD_STACK, flags, &c, ptid);
	int e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	kept_stack = stack;
	free(path);
	free(sh);
	free(msg);
	free(cgmsg);
	if (pid < 0)
		return -e;
	*stage = (enum rmon_spawn_stage)c.stage;
	*child_err = c.err;
	if (c.stage != RMON_SPAWN_OK)
		debug(D_RMON, "spawn: child %ld failed at stage %d: %s", (long)pid, c.stage,
		      strerror(c.err));
	return pid;
}
