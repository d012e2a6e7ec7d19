/* rmonitor.c: runs one command under measurement and limits on a libuv loop (see rmonitor.h).
 * The child starts inside its own cgroup when one can be made (exact memory peak, CPU time,
 * kernel-enforced memory, CPU quota and process limits); /proc sampling adds what cgroups do
 * not give (virtual memory, swap, I/O, files, context switches) and replaces them when
 * cgroups are off. Wall time is enforced by a timer and memory by kernel notification.
 * Sampling, the limits it checks and killing the tree are in rmonitor_sample.c. */
#include "rmonitor_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buffer.h"
#include "debug.h"
#include "htc_error.h"
#include "rmon_cgroup.h"
#include "rmon_cn_shared.h"
#include "rmon_proc.h"
#include "rmon_seccomp.h"
#include "rmon_sigchld.h"
#include "rmon_spawn.h"
#include "stringtools.h"
#include "timeutil.h"
#include "vec.h"
#include "xalloc.h"
#include "banned.h"

/* ---- small helpers ------------------------------------------------------------------ */

/* argv as one line, words quoted for the shell only when they need it. */
static char *command_line(char *const *argv)
{
	size_t n = 0;
	while (argv[n])
		n++;
	char **words = xcalloc(n + 1, sizeof *words);
	for (size_t i = 0; i < n; i++) {
		const char *w = argv[i];
		int plain = *w != 0;
		for (const char *c = w; *c; c++)
			if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			            "_-./:=,+@%",
			            *c))
				plain = 0;
		words[i] = plain ? xstrdup(w) : str_escape_shell(w);
	}
	char *line = str_join(words, " ");
	str_free_argv(words);
	return line;
}

/* ---- ending --------------------------------------------------------------------------- */

/* Frees M and what it owns (its handles must be closed already). */
static void monitor_free(struct rmonitor *m)
{
	rmon_sigchld_remove(&m->sigchld);
	rmsummary_clear(&m->cur);
	str_free_argv(m->argv);
	str_free_argv(m->env);
	str_free_argv(m->measure_dirs);
	free(m->cwd);
	free(m->cpuset);
	free(m->cgroup_root);
	free(m->path);
	str_free_argv(m->seccomp_denied);
	free(m);
}

static void on_close(uv_handle_t *h)
{
	struct rmonitor *m = h->data;
	m->n_handles--;
	if (m->n_handles == 0 && m->deleting)
		monitor_free(m);
}

static void close_handle(struct rmonitor *m, uv_handle_t *h, int *flag)
{
	if (flag && !*flag)
		return;
	if (flag)
		*flag = 0;
	if (!uv_is_closing(h))
		uv_close(h, on_close);
	(void)m;
}

/* Stops watching the kernel: poll handles are closed before their descriptors. */
static void stop_watching(struct rmonitor *m)
{
	uv_timer_stop(&m->sample_timer);
	uv_timer_stop(&m->fast_timer);
	uv_timer_stop(&m->wall_timer);
	uv_timer_stop(&m->drain_timer);
	close_handle(m, (uv_handle_t *)&m->mem_poll, &m->mem_poll_on);
	rmon_cn_remove(&m->cn);
	m->cn_on = 0;
	rmon_seccomp_watch_delete(m->seccomp_watch);
	m->seccomp_watch = NULL;
}

/* The refused calls as the summary's "seccomp_denied" (a JSON array), when there were any. */
static void add_seccomp_denied(struct rmonitor *m, struct rmsummary *s)
{
	char **names = rmon_seccomp_watch_denied(m->seccomp_watch);
	if (!names[0]) {
		str_free_argv(names);
		return;
	}
	m->seccomp_denied = names;
	struct buffer b;
	buffer_init(&b, 0);
	buffer_putc(&b, '[');
	for (size_t i = 0; names[i]; i++)
		buffer_printf(&b, "%s\"%s\"", i ? ", " : "", names[i]);
	buffer_putc(&b, ']');
	VEC_RESIZE(s->extra_keys, s->n_extra + 1);
	VEC_RESIZE(s->extra_values, s->n_extra + 1);
	s->extra_keys[s->n_extra] = xstrdup("seccomp_denied");
	s->extra_values[s->n_extra] = xstrdup(buffer_tostring(&b));
	s->n_extra++;
	buffer_free(&b);
}

