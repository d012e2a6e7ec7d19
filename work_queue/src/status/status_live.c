/* status_live.c: the refreshing view of work_queue_status --live. One libuv loop: a timer starts
 * a round of four status queries (master, workers, tasks, categories) one after the other; when
 * the last reply arrives the frame is drawn and the timer armed again. q on the input, SIGINT
 * and SIGTERM stop the loop; a failed query after the first frame means the master went away. */
#include "status_live.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "htc_error.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

/* The largest frame drawn (a master with thousands of tasks and categories). */
#define STATUS_LIVE_MAX_FRAME (1 << 20)

static int64_t int_of(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_real(v))
		return (int64_t)json_real_value(v);
	return 0;
}

static double num_of(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : 0;
}

static const char *str_of(const json_t *o, const char *k, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : dflt;
}

/* Tasks by state, in the order a task goes through them. */
static const char *const task_states[] = {"WAITING",   "RUNNING", "WAITING_RETRIEVAL",
                                          "RETRIEVED", "DONE",    NULL};

static int tasks_by_state(struct buffer *out, const json_t *tasks)
{
	long counts[8] = {0}, other = 0;
	size_t i;
	json_t *t;
	json_array_foreach(tasks, i, t)
	{
		const char *st = str_of(t, "state", "");
		int k = 0;
		while (task_states[k] && strcmp(task_states[k], st) != 0)
			k++;
		if (task_states[k])
			counts[k]++;
		else
			other++;
	}
	int rc = buffer_printf(out, "tasks by state:");
	for (int k = 0; task_states[k] && rc == 0; k++)
		rc = buffer_printf(out, " %s %ld", task_states[k], counts[k]);
	if (rc == 0 && other)
		rc = buffer_printf(out, " other %ld", other);
	return rc ?: buffer_putstring(out, "\n");
}

static int categories(struct buffer *out, const json_t *cats)
{
	int rc = buffer_printf(out, "%-20s %8s %8s %8s %8s %11s\n", "CATEGORY", "WAITING",
	                       "RUNNING", "DONE", "FAILED", "EXHAUSTIONS");
	size_t i;
	json_t *c;
	json_array_foreach(cats, i, c)
	{
		if (rc)
			break;
		rc = buffer_printf(out, "%-20.20s %8lld %8lld %8lld %8lld %11lld\n",
		                   str_of(c, "name", "?"), (long long)int_of(c, "waiting"),
		                   (long long)int_of(c, "running"), (long long)int_of(c, "done"),
		                   (long long)int_of(c, "failed"),
		                   (long long)int_of(c, "exhaustions"));
	}
	if (rc == 0 && json_array_size(cats) == 0)
		rc = buffer_putstring(out, "(no categories)\n");
	return rc;
}

static int workers(struct buffer *out, const json_t *ws)
{
	int rc = buffer_printf(out, "%-20s %-22s %-8s %6s %13s %17s\n", "WORKER HOST", "ADDRESS",
	                       "STATE", "TASKS", "CORES USED", "MEMORY USED MB");
	size_t i, n = json_array_size(ws);
	json_t *w;
	json_array_foreach(ws, i, w)
	{
		if (rc || i >= STATUS_LIVE_MAX_WORKERS)
			break;
		const json_t *tot = json_object_get(w, "total"),
		             *use = json_object_get(w, "in_use");
		char cores[32], mem[40];
		snprintf(cores, sizeof cores, "%g/%g", num_of(use, "cores"), num_of(tot, "cores"));
		snprintf(mem, sizeof mem, "%lld/%lld", (long long)int_of(use, "memory"),
		         (long long)int_of(tot, "memory"));
		rc = buffer_printf(out, "%-20.20s %-22.22s %-8.8s %6lld %13s %17s\n",
		                   str_of(w, "host", "?"), str_of(w, "address", "?"),
		                   str_of(w, "state", "?"), (long long)int_of(w, "tasks_running"),
		                   cores, mem);
	}
	if (rc == 0 && n > STATUS_LIVE_MAX_WORKERS)
		rc = buffer_printf(out, "... and %zu more workers\n", n - STATUS_LIVE_MAX_WORKERS);
	if (rc == 0 && n == 0)
		rc = buffer_putstring(out, "(no workers)\n");
	return rc;
}

