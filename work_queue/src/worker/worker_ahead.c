/* worker_ahead.c: the processes that make tasks' containers ahead of them (see worker_ahead.h):
 * each is the container runner in its --ahead mode, spawned on the worker's loop and reaped
 * there by its pid (the resource monitor reaps its own tasks by theirs). A list of the live
 * ones lets the worker stop them all when it ends. */
#include "worker_ahead.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

extern char **environ;

struct worker_ahead {
	uv_process_t proc;
	pid_t pid;
	char *dir;
	bool exited; /* its process ended */
	bool closed; /* and its handle is closed */
	bool held;   /* a task holds it: freed by worker_ahead_release */
	struct worker_aheads *set;
	struct worker_ahead *next, *prev; /* the live ones of SET */
};

struct worker_aheads {
	char *state;
	unsigned long seq;
	struct worker_ahead *live;
};

struct worker_aheads *worker_aheads_create(const char *state)
{
	struct worker_aheads *s = xcalloc(1, sizeof *s);
	s->state = xstrdup(state);
	return s;
}

void worker_aheads_delete(struct worker_aheads *s)
{
	if (!s)
		return;
	for (struct worker_ahead *a = s->live; a; a = a->next)
		a->set = NULL; /* not reached when the loop ran them out */
	free(s->state);
	free(s);
}

static void unlink_live(struct worker_ahead *a)
{
	struct worker_aheads *s = a->set;
	if (!s)
		return;
	if (a->prev)
		a->prev->next = a->next;
	else if (s->live == a)
		s->live = a->next;
	if (a->next)
		a->next->prev = a->prev;
	a->next = a->prev = NULL;
	a->set = NULL;
}

static void on_closed(uv_handle_t *h)
{
	struct worker_ahead *a = h->data;
	a->closed = true;
	if (a->held)
		return; /* freed when the task lets it go */
	free(a->dir);
	free(a);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	struct worker_ahead *a = p->data;
	if (status != 0 || sig != 0)
		debug(D_WORKER, "the container made ahead in %s: its runner ended with %s %d",
		      a->dir, sig ? "signal" : "status", sig ? sig : (int)status);
	unlink_live(a);
	a->exited = true;
	uv_close((uv_handle_t *)p, on_closed);
}

/* The worker's environment with the task's CORES and MEMORY (read by the runner). */
static char **ahead_env(double cores, int64_t memory)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = xcalloc(n + 3, sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!str_has_prefix(environ[i], "CORES=") && !str_has_prefix(environ[i], "MEMORY="))
			env[k++] = xstrdup(environ[i]);
	if (cores > 0)
		env[k++] = xasprintf("CORES=%g", cores);
	if (memory > 0)
		env[k++] = xasprintf("MEMORY=%lld", (long long)memory);
	return env;
}

struct worker_ahead *worker_ahead_start(struct worker_aheads *s, uv_loop_t *loop,
                                        char *const *runner, double cores, int64_t memory,
                                        char **err)
{
	*err = NULL;
	size_t n = 0;
	while (runner[n])
		n++;
	if (n < 2) {
		*err = xstrdup("no runner to start");
		return NULL;
	}
	/* the runner's own argv with --ahead DIR after its mode word */
	char *dir = xasprintf("%s/ahead.%lu", s->state, ++s->seq);
	char **argv = xcalloc(n + 3, sizeof *argv);
	argv[0] = runner[0];
	argv[1] = runner[1];
	argv[2] = (char *)"--ahead";
	argv[3] = dir;
	for (size_t i = 2; i < n; i++)
		argv[i + 2] = runner[i];
	char **env = ahead_env(cores, memory);
	struct worker_ahead *a = xcalloc(1, sizeof *a);
	a->dir = dir;
	a->held = true;
	a->proc.data = a;
	uv_stdio_container_t stdio[3] = {
	    {.flags = UV_IGNORE}, {.flags = UV_IGNORE}, {.flags = UV_INHERIT_FD, .data.fd = 2}};
	uv_process_options_t o = {
	    .exit_cb = on_exit_cb,
	    .file = argv[0],
	    .args = argv,
	    .env = env,
	    .stdio_count = 3,
	    .stdio = stdio,
	};
	int r = uv_spawn(loop, &a->proc, &o);
	free(argv);
	str_free_argv(env);
	if (r < 0) {
		*err = xasprintf("cannot start %s --ahead: %s", runner[0], uv_strerror(r));
		/* a handle whose spawn failed is still closed */
		a->held = false;
		uv_close((uv_handle_t *)&a->proc, on_closed);
		return NULL;
	}
	a->pid = a->proc.pid;
	a->set = s;
	a->next = s->live;
	if (s->live)
		s->live->prev = a;
	s->live = a;
	debug(D_WORKER, "making a container ahead in %s (pid %d)", dir, (int)a->pid);
	return a;
}

bool worker_ahead_alive(const struct worker_ahead *a)
{
	return a && !a->exited;
}

pid_t worker_ahead_pid(const struct worker_ahead *a)
{
	return a->pid;
}

const char *worker_ahead_dir(const struct worker_ahead *a)
{
	return a->dir;
}

void worker_ahead_release(struct worker_ahead *a, bool cancel)
{
	if (!a)
		return;
	a->held = false;
	if (a->closed) {
		free(a->dir);
		free(a);
	} else if (cancel && !a->exited) {
		uv_process_kill(&a->proc, SIGTERM);
	}
}

void worker_aheads_stop_all(struct worker_aheads *s)
{
	for (struct worker_ahead *a = s ? s->live : NULL; a; a = a->next)
		uv_process_kill(&a->proc, SIGTERM);
}
