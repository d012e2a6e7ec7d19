/* resource_monitor_main.c: the resource_monitor program. It runs one command (or attaches to
 * a running process with --pid), measures its whole process tree through librmonitor, enforces
 * the limits it is given, and writes a JSON summary (and optionally a time series and the list
 * of opened files) when the command ends. See doc/resource-monitor.md. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "atomic_file.h"
#include "buffer.h"
#include "cli.h"
#include "config.h"
#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "rmon_proc.h"
#include "rmonitor.h"
#include "rmsummary.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

/* Exit statuses of the program (doc/resource-monitor.md). */
enum {
	EXIT_OK = 0,
	EXIT_COMMAND_FAILED = 1,
	EXIT_LIMITS = 2,
	EXIT_WALL_TIME = 3,
	EXIT_MONITOR_ERROR = 4,
};

/* Most bytes read from a --limits-file. */
#define LIMITS_FILE_MAX (1 << 20)
/* Seconds between the signal forwarded to the tree and the SIGKILL that follows. */
#define KILL_GRACE_MS 1000

enum {
	OPT_MEASURE_ONLY = 1000,
	OPT_WITH_TIME_SERIES,
	OPT_WITH_INOTIFY,
	OPT_MEASURE_DIR,
	OPT_NO_PPRINT,
	OPT_COMPACT,
	OPT_PID,
	OPT_CGROUPS,
	OPT_CPUSET,
	OPT_CATEGORY,
	OPT_TASK_ID,
	OPT_SH,
};

/* Everything the program keeps while the task runs. */
struct app {
	uv_loop_t *loop;
	struct rmonitor *m;
	uv_signal_t sig[3];
	uv_timer_t kill_timer;
	int got_signal; /* the signal the monitor received, 0 if none */
	int done;
	struct rmsummary result;
	/* --pid mode */
	struct attach *attach;
};

static struct app app;

/* Prints a monitor error and exits with status 4 (only called from main's code paths). */
static void __attribute__((format(printf, 1, 2), noreturn)) die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "resource_monitor: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(EXIT_MONITOR_ERROR);
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "Usage: %s [options] -- COMMAND [ARGS...]\n"
	        "       %s [options] --sh 'SHELL COMMAND'\n"
	        "       %s [options] --pid PID\n"
	        "Runs COMMAND, follows every process it creates, enforces limits and writes a "
	        "JSON summary.\n\n"
	        "  -L, --limits=TEXT          limits, e.g. \"memory: 1000, cores: 2, wall_time: "
	        "60\"\n"
	        "  -l, --limits-file=FILE     read limits from FILE (same syntax, or JSON)\n"
	        "      --measure-only         measure, but do not enforce limits\n"
	        "  -i, --interval=SECONDS     sampling interval (default 1)\n"
	        "  -O, --output=TEMPLATE      write TEMPLATE.summary (and .series, .files); "
	        "default resource-pid-PID\n"
	        "      --with-time-series     write one row per sample to TEMPLATE.series\n"
	        "      --with-inotify         write the files the tree opened to TEMPLATE.files\n"
	        "      --with-opened-files    same as --with-inotify\n"
	        "  -V, --verbatim-to-summary='KEY: VALUE'  add a field to the summary "
	        "(repeatable)\n"
	        "      --measure-dir=DIR      disk is the size of DIR (repeatable; default the "
	        "working directory)\n"
	        "      --no-pprint            write the summary on one line\n"
	        "      --compact              numbers without units in the summary\n"
	        "      --pid=PID              attach to a running process instead of starting one\n"
	        "      --cgroups=MODE         auto (default), off, required\n"
	        "      --cpuset=LIST          run the command on these CPUs (e.g. 0-1; cgroups "
	        "only)\n"
	        "      --category=NAME        category written in the summary\n"
	        "      --task-id=ID           task id written in the summary\n"
	        "      --sh=COMMAND           run COMMAND with /bin/sh -c\n"
	        "  -d, --debug=SUBSYS         debug output: %s\n"
	        "  -o, --debug-file=FILE      write debug output to FILE\n"
	        "  -v, --version              show the version\n"
	        "  -h, --help                 show this help\n\n"
	        "Exit status: 0 the command succeeded; 1 it failed; 2 a limit was exceeded; 3 "
	        "the wall-time limit was exceeded; 4 monitor error.\n",
	        prog, prog, prog, debug_flags_help());
}