/* Kills what is left in the group; then back to the pool, or removed. */
static void remove_cgroup(struct rmonitor *m, int wait_ms)
{
	rmon_cgroup_release(m->cg, m->pool, wait_ms);
	m->cg = NULL;
}

static void finish(struct rmonitor *m)
{
	if (m->state == ST_DONE)
		return;
	/* The last walk of the directories, then no other one in the last sample. */
	rmonitor_measure_disk(m, 1);
	m->disk_next_mono = INT64_MAX;
	rmonitor_sample(m, 0);
	m->state = ST_DONE;
	m->end_us = time_now_us();
	double wall = (double)(m->end_us - m->start_us) / 1e6;
	struct rmsummary *s = &m->cur;
	if (m->cg) {
		/* The figures of the sample just taken (the tree has ended). */
		struct rmon_cg_stats st = m->st;
		if (st.mem_peak > m->peak_bytes)
			m->peak_bytes = st.mem_peak;
		m->cache_now = st.mem_cache;
		/* The final figure replaces the running peak: cache at the end is known now. */
		s->v[RM_MEMORY] = rmonitor_cgroup_memory_mb(m);
		if (st.cpu_ns >= 0 && (double)st.cpu_ns / 1e9 > s->v[RM_CPU_TIME])
			s->v[RM_CPU_TIME] = (double)st.cpu_ns / 1e9;
		if (st.oom_kills > m->prev_oom_kills && m->mem_limit_mb >= 0) {
			m->killed_for_limits = 1;
			if (m->exceeded[RM_MEMORY] < 0)
				m->exceeded[RM_MEMORY] = (double)m->mem_limit_mb;
		}
	}
	add_seccomp_denied(m, s);
	stop_watching(m);
	remove_cgroup(m, 500);

	s->v[RM_START] = (double)m->start_us;
	s->v[RM_END] = (double)m->end_us;
	s->v[RM_WALL_TIME] = wall;
	if (s->v[RM_CPU_TIME] < 0)
		s->v[RM_CPU_TIME] = 0;
	s->v[RM_CORES_AVG] = wall > 0 ? s->v[RM_CPU_TIME] / wall : 0;
	if (m->cores_peak >= 0) {
		s->v[RM_CORES] = m->cores_peak;
	} else {
		/* Shorter than one window: the average is the best figure. */
		s->v[RM_CORES] = fmin(s->v[RM_CORES_AVG], (double)m->machine_cpus);
		s->peak_times[RM_CORES] = wall;
	}
	if (m->report_files)
		s->v[RM_TOTAL_FILES] = (double)rmon_proc_nfiles(m->proc);
	s->v[RM_MACHINE_CPUS] = m->machine_cpus;
	for (int f = 0; f < RM_N_FIELDS; f++)
		if (s->v[f] < 0 &&
		    (f == RM_MEMORY || f == RM_VIRTUAL_MEMORY || f == RM_SWAP_MEMORY ||
		     f == RM_BYTES_READ || f == RM_BYTES_WRITTEN || f == RM_CONTEXT_SWITCHES ||
		     f == RM_MAX_CONCURRENT_PROCESSES || f == RM_TOTAL_PROCESSES))
			s->v[f] = 0;

	if (m->killed_for_limits) {
		s->exit_type = RM_EXIT_LIMITS;
		s->signal = SIGKILL;
		s->exit_status = WIFEXITED(m->wstatus) ? WEXITSTATUS(m->wstatus) : 0;
		for (int f = 0; f < RM_N_FIELDS; f++)
			s->limits_exceeded[f] = m->exceeded[f];
	} else if (WIFSIGNALED(m->wstatus)) {
		s->exit_type = RM_EXIT_SIGNAL;
		s->signal = WTERMSIG(m->wstatus);
		s->exit_status = 0;
	} else {
		s->exit_type = RM_EXIT_NORMAL;
		s->exit_status = WEXITSTATUS(m->wstatus);
		s->signal = 0;
	}
	rmonitor_time_series_row(m);
	debug(D_RMON, "pid %ld done: wall %.3f s, cpu %.3f s, memory %.1f MB, %d processes",
	      (long)m->pid, wall, s->v[RM_CPU_TIME], s->v[RM_MEMORY],
	      (int)s->v[RM_TOTAL_PROCESSES]);
	if (m->done)
		m->done(m, s, m->arg);
}

