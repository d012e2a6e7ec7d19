/* wq_msg.c: common parts of the Work Queue control messages: the typed field
 * accessors that produce violation texts, the message table of section 5.1
 * (ids looked up by name, directions and states), text escaping and UTF-8 cutting, and the frozen
 * `hello` and `error` messages with the version check of section 3.2. */
#include "wq_msg.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "xalloc.h"
#include "banned.h"

/* ---- accessors ----------------------------------------------------------- */

static char *key_path(const struct wq_msg_v *v, const char *key)
{
	if (!key)
		return xstrdup(v->where);
	if (v->where)
		return xasprintf("%s.%s", v->where, key);
	return xstrdup(key);
}

int wq_msg_fail(struct wq_msg_v *v, const char *key, const char *fmt, ...)
{
	if (v->why)
		return HTC_EPROTO;
	va_list ap;
	va_start(ap, fmt);
	char *text = NULL;
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	if (key || v->where) {
		char *k = key_path(v, key);
		v->why = xasprintf("message \"%s\": key \"%s\": %s", v->m, k, text ? text : "");
		free(k);
	} else {
		v->why = xasprintf("message \"%s\": %s", v->m, text ? text : "");
	}
	free(text);
	return HTC_EPROTO;
}

/* Looks KEY up: 0 and *VAL when present, 1 when absent (or null with
 * WQ_NULL) and optional, HTC_EPROTO when absent and required. */
static int lookup(struct wq_msg_v *v, const json_t *o, const char *key, int flags, json_t **val)
{
	json_t *x = json_object_get(o, key);
	if (x && json_is_null(x) && (flags & WQ_NULL))
		return 1; /* present and null: fine even when required */
	if (x) {
		*val = x;
		return 0;
	}
	if (!(flags & WQ_REQ))
		return 1;
	if (!v->why) {
		if (v->where)
			v->why = xasprintf("message \"%s\": key \"%s\": missing key \"%s\"", v->m,
			                   v->where, key);
		else
			v->why = xasprintf("message \"%s\": missing key \"%s\"", v->m, key);
	}
	return HTC_EPROTO;
}

int wq_msg_int(struct wq_msg_v *v, const json_t *o, const char *key, int flags, int64_t min,
               int64_t max, int64_t *out)
{
	json_t *x = NULL;
	int rc = lookup(v, o, key, flags, &x);
	if (rc)
		return rc;
	if (!json_is_integer(x) || json_integer_value(x) < min || json_integer_value(x) > max)
		return wq_msg_fail(v, key, "expected an integer in %" PRId64 "..%" PRId64, min,
		                   max);
	*out = json_integer_value(x);
	return 0;
}

int wq_msg_num(struct wq_msg_v *v, const json_t *o, const char *key, int flags, double min,
               double max, double *out)
{
	json_t *x = NULL;
	int rc = lookup(v, o, key, flags, &x);
	if (rc)
		return rc;
	double d = json_is_number(x) ? json_number_value(x) : NAN;
	if (!isfinite(d) || d < min || d > max)
		return wq_msg_fail(v, key, "expected a number in %.17g..%.17g", min, max);
	*out = d;
	return 0;
}

int wq_msg_str(struct wq_msg_v *v, const json_t *o, const char *key, int flags, size_t maxlen,
               const char **out, size_t *len)
{
	json_t *x = NULL;
	int rc = lookup(v, o, key, flags, &x);
	if (rc)
		return rc;
	if (!json_is_string(x) || json_string_length(x) > maxlen)
		return wq_msg_fail(v, key, "expected a string of at most %zu bytes", maxlen);
	*out = json_string_value(x);
	if (len)
		*len = json_string_length(x);
	return 0;
}

int wq_msg_bool(struct wq_msg_v *v, const json_t *o, const char *key, int flags, bool *out)
{
	json_t *x = NULL;
	int rc = lookup(v, o, key, flags, &x);
	if (rc)
		return rc;
	if (!json_is_boolean(x))
		return wq_msg_fail(v, key, "expected true or false");
	*out = json_is_true(x);
	return 0;
}

int wq_msg_array(struct wq_msg_v *v, const json_t *o, const char *key, int flags, size_t max,
                 json_t **out)
{
	json_t *x = NULL;
	int rc = lookup(v, o, key, flags, &x);
	if (rc)
		return rc;
	if (!json_is_array(x) || json_array_size(x) > max)
		return wq_msg_fail(v, key, "expected an array of at most %zu elements", max);
	*out = x;
	return 0;
}