/* ------------------------------------------------------------------------------------------ */
/* Options */

struct options {
	struct rmsummary limits;
	int have_limits;
	int measure_only;
	double interval;
	const char *template;
	int time_series;
	int report_files;
	char **extra_keys;
	char **extra_values;
	size_t n_extra;
	const char **measure_dirs;
	size_t n_measure_dirs;
	int pprint;
	int compact;
	pid_t attach_pid;
	enum rmonitor_cgroups cgroups;
	const char *cpuset;
	const char *category;
	const char *task_id;
	const char *sh;
};

/* Adds every limit set in SRC to DST (later options override earlier ones). */
static void merge_limits(struct rmsummary *dst, const struct rmsummary *src)
{
	for (int f = 0; f < RM_N_FIELDS; f++)
		if (src->v[f] >= 0)
			dst->v[f] = src->v[f];
}

static void add_limits_text(struct options *o, const char *what, const char *text)
{
	struct rmsummary l;
	rmsummary_init(&l);
	char err[512] = "";
	if (rmsummary_parse_limits(text, &l, err, sizeof err) < 0)
		die("%s: invalid limits: %s", what, err[0] ? err : text);
	merge_limits(&o->limits, &l);
	o->have_limits = 1;
	rmsummary_clear(&l);
}

static void add_limits_file(struct options *o, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die("-l %s: %s", path, strerror(errno));
	char *buf = xmalloc(LIMITS_FILE_MAX + 1);
	size_t n = fread(buf, 1, LIMITS_FILE_MAX + 1, f);
	int rerr = ferror(f);
	fclose(f);
	if (rerr)
		die("-l %s: read error", path);
	if (n > LIMITS_FILE_MAX)
		die("-l %s: larger than %d bytes", path, LIMITS_FILE_MAX);
	buf[n] = 0;
	char *what = xasprintf("-l %s", path);
	char *t = str_trim(buf);
	if (t[0] != '{') {
		/* One limit per line is accepted too: lines become comma-separated items. */
		for (char *p = t; *p; p++)
			if (*p == '\n')
				*p = ',';
		size_t len = strlen(t);
		while (len > 0 && (t[len - 1] == ',' || t[len - 1] == ' ' || t[len - 1] == '\r'))
			t[--len] = 0;
	}
	add_limits_text(o, what, t);
	free(what);
	free(buf);
}