static int tree_empty(struct rmonitor *m)
{
	if (m->cg) {
		int e = rmon_cgroup_is_empty(m->cg);
		return e != 0; /* an unreadable group counts as empty */
	}
	struct rmon_proc_totals t;
	rmonitor_proc_sample(m, 1, &t);
	return t.nprocs == 0;
}

static void on_drain(uv_timer_t *t)
{
	struct rmonitor *m = t->data;
	if (m->state != ST_DRAINING)
		return;
	if (m->killed_for_limits)
		rmonitor_kill_tree(m);
	if (tree_empty(m)) {
		uv_timer_stop(&m->drain_timer);
		finish(m);
	}
}

/* Is our child (and only ours) finished? Reaps it after a last look at its zombie. */
static void check_child(struct rmonitor *m)
{
	if (m->reaped || m->state == ST_DONE)
		return;
	siginfo_t si;
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)m->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
	    si.si_pid != m->pid)
		return;
	/* Forks the connector reported and nobody read yet belong in the final figures (the
	 * SIGCHLD may be handled before the connector's socket in the same turn of the loop). */
	if (m->cn_on)
		rmon_cn_drain(&m->cn);
	/* Still a zombie: its /proc entry holds its final figures. (A cgroup does not list it
	 * any more, and its counters keep everything: the sample is taken after the reaping,
	 * by finish() or below.) */
	if (!m->cg)
		rmonitor_sample(m, 0);
	else if (!rmon_proc_alone(m->proc))
		rmon_proc_final(m->proc, m->pid);
	struct rusage ru;
	int status;
	pid_t r = wait4(m->pid, &status, WNOHANG, &ru);
	if (r != m->pid)
		return;
	m->reaped = 1;
	m->wstatus = status;
	rmon_proc_root_exited(m->proc, &ru);
	/* The largest RSS of the first process and of the children it waited for. */
	if ((int64_t)ru.ru_maxrss * 1024 > m->rss_peak)
		m->rss_peak = (int64_t)ru.ru_maxrss * 1024;
	debug(D_RMON, "pid %ld exited (status 0x%x)", (long)m->pid, status);
	m->state = ST_DRAINING;
	uv_timer_stop(&m->sample_timer);
	uv_timer_stop(&m->fast_timer);
	if (tree_empty(m)) {
		finish(m);
	} else {
		if (m->cg)
			rmonitor_sample(m, 0);
		uv_timer_start(&m->drain_timer, on_drain, DRAIN_MS, DRAIN_MS);
	}
}

/* ---- callbacks -------------------------------------------------------------------------- */

static void on_sigchld(void *arg)
{
	check_child(arg);
}

static void on_sample(uv_timer_t *t)
{
	struct rmonitor *m = t->data;
	if (m->state != ST_RUNNING)
		return;
	rmonitor_sample(m, 0);
	rmonitor_time_series_row(m);
	check_child(m);
	if (m->state != ST_RUNNING)
		return;
	/* Samples come quickly at first (short tasks are seen), then at the interval. */
	uint64_t iv = (uint64_t)(m->interval * 1000);
	m->next_ms = m->next_ms * 2 < iv ? m->next_ms * 2 : iv;
	if (m->next_ms == 0)
		m->next_ms = 1;
	uv_timer_start(&m->sample_timer, on_sample, m->next_ms, 0);
}

static void on_fast(uv_timer_t *t)
{
	struct rmonitor *m = t->data;
	if (m->state != ST_RUNNING)
		return;
	/* Checking only the disk limit, and it is not due: nothing to look at. */
	int for_memory = m->limits[RM_MEMORY] >= 0 && !m->cg_mem;
	if (!for_memory && !rmonitor_disk_check_due(m))
		return;
	rmonitor_sample(m, 1);
}

static void on_wall(uv_timer_t *t)
{
	struct rmonitor *m = t->data;
	if (m->state == ST_DONE)
		return;
	/* The loop's clock may lag the one the summary's wall_time is measured on (it was read
	 * before the task started): a timer due early is set again for what is left. */
	double left_ms =
	    m->limits[RM_WALL_TIME] * 1000.0 - (double)(time_now_us() - m->start_us) / 1e3;
	if (left_ms > 0) {
		uv_timer_start(&m->wall_timer, on_wall, (uint64_t)ceil(left_ms), 0);
		return;
	}
	rmonitor_limit_kill(m, RM_WALL_TIME, m->limits[RM_WALL_TIME]);
	check_child(m);
}

