/* worker_runner_agent.c: handing a shared-mode task to its container's agent (see
 * worker_runner_agent.h): connect, send the two output descriptors and the request, move the
 * task into this process's task cgroups when it says who it is, read the agent's lines until
 * the task's status. C library only. */
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
		int on = 1; /* the task's "P" line carries its pid, as seen from here */
		if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0 ||
		                connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)) {
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

/* The resource controllers whose task cgroup a shared container's task joins: those the
 * resource monitor measures and limits with (rmon_cgroup_layout.c). Not devices (the
 * container's device rules stay), not the named and v2 hierarchies. */
static const char *const task_controllers[] = {"memory", "cpu",     "cpuacct", "pids",
                                               "cpuset", "freezer", "blkio"};

static bool joined_controller(const char *w, size_t n)
{
	for (size_t i = 0; i < sizeof task_controllers / sizeof *task_controllers; i++)
		if (strlen(task_controllers[i]) == n && strncmp(task_controllers[i], w, n) == 0)
			return true;
	return false;
}

/* Moves PID into the cgroups of this process that the resource monitor made for the task
 * (cgroup v1; their last component is htc.OWNER...): then the task in the shared container is
 * measured, limited and grown with its own cgroup, as any other task of the worker. Returns
 * the number of hierarchies it was moved in (0: this process is not in a task cgroup, cgroup
 * v2, or the moves failed: the task stays in the container's cgroup). */
int runner_agent_join_cgroups(pid_t pid)
{
	char buf[8192];
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char num[24];
	int len = snprintf(num, sizeof num, "%ld", (long)pid);
	int moved = 0;
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* ID:CONTROLLERS:PATH */
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2 || c2 == c1 + 1)
			continue; /* v2 (0::PATH) or malformed */
		const char *path = c2 + 1, *leaf = strrchr(path, '/');
		if (!leaf || strncmp(leaf + 1, "htc.", 4) != 0)
			continue;
		for (const char *w = c1 + 1; w < c2;) {
			const char *e = memchr(w, ',', (size_t)(c2 - w));
			size_t wl = (size_t)((e ? e : c2) - w);
			if (joined_controller(w, wl)) {
				char *procs =
				    fmt("/sys/fs/cgroup/%.*s%s/cgroup.procs", (int)wl, w, path);
				int pf = open(procs, O_WRONLY | O_CLOEXEC);
				free(procs);
				bool ok = pf >= 0 && write(pf, num, (size_t)len) == len;
				if (pf >= 0)
					close(pf);
				if (ok) {
					moved++;
					break; /* one write moves it in the whole hierarchy */
				}
			}
			w += wl + 1;
		}
	}
	return moved;
}

/* The pid in the credentials of MH (SO_PASSCRED), or 0. */
static pid_t sender_pid(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
			struct ucred u;
			memcpy(&u, CMSG_DATA(c), sizeof u);
			return u.pid;
		}
	return 0;
}

/* Reads the agent's lines until "X STATUS" (or the end). "P" (the task, before it executes)
 * is answered "G" once the task is in this process's task cgroups. 0, or -EPIPE when the
 * agent went away first; *EXEC_ERRNO gets the errno of an "E" line, *DIR_ERRNO that of a "D"
 * line (the working directory). */
static int await_status(int fd, volatile sig_atomic_t *stop, int *status, int *exec_errno,
                        int *dir_errno)
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
		char cbuf[CMSG_SPACE(sizeof(struct ucred))];
		struct iovec iov = {line + have, sizeof line - 1 - have};
		struct msghdr mh = {0};
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof cbuf;
		ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		pid_t from = sender_pid(&mh);
		have += (size_t)n;
		line[have] = '\0';
		char *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			long v = strtol(line + 1, NULL, 10);
			if (line[0] == 'P' && !asked) {
				/* the task's own line: its credentials say who it is here */
				if (from > 0)
					runner_agent_join_cgroups(from);
				ssize_t w = send(fd, "G", 1, MSG_NOSIGNAL);
				(void)w;
			} else if (line[0] == 'E')
				*exec_errno = (int)v;
			else if (line[0] == 'D')
				*dir_errno = (int)v;
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
	int exec_errno = 0, dir_errno = 0;
	r = await_status(fd, stop, status, &exec_errno, &dir_errno);
	close(fd);
	if (r < 0) {
		*err = fmt("the shared container's agent %s/%s ended before the task did", state,
		           socket_name);
		return r;
	}
	if (dir_errno) {
		*err =
		    fmt("cannot change to %s in the container: %s", workdir, strerror(dir_errno));
		return -dir_errno;
	}
	if (exec_errno) {
		*err = fmt("cannot execute %s in the container: %s", cmd[0], strerror(exec_errno));
		return -exec_errno;
	}
	return 0;
}
