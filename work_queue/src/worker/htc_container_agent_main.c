/* htc_container_agent_main.c: the process a worker's shared container runs (PID 1 in it). It
 * listens on a Unix socket in the worker's state directory (bind-mounted) and starts each task
 * the container runner hands it, as a child inside the container, so that a shared-mode task
 * costs a fork instead of an Engine exec (doc/work-queue-docker.md, "The agent"). Built static:
 * it runs in any image, with no library of the image. Only system headers: it links nothing of
 * the tree.
 *
 * With `--once DIR NAME` it is the process of a task's own container made ahead of the task
 * (doc/work-queue-docker.md, "Containers made ahead"): it serves one connection, stops
 * listening at once, and exits when that task has ended, which ends the container.
 *
 * With `--run STATE SOCKET IMAGE WORKDIR -- RUNNER...` it is instead the client the worker
 * starts for a task of a shared container: it hands the task to the agent listening on
 * STATE/SOCKET (worker_runner_agent.c), writes the task's container record and exits with the
 * task's status; when no agent listens yet it becomes the container runner RUNNER..., which
 * makes the container. A static program starts in well under a millisecond, the runner (the
 * worker with its libraries) in about 12. `--run-task PID STATE SOCKET WORKDIR -- RUNNER...`
 * is the client of a task whose own container the process PID is making: it waits for that
 * container's agent while PID lives, and becomes RUNNER... (which makes a container the usual
 * way) when PID ends without one.
 *
 * One connection per task. The runner sends, with SCM_RIGHTS, its stdout and stderr, and a
 * request: a 4-byte length (host order: both ends are on one machine) then NUL-terminated
 * strings: the working directory, the number of words N, N words, then the environment. The
 * agent answers with text lines: "E ERRNO" when the command could not be executed ("D ERRNO"
 * when the task could not change to the working directory), and at the
 * end "X STATUS" (the raw wait status); then it closes. Before the task executes its command,
 * the forked task itself writes "P" (so the client, with SO_PASSCRED, learns its pid as seen
 * from the client's side) and waits until the client answers "G": meanwhile the client may
 * move it into the cgroups the worker made for the task. Any other byte from the client, or
 * the connection closing, kills the task's process group. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "worker_runner_agent.h"

#define REQUEST_MAX (16u << 20)

/* How long an agent of one task (--once) waits for it: a task waits in its worker's queue for
 * seconds, not for this long. */
#define ONCE_IDLE_S 1800

struct running {
	pid_t pid;
	int conn;
	int release; /* the task waits for a byte here before it executes; -1 once released */
	int killed;  /* its runner asked: it is no longer listened to, only reaped */
};

static struct running *tasks;
static size_t n_tasks, cap_tasks;

static void say(int fd, char kind, long v)
{
	char line[32];
	int n = snprintf(line, sizeof line, "%c %ld\n", kind, v);
	ssize_t w = write(fd, line, (size_t)n);
	(void)w;
}

static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Receives the two descriptors and the length word; 0, or -1 for a malformed request. */
static int receive_head(int conn, int fds[2], uint32_t *len)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = {len, sizeof *len};
	struct msghdr mh = {0};
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof cbuf;
	ssize_t n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
		return -1;
	memcpy(fds, CMSG_DATA(c), 2 * sizeof(int));
	if (n != (ssize_t)sizeof *len || *len == 0 || *len > REQUEST_MAX) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	return 0;
}

/* Splits BUF (LEN bytes of NUL-terminated strings) into the directory, the words and the
 * environment (both NULL-terminated arrays, allocated). 0, or -1 when malformed. */