int status_live_frame(struct buffer *out, const char *host, int port,
                      const struct status_live_sample *s, struct status_live_prev *prev)
{
	const json_t *m = json_array_get(s->master, 0);
	int64_t done = int_of(m, "tasks_done");
	int64_t started = int_of(m, "started");
	char when[32] = "?";
	time_t now = (time_t)(s->now_us / 1000000);
	struct tm tm;
	if (localtime_r(&now, &tm))
		strftime(when, sizeof when, "%H:%M:%S", &tm);
	char up[32] = "-";
	if (started > 0 && s->now_us > started)
		time_format_duration((s->now_us - started) / 1000000, up, sizeof up);
	char recent[48] = "-";
	if (prev->have && s->now_us > prev->at_us)
		snprintf(recent, sizeof recent, "%.2f",
		         (double)(done - prev->done) / ((double)(s->now_us - prev->at_us) / 1e6));
	char overall[48] = "-";
	if (started > 0 && s->now_us > started)
		snprintf(overall, sizeof overall, "%.2f",
		         (double)done / ((double)(s->now_us - started) / 1e6));
	prev->have = 1;
	prev->done = done;
	prev->at_us = s->now_us;
	int rc = buffer_printf(out, "master %s:%d  project %s  %s  up %s  at %s\n", host, port,
	                       str_of(m, "project", "-"), str_of(m, "version", "?"), up, when);
	rc = rc
	         ?: buffer_printf(out,
	                          "workers: %lld connected (%lld init, %lld idle, %lld busy); "
	                          "%lld joined, %lld removed, %lld lost\n",
	                          (long long)int_of(m, "workers_connected"),
	                          (long long)int_of(m, "workers_init"),
	                          (long long)int_of(m, "workers_idle"),
	                          (long long)int_of(m, "workers_busy"),
	                          (long long)int_of(m, "workers_joined"),
	                          (long long)int_of(m, "workers_removed"),
	                          (long long)int_of(m, "workers_lost"));
	rc =
	    rc
	        ?: buffer_printf(out,
	                         "tasks: %lld waiting, %lld running, %lld with results, %lld done, "
	                         "%lld failed, %lld cancelled\n",
	                         (long long)int_of(m, "tasks_waiting"),
	                         (long long)int_of(m, "tasks_running"),
	                         (long long)int_of(m, "tasks_with_results"), (long long)done,
	                         (long long)int_of(m, "tasks_failed"),
	                         (long long)int_of(m, "tasks_cancelled"));
	rc = rc
	         ?: buffer_printf(out,
	                          "rates: %s tasks done/s since the last refresh, %s since the "
	                          "start\n",
	                          recent, overall);
	rc = rc
	         ?: buffer_printf(out, "cores %g/%g committed, memory %lld/%lld MB committed\n",
	                          num_of(m, "committed_cores"), num_of(m, "total_cores"),
	                          (long long)int_of(m, "committed_memory"),
	                          (long long)int_of(m, "total_memory"));
	rc = rc ?: tasks_by_state(out, s->tasks);
	rc = rc ?: buffer_putstring(out, "\n");
	rc = rc ?: categories(out, s->categories);
	rc = rc ?: buffer_putstring(out, "\n");
	rc = rc ?: workers(out, s->workers);
	return rc;
}

/* ---- the loop ---- */

static const char *const queries[] = {"master", "workers", "tasks", "categories"};
#define NQUERIES 4

struct live {
	const struct status_live_opts *o;
	uv_loop_t loop;
	uv_timer_t timer;
	uv_signal_t sigint, sigterm;
	uv_tty_t tty_in;
	uv_pipe_t pipe_in;
	int input; /* 0 none, 1 tty, 2 pipe */
	struct wq_status_query *inflight;
	json_t *replies[NQUERIES];
	int next;
	int frames;
	struct status_live_prev prev;
	enum status_live_end end;
	char *msg;
	size_t msglen;
	int stopped;
};

static void stop(struct live *l, enum status_live_end end, const char *fmt, const char *arg)
{
	if (l->stopped)
		return;
	l->stopped = 1;
	l->end = end;
	snprintf(l->msg, l->msglen, fmt, arg ? arg : "");
	wq_status_query_cancel(l->inflight);
	l->inflight = NULL;
	uv_stop(&l->loop);
}

static void start_query(struct live *l);

static void on_timer(uv_timer_t *t)
{
	start_query(t->data);
}

static void draw(struct live *l)
{
	struct buffer b;
	buffer_init(&b, STATUS_LIVE_MAX_FRAME);
	struct status_live_sample s = {
	    .master = l->replies[0],
	    .workers = l->replies[1],
	    .tasks = l->replies[2],
	    .categories = l->replies[3],
	    .now_us = time_now_us(),
	};
	if (l->o->tty)
		buffer_putstring(&b, "\033[H\033[2J"); /* home, clear: redraw in place */
	else if (l->frames)
		buffer_putstring(&b, "\n");
	status_live_frame(&b, l->o->host, l->o->port, &s, &l->prev);
	if (l->o->tty)
		buffer_putstring(&b, "\n(q: quit)\n");
	else
		buffer_putstring(&b, "--\n");
	fwrite(buffer_tostring(&b), 1, buffer_len(&b), l->o->out);
	fflush(l->o->out);
	buffer_free(&b);
	l->frames++;
}

