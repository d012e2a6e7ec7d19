/* cluster_cmd.c: running scheduler tools asynchronously on a libuv loop, or synchronously with
 * a time limit (cluster_cmd.h). */
#include "cluster_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buffer.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

extern char **environ;

struct cmd {
	uv_process_t proc;
	uv_pipe_t pipes[3]; /* stdin, stdout, stderr */
	uv_timer_t timer;
	uv_write_t wreq;
	char chunk[65536]; /* read buffer of both output pipes */
	struct buffer out, err;
	char *stdin_text;
	int open_handles;
	int exited, exit_status, term_signal;
	int streams_open;
	char *fail;
	cluster_cmd_fn cb;
	void *arg;
};

static void finish(struct cmd *c)
{
	struct cluster_cmd_result r = {
	    .exit_status = c->exit_status,
	    .term_signal = c->term_signal,
	    .out = buffer_tostring(&c->out),
	    .err = buffer_tostring(&c->err),
	    .fail = c->fail,
	};
	c->cb(&r, c->arg);
	buffer_free(&c->out);
	buffer_free(&c->err);
	free(c->fail);
	free(c->stdin_text);
	free(c);
}

static void on_close(uv_handle_t *h)
{
	struct cmd *c = h->data;
	if (--c->open_handles == 0)
		finish(c);
}

static void close_all(struct cmd *c)
{
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->timer, on_close);
	uv_close((uv_handle_t *)&c->proc, on_close);
	for (int i = 0; i < 3; i++)
		if (!uv_is_closing((uv_handle_t *)&c->pipes[i]))
			uv_close((uv_handle_t *)&c->pipes[i], on_close);
}

static void maybe_done(struct cmd *c)
{
	if (c->exited && c->streams_open == 0)
		close_all(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)suggested;
	struct cmd *c = h->data;
	buf->base = c->chunk;
	buf->len = sizeof c->chunk;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct cmd *c = s->data;
	struct buffer *b = (uv_pipe_t *)s == &c->pipes[1] ? &c->out : &c->err;
	if (n > 0) {
		if (buffer_putlstring(b, buf->base, (size_t)n) < 0 && !c->fail)
			c->fail = xasprintf("it wrote more than %u bytes", CLUSTER_CMD_OUTPUT_CAP);
		return;
	}
	if (n < 0) {
		uv_read_stop(s);
		c->streams_open--;
		maybe_done(c);
	}
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	struct cmd *c = p->data;
	c->exited = 1;
	c->exit_status = sig ? -1 : (int)status;
	c->term_signal = sig;
	maybe_done(c);
}

static void on_timeout(uv_timer_t *t)
{
	struct cmd *c = t->data;
	if (!c->fail)
		c->fail = xstrdup("it did not finish in time and was killed");
	uv_process_kill(&c->proc, SIGKILL);
}

static void on_written(uv_write_t *w, int status)
{
	(void)status;
	struct cmd *c = w->data;
	if (!uv_is_closing((uv_handle_t *)&c->pipes[0]))
		uv_close((uv_handle_t *)&c->pipes[0], on_close);
}

