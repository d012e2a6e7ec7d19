/* worker_runner_agent.c: handing a shared-mode task to its container's agent (see
 * worker_runner_agent.h): connect, send the two output descriptors and the request, read the
 * agent's lines until the task's status. */
#include "worker_runner_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buffer.h"
#include "htc_error.h"
#include "path.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

extern char **environ;

char *runner_agent_program(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return NULL;
	self[n] = '\0';
	char *dir = path_dirname(self);
	char *p = path_join(dir, "htc_container_agent");
	free(dir);
	if (access(p, X_OK) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

char *runner_agent_socket_name(const char *name)
{
	return xasprintf("%s.sock", name);
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

/* The request: the length word, then the directory, the number of words, the words and the
 * environment, each NUL-terminated. Caller frees; *LEN gets its size. */
static char *build_request(const char *workdir, char *const *cmd, size_t *len)
{
	struct buffer b;
	buffer_init(&b, 0);
	uint32_t word = 0;
	buffer_putlstring(&b, (const char *)&word, sizeof word);
	buffer_putlstring(&b, workdir, strlen(workdir) + 1);
	int n = 0;
	while (cmd[n])
		n++;
	buffer_printf(&b, "%d", n);
	buffer_putc(&b, '\0');
	for (int i = 0; i < n; i++)
		buffer_putlstring(&b, cmd[i], strlen(cmd[i]) + 1);
	for (char **e = environ; *e; e++)
		buffer_putlstring(&b, *e, strlen(*e) + 1);
	char *data = buffer_steal(&b, len);
	word = (uint32_t)(*len - sizeof word);
	memcpy(data, &word, sizeof word);
	return data;
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

int runner_agent_run(const char *state, const char *socket_name, const char *workdir,
                     char *const *cmd, double wait_s, volatile sig_atomic_t *stop, int *status,
                     char **err)
{
	*status = -1;
	*err = NULL;
	int64_t until = time_monotonic_us() + (int64_t)(wait_s * 1e6);
	int fd;
	for (;;) {
		fd = agent_connect(state, socket_name);
		if (fd >= 0 || fd != -ECONNREFUSED || time_monotonic_us() >= until || *stop)
			break;
		usleep(10000);
	}
	if (fd < 0) {
		if (fd != -ECONNREFUSED)
			*err = xasprintf("the shared container's agent %s/%s: %s", state,
			                 socket_name, htc_strerror(fd));
		return fd;
	}
	size_t len;
	char *req = build_request(workdir, cmd, &len);
	int r = send_request(fd, req, len);
	free(req);
	if (r < 0) {
		*err = xasprintf("the shared container's agent %s/%s: cannot send the task: %s",
		                 state, socket_name, htc_strerror(r));
		close(fd);
		return r;
	}
	char line[256];
	size_t have = 0;
	int exec_errno = 0;
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
		if (n <= 0) {
			r = -EPIPE;
			break;
		}
		have += (size_t)n;
		line[have] = '\0';
		char *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			long v = strtol(line + 1, NULL, 10);
			if (line[0] == 'E')
				exec_errno = (int)v;
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
	close(fd);
	if (r < 0) {
		*err = xasprintf("the shared container's agent %s/%s ended before the task did",
		                 state, socket_name);
		return r;
	}
	if (exec_errno) {
		*err = xasprintf("cannot execute %s in the container: %s", cmd[0],
		                 strerror(exec_errno));
		return -exec_errno;
	}
	return 0;
}
