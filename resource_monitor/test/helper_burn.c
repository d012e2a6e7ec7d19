/* helper_burn.c: a test program that keeps CORES processors busy for SECONDS of wall time.
 * It forks CORES processes that spin on arithmetic until the deadline and waits for them;
 * tests use it to check cpu_time, cores and the overhead a monitor adds to CPU-bound work. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "banned.h"

static void usage(const char *why)
{
	fprintf(stderr, "helper_burn: %s\nusage: helper_burn CORES SECONDS\n", why);
	exit(2);
}

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
		usage("wrong number of arguments");
	char *end;
	errno = 0;
	long cores = strtol(argv[1], &end, 10);
	if (errno || end == argv[1] || *end || cores < 1 || cores > 1024)
		usage("CORES must be an integer between 1 and 1024");
	errno = 0;
	double seconds = strtod(argv[2], &end);
	if (errno || end == argv[2] || *end || !(seconds >= 0) || seconds > 1e6)
		usage("SECONDS must be a number between 0 and 1000000");
	double deadline = now() + seconds;
	for (long i = 1; i < cores; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "helper_burn: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid == 0) {
			burn(deadline);
			_exit(0);
		}
	}
	burn(deadline);
	int status, rc = 0;
	for (;;) {
		pid_t pid = wait(&status);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			rc = 1;
	}
	return rc;
}
