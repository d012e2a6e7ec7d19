/* helper_write.c: a test program that writes exactly MB MiB to FILE and fsyncs it. Tests use
 * it to check the disk and bytes_written figures a monitor reports. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helper_common.h"
#include "banned.h"

#define USAGE "helper_write FILE MB"

int main(int argc, char **argv)
{
	if (argc != 3)
		helper_usage(USAGE, "wrong number of arguments");
	long long mb;
	if (helper_parse_int(argv[2], 0, HELPER_MAX_MB, &mb) < 0)
		helper_usage(USAGE, "MB must be an integer between 0 and 1048576");
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "helper_write: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	static char block[1 << 20];
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (char)('a' + i % 26);
	for (long long i = 0; i < mb; i++) {
		size_t done = 0;
		while (done < sizeof(block)) {
			ssize_t n = write(fd, block + done, sizeof(block) - done);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				fprintf(stderr, "helper_write: %s: %s\n", argv[1], strerror(errno));
				close(fd);
				return 1;
			}
			done += (size_t)n;
		}
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		fprintf(stderr, "helper_write: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	return 0;
}
