/* worker_runner_agent.c: handing a shared-mode task to its container's agent (see
 * worker_runner_agent.h): connect, send the two output descriptors and the request, read the
 * agent's lines until the task's status. C library only. */
#include "worker_runner_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "banned.h"

extern char **environ;

volatile sig_atomic_t runner_agent_stop;

static void on_stop(int sig)
{
	runner_agent_stop = sig;
}

void runner_agent_catch_stops(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* A formatted string; aborts without memory. */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	char *s = NULL;
	int n = vasprintf(&s, f, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return s;
}

char *runner_agent_program(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return NULL;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	char *p = fmt("%s/htc_container_agent", self);
	if (access(p, X_OK) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

char *runner_agent_socket_name(const char *name)
{
	return fmt("%s.sock", name);
}

/* A connection to the agent at STATE/SOCKET, through the directory's descriptor so that a long
 * state path does not pass the 108 bytes of a socket address. A descriptor, or -errno. */
static int agent_connect(const char *state, const char *socket_name)
{
	int dfd = open(state, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? -ECONNREFUSED : -errno;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", dfd, socket_name);
	int fd = -ENAMETOOLONG;
	if (n > 0 && (size_t)n < sizeof sa.sun_path) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
			int e = errno;
			close(fd);
			fd = e == ENOENT ? -ECONNREFUSED : -e;
		} else if (fd < 0) {
			fd = -errno;
		}
	}
	close(dfd);
	return fd;
}

/* Appends N bytes of S to *BUF (of *LEN bytes, *CAP allocated). */
static void put(char **buf, size_t *len, size_t *cap, const void *s, size_t n)
{
	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 4096;
		while (c < *len + n)
			c *= 2;
		char *b = realloc(*buf, c);
		if (!b)
			abort();
		*buf = b;
		*cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
}

/* The request: the length word, then the directory, the number of words, the words and the
 * environment, each NUL-terminated. Caller frees; *LEN gets its size. */
static char *build_request(const char *workdir, char *const *cmd, size_t *len)
{
	char *b = NULL;
	size_t cap = 0;
	*len = 0;
	uint32_t word = 0;
	put(&b, len, &cap, &word, sizeof word);
	put(&b, len, &cap, workdir, strlen(workdir) + 1);
	int n = 0;
	while (cmd[n])
		n++;
	char num[16];
	int k = snprintf(num, sizeof num, "%d", n);
	put(&b, len, &cap, num, (size_t)k + 1);
	for (int i = 0; i < n; i++)
		put(&b, len, &cap, cmd[i], strlen(cmd[i]) + 1);
	for (char **e = environ; *e; e++)
		put(&b, len, &cap, *e, strlen(*e) + 1);
	word = (uint32_t)(*len - sizeof word);
	memcpy(b, &word, sizeof word);
	return b;
}

/* Sends the length word with the two descriptors, then the rest. 0 or -errno. */
static int send_request(int fd, const char *data, size_t len)
{
	int fds[2] = {STDOUT_FILENO, STDERR_FILENO};
	char cbuf[CMSG_SPACE(sizeof fds)];
	memset(cbuf, 0, sizeof cbuf);
	struct iovec iov = {(void *)data, sizeof(uint32_t)};
	struct msghdr mh = {0};
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof cbuf;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof fds);
	memcpy(CMSG_DATA(c), fds, sizeof fds);
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(uint32_t))
		return errno ? -errno : -EIO;
	for (size_t off = sizeof(uint32_t); off < len;) {
		ssize_t w = send(fd, data + off, len - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += (size_t)w;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads the agent's lines until "X STATUS" (or the end). 0, or -EPIPE when the agent went
 * away first; *EXEC_ERRNO gets the errno of an "E" line. */
static int await_status(int fd, volatile sig_atomic_t *stop, int *status, int *exec_errno)
{
	char line[256];
	size_t have = 0;
	bool asked = false;
	while (*status < 0) {
		if (*stop && !asked) {
			ssize_t w = send(fd, "K", 1, MSG_NOSIGNAL);
			(void)w;
			asked = true;
		}
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, -1) < 0)
			continue; /* a signal: *stop is looked at again */
		ssize_t n = read(fd, line + have, sizeof line - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		have += (size_t)n;
		line[have] = '\0';
		char *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			long v = strtol(line + 1, NULL, 10);
			if (line[0] == 'E')
				*exec_errno = (int)v;
			else if (line[0] == 'X')
				*status = WIFEXITED(v)     ? WEXITSTATUS(v)
				          : WIFSIGNALED(v) ? 128 + WTERMSIG(v)
				                           : 255;
			have -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, have + 1);
		}
		if (have == sizeof line - 1)
			have = 0; /* not the agent's lines */
	}
	return 0;
}

int runner_agent_run(const char *state, const char *socket_name, const char *workdir,
                     char *const *cmd, double wait_s, volatile sig_atomic_t *stop, int *status,
                     char **err)
{
	*status = -1;
	*err = NULL;
	double until = now_s() + wait_s;
	int fd;
	for (;;) {
		fd = agent_connect(state, socket_name);
		if (fd >= 0 || fd != -ECONNREFUSED || now_s() >= until || *stop)
			break;
		usleep(10000);
	}
	if (fd < 0) {
		if (fd != -ECONNREFUSED)
			*err = fmt("the shared container's agent %s/%s: %s", state, socket_name,
			           strerror(-fd));
		return fd;
	}
	size_t len;
	char *req = build_request(workdir, cmd, &len);
	int r = send_request(fd, req, len);
	free(req);
	if (r < 0) {
		*err = fmt("the shared container's agent %s/%s: cannot send the task: %s", state,
		           socket_name, strerror(-r));
		close(fd);
		return r;
	}
	int exec_errno = 0;
	r = await_status(fd, stop, status, &exec_errno);
	close(fd);
	if (r < 0) {
		*err = fmt("the shared container's agent %s/%s ended before the task did", state,
		           socket_name);
		return r;
	}
	if (exec_errno) {
		*err = fmt("cannot execute %s in the container: %s", cmd[0], strerror(exec_errno));
		return -exec_errno;
	}
	return 0;
}