/* -V 'key: value': the value is kept as JSON when it parses as JSON, else as a string. */
static void add_verbatim(struct options *o, const char *arg)
{
	const char *colon = strchr(arg, ':');
	if (!colon)
		die("-V '%s': expected 'KEY: VALUE'", arg);
	char *key = xstrndup(arg, (size_t)(colon - arg));
	str_trim(key);
	char *value = xstrdup(colon + 1);
	str_trim(value);
	if (!key[0])
		die("-V '%s': empty key", arg);
	for (const char *p = key; *p; p++)
		if (!(*p == '_' || *p == '-' || *p == '.' || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			die("-V '%s': key '%s' may hold only letters, digits, '_', '-' and '.'",
			    arg, key);
	static const char *const reserved[] = {
	    "command", "host",       "category",        "task_id",   "exit_type", "exit_status",
	    "signal",  "peak_times", "limits_exceeded", "snapshots", NULL};
	for (int i = 0; reserved[i]; i++)
		if (!strcmp(key, reserved[i]))
			die("-V '%s': '%s' is a field of the summary itself", arg, key);
	if (rmsummary_field_lookup(key) >= 0)
		die("-V '%s': '%s' is a measured field of the summary", arg, key);
	for (size_t i = 0; i < o->n_extra; i++)
		if (!strcmp(o->extra_keys[i], key))
			die("-V '%s': key '%s' given twice", arg, key);

	json_error_t jerr;
	json_t *j = json_loads(value, JSON_DECODE_ANY, &jerr);
	if (!j)
		j = json_string(value);
	if (!j)
		die("-V '%s': the value is not valid UTF-8", arg);
	char *text = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
	json_decref(j);
	if (!text)
		die("-V '%s': cannot encode the value", arg);
	o->extra_keys = xrealloc(o->extra_keys, (o->n_extra + 1) * sizeof *o->extra_keys);
	o->extra_values = xrealloc(o->extra_values, (o->n_extra + 1) * sizeof *o->extra_values);
	o->extra_keys[o->n_extra] = key;
	o->extra_values[o->n_extra] = xstrdup(text);
	o->n_extra++;
	free(text);
	free(value);
}

static void check_cpuset(const char *s)
{
	if (!*s)
		die("--cpuset: empty list");
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || *p == ',' || *p == '-'))
			die("--cpuset '%s': expected a list such as 0-1,3", s);
}

/* Checks that the summary can be written next to TEMPLATE before anything runs. */
static void check_output(const char *template)
{
	char *dir = path_dirname(template);
	if (access(dir, W_OK | X_OK) < 0)
		die("-O %s: cannot write in directory %s: %s", template, dir, strerror(errno));
	struct stat st;
	char *summary = xasprintf("%s.summary", template);
	if (stat(summary, &st) == 0 && S_ISDIR(st.st_mode))
		die("-O %s: %s is a directory", template, summary);
	free(summary);
	free(dir);
}

/* ------------------------------------------------------------------------------------------ */
/* --pid: librmonitor starts its own commands only, so attaching to a process that already runs
 * is done here, with the /proc tracker of the library (rmon_proc.h) in "descendants" mode:
 * every interval the process and its descendants are sampled (memory is the sum of their
 * resident sizes, CPU time includes processes that have exited). No cgroup can be used, since
 * the process already runs. Limits are enforced by SIGKILL to the tree at the next sample;
 * wall time by a timer. */

struct attach {
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

static void attach_kill_tree(struct attach *a, int sig)
{
	pid_t *pids = NULL;
	size_t n = rmon_proc_live(a->proc, &pids);
	for (size_t i = 0; i < n; i++)
		kill(pids[i], sig);
	free(pids);
	kill(a->root, sig);
}

/* 1 when no process of the tree is left (zombies waiting for their parent do not count). */
static int attach_tree_gone(struct attach *a)
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

static void attach_peak(struct attach *a, int f, double v, double wall)
{
	if (v > a->s.v[f]) {
		a->s.v[f] = v;
		a->s.peak_times[f] = wall;
	}
}

static void on_done(struct rmonitor *m, const struct rmsummary *s, void *arg);

static void attach_finish(struct attach *a)
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
	on_done(NULL, s, NULL);
}

