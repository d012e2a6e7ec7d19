/* helper_burn.c: a test program that keeps CORES processors busy for SECONDS of wall time, or
 * (with a third argument `cpu`) until each of its CORES processes has used SECONDS of CPU time.
 * Tests use the CPU form to check cpu_time on a busy machine, where a wall-time burn gets an
 * unknown share of the processors; benchmarks use the wall form. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helper_common.h"
#include "banned.h"

#define USAGE "helper_burn CORES SECONDS [cpu]"

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void)
{
	struct timespec ts;
	clock_gettime(clock_id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Spins until the clock reaches DEADLINE; with the CPU clock, the deadline is relative to this
 * process's own CPU time (a forked child starts from zero). */
static void burn(double deadline)
{
	volatile double x = 1.0;
	if (clock_id == CLOCK_PROCESS_CPUTIME_ID)
		deadline += now();
	while (now() < deadline) {
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 0.0000001;
	}
}

int main(int argc, char **argv)
{
	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "cpu")))
		helper_usage(USAGE, "wrong number of arguments");
	if (argc == 4)
		clock_id = CLOCK_PROCESS_CPUTIME_ID;
	long long cores;
	double seconds;
	if (helper_parse_int(argv[1], 1, 1024, &cores) < 0)
		helper_usage(USAGE, "CORES must be an integer between 1 and 1024");
	if (helper_parse_seconds(argv[2], 1e6, &seconds) < 0)
		helper_usage(USAGE, "SECONDS must be a number between 0 and 1000000");
	double deadline = clock_id == CLOCK_PROCESS_CPUTIME_ID ? seconds : now() + seconds;
	for (long long i = 1; i < cores; i++) {
		pid_t pid = helper_fork("helper_burn");
		if (pid < 0)
			return 1;
		if (pid == 0) {
			burn(deadline);
			_exit(0);
		}
	}
	burn(deadline);
	return helper_wait_all();
}
