/* helper_tree.c: a test program whose process tree has a known memory peak. It starts N
 * children at once, each allocating and touching MB MiB and holding it for SECONDS, and waits
 * for them; the tree's peak is N * MB MiB plus the processes' own baseline. */
#include <stddef.h>
#include <unistd.h>

#include "helper_common.h"
#include "banned.h"

#define USAGE "helper_tree N MB SECONDS"

/* One child: holds BYTES of resident memory for SECONDS; returns its exit status. */
static int child(size_t bytes, double seconds)
{
	char *p;
	if (helper_alloc_touched(bytes, &p) < 0)
		return 1;
	helper_sleep(seconds);
	helper_release(p, bytes);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		helper_usage(USAGE, "wrong number of arguments");
	long long n, mb;
	double seconds;
	if (helper_parse_int(argv[1], 0, 10000, &n) < 0)
		helper_usage(USAGE, "N must be an integer between 0 and 10000");
	if (helper_parse_int(argv[2], 0, HELPER_MAX_MB, &mb) < 0)
		helper_usage(USAGE, "MB must be an integer between 0 and 1048576");
	if (helper_parse_seconds(argv[3], 1e6, &seconds) < 0)
		helper_usage(USAGE, "SECONDS must be a number between 0 and 1000000");
	for (long long i = 0; i < n; i++) {
		pid_t pid = helper_fork("helper_tree");
		if (pid < 0) {
			helper_wait_all(); /* no orphan is left (tests of process limits) */
			return 1;
		}
		if (pid == 0)
			_exit(child((size_t)mb << 20, seconds));
	}
	return helper_wait_all();
}
