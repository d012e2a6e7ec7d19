/* rmon_attach.c: resource_monitor --pid (see rmon_attach.h): every interval the process and
 * its descendants are sampled (memory is the sum of their resident sizes, CPU time includes
 * processes that have exited), the peaks and a time-series row are kept, and the limits are
 * checked; the end is reported once the whole tree is gone. */
#include "rmon_attach.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debug.h"
#include "rmon_proc.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

struct rmon_attach {
	pid_t root;
	struct rmsummary limits;
	int enforce;
	FILE *series;
	const char *const *measure_dirs;
	struct rmon_proc *proc;
	uv_timer_t timer, wall_timer;
	int64_t start_us;        /* when the root process started */
	int64_t start_mono;      /* monotonic clock at that instant */
	double last_cpu, last_t; /* for the CPU rate */
	double cores_now;
	struct rmsummary s;
	int killing, killed_by_limit, killed_by_signal, finished;
	rmon_attach_done_fn done;
	void *done_arg;
};

/* State letter of PID from /proc/PID/stat, or 0 when it is gone. Start time in ticks. */
static char proc_state(pid_t pid, unsigned long long *start_ticks)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	char st = 0;
	unsigned long long start = 0;
	if (!p || sscanf(p + 1,
	                 " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
	                 "%*d %*d %*d %llu",
	                 &st, &start) != 2)
		return 0;
	if (start_ticks)
		*start_ticks = start;
	return st;
}

static int64_t boot_time_us(void)
{
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	char line[256];
	long long bt = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "btime %lld", &bt) == 1)
			break;
	fclose(f);
	return (int64_t)bt * 1000000;
}

static void kill_tree(struct rmon_attach *a, int sig)
{
	pid_t *pids = NULL;
	size_t n = rmon_proc_live(a->proc, &pids);
	for (size_t i = 0; i < n; i++)
		kill(pids[i], sig);
	free(pids);
	kill(a->root, sig);
}

/* 1 when no process of the tree is left (zombies waiting for their parent do not count). */
static int tree_gone(struct rmon_attach *a)
{
	pid_t *pids = NULL;
	size_t n = rmon_proc_live(a->proc, &pids);
	int gone = 1;
	for (size_t i = 0; i < n && gone; i++) {
		char st = proc_state(pids[i], NULL);
		if (st && st != 'Z')
			gone = 0;
	}
	free(pids);
	return gone;
}

static void peak(struct rmon_attach *a, int f, double v, double wall)
{
	if (v > a->s.v[f]) {
		a->s.v[f] = v;
		a->s.peak_times[f] = wall;
	}
}

static void finish(struct rmon_attach *a)
{
	if (a->finished)
		return;
	a->finished = 1;
	uv_timer_stop(&a->timer);
	uv_timer_stop(&a->wall_timer);
	struct rmsummary *s = &a->s;
	if (a->killed_by_limit) {
		s->exit_type = RM_EXIT_LIMITS;
		s->signal = SIGKILL;
	} else if (a->killed_by_signal) {
		s->exit_type = RM_EXIT_SIGNAL;
		s->signal = a->killed_by_signal;
	}
	/* Otherwise the exit status is unknown (the process is not our child): exit_type stays
	 * unset and is left out of the summary. */
	a->done(s, a->done_arg);
}

/* One sample: the tree's use, the peaks, a time-series row, the limits. */
static void sample(struct rmon_attach *a)
{
	if (a->finished)
		return;
	struct rmon_proc_totals t;
	rmon_proc_sample(a->proc, NULL, 0, 0, &t);
	struct rmsummary *s = &a->s;
	int64_t now = time_now_us();
	double wall = (double)(time_monotonic_us() - a->start_mono) / 1e6;
	double rss = (double)t.rss / 1048576.0, vm = (double)t.vm / 1048576.0;
	s->v[RM_END] = (double)now;
	s->v[RM_WALL_TIME] = wall;
	s->v[RM_CPU_TIME] = t.cpu_s;
	s->v[RM_CORES_AVG] = wall > 0 ? t.cpu_s / wall : 0;
	if (a->last_t >= 0 && wall - a->last_t >= 0.05) {
		a->cores_now = (t.cpu_s - a->last_cpu) / (wall - a->last_t);
		peak(a, RM_CORES, a->cores_now, wall);
	}
	if (a->last_t < 0 || wall - a->last_t >= 0.05) {
		a->last_t = wall;
		a->last_cpu = t.cpu_s;
	}
	peak(a, RM_MEMORY, rss, wall);
	peak(a, RM_VIRTUAL_MEMORY, vm, wall);
	peak(a, RM_SWAP_MEMORY, (double)t.swap / 1048576.0, wall);
	peak(a, RM_BYTES_READ, (double)t.read_bytes / 1048576.0, wall);
	peak(a, RM_BYTES_WRITTEN, (double)t.write_bytes / 1048576.0, wall);
	peak(a, RM_CONTEXT_SWITCHES, (double)t.ctx_switches, wall);
	peak(a, RM_MAX_CONCURRENT_PROCESSES, (double)t.max_concurrent, wall);
	peak(a, RM_TOTAL_PROCESSES, (double)t.total_processes, wall);
	peak(a, RM_TOTAL_FILES, (double)rmon_proc_nfiles(a->proc), wall);
	double disk = 0;
	if (a->measure_dirs) {
		int64_t bytes = rmon_disk_usage(a->measure_dirs);
		disk = bytes > 0 ? (double)bytes / 1048576.0 : 0;
		peak(a, RM_DISK, disk, wall);
	}
	if (a->series)
		fprintf(a->series, "%lld %.3f %.3f %.3f %.3f %.3f %.3f %.3f %d %.3f\n",
		        (long long)now, t.cpu_s, a->cores_now, rss, vm, (double)t.swap / 1048576.0,
		        (double)t.read_bytes / 1048576.0, (double)t.write_bytes / 1048576.0,
		        t.nprocs, disk);

	if (a->enforce && !a->killing) {
		uint64_t which = 0;
		struct rmsummary cur;
		rmsummary_init(&cur);
		for (int f = 0; f < RM_N_FIELDS; f++)
			if (f != RM_WALL_TIME && f != RM_START && f != RM_END)
				cur.v[f] = s->v[f];
		cur.v[RM_MEMORY] = rss;
		cur.v[RM_VIRTUAL_MEMORY] = vm;
		cur.v[RM_MAX_CONCURRENT_PROCESSES] = t.nprocs;
		if (rmsummary_exceeds(&cur, &a->limits, &which)) {
			for (int f = 0; f < RM_N_FIELDS; f++)
				if (which & (UINT64_C(1) << f))
					s->limits_exceeded[f] = a->limits.v[f];
			a->killing = 1;
			a->killed_by_limit = 1;
			debug(D_RMON, "process %d exceeded its limits: killing its tree",
			      (int)a->root);
			kill_tree(a, SIGKILL);
		}
		rmsummary_clear(&cur);
	}
	if (tree_gone(a))
		finish(a);
}