static void at_limit(struct rmonitor *m)
{
	int64_t lim = m->mem_limit_mb;
	int64_t more = m->at_memory_limit ? m->at_memory_limit(m, lim, m->at_memory_limit_arg) : 0;
	if (m->state == ST_DONE || m->deleting)
		return;
	if (more < 0) {
		/* The owner keeps the task waiting at its limit (throttled) and will raise it
		 * with rmonitor_set_memory_limit() when memory frees up. */
		debug(D_RMON, "task %ld held at its memory limit of %lld MB", (long)m->pid,
		      (long long)lim);
		return;
	}
	if (more > lim && rmon_cgroup_set_memory(m->cg, more * (int64_t)(1 << 20), 1) == 0) {
		m->mem_limit_mb = more;
		m->limit_raises++;
		notice("task %ld reached its memory limit of %lld MB; raised to %lld MB",
		       (long)m->pid, (long long)lim, (long long)more);
		return;
	}
	rmonitor_limit_kill(m, RM_MEMORY, (double)lim);
}

static void on_mem_event(uv_poll_t *h, int status, int events)
{
	struct rmonitor *m = h->data;
	(void)events;
	if (status < 0 || !m->cg || m->state == ST_DONE)
		return;
	int fd = rmon_cgroup_memory_fd(m->cg);
	char buf[4096];
	while (read(fd, buf, sizeof buf) > 0)
		;
	if (m->killed_for_limits)
		return;
	struct rmon_cg_stats st;
	rmon_cgroup_stats(m->cg, &st);
	if (rmon_cgroup_version(m->cg) == RMON_CG_V1) {
		if (st.under_oom > 0 || st.oom_kills > m->prev_oom_kills)
			at_limit(m);
		return;
	}
	/* v2: the kernel killed (memory.max reached), or the task sits at memory.high with
	 * memory that cannot be reclaimed (not page cache). */
	int64_t lim = m->mem_limit_mb * (int64_t)(1 << 20);
	int64_t unreclaimable = st.mem_current - (st.mem_cache > 0 ? st.mem_cache : 0);
	if (st.oom_kills > m->prev_oom_kills) {
		m->prev_oom_kills = st.oom_kills;
		rmonitor_limit_kill(m, RM_MEMORY, (double)m->mem_limit_mb);
	} else if (st.high_events > m->prev_high && unreclaimable >= lim - lim / 50) {
		m->prev_high = st.high_events;
		at_limit(m);
	} else if (st.high_events > m->prev_high) {
		m->prev_high = st.high_events;
	}
}

/* ---- start ----------------------------------------------------------------------------- */

void rmonitor_spec_init(struct rmonitor_spec *spec)
{
	memset(spec, 0, sizeof *spec);
	spec->stdin_fd = spec->stdout_fd = spec->stderr_fd = -1;
	rmsummary_init(&spec->limits);
	spec->interval_s = 1.0;
	spec->cgroups = RMONITOR_CGROUPS_AUTO;
}

static void init_handle(struct rmonitor *m, uv_handle_t *h)
{
	h->data = m;
	m->n_handles++;
}

/* Sets the limits of the task's group. */
static void set_limits(struct rmonitor *m)
{
	if (m->cpuset && rmon_cgroup_set_cpuset(m->cg, m->cpuset) < 0)
		warn("cannot pin the task to CPUs %s", m->cpuset);
	if (m->measure_only)
		return;
	if (m->limits[RM_MEMORY] >= 0) {
		m->mem_limit_mb = (int64_t)ceil(m->limits[RM_MEMORY]);
		if (rmon_cgroup_set_memory(m->cg, m->mem_limit_mb * (int64_t)(1 << 20), 1) == 0 &&
		    rmon_cgroup_memory_fd(m->cg) >= 0)
			m->cg_mem = 1;
	}
	if (m->limits[RM_CORES] > 0 && rmon_cgroup_set_cpu(m->cg, m->limits[RM_CORES]) == 0)
		m->cg_cpu = 1;
	if (m->limits[RM_MAX_CONCURRENT_PROCESSES] >= 0 &&
	    rmon_cgroup_set_pids(m->cg, (int64_t)m->limits[RM_MAX_CONCURRENT_PROCESSES]) == 0)
		m->cg_pids = 1;
}