static int parse_request(char *buf, uint32_t len, char **dir, char ***argv, char ***envp)
{
	if (buf[len - 1] != '\0')
		return -1;
	size_t n_str = 0;
	for (uint32_t i = 0; i < len; i++)
		n_str += buf[i] == '\0';
	char **s = calloc(n_str + 2, sizeof *s);
	if (!s)
		return -1;
	size_t k = 0;
	for (char *p = buf; p < buf + len; p += strlen(p) + 1)
		s[k++] = p;
	char *end;
	long nw = k >= 2 ? strtol(s[1], &end, 10) : -1;
	if (k < 3 || *end || nw < 1 || (size_t)nw > k - 2) {
		free(s);
		return -1;
	}
	*dir = s[0];
	char **words = calloc((size_t)nw + 1, sizeof *words);
	char **env = calloc(k - 2 - (size_t)nw + 1, sizeof *env);
	if (!words || !env) {
		free(words);
		free(env);
		free(s);
		return -1;
	}
	memcpy(words, s + 2, (size_t)nw * sizeof *words);
	memcpy(env, s + 2 + nw, (k - 2 - (size_t)nw) * sizeof *env);
	free(s);
	*argv = words;
	*envp = env;
	return 0;
}

/* Starts the task of the request on CONN; on success it is in the table. */
static void start_task(int conn)
{
	struct timeval tv = {5, 0}; /* a runner that stalls mid-request does not stall the agent */
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	int fds[2];
	uint32_t len;
	if (receive_head(conn, fds, &len) < 0) {
		say(conn, 'E', EPROTO);
		close(conn);
		return;
	}
	char *buf = malloc(len);
	char *dir = NULL, **argv = NULL, **envp = NULL;
	if (!buf || read_full(conn, buf, len) < 0 ||
	    parse_request(buf, len, &dir, &argv, &envp) < 0) {
		say(conn, 'E', EPROTO);
		goto fail;
	}
	if (n_tasks == cap_tasks) {
		size_t c = cap_tasks ? 2 * cap_tasks : 16;
		struct running *t = realloc(tasks, c * sizeof *t);
		if (!t) {
			say(conn, 'E', ENOMEM);
			goto fail;
		}
		tasks = t;
		cap_tasks = c;
	}
	int rel[2];
	if (pipe2(rel, O_CLOEXEC) < 0) {
		say(conn, 'E', errno);
		goto fail;
	}
	pid_t pid = fork();
	if (pid < 0) {
		say(conn, 'E', errno);
		close(rel[0]);
		close(rel[1]);
		goto fail;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL); /* an ignored signal would stay ignored in the task */
		setsid();
		/* the client learns who the task is from this line's credentials, and may move it
		 * into the task's cgroups before it runs anything (and allocates anything) */
		close(rel[1]);
		char go;
		ssize_t r;
		if (write(conn, "P\n", 2) != 2)
			_exit(127);
		do
			r = read(rel[0], &go, 1);
		while (r < 0 && errno == EINTR);
		if (r != 1)
			_exit(127); /* killed before it was released */
		close(rel[0]);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(fds[0], 1);
		dup2(fds[1], 2);
		fcntl(conn, F_SETFD, FD_CLOEXEC);
		if (chdir(dir) < 0) {
			say(conn, 'D', errno);
			_exit(127);
		}
		execve(argv[0], argv, envp);
		if (!strchr(argv[0], '/')) {
			/* a bare word is looked for on the task's PATH */
			for (char **e = envp; *e; e++)
				if (strncmp(*e, "PATH=", 5) == 0)
					setenv("PATH", *e + 5, 1);
			execvpe(argv[0], argv, envp);
		}
		say(conn, 'E', errno);
		_exit(127);
	}
	close(rel[0]);
	tasks[n_tasks].pid = pid;
	tasks[n_tasks].conn = conn;
	tasks[n_tasks].release = rel[1];
	tasks[n_tasks].killed = 0;
	n_tasks++;
	close(fds[0]);
	close(fds[1]);
	free(argv);
	free(envp);
	free(buf);
	return;
fail:
	close(fds[0]);
	close(fds[1]);
	free(argv);
	free(envp);
	free(buf);
	close(conn);
}

/* Reaps every child that ended (orphans of the container included) and reports the tasks. */
static void reap(void)
{
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (size_t i = 0; i < n_tasks; i++) {
			if (tasks[i].pid != pid)
				continue;
			say(tasks[i].conn, 'X', st);
			close(tasks[i].conn);
			if (tasks[i].release >= 0)
				close(tasks[i].release);
			tasks[i] = tasks[--n_tasks];
			break;
		}
	}
}

