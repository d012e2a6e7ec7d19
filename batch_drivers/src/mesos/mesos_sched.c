/* mesos_sched.c: the framework connection of mesos_sched.h. The subscription is one streaming
 * POST whose body goes through the RecordIO parser; parsed events are queued and handled from a
 * zero timer (never from inside curl, which forbids new requests from its callbacks). A
 * heartbeat timer is restarted by every event; a broken stream leads to SUBSCRIBE again with the
 * framework id, with backoff, until reconnect_timeout. */
#include "mesos_sched.h"

#include <curl/curl.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "curl_init.h"
#include "debug.h"
#include "mesos_http.h"
#include "mesos_proto.h"
#include "mesos_recordio.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

#define CALL_TIMEOUT_MS     30000
#define DEFAULT_HEARTBEAT_S 15.0
#define BACKOFF_MIN_MS      250
#define BACKOFF_MAX_MS      4000
#define QUOTE_MAX           300
/* A master that is not the leader answers 307 naming it; more in a row than this is a loop. */
#define REDIRECTS_MAX 5

struct mesos_sched {
	uv_loop_t *loop;
	struct mesos_http *http;
	struct mesos_sched_ops ops;
	void *arg;
	char *master, *url, *name;
	char *principal, *secret; /* NULL: no authentication */
	int redirects;            /* redirects followed since the last SUBSCRIBED */
	double failover_timeout, reconnect_timeout;
	int misses;
	char fid[256];
	char stream_id[MESOS_HTTP_HEADER_MAX];
	struct mesos_http_req *stream;
	struct mesos_recordio rio;
	json_t *events;  /* parsed, not yet handled */
	json_t *waiting; /* calls waiting for the subscription */
	char *bad;       /* the stream was malformed: why */
	uv_timer_t hb_timer, again_timer, dispatch_timer;
	double interval_s;
	int up, ever_up, is_lost;
	int64_t broken_since_us;
	long backoff_ms;
	int pending;
	int busy, deleted, open_handles;
};

struct call_ctx {
	struct mesos_sched *s;
	json_t *call;
};

static void subscribe(struct mesos_sched *s);

static void maybe_free(struct mesos_sched *s)
{
	if (!s->deleted || s->busy || s->open_handles)
		return;
	json_decref(s->events);
	json_decref(s->waiting);
	mesos_recordio_free(&s->rio);
	free(s->bad);
	free(s->master);
	free(s->url);
	free(s->principal);
	free(s->secret);
	free(s->name);
	free(s);
}

static void on_closed(uv_handle_t *h)
{
	struct mesos_sched *s = h->data;
	s->open_handles--;
	maybe_free(s);
}

