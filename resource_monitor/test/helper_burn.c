/* helper_burn.c: a test program that keeps CORES processors busy for SECONDS of wall time.
 * It forks CORES processes that spin on arithmetic until the deadline and waits for them;
 * tests use it to check cpu_time, cores and the overhead a monitor adds to CPU-bound work. */
#include <time.h>
#include <unistd.h>

#include "helper_common.h"
#include "banned.h"

#define USAGE "helper_burn CORES SECONDS"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void burn(double deadline)
{
	volatile double x = 1.0;
	while (now() < deadline) {
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 0.0000001;
	}
}

int main(int argc, char **argv)
{
	if (argc != 3)
		helper_usage(USAGE, "wrong number of arguments");
	long long cores;
	double seconds;
	if (helper_parse_int(argv[1], 1, 1024, &cores) < 0)
		helper_usage(USAGE, "CORES must be an integer between 1 and 1024");
	if (helper_parse_seconds(argv[2], 1e6, &seconds) < 0)
		helper_usage(USAGE, "SECONDS must be a number between 0 and 1000000");
	double deadline = now() + seconds;
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