/* One sample: the tree's use, the peaks, a time-series row, the limits. */
static void attach_sample(struct attach *a)
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
		attach_peak(a, RM_CORES, a->cores_now, wall);
	}
	if (a->last_t < 0 || wall - a->last_t >= 0.05) {
		a->last_t = wall;
		a->last_cpu = t.cpu_s;
	}
	attach_peak(a, RM_MEMORY, rss, wall);
	attach_peak(a, RM_VIRTUAL_MEMORY, vm, wall);
	attach_peak(a, RM_SWAP_MEMORY, (double)t.swap / 1048576.0, wall);
	attach_peak(a, RM_BYTES_READ, (double)t.read_bytes / 1048576.0, wall);
	attach_peak(a, RM_BYTES_WRITTEN, (double)t.write_bytes / 1048576.0, wall);
	attach_peak(a, RM_CONTEXT_SWITCHES, (double)t.ctx_switches, wall);
	attach_peak(a, RM_MAX_CONCURRENT_PROCESSES, (double)t.max_concurrent, wall);
	attach_peak(a, RM_TOTAL_PROCESSES, (double)t.total_processes, wall);
	attach_peak(a, RM_TOTAL_FILES, (double)rmon_proc_nfiles(a->proc), wall);
	double disk = 0;
	if (a->measure_dirs) {
		int64_t bytes = rmon_disk_usage(a->measure_dirs);
		disk = bytes > 0 ? (double)bytes / 1048576.0 : 0;
		attach_peak(a, RM_DISK, disk, wall);
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
			attach_kill_tree(a, SIGKILL);
		}
		rmsummary_clear(&cur);
	}
	if (attach_tree_gone(a))
		attach_finish(a);
}

static void attach_timer_cb(uv_timer_t *t)
{
	attach_sample(t->data);
}

static void attach_wall_cb(uv_timer_t *t)
{
	struct attach *a = t->data;
	if (a->killing || a->finished)
		return;
	a->killing = 1;
	a->killed_by_limit = 1;
	a->s.limits_exceeded[RM_WALL_TIME] = a->limits.v[RM_WALL_TIME];
	debug(D_RMON, "process %d exceeded its wall-time limit: killing its tree", (int)a->root);
	attach_kill_tree(a, SIGKILL);
	attach_sample(a);
}

static struct attach *attach_start(uv_loop_t *loop, pid_t pid, const struct options *o,
                                   FILE *series, const char *const *measure_dirs)
{
	unsigned long long start_ticks = 0;
	char st = proc_state(pid, &start_ticks);
	if (!st || st == 'Z')
		die("--pid %d: no such process", (int)pid);
	struct attach *a = xcalloc(1, sizeof *a);
	a->root = pid;
	rmsummary_init(&a->limits);
	merge_limits(&a->limits, &o->limits);
	a->enforce = o->have_limits && !o->measure_only;
	a->series = series;
	a->measure_dirs = measure_dirs;
	rmsummary_init(&a->s);
	a->proc = rmon_proc_create(pid, RMON_PROC_DESCENDANTS, o->report_files);
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
	uint64_t ms = (uint64_t)(o->interval * 1000);
	uv_timer_start(&a->timer, attach_timer_cb, 0, ms ? ms : 1);
	uv_timer_init(loop, &a->wall_timer);
	a->wall_timer.data = a;
	if (a->enforce && a->limits.v[RM_WALL_TIME] >= 0) {
		double left = a->limits.v[RM_WALL_TIME] - (double)(now - a->start_us) / 1e6;
		uv_timer_start(&a->wall_timer, attach_wall_cb,
		               left > 0 ? (uint64_t)(left * 1000) : 0, 0);
	}
	debug(D_RMON, "attached to pid %d (%s), sampling every %.3f s", (int)pid,
	      a->s.command ? a->s.command : "?", o->interval);
	return a;
}

static void attach_delete(struct attach *a)
{
	if (!a)
		return;
	rmon_proc_delete(a->proc);
	rmsummary_clear(&a->s);
	rmsummary_clear(&a->limits);
	free(a);
}

/* ------------------------------------------------------------------------------------------ */
/* Running */

static void close_handles(void)
{
	for (int i = 0; i < 3; i++)
		if (!uv_is_closing((uv_handle_t *)&app.sig[i]))
			uv_close((uv_handle_t *)&app.sig[i], NULL);
	if (!uv_is_closing((uv_handle_t *)&app.kill_timer))
		uv_close((uv_handle_t *)&app.kill_timer, NULL);
	if (app.attach) {
		uv_close((uv_handle_t *)&app.attach->timer, NULL);
		uv_close((uv_handle_t *)&app.attach->wall_timer, NULL);
	}
}