/* ---- the client (--run) ------------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The task's container record beside WORKDIR (container.json, as the runner writes it): the
 * image (IMAGE, or none when NULL: the record of the container made ahead has it), the mode,
 * the run time and, for a container made ahead (WAIT_S >= 0), how long the task waited for it.
 * Written under another name, then renamed. */
static void write_record(const char *workdir, const char *image, double run_s, double wait_s)
{
	const char *slash = strrchr(workdir, '/');
	if (!slash)
		return;
	int dl = (int)(slash - workdir);
	char path[4096], tmp[4096];
	if (snprintf(path, sizeof path, "%.*s/container.json", dl, workdir) >= (int)sizeof path ||
	    snprintf(tmp, sizeof tmp, "%.*s/.container.json.%ld", dl, workdir, (long)getpid()) >=
	        (int)sizeof tmp)
		return;
	FILE *f = fopen(tmp, "we");
	if (!f)
		return;
	fputc('{', f);
	if (image) {
		fputs("\"image\":\"", f);
		for (const char *p = image; *p; p++) {
			if (*p == '"' || *p == '\\')
				fputc('\\', f);
			if ((unsigned char)*p >= 0x20)
				fputc(*p, f);
		}
		fputs("\",", f);
	}
	if (wait_s >= 0)
		fprintf(f, "\"mode\":\"task\",\"made_ahead\":true,\"wait_s\":%.6f,", wait_s);
	else
		fputs("\"mode\":\"shared\",", f);
	fprintf(f, "\"agent\":true,\"run_s\":%.6f}", run_s);
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
}

/* Whether the process PID is alive (not gone, not a zombie its parent has not reaped). */
static int alive(pid_t pid)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 0;
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the name may hold anything */
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/* How long the client of a container made ahead waits for its agent at most, while the
 * process making it lives (an engine under load may take this long to start one). */
#define MADE_AHEAD_WAIT_S 600

static int client(int argc, char **argv)
{
	/* --run STATE SOCKET IMAGE WORKDIR -- ..., or --run-task PID STATE SOCKET WORKDIR -- ... */
	int task = strcmp(argv[1], "--run-task") == 0;
	char **cmd = NULL;
	if (argc >= 9 && strcmp(argv[6], "--") == 0)
		for (char **a = argv + 8; *a; a++)
			if (strcmp(*a, "--") == 0) {
				cmd = a + 1;
				break;
			}
	char *end = NULL;
	long maker = task ? strtol(argv[2], &end, 10) : 0;
	if (!cmd || !*cmd || (task && (*end || maker <= 0))) {
		fprintf(stderr, "usage: htc_container_agent --run STATE SOCKET IMAGE WORKDIR -- "
		                "RUNNER... -- CMD...\n"
		                "       htc_container_agent --run-task PID STATE SOCKET WORKDIR -- "
		                "RUNNER... -- CMD...\n");
		return 2;
	}
	const char *state = argv[task ? 3 : 2], *sock = argv[task ? 4 : 3];
	const char *image = task ? NULL : argv[4], *workdir = argv[5];
	char **runner = argv + 7;
	runner_agent_catch_stops();
	double t0 = now_s();
	int status;
	char *err = NULL;
	int r;
	double waited = 0; /* until the last try that found no agent */
	for (;;) {
		r = runner_agent_run(state, sock, workdir, cmd, 0, &runner_agent_stop, &status,
		                     &err);
		if (!task || r != -ECONNREFUSED || runner_agent_stop)
			break;
		waited = now_s() - t0;
		if (waited > MADE_AHEAD_WAIT_S || !alive((pid_t)maker))
			break;
		usleep(2000);
	}
	if (r == -ECONNREFUSED && !runner_agent_stop) {
		/* no agent (yet): the runner makes the container; a maker still at work after all
		 * this time is stopped, so that its container does not wait for ever */
		if (task && alive((pid_t)maker))
			kill((pid_t)maker, SIGTERM);
		signal(SIGPIPE, SIG_DFL);
		execv(runner[0], runner);
		fprintf(stderr, "work_queue_worker --container-run: %s: %s\n", runner[0],
		        strerror(errno));
		return 125;
	}
	double t1 = now_s();
	write_record(workdir, image, t1 - t0 - waited, task ? waited : -1);
	if (r < 0) {
		fprintf(stderr, "work_queue_worker --container-run: %s\n",
		        err ? err : "no agent answers");
		free(err);
		return runner_agent_stop ? 128 + runner_agent_stop : 125;
	}
	return runner_agent_stop ? 128 + runner_agent_stop : status;
}

