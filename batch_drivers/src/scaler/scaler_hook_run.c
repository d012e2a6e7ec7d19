/* scaler_hook_run.c: one run of the --scaler-hook command on the loop (scaler_hook_run.h). */
#include "scaler_hook_run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "scaler_hook.h"
#include "xalloc.h"

#include "banned.h"

struct hook {
	uv_process_t proc;
	uv_pipe_t pipes[3];
	uv_timer_t timer;
	uv_write_t wreq;
	char chunk[16384]; /* read buffer of both output pipes (each read is copied at once) */
	char *input;
	struct buffer out, err;
	int handles; /* handles still to close */
	int streams; /* output pipes still open */
	int exited, status, sig;
	int reported;
	char *fail;
	scaler_hook_fn cb;
	void *arg;
};

static void on_closed(uv_handle_t *h)
{
	struct hook *k = h->data;
	if (--k->handles > 0)
		return;
	buffer_free(&k->out);
	buffer_free(&k->err);
	free(k->input);
	free(k->fail);
	free(k);
}

static void close_one(struct hook *k, uv_handle_t *h)
{
	(void)k; /* h->data is k, for on_closed */
	if (!uv_is_closing(h))
		uv_close(h, on_closed);
}

static void report(struct hook *k)
{
	if (k->reported)
		return;
	k->reported = 1;
	if (!k->fail && k->exited && (k->sig || k->status != 0))
		k->fail = k->sig ? xasprintf("it was ended by signal %d", k->sig)
		                 : xasprintf("it exited with status %d", k->status);
	struct scaler_hook_result r = {buffer_tostring(&k->out), buffer_tostring(&k->err), k->fail};
	k->cb(&r, k->arg);
	uv_timer_stop(&k->timer);
	for (int i = 0; i < 3; i++)
		close_one(k, (uv_handle_t *)&k->pipes[i]);
	close_one(k, (uv_handle_t *)&k->timer);
	if (k->exited)
		close_one(k, (uv_handle_t *)&k->proc);
}

static void maybe_done(struct hook *k)
{
	if (k->exited && k->streams == 0)
		report(k);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	struct hook *k = p->data;
	k->exited = 1;
	k->status = (int)status;
	k->sig = sig;
	if (k->reported)
		close_one(k, (uv_handle_t *)&k->proc);
	else
		maybe_done(k);
}

static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *b)
{
	(void)want;
	struct hook *k = h->data;
	*b = uv_buf_init(k->chunk, sizeof k->chunk);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct hook *k = s->data;
	if (n > 0) {
		struct buffer *to = s == (uv_stream_t *)&k->pipes[1] ? &k->out : &k->err;
		if (buffer_putlstring(to, b->base, (size_t)n) < 0 && !k->fail) {
			k->fail =
			    xasprintf("it printed more than %d bytes", SCALER_HOOK_MAX_OUTPUT);
			uv_kill(-k->proc.pid, SIGKILL);
		}
		return;
	}
	if (n < 0) {
		uv_read_stop(s);
		k->streams--;
		maybe_done(k);
	}
}

static void on_timeout(uv_timer_t *t)
{
	struct hook *k = t->data;
	if (!k->fail)
		k->fail = xstrdup("it did not answer in time and was killed");
	uv_kill(-k->proc.pid, SIGKILL);
	report(k); /* at once: a grandchild may hold the pipes */
}

static void on_written(uv_write_t *w, int status)
{
	(void)status; /* a hook that does not read its input gets EPIPE: not an error here */
	struct hook *k = w->data;
	close_one(k, (uv_handle_t *)&k->pipes[0]);
}

int scaler_hook_run(uv_loop_t *loop, const char *cmd, const char *input, double timeout_s,
                    scaler_hook_fn cb, void *arg)
{
	struct hook *k = xcalloc(1, sizeof *k);
	k->cb = cb;
	k->arg = arg;
	buffer_init(&k->out, SCALER_HOOK_MAX_OUTPUT);
	buffer_init(&k->err, SCALER_HOOK_MAX_OUTPUT);
	uv_stdio_container_t stdio[3];
	for (int i = 0; i < 3; i++) {
		uv_pipe_init(loop, &k->pipes[i], 0);
		k->pipes[i].data = k;
		stdio[i].flags = UV_CREATE_PIPE | (i == 0 ? UV_READABLE_PIPE : UV_WRITABLE_PIPE);
		stdio[i].data.stream = (uv_stream_t *)&k->pipes[i];
	}
	uv_timer_init(loop, &k->timer);
	k->timer.data = k;
	k->handles = 5;
	char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
	uv_process_options_t o;
	memset(&o, 0, sizeof o);
	o.file = argv[0];
	o.args = argv;
	o.stdio = stdio;
	o.stdio_count = 3;
	o.exit_cb = on_exit_cb;
	o.flags = UV_PROCESS_DETACHED; /* its own process group, killed whole at the limit */
	k->proc.data = k;
	int r = uv_spawn(loop, &k->proc, &o);
	if (r < 0) {
		k->reported = 1; /* the process handle is closed too, as libuv wants */
		for (int i = 0; i < 3; i++)
			close_one(k, (uv_handle_t *)&k->pipes[i]);
		close_one(k, (uv_handle_t *)&k->timer);
		close_one(k, (uv_handle_t *)&k->proc);
		return r;
	}
	k->streams = 2;
	for (int i = 1; i < 3; i++)
		uv_read_start((uv_stream_t *)&k->pipes[i], on_alloc, on_read);
	k->input = xstrdup(input ? input : "");
	uv_buf_t b = uv_buf_init(k->input, (unsigned)strlen(k->input));
	k->wreq.data = k;
	if (uv_write(&k->wreq, (uv_stream_t *)&k->pipes[0], &b, 1, on_written) < 0)
		close_one(k, (uv_handle_t *)&k->pipes[0]);
	uv_timer_start(&k->timer, on_timeout, (uint64_t)(timeout_s * 1000), 0);
	return 0;
}
