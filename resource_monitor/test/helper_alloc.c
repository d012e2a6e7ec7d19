/* helper_alloc.c: a test program with exactly known memory use. It allocates MB MiB, writes
 * to every page so that all of it is resident, holds it for SECONDS (default 0.5) and exits 0;
 * end-to-end tests compare the peak memory a monitor reports with MB. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "helper_common.h"
#include "banned.h"

#define USAGE "helper_alloc MB [SECONDS]"

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3)
		helper_usage(USAGE, "wrong number of arguments");
	long long mb;
	if (helper_parse_int(argv[1], 0, HELPER_MAX_MB, &mb) < 0)
		helper_usage(USAGE, "MB must be an integer between 0 and 1048576");
	double seconds = 0.5;
	if (argc == 3 && helper_parse_seconds(argv[2], 1e6, &seconds) < 0)
		helper_usage(USAGE, "SECONDS must be a number between 0 and 1000000");
	size_t bytes = (size_t)mb << 20;
	char *p;
	if (helper_alloc_touched(bytes, &p) < 0) {
		fprintf(stderr, "helper_alloc: cannot allocate %lld MiB: %s\n", mb,
		        strerror(errno));
		return 1;
	}
	helper_sleep(seconds);
	helper_release(p, bytes);
	return 0;
}