/* Creates (or takes from the pool) the cgroup and sets its limits; on failure M->cg stays
 * NULL. A reused group whose earlier limits cannot be lifted is removed for a fresh one. */
static int setup_cgroup(struct rmonitor *m)
{
	/* Only the hierarchies this task needs: a CPU quota and pinning are asked for. */
	struct rmon_cgroup_opts o = {.root = m->cgroup_root};
	if (!m->measure_only && m->limits[RM_CORES] > 0)
		o.controllers |= RMON_CG_WANT_CPU;
	if (m->cpuset)
		o.controllers |= RMON_CG_WANT_CPUSET;
	int err = 0;
	for (int pool = m->pool; !m->cg; pool = 0) {
		m->cg = rmon_cgroup_take(&o, pool, &m->cg_reused, &err);
		if (!m->cg) {
			debug(D_RMON, "no cgroup: %s", htc_strerror(err));
			return err;
		}
		m->mem_limit_mb = -1;
		m->cg_mem = m->cg_cpu = m->cg_pids = 0;
		set_limits(m);
		if ((err = rmon_cgroup_settle(m->cg)) < 0) {
			rmon_cgroup_release(m->cg, 0, 100);
			m->cg = NULL;
			if (!pool)
				return err;
		}
	}
	return 0;
}

static pid_t start_child(struct rmonitor *m, int *err)
{
	int fds[MAX_CGFDS];
	int nfds = 0;
	if (m->cg) {
		nfds = rmon_cgroup_open_procs(m->cg, fds, MAX_CGFDS);
		if (nfds < 0) {
			*err = nfds;
			return -1;
		}
	}
	struct rmon_spawn_args a = {
	    .argv = (const char *const *)m->argv,
	    .path = m->path,
	    .env = (const char *const *)m->env,
	    .cwd = m->cwd,
	    .stdin_fd = m->stdio[0],
	    .stdout_fd = m->stdio[1],
	    .stderr_fd = m->stdio[2],
	    .new_session = m->new_session,
	    .cgroup_fds = fds,
	    .n_cgroup_fds = nfds,
	    .seccomp = m->seccomp,
	};
	enum rmon_spawn_stage stage;
	int cerr;
	m->start_us = time_now_us();
	m->start_mono = htc_clock_now_us(m->clock);
	/* A group this process has used before is known to take our tasks, and without a group
	 * there is nothing to join: the spawner threads make the child, and the loop does not wait
	 * for its join and exec. A new group is joined here first, so that a group that refuses
	 * us can be left for /proc only (the -2 below). */
	if (m->spawn_async && (!m->cg || m->cg_reused)) {
		pid_t pid = rmon_spawn_start(&a);
		if (pid < 0)
			*err = pid;
		return pid < 0 ? -1 : pid;
	}
	pid_t pid = rmon_spawn(&a, &stage, &cerr);
	if (pid < 0) {
		*err = pid;
		return -1;
	}
	if (stage == RMON_SPAWN_CGROUP) {
		int st;
		waitpid(pid, &st, 0);
		*err = -cerr;
		return -2;
	}
	if (stage != RMON_SPAWN_OK)
		debug(D_RMON, "cannot execute %s: %s", m->argv[0], strerror(cerr));
	return pid;
}

