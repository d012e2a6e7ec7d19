/* k8s_watch.c: the pod watch of k8s_watch.h. A stream is split into lines (one JSON event
 * each); each event's resourceVersion is remembered; a stream that ends is opened again from
 * it after a backoff, and a 410 Gone (as a status or as an ERROR event) leads to a new list. */
#include "k8s_watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buffer.h"
#include "debug.h"
#include "htc_error.h"
#include "k8s_pods.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

struct w {
	struct k8s_client *k;
	const struct k8s_watch_options *o;
	k8s_watch_fn fn;
	void *arg;
	struct k8s_watch_stats *st;
	struct buffer line;
	char rv[64];
	bool have_rv;
	bool done;   /* FN asked to end */
	bool gone;   /* a 410 arrived in the stream */
	bool events; /* this stream delivered something */
	int err;     /* a stream error (ERROR event other than 410) */
	char *err_text;
	char *path;
};

static void remember(struct w *w, json_t *obj)
{
	const char *rv =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
	if (rv && strlen(rv) < sizeof w->rv) {
		snprintf(w->rv, sizeof w->rv, "%s", rv);
		w->have_rv = true;
		snprintf(w->st->last_rv, sizeof w->st->last_rv, "%s", rv);
	}
}

/* One complete line of the stream. Returns false to end the stream. */
static bool event(struct w *w, const char *text, size_t n)
{
	json_error_t je;
	json_t *j = json_loadb(text, n, 0, &je);
	if (!j) {
		w->err = HTC_EPROTO;
		w->err_text =
		    xasprintf("kubernetes GET %s: an event is not JSON: %s", w->path, je.text);
		return false;
	}
	const char *type = json_string_value(json_object_get(j, "type"));
	json_t *obj = json_object_get(j, "object");
	bool go_on = true;
	w->events = true;
	if (!type || !json_is_object(obj)) {
		w->err = HTC_EPROTO;
		w->err_text =
		    xasprintf("kubernetes GET %s: an event without type or object", w->path);
		go_on = false;
	} else if (strcmp(type, "ERROR") == 0) {
		json_t *code = json_object_get(obj, "code");
		long c = json_is_integer(code) ? (long)json_integer_value(code) : 0;
		if (c == 410) {
			w->gone = true;
		} else {
			char *body = json_dumps(obj, JSON_COMPACT);
			w->err_text = k8s_error_text("GET", w->path, c, body, strlen(body));
			free(body);
			w->err = c ? k8s_status_code(c) : -EIO;
		}
		go_on = false;
	} else if (strcmp(type, "BOOKMARK") == 0) {
		remember(w, obj);
	} else {
		enum k8s_watch_event ev = strcmp(type, "ADDED") == 0      ? K8S_WATCH_ADDED
		                          : strcmp(type, "MODIFIED") == 0 ? K8S_WATCH_MODIFIED
		                          : strcmp(type, "DELETED") == 0
		                              ? K8S_WATCH_DELETED
		                              : (enum k8s_watch_event) - 1;
		if ((int)ev >= 0) {
			remember(w, obj);
			if (!w->fn(ev, obj, w->arg)) {
				w->done = true;
				go_on = false;
			}
		}
	}
	json_decref(j);
	return go_on;
}

static bool on_data(const char *data, size_t n, void *arg)
{
	struct w *w = arg;
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		if (buffer_putlstring(&w->line, data, take) < 0) {
			w->err = HTC_ETOOBIG;
			w->err_text =
			    xasprintf("kubernetes GET %s: an event is larger than %d bytes",
			              w->path, K8S_WATCH_LINE_MAX);
			return false;
		}
		if (!nl)
			return true;
		data += take + 1;
		n -= take + 1;
		if (buffer_len(&w->line) > 0 &&
		    !event(w, buffer_tostring(&w->line), buffer_len(&w->line))) {
			buffer_clear(&w->line);
			return false;
		}
		buffer_clear(&w->line);
	}
	return true;
}