static char *quote(const char *body, size_t len)
{
	size_t n = len < QUOTE_MAX ? len : QUOTE_MAX;
	char *q = xstrndup(body ? body : "", n);
	for (char *p = q; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	str_trim(q);
	if (!*q) {
		free(q);
		return xstrdup("(an empty answer)");
	}
	if (len > QUOTE_MAX) {
		char *m = xasprintf("%s...", q);
		free(q);
		return m;
	}
	return q;
}

static void go_lost(struct mesos_sched *s, const char *why)
{
	if (s->is_lost || s->deleted)
		return;
	s->is_lost = 1;
	s->up = 0;
	if (s->stream) {
		mesos_http_cancel(s->stream);
		s->stream = NULL;
	}
	uv_timer_stop(&s->hb_timer);
	uv_timer_stop(&s->again_timer);
	warn("%s", why);
	if (s->ops.lost)
		s->ops.lost(s->arg, why);
}

static void on_hb(uv_timer_t *t)
{
	struct mesos_sched *s = t->data;
	double interval = s->interval_s > 0 ? s->interval_s : DEFAULT_HEARTBEAT_S;
	char *why = xasprintf("mesos master %s: no heartbeat for %.0f s (%d times the interval "
	                      "of %.3g s it announced)",
	                      s->master, interval * s->misses, s->misses, interval);
	go_lost(s, why);
	free(why);
}

static void hb_arm(struct mesos_sched *s)
{
	double interval = s->interval_s > 0 ? s->interval_s : DEFAULT_HEARTBEAT_S;
	uint64_t ms = (uint64_t)(interval * s->misses * 1000);
	uv_timer_start(&s->hb_timer, on_hb, ms ? ms : 1, 0);
}

/* ---- calls ---- */

static void on_call_done(const struct mesos_http_reply *r, void *arg)
{
	struct call_ctx *c = arg;
	struct mesos_sched *s = c->s;
	s->pending--;
	const char *type = json_string_value(json_object_get(c->call, "type"));
	if (r->status != 202 && r->status != 200 && !s->is_lost) {
		char *why;
		if (r->status == 0) {
			why = xasprintf("mesos master %s: %s not answered: %s", s->master, type,
			                r->curl_error);
		} else {
			char *q = quote(r->body, r->body_len);
			why = xasprintf("mesos master %s refused %s: %ld: %s", s->master, type,
			                r->status, q);
			free(q);
		}
		warn("%s", why);
		s->busy++;
		if (s->ops.refused)
			s->ops.refused(s->arg, c->call, why);
		s->busy--;
		free(why);
	}
	json_decref(c->call);
	free(c);
	maybe_free(s);
}

static void send_call(struct mesos_sched *s, json_t *call)
{
	json_object_set_new(call, "framework_id", mesos_id(s->fid));
	char *body = json_dumps(call, JSON_COMPACT);
	struct call_ctx *c = xcalloc(1, sizeof *c);
	c->s = s;
	c->call = call;
	debug(D_HTTP, "mesos: %s", body);
	if (mesos_http_post(s->http, s->url, body, s->stream_id, CALL_TIMEOUT_MS, NULL,
	                    on_call_done, c)) {
		s->pending++;
	} else {
		warn("mesos master %s: cannot send %s", s->master,
		     json_string_value(json_object_get(call, "type")));
		json_decref(call);
		free(c);
	}
	free(body);
}

void mesos_sched_call(struct mesos_sched *s, json_t *call)
{
	if (s->deleted || s->is_lost) {
		json_decref(call);
		return;
	}
	if (!s->up) {
		json_array_append_new(s->waiting, call);
		return;
	}
	send_call(s, call);
}

/* ---- events ---- */

static void handle(struct mesos_sched *s, json_t *ev)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	if (!type) {
		char *why = xasprintf("mesos master %s: an event without a type", s->master);
		go_lost(s, why);
		free(why);
		return;
	}
	hb_arm(s);
	if (strcmp(type, "HEARTBEAT") == 0)
		return;
	if (strcmp(type, "SUBSCRIBED") == 0) {
		json_t *sub = json_object_get(ev, "subscribed");
		const char *fid = json_string_value(
		    json_object_get(json_object_get(sub, "framework_id"), "value"));
		if (!fid || strlen(fid) >= sizeof s->fid) {
			char *why = xasprintf("mesos master %s: SUBSCRIBED without a framework id",
			                      s->master);
			go_lost(s, why);
			free(why);
			return;
		}
		json_t *hb = json_object_get(sub, "heartbeat_interval_seconds");
		s->interval_s = json_is_number(hb) && json_number_value(hb) > 0
		                    ? json_number_value(hb)
		                    : DEFAULT_HEARTBEAT_S;
		hb_arm(s);
		int again = s->ever_up;
		snprintf(s->fid, sizeof s->fid, "%s", fid);
		s->up = s->ever_up = 1;
		s->redirects = 0;
		s->broken_since_us = 0;
		s->backoff_ms = BACKOFF_MIN_MS;
		debug(D_BATCH, "mesos: subscribed to %s as framework %s (heartbeat %.3g s)",
		      s->master, fid, s->interval_s);
		if (again)
			notice("mesos master %s: subscribed again as framework %s", s->master, fid);
		if (s->ops.subscribed)
			s->ops.subscribed(s->arg, fid, again);
		while (!s->deleted && s->up && json_array_size(s->waiting) > 0) {
			json_t *c = json_incref(json_array_get(s->waiting, 0));
			json_array_remove(s->waiting, 0);
			send_call(s, c);
		}
		return;
	}
	if (strcmp(type, "ERROR") == 0) {
		const char *m =
		    json_string_value(json_object_get(json_object_get(ev, "error"), "message"));
		char *why = xasprintf("mesos master %s: ERROR event: %s", s->master,
		                      m && *m ? m : "(no message)");
		go_lost(s, why);
		free(why);
		return;
	}
	if (s->ops.event)
		s->ops.event(s->arg, type, ev);
	if (s->deleted || s->is_lost || strcmp(type, "UPDATE") != 0)
		return;
	json_t *st = json_object_get(json_object_get(ev, "update"), "status");
	json_t *uuid = json_object_get(st, "uuid");
	json_t *agent = json_object_get(st, "agent_id");
	if (json_is_string(uuid) && json_is_object(agent)) {
		json_t *ack = mesos_call_new("ACKNOWLEDGE", NULL);
		json_object_set_new(ack, "acknowledge",
		                    json_pack("{s:O, s:O, s:O}", "agent_id", agent, "task_id",
		                              json_object_get(st, "task_id"), "uuid", uuid));
		mesos_sched_call(s, ack);
	}
}

