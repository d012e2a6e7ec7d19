/* ts_fake_engine.c: a fake HTTP server on a Unix socket (ts_fake_engine.h). */
#include "ts_fake_engine.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "banned.h"

pid_t ts_fake_engine_hold(const char *path, const char *response, int n, unsigned hold_s)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(s >= 0);
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	unlink(path);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s, 4), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(30 + hold_s); /* never outlives a failed test that did not reap it */
		for (int i = 0; i < n; i++) {
			int c = accept(s, NULL, NULL);
			if (c < 0)
				_exit(1);
			char buf[8192];
			size_t got = 0;
			while (got < sizeof buf - 1) { /* the request's headers */
				ssize_t r = read(c, buf + got, sizeof buf - 1 - got);
				if (r <= 0)
					break;
				got += (size_t)r;
				buf[got] = 0;
				if (strstr(buf, "\r\n\r\n"))
					break;
			}
			/* the body too, so that closing never resets a request still being sent */
			const char *end = strstr(buf, "\r\n\r\n");
			const char *cl = strcasestr(buf, "Content-Length:");
			if (end && cl && cl < end) {
				size_t want = (size_t)strtoul(cl + 15, NULL, 10);
				size_t have = got - (size_t)(end + 4 - buf);
				while (have < want) {
					ssize_t r = read(c, buf, sizeof buf);
					if (r <= 0)
						break;
					have += (size_t)r;
				}
			}
			if (write(c, response, strlen(response)) < 0)
				_exit(1);
			if (hold_s > 0)
				sleep(hold_s); /* keep the connection open, the promised body unsent
				                */
			close(c);
		}
		_exit(0);
	}
	close(s);
	return pid;
}

pid_t ts_fake_engine(const char *path, const char *response, int n)
{
	return ts_fake_engine_hold(path, response, n, 0);
}
