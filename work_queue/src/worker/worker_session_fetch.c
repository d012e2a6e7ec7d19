/* worker_session_fetch.c: URL inputs of the tasks on a work_queue_worker connection
 * (doc/work-queue-protocol.md sections 5.5 and 5.6): downloads asked of worker_fetch, the
 * objects they store linked into the waiting tasks' sandboxes and announced with cache_have, and
 * input_missing for a task whose download failed. Split from worker_session.c;
 * worker_session_internal.h holds what they share. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uthash.h>

#include "debug.h"
#include "timeutil.h"
#include "worker_conn_internal.h"
#include "worker_fetch.h"
#include "worker_session_internal.h"
#include "worker_shared_session.h"
#include "worker_task.h"
#include "worker_cache.h"
#include "wq_msg.h"
#include "worker_sandbox.h"

#include "banned.h"

/* `task_done` with outcome input_missing for input I of T, then T is forgotten. */
static void fail_input(struct wtask *t, size_t i, const char *text)
{
	struct worker_session *s = t->s;
	char *shown = wq_msg_escape(text, strlen(text), WQ_TEXT_RECV_MAX, false);
	warn("task %lld: input %s: %s", (long long)t->id, t->msg->inputs[i].name, shown);
	free(shown);
	size_t n = wq_msg_utf8_cut(text, strlen(text), WQ_TEXT_SEND_MAX);
	json_t *jt = json_stringn(text, n);
	json_t *times = json_pack("{s:I,s:I}", "received", (json_int_t)t->t_received, "reported",
	                          (json_int_t)time_now_us());
	ws_send(s,
	        json_pack("{s:s,s:I,s:I,s:s,s:{s:I,s:o},s:o}", "m", "task_done", "id",
	                  (json_int_t)t->id, "try", (json_int_t)t->try_, "outcome", "input_missing",
	                  "missing", "input", (json_int_t)i, "text",
	                  jt ? jt : json_string("the URL could not be fetched"), "times", times));
	ws_task_free(t);
	ws_task_finished(s);
	ws_check_drained(s);
}

/* A download ended: tasks waiting for OBJECT get it linked (and start when it was their last
 * input) or end with input_missing; the master learns of a new object through cache_have. */
static void fetched(const char *object, int status, uint64_t size, const char *text, void *arg)
{
	struct worker_session *s = arg;
	struct worker *w = W(s);
	if (status == 0) {
		worker_ledger_set_cache(worker_ledger(w),
		                        (int64_t)(worker_cache_bytes(worker_conn_cache(w)) >> 20));
		json_t *objs = json_pack("[[s,I]]", object, (json_int_t)size);
		ws_send(s,
		        json_pack("{s:s,s:o,s:b}", "m", "cache_have", "objects", objs, "last", 1));
	}
	struct wtask *t, *tmp;
	HASH_ITER(hh, s->tasks, t, tmp)
	{
		if (t->state != WT_STAGING || t->cancelled || !t->sb)
			continue;
		size_t first = SIZE_MAX;
		for (size_t i = 0; i < t->msg->ninputs; i++) {
			const struct wq_task_input *in = &t->msg->inputs[i];
			if (in->from != WQ_FROM_URL || t->have_input[i] ||
			    strcmp(in->object, object))
				continue;
			if (status != 0)
				t->fetching[i] =
				    false; /* the download that failed was this want's */
			if (first == SIZE_MAX)
				first = i;
		}
		if (first == SIZE_MAX)
			continue;
		if (status != 0) {
			fail_input(t, first, text);
			continue;
		}
		int err = 0;
		for (size_t i = first; !err && i < t->msg->ninputs; i++) {
			const struct wq_task_input *in = &t->msg->inputs[i];
			if (in->from != WQ_FROM_URL || t->have_input[i] ||
			    strcmp(in->object, object))
				continue;
			if (t->fetching[i]) {
				t->fetching[i] = false;
				worker_fetch_release(ws_priv(s)->fetch, object);
			}
			err = ws_link_cache_input(t, i);
			if (!err) {
				t->have_input[i] = true;
				t->inputs_pending--;
			}
		}
		if (err || t->inputs_pending == 0)
			ws_inputs_in_place(t, err);
	}
}

/* Asks for every URL input of T that is not in the cache. */
void ws_start_fetches(struct wtask *t)
{
	struct worker_session *s = t->s;
	struct worker *w = W(s);
	struct session_priv *sp = ws_priv(s);
	if (!sp->fetch) {
		sp->fetch =
		    worker_fetch_create(worker_loop(w), worker_conn_cache(w), NULL, fetched, s);
		struct worker_shared *sh = worker_conn_shared(w);
		if (sh)
			worker_fetch_set_store(sp->fetch, worker_shared_store(sh));
	}
	struct worker_ledger *l = worker_ledger(w);
	worker_ledger_refresh_disk(l);
	int64_t room = worker_ledger_disk_full(l)
	                   ? 0
	                   : worker_ledger_disk_free(l) * (int64_t)1048576 -
	                         (int64_t)worker_cache_reserved(worker_conn_cache(w));
	for (size_t i = 0; i < t->msg->ninputs; i++) {
		if (!t->fetching[i])
			continue;
		const struct wq_task_input *in = &t->msg->inputs[i];
		if (worker_fetch_want_shared(sp->fetch, in->url, in->object,
		                             room > 0 ? (uint64_t)room : 0, in->validated) < 0)
			t->fetching[i] = false; /* cannot happen: the message was validated */
		debug(D_WORKER, "task %lld.%lld: input %s from %s", (long long)t->id,
		      (long long)t->try_, in->name, in->url);
	}
}