/* ---- the agent -------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "--run") == 0 || strcmp(argv[1], "--run-task") == 0))
		return client(argc, argv);
	int once = argc >= 2 && strcmp(argv[1], "--once") == 0;
	if (once) {
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr,
		        "usage: htc_container_agent [--once] DIR NAME\n"
		        "(the process of a work_queue_worker's container: it listens on the socket "
		        "NAME in DIR; with --once, for one task)\n");
		return 2;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(argv[2]) >= sizeof sa.sun_path || strchr(argv[2], '/')) {
		fprintf(stderr, "htc_container_agent: %s: not a socket name\n", argv[2]);
		return 2;
	}
	if (chdir(argv[1]) < 0) {
		fprintf(stderr, "htc_container_agent: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	strncpy(sa.sun_path, argv[2], sizeof sa.sun_path - 1);
	signal(SIGPIPE, SIG_IGN);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(argv[2]);
	mode_t old = umask(077);
	if (sfd < 0 || lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(lfd, 128) < 0) {
		fprintf(stderr, "htc_container_agent: %s/%s: %s\n", argv[1], argv[2],
		        strerror(errno));
		return 1;
	}
	umask(old);
	struct pollfd *p = NULL; /* the listener, the signals, then one per task; kept */
	size_t cap_p = 0;
	for (;;) {
		size_t n = 2 + n_tasks;
		if (n > cap_p) {
			struct pollfd *q = realloc(p, 2 * n * sizeof *q);
			if (!q)
				return 1;
			p = q;
			cap_p = 2 * n;
		}
		memset(p, 0, n * sizeof *p);
		p[0].fd = lfd;
		p[0].events = POLLIN;
		p[1].fd = sfd;
		p[1].events = POLLIN;
		for (size_t i = 0; i < n_tasks; i++) {
			p[2 + i].fd = tasks[i].killed ? -1 : tasks[i].conn;
			p[2 + i].events = POLLIN;
		}
		/* a container made ahead whose task never comes (its worker gone without a word)
		 * ends by itself */
		int pr = poll(p, n, once && lfd >= 0 ? ONCE_IDLE_S * 1000 : -1);
		if (pr < 0 && errno != EINTR) {
			free(p);
			return 1;
		}
		if (pr == 0) {
			fprintf(stderr, "htc_container_agent: no task came in %d s\n", ONCE_IDLE_S);
			free(p);
			return 0;
		}
		/* "G" from a runner releases its task; any other byte or a hang-up kills it
		 * (reported when reaped) */
		for (size_t i = 0; i < n_tasks; i++) {
			if (!p[2 + i].revents)
				continue;
			struct running *t = &tasks[i];
			char b = 0;
			ssize_t r = (p[2 + i].revents & POLLIN) ? read(t->conn, &b, 1) : 0;
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 1 && b == 'G' && t->release >= 0) {
				ssize_t w = write(t->release, "g", 1);
				(void)w;
			} else {
				kill(-t->pid, SIGKILL);
				kill(t->pid, SIGKILL);
				t->killed = 1;
			}
			if (t->release >= 0) {
				close(t->release);
				t->release = -1;
			}
		}
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
				if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
					free(p);
					free(tasks);
					return 0;
				}
			reap();
		}
		if (lfd >= 0 && (p[0].revents & POLLIN)) {
			int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (conn >= 0 && once) {
				/* nobody else gets in: the socket goes before the task starts */
				unlink(argv[2]);
				close(lfd);
				lfd = -1;
			}
			if (conn >= 0)
				start_task(conn);
		}
		if (lfd < 0 && n_tasks == 0) {
			free(p);
			free(tasks);
			return 0; /* the one task ended (or its request was refused) */
		}
	}
}
