/* engine_status_page.c: --file-status FILE: the HTML status page CCTools makeflow keeps
 * (counts of rules, project, owner, time since the start, batch type, and a bar of the shares
 * of waiting, running, completed and other rules), rewritten whole at the start, every
 * --file-status-interval seconds (default 5) and at the end; and the refreshes of the --report
 * page while the run goes. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "engine_internal.h"
#include "htc_error.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

struct engine_status_page {
	uv_timer_t timer;
	int warned; /* a failed write was reported once */
};

static double pct(int64_t n, int64_t total)
{
	return total > 0 ? 100.0 * (double)n / (double)total : 0;
}

void engine_status_page_write(struct engine *e)
{
	if (!e->opt->file_status_path)
		return;
	int64_t total = e->dag->nnodes;
	int64_t running = e->n_running;
	int64_t waiting = total - e->n_complete - e->n_failed - e->n_aborted - running;
	int64_t other = e->n_failed + e->n_aborted;
	struct passwd *pw = getpwuid(getuid());
	int64_t secs = (time_now_us() - e->start_us) / 1000000;
	const char *type = e->opt->batch_type ? e->opt->batch_type : "local";
	char *text = xasprintf(
	    "<!DOCTYPE html>\n<html>\n<body>\n<h1>Jobs Status</h1>\n"
	    "<p>Total: %lld </p>\n<p>Running: %lld </p>\n<p>Waiting: %lld </p>\n"
	    "<p>Aborted: %lld </p>\n<p>Completed: %lld </p>\n<p>Failed: %lld </p>\n"
	    "<p>Project: %s </p>\n<p>Owner: %s </p>\n<p>Time from started: %lld seconds</p>\n"
	    "<p>Batch type: %s </p>\n"
	    "<p> Waiting (W): yellow, %.2f%%; Running (R): blue, %.2f%%</p>\n"
	    "<p> Completed (C): green, %.2f%%; Other (O): red, %.2f%%</p>\n"
	    "<table style='height:50px;width:100%%'>\n<tr>\n"
	    "<td style='background-color:#dfff33; width: %.2f%%'></td>\n"
	    "<td style='background-color:#3369ff; width: %.2f%%'></td>\n"
	    "<td style='background-color:#47ff33; width: %.2f%%'></td>\n"
	    "<td style='background-color:#ff3355; width: %.2f%%'></td>\n"
	    "</tr>\n</table>\n</body>\n</html>\n",
	    (long long)total, (long long)running, (long long)(waiting < 0 ? 0 : waiting),
	    (long long)e->n_aborted, (long long)e->n_complete, (long long)e->n_failed,
	    e->opt->project ? e->opt->project : "(null)", pw ? pw->pw_name : "unknown",
	    (long long)secs, type, pct(waiting, total), pct(running, total),
	    pct(e->n_complete, total), pct(other, total), pct(waiting, total), pct(running, total),
	    pct(e->n_complete, total), pct(other, total));
	int r = atomic_file_write(e->opt->file_status_path, text, strlen(text), 0644);
	free(text);
	if (r < 0 && (!e->status_page || !e->status_page->warned)) {
		fprintf(stderr, "makeflow: cannot write status page %s: %s\n",
		        e->opt->file_status_path, htc_strerror(r));
		if (e->status_page)
			e->status_page->warned = 1;
	}
}

static void on_timer(uv_timer_t *t)
{
	engine_status_page_write(t->data);
}

void engine_status_page_start(struct engine *e)
{
	if (!e->opt->file_status_path)
		return;
	struct engine_status_page *p = xcalloc(1, sizeof *p);
	e->status_page = p;
	uint64_t ms =
	    (uint64_t)(e->opt->file_status_interval_s > 0 ? e->opt->file_status_interval_s : 5) *
	    1000;
	uv_timer_init(&e->loop, &p->timer);
	p->timer.data = e;
	uv_timer_start(&p->timer, on_timer, ms, ms);
	engine_status_page_write(e);
}

static void page_closed(uv_handle_t *h)
{
	free(h->data);
}

static void page_free(struct engine_status_page *p)
{
	if (!p)
		return;
	p->timer.data = p;
	uv_close((uv_handle_t *)&p->timer, page_closed); /* frees P */
}

void engine_status_page_free(struct engine *e)
{
	page_free(e->status_page);
	e->status_page = NULL;
}

/* The report's generation time grows with the run (it reads the whole log): the next refresh
 * waits at least ten times as long as this one took, so that refreshes never take more than a
 * tenth of the engine's time. */
static void on_report_timer(uv_timer_t *t)
{
	struct engine *e = t->data;
	uint64_t t0 = uv_hrtime();
	e->opt->report_refresh(e->opt->report_refresh_arg);
	uint64_t took_ms = (uv_hrtime() - t0) / 1000000;
	uint64_t ms = (uint64_t)e->opt->report_interval_s * 1000;
	if (took_ms * 10 > ms)
		ms = took_ms * 10;
	uv_timer_start(t, on_report_timer, ms, 0);
}

void engine_report_page_start(struct engine *e)
{
	if (!e->opt->report_refresh || e->opt->report_interval_s <= 0)
		return;
	struct engine_status_page *p = xcalloc(1, sizeof *p);
	e->report_page = p;
	uv_timer_init(&e->loop, &p->timer);
	p->timer.data = e;
	uv_timer_start(&p->timer, on_report_timer, (uint64_t)e->opt->report_interval_s * 1000, 0);
}

void engine_report_page_free(struct engine *e)
{
	page_free(e->report_page);
	e->report_page = NULL;
}