struct rmonitor *rmonitor_start(uv_loop_t *loop, const struct rmonitor_spec *spec,
                                rmonitor_done_fn done, void *arg, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	*err = 0;
	if (!loop || !spec || !spec->argv || !spec->argv[0]) {
		*err = -EINVAL;
		return NULL;
	}
	struct rmonitor *m = xcalloc(1, sizeof *m);
	m->loop = loop;
	m->done = done;
	m->arg = arg;
	m->argv = str_dup_argv(spec->argv);
	m->env = str_dup_argv(spec->env);
	m->cwd = xstrdup(spec->cwd);
	m->cpuset = xstrdup(spec->cpuset);
	m->measure_dirs = str_dup_argv(spec->measure_dirs);
	m->cgroup_root = xstrdup(spec->cgroup_root);
	m->path = xstrdup(spec->path);
	m->stdio[0] = spec->stdin_fd;
	m->stdio[1] = spec->stdout_fd;
	m->stdio[2] = spec->stderr_fd;
	m->new_session = spec->new_session;
	m->measure_only = spec->measure_only;
	m->interval = spec->interval_s > 0 ? spec->interval_s : 1.0;
	m->time_series = spec->time_series;
	m->report_files = spec->report_files;
	m->cg_mode = spec->cgroups;
	m->at_memory_limit = spec->at_memory_limit;
	m->at_memory_limit_arg = spec->at_memory_limit_arg;
	m->pool = !spec->no_pool;
	m->spawn_async = spec->spawn_async;
	m->clock = spec->clock;
	for (int f = 0; f < RM_N_FIELDS; f++) {
		m->limits[f] = spec->measure_only ? -1 : spec->limits.v[f];
		m->exceeded[f] = -1;
	}
	m->mem_limit_mb = -1;
	m->cores_peak = -1;
	m->machine_cpus = rmon_machine_cpus();
	rmsummary_init(&m->cur);
	m->cur.command = command_line(m->argv);

	if (m->cg_mode != RMONITOR_CGROUPS_OFF) {
		int e = setup_cgroup(m);
		if (e < 0 && m->cg_mode == RMONITOR_CGROUPS_REQUIRED) {
			*err = e == HTC_EUNSUP ? HTC_EUNSUP : e;
			goto fail;
		}
	}

	/* with a cgroup the group holds every process of the tree: the connector only adds the
	 * count of those that lived between two samples, which a caller may not want to pay for */
	int cn = spec->no_proc_events && m->cg ? -ECANCELED : rmon_cn_add(loop, &m->cn);
	if (cn == 0)
		m->cn_on = 1;
	else if (cn == -ECANCELED)
		debug(D_RMON, "in a cgroup without process events: total_processes counts the "
		              "processes seen at samples");
	else
		debug(D_RMON,
		      "proc connector unavailable (%s): short-lived processes are counted "
		      "only when a sample sees them",
		      strerror(-cn));

	uv_timer_init(loop, &m->sample_timer);
	init_handle(m, (uv_handle_t *)&m->sample_timer);
	uv_timer_init(loop, &m->fast_timer);
	init_handle(m, (uv_handle_t *)&m->fast_timer);
	uv_timer_init(loop, &m->wall_timer);
	init_handle(m, (uv_handle_t *)&m->wall_timer);
	uv_timer_init(loop, &m->drain_timer);
	init_handle(m, (uv_handle_t *)&m->drain_timer);
	/* Before the child exists, so that its SIGCHLD cannot be missed. */
	int se = rmon_sigchld_add(loop, &m->sigchld, on_sigchld, m);
	if (se < 0) /* then only the samples notice the end */
		warn("cannot watch SIGCHLD: %s", uv_strerror(se));

	int e = 0;
	if (spec->seccomp_profile) {
		m->seccomp = rmon_seccomp_prog_get(spec->seccomp_profile, &e);
		if (!m->seccomp)
			e = e ? e : -EINVAL;
		else /* registered first: the task may make a refused call before its pid is set */
			m->seccomp_watch = rmon_seccomp_watch_start(
			    m->seccomp, m->cg ? rmon_cgroup_name(m->cg) : NULL);
		if (e < 0)
			warn("cannot set up the seccomp filter %s: %s",
			     rmon_seccomp_name(spec->seccomp_profile), htc_strerror(e));
	}
	pid_t pid = e < 0 ? -1 : start_child(m, &e);
	if (pid == -2 && m->cg_mode == RMONITOR_CGROUPS_AUTO) {
		warn("cannot join cgroup %s (%s); measuring through /proc only",
		     rmon_cgroup_name(m->cg), htc_strerror(e));
		rmon_cgroup_release(m->cg, 0, 100);
		m->cg = NULL;
		m->cg_mem = m->cg_cpu = m->cg_pids = 0;
		pid = start_child(m, &e);
	}
	if (pid > 0)
		rmon_seccomp_watch_set_pid(m->seccomp_watch, pid);
	if (pid < 0) {
		*err = e ? e : -ECHILD;
		m->deleting = 1;
		m->state = ST_DONE;
		rmon_cn_remove(&m->cn);
		m->cn_on = 0;
		rmon_cgroup_release(m->cg, 0, 100);
		m->cg = NULL;
		/* The handles free M when closed. */
		uv_close((uv_handle_t *)&m->sample_timer, on_close);
		uv_close((uv_handle_t *)&m->fast_timer, on_close);
		uv_close((uv_handle_t *)&m->wall_timer, on_close);
		uv_close((uv_handle_t *)&m->drain_timer, on_close);
		return NULL;
	}
	m->pid = pid;
	m->used_cgroups = m->cg != NULL;
	enum rmon_proc_mode mode =
	    m->cg ? RMON_PROC_CGROUP : (m->new_session ? RMON_PROC_SESSION : RMON_PROC_DESCENDANTS);
	m->proc = rmon_proc_create(pid, mode, m->report_files);
	rmon_proc_add(m->proc, pid, getpid());
	/* The connector listened before the child existed: it reports every fork of the tree. */
	if (!m->cg && m->cn_on)
		rmon_proc_set_complete(m->proc, 1);
	rmon_cn_set_proc(&m->cn, m->proc);
	debug(D_RMON, "started pid %ld (%s)%s%s", (long)pid, m->cur.command,
	      m->cg ? " in cgroup " : ", no cgroup", m->cg ? rmon_cgroup_path(m->cg) : "");

	if (m->cg_mem) {
		uv_poll_init(loop, &m->mem_poll, rmon_cgroup_memory_fd(m->cg));
		init_handle(m, (uv_handle_t *)&m->mem_poll);
		m->mem_poll_on = 1;
		uv_poll_start(&m->mem_poll, UV_READABLE, on_mem_event);
	}
	uint64_t iv = (uint64_t)(m->interval * 1000);
	if (iv == 0)
		iv = 1;
	m->next_ms = iv < 50 ? iv : 50;
	uv_timer_start(&m->sample_timer, on_sample, m->next_ms, 0);
	if (!m->measure_only &&
	    ((m->limits[RM_MEMORY] >= 0 && !m->cg_mem) || m->limits[RM_DISK] >= 0)) {
		uint64_t fast = (uint64_t)(fmin(m->interval, FAST_S) * 1000);
		if (fast == 0)
			fast = 1;
		uv_timer_start(&m->fast_timer, on_fast, fast, fast);
	}
	if (m->limits[RM_WALL_TIME] >= 0) {
		uint64_t ms = (uint64_t)(m->limits[RM_WALL_TIME] * 1000.0);
		uv_timer_start(&m->wall_timer, on_wall, ms, 0);
	}
	if (m->time_series) {
		rmonitor_series_header(m->time_series);
		fflush(m->time_series);
	}
	m->state = ST_RUNNING;
	return m;

fail:
	rmon_cgroup_release(m->cg, 0, 100);
	monitor_free(m);
	return NULL;
}

