/* helper_spawn.c: a test program that creates a known number of short-lived processes. It
 * runs K children one after another, each living MS milliseconds, and exits 0; tests use it to
 * check that a monitor counts children that live less than its sampling interval. */
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
	fprintf(stderr, "helper_spawn: %s\nusage: helper_spawn K MS\n", why);
	exit(2);
}

static long parse(const char *s, long max, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > max) {
		fprintf(stderr, "helper_spawn: bad %s '%s' (0..%ld)\n", what, s, max);
		usage("invalid argument");
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		usage("wrong number of arguments");
	long k = parse(argv[1], 100000, "K");
	long ms = parse(argv[2], 3600000, "MS");
	for (long i = 0; i < k; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "helper_spawn: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid == 0) {
			struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
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
