/* helper_common.h: what the resource_monitor test helper programs (helper_*.c) share: the usage
 * message, parsing of numeric arguments, allocating memory that is really resident, sleeping
 * through signals and reaping children. Each helper is built from its own single file and
 * includes this header; the functions are static inline so that a helper may leave some unused. */
#ifndef HELPER_COMMON_H
#define HELPER_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Largest MB argument the helpers accept (1 TiB). */
#define HELPER_MAX_MB (1LL << 20)

/* Prints "NAME: WHY" and "usage: SYNOPSIS" to stderr and exits 2. SYNOPSIS is the usage line,
 * starting with the program's name (e.g. "helper_alloc MB [SECONDS]"). */
static inline void helper_usage(const char *synopsis, const char *why)
{
	fprintf(stderr, "%.*s: %s\nusage: %s\n", (int)strcspn(synopsis, " "), synopsis, why,
	        synopsis);
	exit(2);
}

/* Parses S, a whole decimal integer between MIN and MAX, into *OUT. Returns 0, or -1 (*OUT
 * untouched) when S is empty, has trailing characters, overflows or is out of range. */
static inline int helper_parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Parses S, a number of seconds between 0 and MAX (fractions allowed), into *OUT. Returns 0, or
 * -1 (*OUT untouched) when S is not such a number (NaN included). */
static inline int helper_parse_seconds(const char *s, double max, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Allocates BYTES and writes to every page of them, so that all of it is resident; *OUT gets the
 * memory (NULL when BYTES is 0), to be given back with helper_release(). Returns 0, or -1 with
 * errno set when the allocation fails. */
static inline int helper_alloc_touched(size_t bytes, char **out)
{
	*out = NULL;
	if (bytes == 0)
		return 0;
	char *p = malloc(bytes);
	if (!p)
		return -1;
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		page = 4096;
	for (size_t i = 0; i < bytes; i += (size_t)page)
		p[i] = (char)(i / (size_t)page + 1);
	p[bytes - 1] = 1;
	*out = p;
	return 0;
}

/* Frees P of BYTES from helper_alloc_touched() (NULL is fine), reading it back first so that the
 * compiler cannot drop the writes. */
static inline void helper_release(char *p, size_t bytes)
{
	volatile char sink = 0;
	if (p)
		sink = p[bytes / 2];
	(void)sink;
	free(p);
}

/* Sleeps SECONDS (fractions allowed, >= 0), going on after a signal interrupts the sleep. */
static inline void helper_sleep(double seconds)
{
	struct timespec ts;
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Forks like fork(); on failure prints "NAME: fork: reason" to stderr and returns -1. */
static inline pid_t helper_fork(const char *name)
{
	pid_t pid = fork();
	if (pid < 0)
		fprintf(stderr, "%s: fork: %s\n", name, strerror(errno));
	return pid;
}

/* Waits for every child of this process. Returns 0 when all exited with status 0, 1 when one
 * failed or was killed by a signal. */
static inline int helper_wait_all(void)
{
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

#endif