static void on_timer(uv_timer_t *t)
{
	sample(t->data);
}

static void on_wall_time(uv_timer_t *t)
{
	struct rmon_attach *a = t->data;
	if (a->killing || a->finished)
		return;
	a->killing = 1;
	a->killed_by_limit = 1;
	a->s.limits_exceeded[RM_WALL_TIME] = a->limits.v[RM_WALL_TIME];
	debug(D_RMON, "process %d exceeded its wall-time limit: killing its tree", (int)a->root);
	kill_tree(a, SIGKILL);
	sample(a);
}

struct rmon_attach *rmon_attach_start(uv_loop_t *loop, const struct rmon_attach_spec *spec,
                                      char *err, size_t errlen)
{
	pid_t pid = spec->pid;
	unsigned long long start_ticks = 0;
	char st = proc_state(pid, &start_ticks);
	if (!st || st == 'Z') {
		snprintf(err, errlen, "--pid %d: no such process", (int)pid);
		return NULL;
	}
	struct rmon_attach *a = xcalloc(1, sizeof *a);
	a->root = pid;
	rmsummary_init(&a->limits);
	for (int f = 0; f < RM_N_FIELDS; f++)
		if (spec->limits->v[f] >= 0)
			a->limits.v[f] = spec->limits->v[f];
	a->enforce = spec->enforce;
	a->series = spec->time_series;
	a->measure_dirs = spec->measure_dirs;
	a->done = spec->done;
	a->done_arg = spec->done_arg;
	rmsummary_init(&a->s);
	a->proc = rmon_proc_create(pid, RMON_PROC_DESCENDANTS, spec->report_files);
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		hz = 100;
	int64_t now = time_now_us(), mono = time_monotonic_us();
	a->start_us = boot_time_us() + (int64_t)(start_ticks * 1000000ULL / (unsigned long long)hz);
	if (a->start_us <= 0 || a->start_us > now)
		a->start_us = now;
	a->start_mono = mono - (now - a->start_us);
	a->s.v[RM_START] = (double)a->start_us;
	a->s.v[RM_MACHINE_CPUS] = (double)rmon_machine_cpus();
	a->last_t = -1;
	char cmdpath[64];
	snprintf(cmdpath, sizeof cmdpath, "/proc/%d/cmdline", (int)pid);
	FILE *f = fopen(cmdpath, "r");
	if (f) {
		char buf[4096];
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		while (n > 0 && !buf[n - 1])
			n--;
		for (size_t i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[n] = 0;
		a->s.command = xstrdup(buf);
	}
	uv_timer_init(loop, &a->timer);
	a->timer.data = a;
	uint64_t ms = (uint64_t)(spec->interval_s * 1000);
	uv_timer_start(&a->timer, on_timer, 0, ms ? ms : 1);
	uv_timer_init(loop, &a->wall_timer);
	a->wall_timer.data = a;
	if (a->enforce && a->limits.v[RM_WALL_TIME] >= 0) {
		double left = a->limits.v[RM_WALL_TIME] - (double)(now - a->start_us) / 1e6;
		uv_timer_start(&a->wall_timer, on_wall_time, left > 0 ? (uint64_t)(left * 1000) : 0,
		               0);
	}
	debug(D_RMON, "attached to pid %d (%s), sampling every %.3f s", (int)pid,
	      a->s.command ? a->s.command : "?", spec->interval_s);
	return a;
}

void rmon_attach_signal(struct rmon_attach *a, int signum)
{
	a->killing = 1;
	a->killed_by_signal = signum;
	kill_tree(a, signum);
}

void rmon_attach_kill(struct rmon_attach *a)
{
	kill_tree(a, SIGKILL);
	sample(a);
}

void rmon_attach_close(struct rmon_attach *a)
{
	uv_close((uv_handle_t *)&a->timer, NULL);
	uv_close((uv_handle_t *)&a->wall_timer, NULL);
}

const char *const *rmon_attach_files(struct rmon_attach *a)
{
	return rmon_proc_files(a->proc);
}

void rmon_attach_delete(struct rmon_attach *a)
{
	if (!a)
		return;
	rmon_proc_delete(a->proc);
	rmsummary_clear(&a->s);
	rmsummary_clear(&a->limits);
	free(a);
}