static int relist(struct w *w, char **err)
{
	json_t *items = NULL;
	char *rv = NULL;
	int e = k8s_pod_list(w->k, w->o->ns, w->o->selector, &items, &rv, err);
	if (e < 0)
		return e;
	w->st->relisted++;
	if (rv && strlen(rv) < sizeof w->rv) {
		snprintf(w->rv, sizeof w->rv, "%s", rv);
		snprintf(w->st->last_rv, sizeof w->st->last_rv, "%s", rv);
		w->have_rv = true;
	}
	free(rv);
	debug(D_HTTP, "kubernetes watch: listed %zu pods at resourceVersion %s",
	      json_array_size(items), w->rv);
	if (!w->fn(K8S_WATCH_RELISTED, items, w->arg))
		w->done = true;
	json_decref(items);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Sleeps MS in steps, ending early when STOP is set. */
static void pause_ms(const struct k8s_watch_options *o, long ms)
{
	while (ms > 0 && !(o->stop && *o->stop)) {
		long step = ms > 200 ? 200 : ms;
		sleep_ms(step);
		ms -= step;
	}
}

int k8s_watch_run(struct k8s_client *k, const struct k8s_watch_options *o, k8s_watch_fn fn,
                  void *arg, struct k8s_watch_stats *stats, char **err)
{
	*err = NULL;
	struct k8s_watch_stats local;
	struct w w = {.k = k, .o = o, .fn = fn, .arg = arg, .st = stats ? stats : &local};
	memset(w.st, 0, sizeof *w.st);
	buffer_init(&w.line, K8S_WATCH_LINE_MAX);
	long give_up = o->give_up_ms > 0 ? o->give_up_ms : K8S_WATCH_GIVE_UP_MS;
	int server_s = o->server_timeout_s > 0 ? o->server_timeout_s : K8S_WATCH_SERVER_S;
	char *sel = o->selector ? k8s_escape(o->selector) : NULL;
	int64_t failing_since = 0;
	long delay = K8S_BACKOFF_MIN_MS;
	int e = 0;
	if (o->resource_version && strlen(o->resource_version) < sizeof w.rv) {
		snprintf(w.rv, sizeof w.rv, "%s", o->resource_version);
		w.have_rv = true;
	}
	bool need_list = !w.have_rv;
	while (!w.done && !(o->stop && *o->stop)) {
		free(*err);
		*err = NULL;
		if (need_list) {
			e = relist(&w, err);
			if (e == 0) {
				need_list = false;
				continue;
			}
		} else {
			free(w.path);
			w.path = xasprintf(
			    "/api/v1/namespaces/%s/pods?watch=1&allowWatchBookmarks=true"
			    "&timeoutSeconds=%d&resourceVersion=%s%s%s",
			    o->ns, server_s, w.rv, sel ? "&labelSelector=" : "", sel ? sel : "");
			if (w.st->streams > 0)
				w.st->resumed++;
			w.st->streams++;
			w.gone = w.events = false;
			w.err = 0;
			free(w.err_text);
			w.err_text = NULL;
			buffer_clear(&w.line);
			long status = 0;
			debug(D_HTTP, "kubernetes watch: GET %s", w.path);
			e = k8s_stream(k, w.path, on_data, &w, o->stop, &status, err);
			if (w.done || (o->stop && *o->stop)) {
				e = 0;
				break;
			}
			if (e == 0 && w.err) {
				e = w.err;
				*err = w.err_text;
				w.err_text = NULL;
			}
			if (w.gone || status == 410) {
				debug(D_HTTP,
				      "kubernetes watch: resourceVersion %s is gone (410); listing "
				      "again",
				      w.rv);
				need_list = true;
				failing_since = 0;
				continue;
			}
			if (e == 0) { /* the server ended the stream (its timeout): go on */
				failing_since = 0;
				delay = K8S_BACKOFF_MIN_MS;
				continue;
			}
		}
		/* an error */
		if (e == HTC_EAUTH || e == -ENOENT || e == -EINVAL)
			break;
		if (w.events)
			failing_since = 0;
		if (!failing_since)
			failing_since = time_monotonic_us();
		long failing = (long)((time_monotonic_us() - failing_since) / 1000);
		if (failing >= give_up) {
			char *more =
			    xasprintf("%s (the watch gave up after %.0f s without an answer)",
			              *err ? *err : "kubernetes watch failed", failing / 1000.0);
			free(*err);
			*err = more;
			break;
		}
		debug(D_HTTP, "kubernetes watch: %s; again in %ld ms", *err ? *err : "?", delay);
		pause_ms(o, delay);
		delay = delay * 2 > K8S_BACKOFF_MAX_MS ? K8S_BACKOFF_MAX_MS : delay * 2;
		e = 0;
	}
	if (e == 0) {
		free(*err);
		*err = NULL;
	}
	free(w.err_text);
	free(w.path);
	free(sel);
	buffer_free(&w.line);
	return e;
}