int cluster_cmd_run(uv_loop_t *loop, char *const *argv, const char *stdin_text, int64_t timeout_ms,
                    cluster_cmd_fn cb, void *arg)
{
	struct cmd *c = xcalloc(1, sizeof *c);
	c->cb = cb;
	c->arg = arg;
	buffer_init(&c->out, CLUSTER_CMD_OUTPUT_CAP);
	buffer_init(&c->err, CLUSTER_CMD_OUTPUT_CAP);
	uv_stdio_container_t stdio[3];
	for (int i = 0; i < 3; i++) {
		uv_pipe_init(loop, &c->pipes[i], 0);
		c->pipes[i].data = c;
	}
	stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
	stdio[0].data.stream = (uv_stream_t *)&c->pipes[0];
	for (int i = 1; i < 3; i++) {
		stdio[i].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
		stdio[i].data.stream = (uv_stream_t *)&c->pipes[i];
	}
	uv_process_options_t o;
	memset(&o, 0, sizeof o);
	o.file = argv[0];
	o.args = (char **)argv;
	o.stdio = stdio;
	o.stdio_count = 3;
	o.exit_cb = on_exit_cb;
	c->proc.data = c;
	int r = uv_spawn(loop, &c->proc, &o);
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	c->open_handles = 5;
	if (r < 0) {
		/* the process handle must still be closed; report the failure from the loop */
		c->fail = xasprintf("cannot run %s: %s", argv[0], uv_strerror(r));
		c->exited = 1;
		c->exit_status = -1;
		close_all(c);
		return 0;
	}
	c->streams_open = 2;
	for (int i = 1; i < 3; i++)
		uv_read_start((uv_stream_t *)&c->pipes[i], on_alloc, on_read);
	if (stdin_text && *stdin_text) {
		c->stdin_text = xstrdup(stdin_text);
		uv_buf_t b = uv_buf_init(c->stdin_text, (unsigned)strlen(c->stdin_text));
		c->wreq.data = c;
		if (uv_write(&c->wreq, (uv_stream_t *)&c->pipes[0], &b, 1, on_written) < 0)
			uv_close((uv_handle_t *)&c->pipes[0], on_close);
	} else {
		uv_close((uv_handle_t *)&c->pipes[0], on_close);
	}
	if (timeout_ms > 0)
		uv_timer_start(&c->timer, on_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

static void drain(int fd, struct buffer *b, int *open, char **fail)
{
	char chunk[65536];
	ssize_t n = read(fd, chunk, sizeof chunk);
	if (n > 0) {
		if (buffer_putlstring(b, chunk, (size_t)n) < 0 && !*fail)
			*fail = xasprintf("it wrote more than %u bytes", CLUSTER_CMD_OUTPUT_CAP);
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		*open = 0;
	}
}

int cluster_cmd_run_sync(char *const *argv, int64_t timeout_ms, struct cluster_cmd_result *r)
{
	memset(r, 0, sizeof *r);
	r->exit_status = -1;
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0)
		return r->fail = xasprintf("pipe: %s", strerror(errno)), -errno;
	if (pipe2(pe, O_CLOEXEC) < 0) {
		int e = errno;
		close(po[0]);
		close(po[1]);
		return r->fail = xasprintf("pipe: %s", strerror(e)), -e;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	pid_t pid;
	int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	close(pe[1]);
	struct buffer out, err;
	buffer_init(&out, CLUSTER_CMD_OUTPUT_CAP);
	buffer_init(&err, CLUSTER_CMD_OUTPUT_CAP);
	char *fail = NULL;
	if (e != 0) {
		close(po[0]);
		close(pe[0]);
		r->fail = xasprintf("cannot run %s: %s", argv[0], strerror(e));
		r->out = xstrdup("");
		r->err = xstrdup("");
		return -e;
	}
	int oo = 1, eo = 1, killed = 0;
	int64_t deadline = time_monotonic_us() + timeout_ms * 1000;
	while (oo || eo) {
		struct pollfd p[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
		int64_t left = (deadline - time_monotonic_us()) / 1000;
		if (left <= 0) {
			kill(pid, SIGKILL);
			killed = 1;
			break;
		}
		if (!oo)
			p[0].fd = -1;
		if (!eo)
			p[1].fd = -1;
		if (poll(p, 2, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
			break;
		if (oo && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			drain(po[0], &out, &oo, &fail);
		if (eo && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			drain(pe[0], &err, &eo, &fail);
	}
	close(po[0]);
	close(pe[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (killed && !fail)
		fail = xstrdup("it did not finish in time and was killed");
	if (WIFEXITED(st))
		r->exit_status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		r->term_signal = WTERMSIG(st);
	r->out = buffer_steal(&out, NULL);
	r->err = buffer_steal(&err, NULL);
	r->fail = fail;
	return 0;
}

void cluster_cmd_result_free(struct cluster_cmd_result *r)
{
	free((char *)r->out);
	free((char *)r->err);
	free((char *)r->fail);
	memset(r, 0, sizeof *r);
}

const char *cluster_cmd_first_line(const char *text, char line[CLUSTER_CMD_LINE])
{
	if (!text)
		text = "";
	while (*text == ' ' || *text == '\n' || *text == '\t' || *text == '\r')
		text++;
	size_t n = strcspn(text, "\n");
	if (n > CLUSTER_CMD_LINE - 1)
		n = CLUSTER_CMD_LINE - 1;
	memcpy(line, text, n);
	line[n] = 0;
	while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\r'))
		line[--n] = 0;
	return line;
}