static void on_dispatch(uv_timer_t *t)
{
	struct mesos_sched *s = t->data;
	s->busy++;
	while (!s->deleted && !s->is_lost && json_array_size(s->events) > 0) {
		json_t *ev = json_incref(json_array_get(s->events, 0));
		json_array_remove(s->events, 0);
		handle(s, ev);
		json_decref(ev);
	}
	if (!s->deleted && !s->is_lost && s->bad) {
		char *why = xasprintf("mesos master %s: the event stream is malformed: %s",
		                      s->master, s->bad);
		go_lost(s, why);
		free(why);
	}
	s->busy--;
	maybe_free(s);
}

static int on_record(const char *data, size_t len, void *arg)
{
	struct mesos_sched *s = arg;
	json_error_t je;
	json_t *ev = json_loadb(data, len, 0, &je);
	if (!json_is_object(ev)) {
		json_decref(ev);
		s->bad = xasprintf("an event is not a JSON object: %s", ev ? "" : je.text);
		return 1;
	}
	json_array_append_new(s->events, ev);
	return 0;
}

static int on_stream_data(struct mesos_http_req *req, const char *d, size_t n, void *arg)
{
	struct mesos_sched *s = arg;
	if (!s->stream_id[0])
		snprintf(s->stream_id, sizeof s->stream_id, "%s", mesos_http_stream_id(req));
	int r = mesos_recordio_feed(&s->rio, d, n, on_record, s);
	if (r < 0 && !s->bad)
		s->bad = xstrdup(s->rio.err);
	uv_timer_start(&s->dispatch_timer, on_dispatch, 0, 0);
	if (r != 0) {
		s->stream = NULL; /* ends without the done callback */
		return 1;
	}
	return 0;
}

static void on_again(uv_timer_t *t)
{
	subscribe(t->data);
}

static void broken(struct mesos_sched *s, const char *what)
{
	int64_t now = time_monotonic_us();
	s->up = 0;
	s->stream_id[0] = 0;
	if (!s->broken_since_us) {
		s->broken_since_us = now;
		warn("mesos master %s: the event stream ended (%s); subscribing again as framework "
		     "%s",
		     s->master, what, s->fid);
	}
	double gone = (double)(now - s->broken_since_us) / 1e6;
	if (gone >= s->reconnect_timeout) {
		char *why = xasprintf("mesos master %s: could not subscribe again for %.0f s: %s",
		                      s->master, gone, what);
		go_lost(s, why);
		free(why);
		return;
	}
	uv_timer_start(&s->again_timer, on_again, (uint64_t)s->backoff_ms, 0);
	s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
}

/* A master that is not the leader named the leader in LOCATION: subscribe there (and send
 * every later call there). 0, or -1 when the redirect cannot be followed (then it is reported
 * as a refused SUBSCRIBE, or the master is lost for a loop). */