static void on_reply(json_t *items, const char *err, void *arg)
{
	struct live *l = arg;
	l->inflight = NULL;
	if (!items) {
		if (l->frames)
			stop(l, STATUS_LIVE_GONE, "the master went away (%s)", err);
		else
			stop(l, STATUS_LIVE_ERROR, "%s", err);
		return;
	}
	json_decref(l->replies[l->next]);
	l->replies[l->next++] = items;
	if (l->next < NQUERIES) {
		start_query(l);
		return;
	}
	l->next = 0;
	draw(l);
	uv_timer_start(&l->timer, on_timer, (uint64_t)(l->o->interval_s * 1000), 0);
}

static void start_query(struct live *l)
{
	char *err = NULL;
	l->inflight = wq_status_query_start(&l->loop, l->o->host, l->o->port, queries[l->next],
	                                    l->o->q, on_reply, l, &err);
	if (!l->inflight) {
		stop(l, l->frames ? STATUS_LIVE_GONE : STATUS_LIVE_ERROR, "%s", err);
		free(err);
	}
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)signum;
	stop(h->data, STATUS_LIVE_SIGNAL, "interrupted%s", "");
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	buf->base = xmalloc(64);
	buf->len = 64;
}

static void on_input(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct live *l = s->data;
	for (ssize_t i = 0; i < n; i++) {
		char c = buf->base[i];
		if (c == 'q' || c == 'Q')
			stop(l, STATUS_LIVE_QUIT, "quit%s", "");
		else if (c == 3) /* Ctrl-C on a terminal in raw mode */
			stop(l, STATUS_LIVE_SIGNAL, "interrupted%s", "");
	}
	if (n < 0) /* end of the input: keep refreshing, stop reading it */
		uv_read_stop(s);
	free(buf->base);
}

static void on_close(uv_handle_t *h)
{
	(void)h;
}

static void close_all(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, on_close);
}

/* The input where q is read: a terminal in raw mode (so q needs no Enter), or a pipe or file. */
static void open_input(struct live *l)
{
	int fd = l->o->input_fd;
	if (fd < 0)
		return;
	uv_handle_type t = uv_guess_handle(fd);
	if (t == UV_TTY && uv_tty_init(&l->loop, &l->tty_in, fd, 1) == 0) {
		l->input = 1;
		l->tty_in.data = l;
		uv_tty_set_mode(&l->tty_in, UV_TTY_MODE_RAW);
		uv_read_start((uv_stream_t *)&l->tty_in, on_alloc, on_input);
	} else if (t == UV_NAMED_PIPE && uv_pipe_init(&l->loop, &l->pipe_in, 0) == 0) {
		if (uv_pipe_open(&l->pipe_in, fd) == 0) {
			l->input = 2;
			l->pipe_in.data = l;
			uv_read_start((uv_stream_t *)&l->pipe_in, on_alloc, on_input);
		} else {
			uv_close((uv_handle_t *)&l->pipe_in, on_close);
		}
	}
}

enum status_live_end status_live_run(const struct status_live_opts *o, char *msg, size_t msglen)
{
	struct live *l = xcalloc(1, sizeof *l);
	l->o = o;
	l->msg = msg;
	l->msglen = msglen;
	msg[0] = 0;
	uv_loop_init(&l->loop);
	uv_timer_init(&l->loop, &l->timer);
	l->timer.data = l;
	uv_signal_init(&l->loop, &l->sigint);
	uv_signal_init(&l->loop, &l->sigterm);
	l->sigint.data = l->sigterm.data = l;
	uv_signal_start(&l->sigint, on_signal, SIGINT);
	uv_signal_start(&l->sigterm, on_signal, SIGTERM);
	open_input(l);
	start_query(l);
	if (!l->stopped)
		uv_run(&l->loop, UV_RUN_DEFAULT);
	if (l->input == 1)
		uv_tty_reset_mode();
	wq_status_query_cancel(l->inflight);
	uv_walk(&l->loop, close_all, NULL);
	uv_run(&l->loop, UV_RUN_DEFAULT);
	uv_loop_close(&l->loop);
	for (int i = 0; i < NQUERIES; i++)
		json_decref(l->replies[i]);
	enum status_live_end end = l->end;
	free(l);
	return end;
}
