/* makeflow_monitor_run.c: makeflow_monitor's loop (see makeflow_monitor_run.h). One libuv
 * timer fires at the interval; each firing reads what was appended to every log, and shows the
 * logs that are still shown. SIGINT and SIGTERM end it normally. */
#include "makeflow_monitor_run.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "debug.h"
#include "makeflow_monitor_view.h"
#include "timeutil.h"
#include "txlog_read.h"
#include "xalloc.h"
#include "banned.h"

struct watched {
	const char *path;
	struct txlog_reader *rd;
	int hidden;
	int lines; /* lines read when last shown, to see a change */
	int runs, ended;
};

struct monitor {
	const struct makeflow_monitor_opts *o;
	FILE *out;
	int tty;
	struct watched *logs;
	struct watched **order;
	int shown_once;
	int result;
	char *err;
	size_t errlen;
	uv_timer_t timer;
	uv_signal_t sigint, sigterm;
};

static int by_progress(const void *a, const void *b)
{
	double x = makeflow_monitor_fraction((*(struct watched *const *)a)->rd);
	double y = makeflow_monitor_fraction((*(struct watched *const *)b)->rd);
	return (x > y) - (x < y);
}

/* Reads the new part of every shown log. 0, or an error (ERR set). A log not there yet is
 * waited for, except by --once. */
static int read_logs(struct monitor *m, int *changed)
{
	for (int i = 0; i < m->o->nlogs; i++) {
		struct watched *w = &m->logs[i];
		if (w->hidden)
			continue;
		int r = txlog_reader_read_file(w->rd, w->path);
		if (r == -ENOENT && !m->o->once) {
			debug(D_LOG, "%s: not there yet", w->path);
			continue;
		}
		if (r < 0) {
			snprintf(m->err, m->errlen, "%s", txlog_reader_error(w->rd));
			return r;
		}
		const struct txlog_progress *p = txlog_reader_progress(w->rd);
		int lines = txlog_reader_lines(w->rd);
		if (lines != w->lines || p->runs != w->runs || p->ended != w->ended)
			*changed = 1;
		w->lines = lines;
		w->runs = p->runs;
		w->ended = p->ended;
	}
	return 0;
}

static void stop(struct monitor *m)
{
	uv_timer_stop(&m->timer);
	uv_close((uv_handle_t *)&m->timer, NULL);
	uv_close((uv_handle_t *)&m->sigint, NULL);
	uv_close((uv_handle_t *)&m->sigterm, NULL);
}

static void show(struct monitor *m)
{
	int n = 0;
	for (int i = 0; i < m->o->nlogs; i++)
		if (!m->logs[i].hidden)
			m->order[n++] = &m->logs[i];
	if (m->o->sort)
		qsort(m->order, (size_t)n, sizeof *m->order, by_progress);
	if (m->tty)
		fputs("\033[H\033[2J", m->out);
	int64_t now = time_now_us();
	for (int i = 0; i < n; i++) {
		struct watched *w = m->order[i];
		if (m->o->hide_finished && txlog_reader_progress(w->rd)->ended) {
			w->hidden = 1;
			continue;
		}
		makeflow_monitor_view(m->out, w->path, w->rd, now);
	}
	fflush(m->out);
}

static int all_hidden(const struct monitor *m)
{
	for (int i = 0; i < m->o->nlogs; i++)
		if (!m->logs[i].hidden)
			return 0;
	return 1;
}

static void on_tick(uv_timer_t *t)
{
	struct monitor *m = t->data;
	int changed = !m->shown_once;
	int r = read_logs(m, &changed);
	if (r < 0) {
		m->result = r;
		stop(m);
		return;
	}
	if (m->tty || changed)
		show(m);
	m->shown_once = 1;
	if (m->o->once || (m->o->hide_finished && all_hidden(m)))
		stop(m);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct monitor *m = s->data;
	debug(D_LOG, "signal %d: stopping", signum);
	stop(m);
}

int makeflow_monitor_run(const struct makeflow_monitor_opts *o, FILE *out, char *err, size_t errlen)
{
	struct monitor m = {.o = o, .out = out, .err = err, .errlen = errlen};
	m.tty = isatty(fileno(out));
	m.logs = xcalloc((size_t)o->nlogs, sizeof *m.logs);
	m.order = xcalloc((size_t)o->nlogs, sizeof *m.order);
	for (int i = 0; i < o->nlogs; i++) {
		m.logs[i].path = o->logs[i];
		m.logs[i].rd = txlog_reader_create(o->logs[i], NULL, NULL);
		m.logs[i].lines = -1;
	}
	uv_loop_t loop;
	uv_loop_init(&loop);
	uv_timer_init(&loop, &m.timer);
	m.timer.data = &m;
	uv_signal_init(&loop, &m.sigint);
	uv_signal_init(&loop, &m.sigterm);
	m.sigint.data = m.sigterm.data = &m;
	uv_signal_start(&m.sigint, on_signal, SIGINT);
	uv_signal_start(&m.sigterm, on_signal, SIGTERM);
	uint64_t every = (uint64_t)(o->interval * 1000.0 + 0.5);
	uv_timer_start(&m.timer, on_tick, 0, every ? every : 1);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	for (int i = 0; i < o->nlogs; i++)
		txlog_reader_delete(m.logs[i].rd);
	free(m.logs);
	free(m.order);
	return m.result;
}