void rmonitor_series_header(FILE *f)
{
	fputs("# wall_clock(us) cpu_time(s) cores memory(MB) virtual_memory(MB) swap(MB) "
	      "bytes_read(MB) bytes_written(MB) processes disk(MB)\n",
	      f);
}

/* ---- queries and control --------------------------------------------------------------- */

pid_t rmonitor_pid(const struct rmonitor *m)
{
	return m ? m->pid : -1;
}

int rmonitor_uses_cgroups(const struct rmonitor *m)
{
	return m && m->used_cgroups;
}

int rmonitor_uses_proc_events(const struct rmonitor *m)
{
	return m && m->cn_on;
}

const char *rmonitor_cgroup_name(const struct rmonitor *m)
{
	return m && m->cg ? rmon_cgroup_name(m->cg) : NULL;
}

int rmonitor_cgroup_reused(const struct rmonitor *m)
{
	return m && m->cg_reused;
}

const struct rmsummary *rmonitor_current(const struct rmonitor *m)
{
	return &m->cur;
}

int rmonitor_limit_raises(const struct rmonitor *m)
{
	return m->limit_raises;
}

const char *const *rmonitor_seccomp_denied(const struct rmonitor *m)
{
	static const char *const none[] = {NULL};
	return m && m->seccomp_denied ? (const char *const *)m->seccomp_denied : none;
}

