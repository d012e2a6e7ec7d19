/* helper_spawn.c: a test program that creates a known number of short-lived processes. It
 * runs K children one after another, each living MS milliseconds, and exits 0; tests use it to
 * check that a monitor counts children that live less than its sampling interval. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper_common.h"
#include "banned.h"

#define USAGE "helper_spawn K MS"

/* Parses S, WHAT between 0 and MAX; on a bad value names it and exits through the usage. */
static long long parse(const char *s, long long max, const char *what)
{
	long long v;
	if (helper_parse_int(s, 0, max, &v) < 0) {
		fprintf(stderr, "helper_spawn: bad %s '%s' (0..%lld)\n", what, s, max);
		helper_usage(USAGE, "invalid argument");
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		helper_usage(USAGE, "wrong number of arguments");
	long long k = parse(argv[1], 100000, "K");
	long long ms = parse(argv[2], 3600000, "MS");
	for (long long i = 0; i < k; i++) {
		pid_t pid = helper_fork("helper_spawn");
		if (pid < 0)
			return 1;
		if (pid == 0) {
			helper_sleep((double)ms / 1000.0);
			_exit(0);
		}
		int status;
		while (waitpid(pid, &status, 0) < 0) {
			if (errno != EINTR) {
				fprintf(stderr, "helper_spawn: waitpid: %s\n", strerror(errno));
				return 1;
			}
		}
	}
	return 0;
}
