/* helper_alloc.c: a test program with exactly known memory use. It allocates MB MiB, writes
 * to every page so that all of it is resident, holds it for SECONDS (default 0.5) and exits 0;
 * end-to-end tests compare the peak memory a monitor reports with MB. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "banned.h"

static void usage(const char *why)
{
	fprintf(stderr, "helper_alloc: %s\nusage: helper_alloc MB [SECONDS]\n", why);
	exit(2);
}

static void hold(double seconds)
{
	struct timespec ts;
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3)
		usage("wrong number of arguments");
	char *end;
	errno = 0;
	long long mb = strtoll(argv[1], &end, 10);
	if (errno || end == argv[1] || *end || mb < 0 || mb > (1LL << 20))
		usage("MB must be an integer between 0 and 1048576");
	double seconds = 0.5;
	if (argc == 3) {
		errno = 0;
		seconds = strtod(argv[2], &end);
		if (errno || end == argv[2] || *end || !(seconds >= 0) || seconds > 1e6)
			usage("SECONDS must be a number between 0 and 1000000");
	}
	size_t bytes = (size_t)mb << 20;
	char *p = NULL;
	if (bytes > 0) {
		p = malloc(bytes);
		if (!p) {
			fprintf(stderr, "helper_alloc: cannot allocate %lld MiB: %s\n", mb,
			        strerror(errno));
			return 1;
		}
		long page = sysconf(_SC_PAGESIZE);
		if (page <= 0)
			page = 4096;
		for (size_t i = 0; i < bytes; i += (size_t)page)
			p[i] = (char)(i / (size_t)page + 1);
		p[bytes - 1] = 1;
	}
	hold(seconds);
	/* Read the memory back so the compiler cannot drop the writes. */
	volatile char sink = 0;
	if (p)
		sink = p[bytes / 2];
	(void)sink;
	free(p);
	return 0;
}
