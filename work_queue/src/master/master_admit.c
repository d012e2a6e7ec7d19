/* master_admit.c: admission of new connections on the Work Queue master
 * (doc/work-queue-protocol.md 2.4 and 7.1): connections that have not finished the handshake are
 * counted per peer address and in all, and when a limit is reached the oldest silent one (no byte
 * received) makes room for the newcomer; refusals and evictions are logged at a limited rate with
 * a periodic sum of the lines suppressed. Workers past the handshake are never counted. */
#include "master_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <uthash.h>
#include <utlist.h>

#include "debug.h"
#include "wq_conn.h"
#include "xalloc.h"
#include "banned.h"

#define ADMIT_PER_ADDR   64    /* connections in handshake from one address */
#define ADMIT_TOTAL      256   /* connections in handshake in all */
#define ADMIT_LOG_WINDOW 10000 /* ms: log window of the refusal lines */
#define ADMIT_LOG_LINES  3     /* lines per window; the rest are summed up */

struct master_admit_addr {
	char ip[48];
	int n;
	UT_hash_handle hh;
};

static struct master_admit_addr *addr_find(struct master_admit *a, const char *ip)
{
	struct master_admit_addr *e = NULL;
	HASH_FIND_STR(a->by_addr, ip, e);
	return e;
}

/* Ends the current log window when it is over: the lines dropped in it are summed up. */
static void log_window(struct work_queue *q)
{
	struct master_admit *a = &q->admit;
	uint64_t now = uv_now(q->loop);
	if (now - a->log_start < ADMIT_LOG_WINDOW)
		return;
	if (a->suppressed)
		warn("wq: ... %u more suppressed (connections refused or closed by the handshake "
		     "limits in the last %d s)",
		     a->suppressed, ADMIT_LOG_WINDOW / 1000);
	a->log_start = now;
	a->log_lines = 0;
	a->suppressed = 0;
}

static void admit_log(struct work_queue *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void admit_log(struct work_queue *q, const char *fmt, ...)
{
	struct master_admit *a = &q->admit;
	log_window(q);
	if (a->log_lines >= ADMIT_LOG_LINES) {
		a->suppressed++;
		return;
	}
	a->log_lines++;
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	warn("wq: %s", text);
}

/* The oldest connection in handshake that has sent nothing, from IP (any address if NULL). Only
 * the connections counted are looked at (at most ADMIT_TOTAL), not every worker. */
static struct mworker *oldest_silent(struct work_queue *q, const char *ip)
{
	q->admit.silent_lookups++;
	for (struct mworker *w = q->admit.hs_list; w; w = w->hs_next) { /* oldest first */
		q->admit.silent_examined++;
		if (w->state == MW_HANDSHAKE && w->c && wq_conn_bytes_received(w->c) == 0 &&
		    (!ip || !strcmp(w->ip, ip)))
			return w;
	}
	return NULL;
}

bool master_admit_room(struct work_queue *q, const char *ip)
{
	struct master_admit *a = &q->admit;
	struct master_admit_addr *e = addr_find(a, ip);
	bool addr_full = e && e->n >= ADMIT_PER_ADDR;
	if (!addr_full && a->total < ADMIT_TOTAL)
		return true;
	struct mworker *v = oldest_silent(q, addr_full ? ip : NULL);
	char why[128];
	if (addr_full)
		snprintf(why, sizeof why, "%d connections from %s have not finished the handshake",
		         e->n, ip);
	else
		snprintf(why, sizeof why, "%d connections have not finished the handshake",
		         a->total);
	if (!v) {
		admit_log(q, "refused a connection from %s: %s (limit %d), none of them silent", ip,
		          why, addr_full ? ADMIT_PER_ADDR : ADMIT_TOTAL);
		return false;
	}
	admit_log(q,
	          "closed a silent connection from %s (no byte in %.1f s) for one from %s: %s "
	          "(limit %d)",
	          v->addr, (double)(uv_now(q->loop) - v->accepted_ms) / 1000.0, ip, why,
	          addr_full ? ADMIT_PER_ADDR : ADMIT_TOTAL);
	master_admit_release(v);
	v->state = MW_CLOSING;
	wq_conn_close_now(v->c);
	return true;
}

void master_admit_add(struct mworker *w)
{
	struct master_admit *a = &w->q->admit;
	struct master_admit_addr *e = addr_find(a, w->ip);
	if (!e) {
		e = xcalloc(1, sizeof *e);
		snprintf(e->ip, sizeof e->ip, "%s", w->ip);
		HASH_ADD_STR(a->by_addr, ip, e);
	}
	e->n++;
	a->total++;
	w->hs_counted = true;
	DL_APPEND2(a->hs_list, w, hs_prev, hs_next);
	w->accepted_ms = uv_now(w->q->loop);
}

void master_admit_release(struct mworker *w)
{
	if (!w->hs_counted)
		return;
	w->hs_counted = false;
	struct master_admit *a = &w->q->admit;
	DL_DELETE2(a->hs_list, w, hs_prev, hs_next);
	a->total--;
	struct master_admit_addr *e = addr_find(a, w->ip);
	if (e && --e->n <= 0) {
		HASH_DEL(a->by_addr, e);
		free(e);
	}
}

void master_admit_tick(struct work_queue *q)
{
	log_window(q);
	wq_conn_warn_flush(NULL);
}

void master_admit_free(struct work_queue *q)
{
	if (q->admit.suppressed)
		warn("wq: ... %u more suppressed (connections refused or closed by the handshake "
		     "limits)",
		     q->admit.suppressed);
	struct master_admit_addr *e, *tmp;
	HASH_ITER(hh, q->admit.by_addr, e, tmp)
	{
		HASH_DEL(q->admit.by_addr, e);
		free(e);
	}
}