static int follow_redirect(struct mesos_sched *s, const char *location)
{
	char *url = mesos_http_resolve(s->url, location);
	if (!url)
		return -1;
	if (++s->redirects > REDIRECTS_MAX) {
		char *why = xasprintf("mesos master %s: more than %d redirects in a row (the last "
		                      "to %s); no leading master answers",
		                      s->master, REDIRECTS_MAX, url);
		go_lost(s, why);
		free(why);
		free(url);
		return 0;
	}
	char *leader = mesos_http_authority(url);
	notice("mesos master %s is not the leading master; following it to %s", s->master, leader);
	free(s->url);
	s->url = url;
	free(s->master);
	s->master = leader;
	uv_timer_start(&s->again_timer, on_again, 0, 0);
	return 0;
}

static void on_stream_done(const struct mesos_http_reply *r, void *arg)
{
	struct mesos_sched *s = arg;
	s->stream = NULL;
	if (s->is_lost)
		return;
	/* events that came with the end are handled first */
	on_dispatch(&s->dispatch_timer);
	if (s->deleted || s->is_lost)
		return;
	if (r->status == 307 && follow_redirect(s, r->location) == 0)
		return;
	if (r->status == 401) {
		char *why =
		    s->principal
		        ? xasprintf("mesos master %s refused SUBSCRIBE: 401 Unauthorized: the "
		                    "principal '%s' and its secret were not accepted",
		                    s->master, s->principal)
		        : xasprintf(
		              "mesos master %s refused SUBSCRIBE: 401 Unauthorized: the master "
		              "requires authentication (--batch-option principal=NAME and "
		              "secret=TEXT or secret-file=FILE)",
		              s->master);
		go_lost(s, why);
		free(why);
		return;
	}
	if (r->status != 0 && (r->status < 200 || r->status >= 300)) {
		char *q = quote(r->body, r->body_len);
		char *why = xasprintf("mesos master %s refused SUBSCRIBE: %ld: %s", s->master,
		                      r->status, q);
		free(q);
		if (s->ever_up && r->status >= 500) {
			broken(s, why);
		} else {
			go_lost(s, why);
		}
		free(why);
		return;
	}
	char *what = r->status == 0 ? xasprintf("cannot connect: %s", r->curl_error)
	             : r->curl_code ? xasprintf("%s", r->curl_error)
	                            : xstrdup("the master closed it");
	if (!s->ever_up) {
		char *why = xasprintf("mesos master %s: %s", s->master, what);
		go_lost(s, why);
		free(why);
	} else {
		broken(s, what);
	}
	free(what);
}

static void subscribe(struct mesos_sched *s)
{
	if (s->deleted || s->is_lost)
		return;
	char user[256] = "nobody";
	struct passwd *pw = getpwuid(getuid());
	if (pw)
		snprintf(user, sizeof user, "%s", pw->pw_name);
	json_t *call =
	    mesos_call_subscribe(s->name, user, s->fid[0] ? s->fid : NULL, s->failover_timeout);
	/* the framework's principal is the one it authenticates as */
	if (s->principal)
		json_object_set_new(
		    json_object_get(json_object_get(call, "subscribe"), "framework_info"),
		    "principal", json_string(s->principal));
	char *body = json_dumps(call, JSON_COMPACT);
	json_decref(call);
	mesos_recordio_reset(&s->rio);
	free(s->bad);
	s->bad = NULL;
	s->stream_id[0] = 0;
	debug(D_HTTP, "mesos: POST %s %s", s->url, body);
	s->stream =
	    mesos_http_post(s->http, s->url, body, NULL, 0, on_stream_data, on_stream_done, s);
	free(body);
	hb_arm(s);
	if (!s->stream) {
		char *why =
		    xasprintf("mesos master %s: cannot start the SUBSCRIBE request", s->master);
		go_lost(s, why);
		free(why);
	}
}

/* ---- life ---- */

