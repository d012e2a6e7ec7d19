/* memhog.c: allocates and touches N MiB (argument, default 256), one MiB at a time, printing
 * progress, so that a pod with a memory limit below N is killed for memory. Part of the test
 * cluster's busybox image (test/k8s/images.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	long want = argc > 1 ? strtol(argv[1], NULL, 10) : 256;
	for (long i = 1; i <= want; i++) {
		char *p = malloc(1 << 20);
		if (!p) {
			perror("memhog: malloc");
			return 1;
		}
		memset(p, 0x5a, 1 << 20);
		if (i % 16 == 0) {
			printf("memhog: %ld MiB\n", i);
			fflush(stdout);
		}
	}
	printf("memhog: done, %ld MiB\n", want);
	return 0;
}