static void on_done(struct rmonitor *m, const struct rmsummary *s, void *arg)
{
	(void)m;
	(void)arg;
	rmsummary_copy(&app.result, s);
	app.done = 1;
	close_handles();
}

static void kill_timer_cb(uv_timer_t *t)
{
	(void)t;
	debug(D_RMON, "grace period over: SIGKILL to the task");
	if (app.m)
		rmonitor_kill(app.m, SIGKILL);
	if (app.attach) {
		attach_kill_tree(app.attach, SIGKILL);
		attach_sample(app.attach);
	}
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)h;
	if (app.done)
		return;
	if (app.got_signal) {
		/* A second signal: no more grace. */
		kill_timer_cb(&app.kill_timer);
		return;
	}
	app.got_signal = signum;
	notice("received signal %d: stopping the task", signum);
	if (app.m)
		rmonitor_kill(app.m, signum);
	if (app.attach) {
		app.attach->killing = 1;
		app.attach->killed_by_signal = signum;
		attach_kill_tree(app.attach, signum);
	}
	uv_timer_start(&app.kill_timer, kill_timer_cb, KILL_GRACE_MS, 0);
}

/* Writes the list of opened files, one per line. */
static int write_files(const char *path, const char *const *files)
{
	struct buffer b;
	buffer_init(&b, 0);
	for (size_t i = 0; files && files[i]; i++) {
		buffer_putstring(&b, files[i]);
		buffer_putc(&b, '\n');
	}
	int rc = atomic_file_write(path, buffer_len(&b) ? buffer_tostring(&b) : "", buffer_len(&b),
	                           0644);
	buffer_free(&b);
	return rc;
}

/* W as one shell word: unchanged when it needs no quoting. */
static char *shell_word(const char *w)
{
	if (!*w)
		return xstrdup("''");
	for (const char *p = w; *p; p++)
		if (!strchr(
		        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%",
		        *p))
			return str_escape_shell(w);
	return xstrdup(w);
}

static char *hostname(void)
{
	char buf[256];
	if (gethostname(buf, sizeof buf) < 0)
		return xstrdup("unknown");
	buf[sizeof buf - 1] = 0;
	return xstrdup(buf);
}

/* The monitor's exit status for a finished task (doc/resource-monitor.md). */
static int exit_code(const struct rmsummary *s)
{
	switch (s->exit_type) {
	case RM_EXIT_NORMAL: return s->exit_status == 0 ? EXIT_OK : EXIT_COMMAND_FAILED;
	case RM_EXIT_SIGNAL: return EXIT_COMMAND_FAILED;
	case RM_EXIT_LIMITS:
		for (int f = 0; f < RM_N_FIELDS; f++)
			if (f != RM_WALL_TIME && s->limits_exceeded[f] >= 0)
				return EXIT_LIMITS;
		return s->limits_exceeded[RM_WALL_TIME] >= 0 ? EXIT_WALL_TIME : EXIT_LIMITS;
	case RM_EXIT_NONE: return EXIT_OK;
	}
	return EXIT_COMMAND_FAILED;
}