struct mesos_sched *mesos_sched_new(uv_loop_t *loop, const struct mesos_sched_config *cfg,
                                    const struct mesos_sched_ops *ops, void *arg)
{
	struct mesos_sched *s = xcalloc(1, sizeof *s);
	s->http = mesos_http_new(loop);
	if (!s->http) {
		free(s);
		return NULL;
	}
	s->loop = loop;
	s->ops = *ops;
	s->arg = arg;
	s->master = xstrdup(cfg->master);
	s->url = strstr(cfg->master, "://") ? xasprintf("%s/api/v1/scheduler", cfg->master)
	                                    : xasprintf("http://%s/api/v1/scheduler", cfg->master);
	s->name = xstrdup(cfg->name);
	if (cfg->principal) {
		s->principal = xstrdup(cfg->principal);
		s->secret = xstrdup(cfg->secret ? cfg->secret : "");
		mesos_http_set_auth(s->http, s->principal, s->secret);
	}
	if (cfg->fid)
		snprintf(s->fid, sizeof s->fid, "%s", cfg->fid);
	s->failover_timeout = cfg->failover_timeout;
	s->reconnect_timeout = cfg->reconnect_timeout;
	s->misses = cfg->heartbeat_misses > 0 ? cfg->heartbeat_misses : 5;
	s->backoff_ms = BACKOFF_MIN_MS;
	mesos_recordio_init(&s->rio, 0);
	s->events = json_array();
	s->waiting = json_array();
	uv_timer_init(loop, &s->hb_timer);
	uv_timer_init(loop, &s->again_timer);
	uv_timer_init(loop, &s->dispatch_timer);
	s->hb_timer.data = s->again_timer.data = s->dispatch_timer.data = s;
	s->open_handles = 3;
	return s;
}

int mesos_sched_start(struct mesos_sched *s)
{
	subscribe(s);
	return s->is_lost ? -EIO : 0;
}

const char *mesos_sched_fid(const struct mesos_sched *s)
{
	return s->fid;
}

const char *mesos_sched_master(const struct mesos_sched *s)
{
	return s->master;
}

int mesos_sched_up(const struct mesos_sched *s)
{
	return s->up;
}

int mesos_sched_pending(const struct mesos_sched *s)
{
	return s->pending;
}

void mesos_sched_delete(struct mesos_sched *s)
{
	if (!s || s->deleted)
		return;
	s->deleted = 1;
	mesos_http_delete(s->http);
	s->http = NULL;
	s->stream = NULL;
	uv_timer_stop(&s->hb_timer);
	uv_timer_stop(&s->again_timer);
	uv_timer_stop(&s->dispatch_timer);
	uv_close((uv_handle_t *)&s->hb_timer, on_closed);
	uv_close((uv_handle_t *)&s->again_timer, on_closed);
	uv_close((uv_handle_t *)&s->dispatch_timer, on_closed);
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p, (void)arg;
	return size * n;
}

int mesos_sched_teardown_sync(struct mesos_sched *s, long timeout_ms)
{
	if (!s->fid[0] || !s->stream_id[0])
		return 0;
	curl_init_once();
	json_t *call = mesos_call_new("TEARDOWN", s->fid);
	char *body = json_dumps(call, JSON_COMPACT);
	json_decref(call);
	CURL *c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	char *sid = xasprintf("Mesos-Stream-Id: %s", s->stream_id);
	h = curl_slist_append(h, sid);
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_URL, s->url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)MESOS_HTTP_CONNECT_MS);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	if (s->principal) {
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, s->principal);
		curl_easy_setopt(c, CURLOPT_PASSWORD, s->secret);
	}
	CURLcode cc = curl_easy_perform(c);
	long st = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	free(sid);
	free(body);
	if (cc != CURLE_OK || (st != 202 && st != 200)) {
		warn("mesos master %s: TEARDOWN of framework %s failed: %s", s->master, s->fid,
		     cc != CURLE_OK ? curl_easy_strerror(cc) : "the master refused it");
		return -EIO;
	}
	debug(D_BATCH, "mesos: framework %s torn down", s->fid);
	return 0;
}