const char *const *rmonitor_files(const struct rmonitor *m)
{
	static const char *const none[1] = {NULL};
	if (!m->proc)
		return none;
	return rmon_proc_files(((struct rmonitor *)m)->proc);
}

int rmonitor_set_memory_limit(struct rmonitor *m, int64_t mb)
{
	if (!m->cg)
		return HTC_EUNSUP;
	if (m->state == ST_DONE)
		return -ESRCH;
	int r = rmon_cgroup_set_memory(m->cg, mb < 0 ? -1 : mb * (int64_t)(1 << 20), 1);
	if (r < 0)
		return r;
	m->mem_limit_mb = mb;
	m->limits[RM_MEMORY] = (double)mb;
	if (mb >= 0 && !m->mem_poll_on) {
		int fd = rmon_cgroup_memory_fd(m->cg);
		if (fd >= 0) {
			uv_poll_init(m->loop, &m->mem_poll, fd);
			init_handle(m, (uv_handle_t *)&m->mem_poll);
			m->mem_poll_on = 1;
			uv_poll_start(&m->mem_poll, UV_READABLE, on_mem_event);
		}
	}
	m->cg_mem = mb >= 0;
	return 0;
}

void rmonitor_report_memory(struct rmonitor *m, double mb)
{
	if (m->state != ST_DONE && mb > 0)
		rmonitor_set_peak(m, RM_MEMORY, mb);
}

void rmonitor_exhausted(struct rmonitor *m, int field, double limit)
{
	if (field >= 0 && field < RM_N_FIELDS)
		rmonitor_limit_kill(m, field, limit);
}

double rmonitor_memory_now(const struct rmonitor *m)
{
	return m->mem_now > 0 ? m->mem_now : 0;
}

int rmonitor_set_cores(struct rmonitor *m, double cores)
{
	if (!m->cg || !m->cg_cpu)
		return HTC_EUNSUP;
	if (m->state == ST_DONE)
		return -ESRCH;
	int r = rmon_cgroup_set_cpu(m->cg, cores);
	if (r == 0)
		m->limits[RM_CORES] = cores;
	return r;
}

int rmonitor_kill(struct rmonitor *m, int sig)
{
	if (!m || m->state == ST_DONE)
		return -ESRCH;
	if (m->cg) {
		if (sig == SIGKILL)
			rmon_cgroup_kill_all(m->cg, 0);
		else
			rmon_cgroup_signal(m->cg, sig);
	}
	rmonitor_signal_tracked(m, sig);
	return 0;
}

void rmonitor_delete(struct rmonitor *m)
{
	if (!m || m->deleting)
		return;
	m->deleting = 1;
	if (m->state != ST_DONE) {
		debug(D_RMON, "pid %ld: deleted while running, killing the task", (long)m->pid);
		rmonitor_kill_tree(m);
		if (!m->reaped) {
			int st;
			/* SIGKILLed just now: this returns at once. */
			while (waitpid(m->pid, &st, 0) < 0 && errno == EINTR)
				;
			m->reaped = 1;
		}
		m->state = ST_DONE;
		stop_watching(m);
		remove_cgroup(m, 1000);
	}
	rmon_proc_delete(m->proc);
	m->proc = NULL;
	close_handle(m, (uv_handle_t *)&m->sample_timer, NULL);
	close_handle(m, (uv_handle_t *)&m->fast_timer, NULL);
	close_handle(m, (uv_handle_t *)&m->wall_timer, NULL);
	close_handle(m, (uv_handle_t *)&m->drain_timer, NULL);
	close_handle(m, (uv_handle_t *)&m->mem_poll, &m->mem_poll_on);
}

static void pool_noop(uv_work_t *w)
{
	(void)w;
}

static void pool_noop_done(uv_work_t *w, int status)
{
	(void)status;
	free(w);
}

void rmonitor_prepare_pool(uv_loop_t *loop)
{
	static bool done;
	if (done)
		return;
	done = true;
	/* The pool's threads are made by the first uv_queue_work and inherit this mask. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	uv_work_t *w = xmalloc(sizeof *w);
	if (uv_queue_work(loop, w, pool_noop, pool_noop_done) < 0)
		free(w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
