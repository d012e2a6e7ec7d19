/* helper_rmon_loop.c: measures the resource monitor's own cost per task. It runs N tasks
 * (`true`, or the command given) one after another through rmonitor_start on one libuv loop and
 * prints the monitor's CPU time per task (getrusage RUSAGE_SELF, user + system) and the wall
 * time per task, in microseconds; used to compare builds and to count system calls. Each
 * task runs in a fresh empty directory, which is also the measured one (as in a worker). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "helper_common.h"
#include "rmonitor.h"
#include "banned.h"

#define USAGE                                                                                      \
	"helper_rmon_loop [--cgroups on|off|required] [--worker] N [COMMAND [ARGS...]]\n"          \
	"  --worker: a spec like the worker's (new session, measured directory, memory,\n"         \
	"            disk, cores and wall-time limits)"

struct loop_state {
	uv_loop_t *loop;
	struct rmonitor_spec spec;
	long long n, started, done, failed, nocgroup;
	int null_fd;
};

static void start_next(struct loop_state *s);

static void on_done(struct rmonitor *m, const struct rmsummary *sum, void *arg)
{
	struct loop_state *s = arg;
	if (sum->exit_type != RM_EXIT_NORMAL || sum->exit_status != 0)
		s->failed++;
	if (!rmonitor_uses_cgroups(m))
		s->nocgroup++;
	s->done++;
	rmonitor_delete(m);
	if (s->started < s->n)
		start_next(s);
}

static void start_next(struct loop_state *s)
{
	int err = 0;
	s->started++;
	struct rmonitor *m = rmonitor_start(s->loop, &s->spec, on_done, s, &err);
	if (!m) {
		fprintf(stderr, "helper_rmon_loop: task %lld cannot start: %s\n", s->started,
		        strerror(err < 0 ? -err : EIO));
		s->failed++;
		s->done++;
		if (s->started < s->n)
			start_next(s);
	}
}

static double tv_us(struct timeval tv)
{
	return (double)tv.tv_sec * 1e6 + (double)tv.tv_usec;
}

static double mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	enum rmonitor_cgroups cg = RMONITOR_CGROUPS_AUTO;
	const char *cg_name = "on";
	int worker = 0;
	int i = 1;
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strcmp(argv[i], "--worker") == 0) {
			worker = 1;
		} else if (strcmp(argv[i], "--cgroups") == 0 && i + 1 < argc) {
			cg_name = argv[++i];
			if (strcmp(cg_name, "on") == 0 || strcmp(cg_name, "auto") == 0)
				cg = RMONITOR_CGROUPS_AUTO;
			else if (strcmp(cg_name, "off") == 0)
				cg = RMONITOR_CGROUPS_OFF;
			else if (strcmp(cg_name, "required") == 0)
				cg = RMONITOR_CGROUPS_REQUIRED;
			else
				helper_usage(USAGE, "--cgroups takes on, off or required");
		} else {
			helper_usage(USAGE, "unknown option");
		}
	}
	if (i >= argc)
		helper_usage(USAGE, "N is missing");
	long long n;
	if (helper_parse_int(argv[i], 1, 10000000, &n) < 0) {
		fprintf(stderr, "helper_rmon_loop: bad N '%s' (1..10000000)\n", argv[i]);
		helper_usage(USAGE, "bad N");
	}
	i++;
	static const char *const default_cmd[] = {"true", NULL};
	const char *const *cmd = i < argc ? (const char *const *)(argv + i) : default_cmd;

	struct loop_state s;
	memset(&s, 0, sizeof s);
	s.n = n;
	s.loop = uv_default_loop();
	s.null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (s.null_fd < 0) {
		perror("helper_rmon_loop: /dev/null");
		return 1;
	}
	/* The task runs in (and the disk measure walks) a fresh empty directory, as a worker's
	 * sandbox: the current directory could be large and would be walked at every end. */
	char dir[] = "/tmp/helper_rmon_loop.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("helper_rmon_loop: mkdtemp");
		return 1;
	}
	const char *dirs[] = {dir, NULL};
	rmonitor_spec_init(&s.spec);
	s.spec.argv = cmd;
	s.spec.cgroups = cg;
	s.spec.stdin_fd = s.null_fd;
	s.spec.stdout_fd = s.null_fd;
	s.spec.cwd = dir;
	s.spec.measure_dirs = dirs;
	if (worker) {
		s.spec.new_session = 1;
		s.spec.limits.v[RM_MEMORY] = 1024;
		s.spec.limits.v[RM_DISK] = 1024;
		s.spec.limits.v[RM_CORES] = 1;
		s.spec.limits.v[RM_WALL_TIME] = 60;
	}

	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	double t0 = mono_us();
	start_next(&s);
	uv_run(s.loop, UV_RUN_DEFAULT);
	double t1 = mono_us();
	getrusage(RUSAGE_SELF, &r1);

	double user = tv_us(r1.ru_utime) - tv_us(r0.ru_utime);
	double sys = tv_us(r1.ru_stime) - tv_us(r0.ru_stime);
	printf("cgroups=%s worker=%d n=%lld failed=%lld without_cgroup=%lld "
	       "cpu_us_per_task=%.1f (user %.1f sys %.1f) wall_us_per_task=%.1f\n",
	       cg_name, worker, n, s.failed, s.nocgroup, (user + sys) / (double)n, user / (double)n,
	       sys / (double)n, (t1 - t0) / (double)n);
	uv_loop_close(s.loop);
	close(s.null_fd);
	rmdir(dir);
	return s.failed ? 1 : 0;
}
