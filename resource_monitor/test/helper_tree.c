/* helper_tree.c: a test program whose process tree has a known memory peak. It starts N
 * children at once, each allocating and touching MB MiB and holding it for SECONDS, and waits
 * for them; the tree's peak is N * MB MiB plus the processes' own baseline. */
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
	fprintf(stderr, "helper_tree: %s\nusage: helper_tree N MB SECONDS\n", why);
	exit(2);
}

static int child(size_t bytes, double seconds)
{
	char *p = NULL;
	if (bytes > 0) {
		p = malloc(bytes);
		if (!p)
			return 1;
		long page = sysconf(_SC_PAGESIZE);
		if (page <= 0)
			page = 4096;
		for (size_t i = 0; i < bytes; i += (size_t)page)
			p[i] = (char)(i / (size_t)page + 1);
		p[bytes - 1] = 1;
	}
	struct timespec ts;
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	volatile char sink = 0;
	if (p)
		sink = p[bytes / 2];
	(void)sink;
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		usage("wrong number of arguments");
	char *end;
	errno = 0;
	long n = strtol(argv[1], &end, 10);
	if (errno || end == argv[1] || *end || n < 0 || n > 10000)
		usage("N must be an integer between 0 and 10000");
	errno = 0;
	long long mb = strtoll(argv[2], &end, 10);
	if (errno || end == argv[2] || *end || mb < 0 || mb > (1LL << 20))
		usage("MB must be an integer between 0 and 1048576");
	errno = 0;
	double seconds = strtod(argv[3], &end);
	if (errno || end == argv[3] || *end || !(seconds >= 0) || seconds > 1e6)
		usage("SECONDS must be a number between 0 and 1000000");
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "helper_tree: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid == 0)
			_exit(child((size_t)mb << 20, seconds));
	}
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