int main(int argc, char **argv)
{
	struct options o;
	memset(&o, 0, sizeof o);
	rmsummary_init(&o.limits);
	o.interval = 1;
	o.pprint = 1;
	o.cgroups = RMONITOR_CGROUPS_AUTO;

	debug_config_program(argv[0]);
	signal(SIGPIPE, SIG_IGN);

	static const struct option longopts[] = {
	    {"limits", required_argument, 0, 'L'},
	    {"limits-file", required_argument, 0, 'l'},
	    {"measure-only", no_argument, 0, OPT_MEASURE_ONLY},
	    {"interval", required_argument, 0, 'i'},
	    {"output", required_argument, 0, 'O'},
	    {"with-time-series", no_argument, 0, OPT_WITH_TIME_SERIES},
	    {"with-inotify", no_argument, 0, OPT_WITH_INOTIFY},
	    {"with-opened-files", no_argument, 0, OPT_WITH_INOTIFY},
	    {"verbatim-to-summary", required_argument, 0, 'V'},
	    {"measure-dir", required_argument, 0, OPT_MEASURE_DIR},
	    {"no-pprint", no_argument, 0, OPT_NO_PPRINT},
	    {"compact", no_argument, 0, OPT_COMPACT},
	    {"pid", required_argument, 0, OPT_PID},
	    {"cgroups", required_argument, 0, OPT_CGROUPS},
	    {"cpuset", required_argument, 0, OPT_CPUSET},
	    {"category", required_argument, 0, OPT_CATEGORY},
	    {"task-id", required_argument, 0, OPT_TASK_ID},
	    {"sh", required_argument, 0, OPT_SH},
	    {"debug", required_argument, 0, 'd'},
	    {"debug-file", required_argument, 0, 'o'},
	    {"version", no_argument, 0, 'v'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	/* "+": stop at the first non-option, so the command's own options are left alone. */
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+:L:l:i:O:V:d:o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'L': add_limits_text(&o, "-L", optarg); break;
		case 'l': add_limits_file(&o, optarg); break;
		case OPT_MEASURE_ONLY: o.measure_only = 1; break;
		case 'i':
			if (str_to_double(optarg, &o.interval) < 0 || o.interval < 0.01 ||
			    o.interval > 86400)
				die("-i %s: expected a number of seconds between 0.01 and 86400",
				    optarg);
			break;
		case 'O':
			if (!*optarg)
				die("-O: empty output template");
			o.template = optarg;
			break;
		case OPT_WITH_TIME_SERIES: o.time_series = 1; break;
		case OPT_WITH_INOTIFY: o.report_files = 1; break;
		case 'V': add_verbatim(&o, optarg); break;
		case OPT_MEASURE_DIR: {
			struct stat st;
			if (stat(optarg, &st) < 0)
				die("--measure-dir %s: %s", optarg, strerror(errno));
			if (!S_ISDIR(st.st_mode))
				die("--measure-dir %s: not a directory", optarg);
			o.measure_dirs = xrealloc(o.measure_dirs,
			                          (o.n_measure_dirs + 2) * sizeof *o.measure_dirs);
			o.measure_dirs[o.n_measure_dirs++] = optarg;
			o.measure_dirs[o.n_measure_dirs] = NULL;
			break;
		}
		case OPT_NO_PPRINT: o.pprint = 0; break;
		case OPT_COMPACT: o.compact = 1; break;
		case OPT_PID: {
			int64_t v;
			if (str_to_int64(optarg, &v) < 0 || v <= 0 || v > INT_MAX)
				die("--pid %s: expected a process id", optarg);
			o.attach_pid = (pid_t)v;
			break;
		}
		case OPT_CGROUPS:
			if (!strcmp(optarg, "auto"))
				o.cgroups = RMONITOR_CGROUPS_AUTO;
			else if (!strcmp(optarg, "off"))
				o.cgroups = RMONITOR_CGROUPS_OFF;
			else if (!strcmp(optarg, "required"))
				o.cgroups = RMONITOR_CGROUPS_REQUIRED;
			else
				die("--cgroups=%s: expected auto, off or required", optarg);
			break;
		case OPT_CPUSET:
			check_cpuset(optarg);
			o.cpuset = optarg;
			break;
		case OPT_CATEGORY: o.category = optarg; break;
		case OPT_TASK_ID: o.task_id = optarg; break;
		case OPT_SH: o.sh = optarg; break;
		default: {
			char err[256];
			int r =
			    cli_common_option(c, argv, "resource_monitor", usage, err, sizeof err);
			if (r == CLI_EXIT)
				return 0;
			if (r == CLI_FAIL)
				die("%s", err);
			break;
		}
		}
	}

	/* What to run. */
	const char **cmd = NULL;
	int n_args = argc - optind;
	if (o.attach_pid) {
		if (o.sh || n_args > 0)
			die("--pid: give either a process to attach to or a command, not both");
		if (o.cpuset)
			die("--cpuset: cannot be used with --pid (the process already runs)");
		if (o.cgroups == RMONITOR_CGROUPS_REQUIRED)
			die("--cgroups=required: cannot be used with --pid (an attached process is "
			    "measured through /proc only)");
	} else if (o.sh) {
		if (n_args > 0)
			die("--sh: give the command either with --sh or after --, not both");
		cmd = xcalloc(4, sizeof *cmd);
		cmd[0] = "/bin/sh";
		cmd[1] = "-c";
		cmd[2] = o.sh;
	} else {
		if (n_args <= 0)
			die("no command given (usage: resource_monitor [options] -- CMD ARGS; see "
			    "--help)");
		cmd = xcalloc((size_t)n_args + 1, sizeof *cmd);
		for (int i = 0; i < n_args; i++)
			cmd[i] = argv[optind + i];
	}
	if (o.measure_only && o.have_limits)
		debug(D_RMON, "--measure-only: limits are reported but not enforced");

	/* Output files. */
	char *template =
	    o.template ? xstrdup(o.template) : xasprintf("resource-pid-%d", (int)getpid());
	check_output(template);
	char *summary_path = xasprintf("%s.summary", template);
	char *series_path = xasprintf("%s.series", template);
	char *files_path = xasprintf("%s.files", template);
	FILE *series = NULL;
	if (o.time_series) {
		series = fopen(series_path, "w");
		if (!series)
			die("--with-time-series: cannot create %s: %s", series_path,
			    strerror(errno));
		setvbuf(series, NULL, _IOLBF, 0);
	}

	app.loop = uv_default_loop();
	rmsummary_init(&app.result);
	static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++) {
		uv_signal_init(app.loop, &app.sig[i]);
		uv_signal_start(&app.sig[i], on_signal, sigs[i]);
	}
	uv_timer_init(app.loop, &app.kill_timer);

	if (o.attach_pid) {
		if (series)
			fprintf(series,
			        "# wall_clock(us) cpu_time(s) cores memory(MB) "
			        "virtual_memory(MB) swap(MB) bytes_read(MB) bytes_written(MB) "
			        "processes disk(MB)\n");
		app.attach = attach_start(app.loop, o.attach_pid, &o, series,
		                          (const char *const *)o.measure_dirs);
	} else {
		if (o.cgroups != RMONITOR_CGROUPS_OFF) {
			/* Groups left by monitors that were killed with SIGKILL. */
			int removed = rmonitor_cleanup_stale(NULL);
			if (removed > 0)
				debug(D_RMON, "removed %d stale cgroups", removed);
		}
		struct rmonitor_spec spec;
		rmonitor_spec_init(&spec);
		spec.argv = cmd;
		rmsummary_copy(&spec.limits, &o.limits);
		spec.measure_only = o.measure_only;
		spec.cpuset = o.cpuset;
		spec.interval_s = o.interval;
		spec.measure_dirs = (const char *const *)o.measure_dirs;
		spec.time_series = series;
		spec.report_files = o.report_files;
		spec.cgroups = o.cgroups;
		int err = 0;
		app.m = rmonitor_start(app.loop, &spec, on_done, NULL, &err);
		rmsummary_clear(&spec.limits);
		if (!app.m) {
			if (err == HTC_EUNSUP && o.cgroups == RMONITOR_CGROUPS_REQUIRED)
				die("--cgroups=required: cgroups cannot be used here");
			die("cannot start '%s': %s", cmd[0], htc_strerror(err));
		}
		debug(D_RMON, "started pid %d (%s)", (int)rmonitor_pid(app.m),
		      rmonitor_uses_cgroups(app.m) ? "cgroup" : "/proc sampling");
	}

	uv_run(app.loop, UV_RUN_DEFAULT);

	/* The task has ended: complete and write the summary. */
	struct rmsummary *s = &app.result;
	if (!app.done)
		die("internal error: the event loop stopped before the task ended");
	if (app.got_signal && s->exit_type != RM_EXIT_LIMITS) {
		s->exit_type = RM_EXIT_SIGNAL;
		s->signal = app.got_signal;
	}
	if (!s->host)
		s->host = hostname();
	if (o.sh) {
		/* The shell text is what the user wrote: report it rather than sh -c '...'. */
		free(s->command);
		s->command = xstrdup(o.sh);
	} else if (!s->command && cmd) {
		char **q = xcalloc((size_t)n_args + 1, sizeof *q);
		for (int i = 0; i < n_args; i++)
			q[i] = shell_word(cmd[i]);
		s->command = str_join(q, " ");
		str_free_argv(q);
	}
	if (o.category) {
		free(s->category);
		s->category = xstrdup(o.category);
	}
	if (o.task_id) {
		free(s->task_id);
		s->task_id = xstrdup(o.task_id);
	}
	for (size_t i = 0; i < o.n_extra; i++) {
		s->extra_keys = xrealloc(s->extra_keys, (s->n_extra + 1) * sizeof *s->extra_keys);
		s->extra_values =
		    xrealloc(s->extra_values, (s->n_extra + 1) * sizeof *s->extra_values);
		s->extra_keys[s->n_extra] = xstrdup(o.extra_keys[i]);
		s->extra_values[s->n_extra] = xstrdup(o.extra_values[i]);
		s->n_extra++;
	}
	const char *const *files = NULL;
	if (o.report_files)
		files = app.m ? rmonitor_files(app.m) : rmon_proc_files(app.attach->proc);
	int status = exit_code(s);
	char *json = rmsummary_to_json(s, o.pprint, o.compact);
	size_t len = strlen(json);
	char *text = xasprintf("%s%s", json, (len && json[len - 1] == '\n') ? "" : "\n");
	int rc = atomic_file_write(summary_path, text, strlen(text), 0644);
	if (rc < 0) {
		fprintf(stderr, "resource_monitor: cannot write %s: %s\n", summary_path,
		        htc_strerror(rc));
		status = EXIT_MONITOR_ERROR;
	}
	if (o.report_files) {
		rc = write_files(files_path, files);
		if (rc < 0) {
			fprintf(stderr, "resource_monitor: cannot write %s: %s\n", files_path,
			        htc_strerror(rc));
			status = EXIT_MONITOR_ERROR;
		}
	}
	if (series && fclose(series) != 0) {
		fprintf(stderr, "resource_monitor: cannot write %s: %s\n", series_path,
		        strerror(errno));
		status = EXIT_MONITOR_ERROR;
	}
	debug(D_RMON, "summary written to %s; exit status %d", summary_path, status);
	if (app.got_signal && status != EXIT_MONITOR_ERROR)
		status = 128 + app.got_signal;

	free(text);
	free(json);
	rmonitor_delete(app.m);
	uv_run(app.loop, UV_RUN_NOWAIT);
	attach_delete(app.attach);
	uv_loop_close(app.loop);
	rmsummary_clear(s);
	rmsummary_clear(&o.limits);
	for (size_t i = 0; i < o.n_extra; i++) {
		free(o.extra_keys[i]);
		free(o.extra_values[i]);
	}
	free(o.extra_keys);
	free(o.extra_values);
	free(o.measure_dirs);
	free(cmd);
	free(template);
	free(summary_path);
	free(series_path);
	free(files_path);
	debug_close();
	return status;
}