int wq_msg_object(struct wq_msg_v *v, const json_t *o, const char *key, int flags, json_t **out)
{
	json_t *x = NULL;
	int rc = lookup(v, o, key, flags, &x);
	if (rc)
		return rc;
	if (!json_is_object(x))
		return wq_msg_fail(v, key, "expected an object");
	*out = x;
	return 0;
}

int wq_msg_enum(struct wq_msg_v *v, const json_t *o, const char *key, int flags,
                const char *const *choices, int *out)
{
	json_t *x = NULL;
	int rc = lookup(v, o, key, flags, &x);
	if (rc)
		return rc;
	if (json_is_string(x)) {
		for (int i = 0; choices[i]; i++) {
			if (strcmp(json_string_value(x), choices[i]) == 0) {
				*out = i;
				return 0;
			}
		}
	}
	char list[256] = "";
	size_t used = 0;
	for (int i = 0; choices[i] && used < sizeof list; i++) {
		int n = snprintf(list + used, sizeof list - used, "%s\"%s\"", i ? ", " : "",
		                 choices[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return wq_msg_fail(v, key, "expected one of %s", list);
}

/* ---- the message table (section 5.1) ------------------------------------- */

#define D_W2M (1u << WQ_DIR_W2M)
#define D_M2W (1u << WQ_DIR_M2W)
#define D_S2M (1u << WQ_DIR_S2M)
#define D_M2S (1u << WQ_DIR_M2S)
#define D_ALL (D_W2M | D_M2W | D_S2M | D_M2S)

#define S_HELLO (1u << WQ_STATE_HELLO)
#define S_AUTH  (1u << WQ_STATE_AUTH)
#define S_INIT  (1u << WQ_STATE_INIT)
#define S_ANY   ((1u << WQ_STATE_ACTIVE) | (1u << WQ_STATE_DRAINING))
#define S_ALL   (S_HELLO | S_AUTH | S_INIT | S_ANY)

/* Indexed by enum wq_msg_id, so in the order of the names: wq_msg_lookup searches it by halves
 * (test_wq_msg checks the order). */
static const struct {
	const char *m;
	unsigned dirs, states;
} msg_table[WQ_MSG_COUNT] = {
    [WQ_MSG_AUTH_OK] = {"auth_ok", D_M2W | D_M2S, S_AUTH},
    [WQ_MSG_AUTH_PROOF] = {"auth_proof", D_W2M | D_S2M, S_AUTH},
    [WQ_MSG_BYE] = {"bye", D_ALL, S_INIT | S_ANY},
    [WQ_MSG_CACHE_DROP] = {"cache_drop", D_M2W, S_ANY},
    [WQ_MSG_CACHE_HAVE] = {"cache_have", D_W2M, S_INIT | S_ANY},
    [WQ_MSG_CACHE_TAKE] = {"cache_take", D_M2W, S_ANY},
    [WQ_MSG_CACHE_TAKEN] = {"cache_taken", D_W2M, S_ANY},
    [WQ_MSG_CAPACITY] = {"capacity", D_W2M, S_INIT | S_ANY},
    [WQ_MSG_DIR_ABORT] = {"dir_abort", D_W2M | D_M2W, S_ANY},
    [WQ_MSG_DIR_BEGIN] = {"dir_begin", D_W2M | D_M2W, S_ANY},
    [WQ_MSG_DIR_END] = {"dir_end", D_W2M | D_M2W, S_ANY},
    [WQ_MSG_DIR_MKDIR] = {"dir_mkdir", D_W2M | D_M2W, S_ANY},
    [WQ_MSG_DISMISS] = {"dismiss", D_M2W, S_ANY},
    [WQ_MSG_DRAIN] = {"drain", D_M2W, S_ANY},
    [WQ_MSG_DRAINING] = {"draining", D_W2M, S_ANY},
    [WQ_MSG_ERROR] = {"error", D_ALL, S_ALL},
    [WQ_MSG_HELLO] = {"hello", D_W2M | D_M2W | D_S2M | D_M2S, S_HELLO},
    [WQ_MSG_IDENTITY] = {"identity", D_W2M, S_INIT},
    [WQ_MSG_IMAGES] = {"images", D_W2M, S_ANY},
    [WQ_MSG_PING] = {"ping", D_ALL, S_INIT | S_ANY},
    [WQ_MSG_PONG] = {"pong", D_ALL, S_INIT | S_ANY},
    [WQ_MSG_QUERY] = {"query", D_S2M, S_ANY},
    [WQ_MSG_QUERY_REPLY] = {"query_reply", D_M2S, S_ANY},
    [WQ_MSG_SHUTDOWN] = {"shutdown", D_M2W, S_ANY},
    [WQ_MSG_STORE_HAVE] = {"store_have", D_W2M, S_ANY},
    [WQ_MSG_TASK] = {"task", D_M2W, 1u << WQ_STATE_ACTIVE},
    [WQ_MSG_TASK_CANCEL] = {"task_cancel", D_M2W, S_ANY},
    [WQ_MSG_TASK_CANCELLED] = {"task_cancelled", D_W2M, S_ANY},
    [WQ_MSG_TASK_DONE] = {"task_done", D_W2M, S_ANY},
    [WQ_MSG_TASK_REFUSED] = {"task_refused", D_W2M, S_ANY},
    [WQ_MSG_TASK_RESIZED] = {"task_resized", D_W2M, S_ANY},
    [WQ_MSG_TASK_RUNNING] = {"task_running", D_W2M, S_ANY},
    [WQ_MSG_XFER_ABORT] = {"xfer_abort", D_W2M | D_M2W, S_ANY},
    [WQ_MSG_XFER_BEGIN] = {"xfer_begin", D_W2M | D_M2W, S_ANY},
    [WQ_MSG_XFER_END] = {"xfer_end", D_W2M | D_M2W, S_ANY},
    [WQ_MSG_XFER_ERROR] = {"xfer_error", D_W2M | D_M2W, S_ANY},
};

const char *wq_state_name(enum wq_state s)
{
	switch (s) {
	case WQ_STATE_HELLO: return "HELLO";
	case WQ_STATE_AUTH: return "AUTH";
	case WQ_STATE_INIT: return "INIT";
	case WQ_STATE_ACTIVE: return "ACTIVE";
	case WQ_STATE_DRAINING: return "DRAINING";
	}
	return "UNKNOWN";
}

enum wq_msg_id wq_msg_lookup(const char *m)
{
	if (!m)
		return WQ_MSG_UNKNOWN;
	size_t lo = 0, hi = WQ_MSG_COUNT;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(m, msg_table[mid].m);
		if (c == 0)
			return (enum wq_msg_id)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return WQ_MSG_UNKNOWN;
}

const char *wq_msg_name(enum wq_msg_id id)
{
	return (unsigned)id < WQ_MSG_COUNT ? msg_table[id].m : NULL;
}

bool wq_msg_known(const char *m)
{
	return wq_msg_lookup(m) != WQ_MSG_UNKNOWN;
}

static const char *sender_name(enum wq_dir dir)
{
	switch (dir) {
	case WQ_DIR_W2M: return "a worker";
	case WQ_DIR_M2W:
	case WQ_DIR_M2S: return "the master";
	case WQ_DIR_S2M: return "a status client";
	}
	return "this peer";
}

int wq_msg_check(enum wq_msg_id id, const char *m, enum wq_dir dir, enum wq_state state, char **why)
{
	*why = NULL;
	if ((unsigned)id >= WQ_MSG_COUNT) {
		char *shown = wq_msg_escape(m, strlen(m), 64, true);
		*why = xasprintf("unknown message \"%s\"", shown);
		free(shown);
		return HTC_EPROTO;
	}
	if (!(msg_table[id].dirs & (1u << dir))) {
		*why = xasprintf("message \"%s\" not allowed from %s", m, sender_name(dir));
		return HTC_EPROTO;
	}
	/* A status client goes from AUTH straight to ACTIVE, where it may send
	 * only query, ping, pong, bye and error (section 5.11). */
	if (!(msg_table[id].states & (1u << state))) {
		*why =
		    xasprintf("message \"%s\" not expected in state %s", m, wq_state_name(state));
		return HTC_EPROTO;
	}
	return 0;
}

int wq_msg_allowed(const char *m, enum wq_dir dir, enum wq_state state, char **why)
{
	return wq_msg_check(wq_msg_lookup(m), m, dir, state, why);
}

/* ---- text helpers ---------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at S (at most AVAIL bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
	unsigned c = s[0];
	size_t n;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

char *wq_msg_escape(const char *s, size_t len, size_t max, bool quoted)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t shown = len < max ? len : max;
	char *out = xmalloc(4 * shown + sizeof "…");
	size_t o = 0, i = 0;
	static const char hex[] = "0123456789abcdef";
	while (i < len) {
		size_t n = utf8_seq(u + i, len - i);
		size_t step = n ? n : 1;
		if (i + step > max)
			break;
		if (n == 1 && u[i] >= 0x20 && u[i] != 0x7f) {
			if (quoted && (u[i] == '"' || u[i] == '\\'))
				out[o++] = '\\';
			out[o++] = (char)u[i];
		} else if (n > 1) {
			memcpy(out + o, u + i, n);
			o += n;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[u[i] >> 4];
			out[o++] = hex[u[i] & 15];
		}
		i += step;
	}
	if (i < len) {
		memcpy(out + o, "…", sizeof "…" - 1);
		o += sizeof "…" - 1;
	}
	out[o] = 0;
	return out;
}

size_t wq_msg_utf8_cut(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	size_t cut = max;
	/* back over continuation bytes to the start of the cut character */
	while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
		cut--;
	return cut;
}

char *wq_msg_encode(const json_t *msg, size_t *len)
{
	size_t n = json_dumpb(msg, NULL, 0, JSON_COMPACT);
	if (n == 0)
		return NULL;
	char *buf = xmalloc(n);
	if (json_dumpb(msg, buf, n, JSON_COMPACT) != n) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

unsigned wq_msg_caps_negotiate(unsigned offered, unsigned ours)
{
	return offered & ours & WQ_CAPS_KNOWN;
}

/* ---- hello ----------------------------------------------------------------- */

static const char *const cap_names[] = {
    "zlib",         "fetch",  "watch", "queue",       "dirout", "containers",
    "shared_cache", "images", "grow",  "shared_dirs", NULL};
static const char *const role_names[] = {"worker", "status", "master", NULL};

static bool is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Adds KEY to O; a NULL value (a string that is not valid UTF-8) clears *OK. */
static void put(json_t *o, const char *key, json_t *val, bool *ok)
{
	if (!val || json_object_set_new(o, key, val) != 0)
		*ok = false;
}

json_t *wq_msg_hello_build(const struct wq_hello *h)
{
	bool master = h->role == WQ_ROLE_MASTER;
	if (!h->software || !h->id || (!master && !h->host) || (h->auth && !h->nonce))
		return NULL;
	bool ok = true;
	json_t *caps = json_array();
	for (int i = 0; cap_names[i]; i++)
		if (h->caps & (1u << i))
			json_array_append_new(caps, json_string(cap_names[i]));
	json_t *o = json_object();
	put(o, "m", json_string("hello"), &ok);
	put(o, "proto", json_pack("[II]", (json_int_t)WQ_PROTO_MAJOR, (json_int_t)WQ_PROTO_MINOR),
	    &ok);
	put(o, "role", json_string(role_names[h->role]), &ok);
	put(o, "software", json_string(h->software), &ok);
	if (master) {
		put(o, "master_id", json_string(h->id), &ok);
		put(o, "project", h->project ? json_string(h->project) : json_null(), &ok);
		put(o, "caps", caps, &ok);
		put(o, "auth", json_string(h->auth ? "hmac-sha256" : "none"), &ok);
		if (h->auth)
			put(o, "nonce", json_string(h->nonce), &ok);
		put(o, "keepalive",
		    json_pack("{s:I,s:I}", "interval", (json_int_t)h->keepalive_interval, "timeout",
		              (json_int_t)h->keepalive_timeout),
		    &ok);
	} else {
		put(o, "worker_id", json_string(h->id), &ok);
		put(o, "host", json_string(h->host), &ok);
		put(o, "caps", caps, &ok);
		put(o, "auth", h->auth ? json_pack("[s]", "hmac-sha256") : json_array(), &ok);
		if (h->auth)
			put(o, "nonce", json_string(h->nonce), &ok);
		if (h->project)
			put(o, "project", json_string(h->project), &ok);
	}
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

char *wq_msg_version_error(int64_t peer_major, int64_t peer_minor, bool local_is_master)
{
	if (local_is_master)
		return xasprintf("protocol version %" PRId64 ".%" PRId64
		                 " is not supported: this master speaks %d.x; use a worker of "
		                 "the same release as the master",
		                 peer_major, peer_minor, WQ_PROTO_MAJOR);
	return xasprintf("protocol version %" PRId64 ".%" PRId64
	                 " is not supported: this worker speaks %d.x",
	                 peer_major, peer_minor, WQ_PROTO_MAJOR);
}

char *wq_msg_version_log(int64_t peer_major, int64_t peer_minor, bool local_is_master)
{
	if (local_is_master)
		return xasprintf("refused: worker speaks protocol %" PRId64 ".%" PRId64
		                 ", this master speaks %d.x",
		                 peer_major, peer_minor, WQ_PROTO_MAJOR);
	return xasprintf("speaks protocol %" PRId64 ".%" PRId64 ", this worker speaks %d.x",
	                 peer_major, peer_minor, WQ_PROTO_MAJOR);
}

static int parse_caps(struct wq_msg_v *v, const json_t *o, unsigned *caps)
{
	json_t *a = NULL;
	int rc = wq_msg_array(v, o, "caps", WQ_REQ, WQ_CAPS_MAX, &a);
	if (rc)
		return rc;
	*caps = 0;
	size_t i;
	json_t *x = NULL;
	json_array_foreach(a, i, x)
	{
		if (!json_is_string(x) || json_string_length(x) > 64)
			return wq_msg_fail(v, "caps", "expected an array of strings");
		for (int c = 0; cap_names[c]; c++)
			if (strcmp(json_string_value(x), cap_names[c]) == 0)
				*caps |= 1u << c;
	}
	return 0;
}

int wq_msg_hello_parse(const json_t *msg, bool from_master, struct wq_hello *h, char **why)
{
	struct wq_msg_v v = {.m = "hello"};
	memset(h, 0, sizeof *h);
	h->keepalive_interval = h->keepalive_timeout = -1;
	*why = NULL;

	/* proto first: a hello of any version can be refused clearly */
	json_t *proto = json_object_get(msg, "proto");
	if (!json_is_array(proto) || json_array_size(proto) != 2 ||
	    !json_is_integer(json_array_get(proto, 0)) ||
	    !json_is_integer(json_array_get(proto, 1)) ||
	    json_integer_value(json_array_get(proto, 0)) < 0 ||
	    json_integer_value(json_array_get(proto, 1)) < 0) {
		wq_msg_fail(&v, "proto", "expected [major, minor], two integers >= 0");
		*why = v.why;
		return HTC_EPROTO;
	}
	h->proto_major = json_integer_value(json_array_get(proto, 0));
	h->proto_minor = json_integer_value(json_array_get(proto, 1));
	if (h->proto_major != WQ_PROTO_MAJOR) {
		*why = wq_msg_version_error(h->proto_major, h->proto_minor, !from_master);
		return HTC_EVERSION;
	}

	int role = 0;
	if (wq_msg_enum(&v, msg, "role", WQ_REQ, role_names, &role) == 0) {
		h->role = (enum wq_role)role;
		if ((h->role == WQ_ROLE_MASTER) != from_master)
			wq_msg_fail(&v, "role", "expected %s",
			            from_master ? "\"master\"" : "\"worker\" or \"status\"");
	}
	wq_msg_str(&v, msg, "software", WQ_REQ, 128, &h->software, NULL);
	const char *idkey = from_master ? "master_id" : "worker_id";
	if (wq_msg_str(&v, msg, idkey, WQ_REQ, 32, &h->id, NULL) == 0 && !is_hex(h->id, 32))
		wq_msg_fail(&v, idkey, "expected 32 lowercase hex digits");
	parse_caps(&v, msg, &h->caps);
	if (from_master) {
		wq_msg_str(&v, msg, "project", WQ_REQ | WQ_NULL, 128, &h->project, NULL);
		static const char *const auths[] = {"none", "hmac-sha256", NULL};
		int a = 0;
		if (wq_msg_enum(&v, msg, "auth", WQ_REQ, auths, &a) == 0)
			h->auth = a == 1;
		json_t *ka = NULL;
		if (wq_msg_object(&v, msg, "keepalive", WQ_REQ, &ka) == 0) {
			v.where = "keepalive";
			if (wq_msg_int(&v, ka, "interval", WQ_REQ, 5, 3600,
			               &h->keepalive_interval) == 0 &&
			    wq_msg_int(&v, ka, "timeout", WQ_REQ, 10, INT32_MAX,
			               &h->keepalive_timeout) == 0 &&
			    h->keepalive_timeout < 2 * h->keepalive_interval)
				wq_msg_fail(&v, "timeout",
				            "must be at least twice the interval (%" PRId64 ")",
				            2 * h->keepalive_interval);
			v.where = NULL;
		}
	} else {
		if (wq_msg_str(&v, msg, "host", WQ_REQ, 255, &h->host, NULL) == 0 && !h->host[0])
			wq_msg_fail(&v, "host", "expected a non-empty string");
		wq_msg_str(&v, msg, "project", 0, 128, &h->project, NULL);
		json_t *auth = NULL;
		if (wq_msg_array(&v, msg, "auth", WQ_REQ, 8, &auth) == 0) {
			size_t i;
			json_t *x = NULL;
			json_array_foreach(auth, i, x)
			{
				if (!json_is_string(x) || json_string_length(x) > 64) {
					wq_msg_fail(&v, "auth", "expected an array of strings");
					break;
				}
				if (strcmp(json_string_value(x), "hmac-sha256") == 0)
					h->auth = true;
			}
			/* a nonce is needed as soon as any method is offered */
			if (json_array_size(auth) > 0 && !h->auth && !v.why)
				wq_msg_fail(&v, "auth",
				            "no supported method (hmac-sha256) offered");
		}
	}
	if (h->auth && wq_msg_str(&v, msg, "nonce", WQ_REQ, 64, &h->nonce, NULL) == 0 &&
	    !is_hex(h->nonce, 64))
		wq_msg_fail(&v, "nonce", "expected 64 lowercase hex digits");
	if (v.why) {
		*why = v.why;
		memset(h, 0, sizeof *h);
		return HTC_EPROTO;
	}
	h->msg = json_incref((json_t *)msg);
	return 0;
}

void wq_msg_hello_free(struct wq_hello *h)
{
	if (!h)
		return;
	json_decref(h->msg);
	memset(h, 0, sizeof *h);
}

/* ---- error ----------------------------------------------------------------- */

json_t *wq_msg_error_build(const char *code, const char *text, bool fatal, int64_t retry_after)
{
	size_t len = strlen(text);
	size_t cut = wq_msg_utf8_cut(text, len, WQ_TEXT_SEND_MAX);
	json_t *t = json_stringn(text, cut);
	if (!t) {
		/* not valid UTF-8: send an escaped copy rather than nothing */
		char *esc = wq_msg_escape(text, len, WQ_TEXT_SEND_MAX / 4, false);
		t = json_string(esc);
		free(esc);
	}
	json_t *o =
	    json_pack("{s:s,s:s,s:o,s:b}", "m", "error", "code", code, "text", t, "fatal", fatal);
	if (o && retry_after >= 0)
		json_object_set_new(o, "retry_after", json_integer(retry_after));
	return o;
}

int wq_msg_error_parse(const json_t *msg, struct wq_error *e, char **why)
{
	struct wq_msg_v v = {.m = "error"};
	memset(e, 0, sizeof *e);
	e->retry_after = -1;
	wq_msg_str(&v, msg, "code", WQ_REQ, 64, &e->code, NULL);
	wq_msg_str(&v, msg, "text", WQ_REQ, WQ_TEXT_RECV_MAX, &e->text, NULL);
	wq_msg_bool(&v, msg, "fatal", WQ_REQ, &e->fatal);
	wq_msg_int(&v, msg, "retry_after", 0, 0, WQ_MAX_ID, &e->retry_after);
	if (v.why) {
		*why = v.why;
		memset(e, 0, sizeof *e);
		return HTC_EPROTO;
	}
	*why = NULL;
	e->msg = json_incref((json_t *)msg);
	return 0;
}

void wq_msg_error_free(struct wq_error *e)
{
	if (!e)
		return;
	json_decref(e->msg);
	memset(e, 0, sizeof *e);
}
