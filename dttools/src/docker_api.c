/* docker_api.c: the Docker Engine API client of docker_api.h: HTTP over the engine's Unix socket
 * with libcurl, one easy handle per call, and a multi handle where a stream (attach, exec) runs
 * alongside a wait. Errors carry the call and Docker's own `message`. */
#include "docker_api.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "full_io.h"
#include "buffer.h"
#include "config.h"
#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "timeutil.h"
#include "curl_init.h"
#include "xalloc.h"

#include "banned.h"

#define API_PREFIX "http://docker/v1.41"
#define POLL_MS    100
#define ATTACH_MS  10000 /* an attach or a wait must be registered within this */
#define GRACE_MS   3000  /* output still arriving after the end */

struct docker_api {
	char *socket;
	long timeout_ms;
};

struct docker_api *docker_api_create(const char *socket, char **err)
{
	const char *s = socket;
	if (!s) {
		const char *h = getenv("DOCKER_HOST");
		if (h && *h) {
			if (!str_has_prefix(h, "unix://") || !h[7]) {
				*err = xasprintf(
				    "DOCKER_HOST=%s: only unix:///path sockets are supported", h);
				errno = EINVAL;
				return NULL;
			}
			s = h + 7;
		} else {
			s = DOCKER_API_DEFAULT_SOCKET;
		}
	}
	curl_init_once();
	struct docker_api *d = xcalloc(1, sizeof *d);
	d->socket = xstrdup(s);
	d->timeout_ms = DOCKER_API_TIMEOUT_MS;
	return d;
}

void docker_api_delete(struct docker_api *d)
{
	if (!d)
		return;
	free(d->socket);
	free(d);
}

const char *docker_api_socket(const struct docker_api *d)
{
	return d->socket;
}

void docker_api_set_timeout(struct docker_api *d, long ms)
{
	d->timeout_ms = ms > 0 ? ms : DOCKER_API_TIMEOUT_MS;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- one request ------------------------------------------------------------------------ */

struct req {
	struct docker_api *d;
	const char *method;
	char *path;
	char *body;
	CURL *c;
	struct curl_slist *hdrs;
	struct buffer reply;
	bool too_big;
	bool headers_done;              /* the blank line after the headers was seen */
	struct docker_api_demux *demux; /* stream calls: the body goes here */
	int write_err;
	char errbuf[CURL_ERROR_SIZE];
	bool finished;
	CURLcode result;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	size_t len = size * n;
	if (r->demux) {
		int e = docker_api_demux_feed(r->demux, p, len);
		if (e < 0) {
			r->write_err = e;
			return 0;
		}
		return len;
	}
	if (buffer_len(&r->reply) + len > DOCKER_API_BODY_MAX) {
		r->too_big = true;
		return 0;
	}
	if (buffer_putlstring(&r->reply, p, len) < 0) {
		r->too_big = true;
		return 0;
	}
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	size_t len = size * n;
	if ((len == 2 && p[0] == '\r' && p[1] == '\n') || (len == 1 && p[0] == '\n'))
		r->headers_done = true;
	return len;
}

static void req_init(struct req *r, struct docker_api *d, const char *method, const char *path,
                     json_t *body, bool stream)
{
	memset(r, 0, sizeof *r);
	r->d = d;
	r->method = method;
	r->path = xstrdup(path);
	buffer_init(&r->reply, DOCKER_API_BODY_MAX); /* the cap; on_body checks it first */
	if (body)
		r->body = json_dumps(body, JSON_COMPACT);
	r->c = curl_easy_init();
	char *url = xasprintf("%s%s", API_PREFIX, path);
	curl_easy_setopt(r->c, CURLOPT_URL, url);
	free(url);
	curl_easy_setopt(r->c, CURLOPT_UNIX_SOCKET_PATH, d->socket);
	curl_easy_setopt(r->c, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(r->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->c, CURLOPT_CONNECTTIMEOUT_MS, (long)DOCKER_API_CONNECT_MS);
	if (!stream)
		curl_easy_setopt(r->c, CURLOPT_TIMEOUT_MS, d->timeout_ms);
	curl_easy_setopt(r->c, CURLOPT_USERAGENT, "htc-worker/" HTC_VERSION);
	curl_easy_setopt(r->c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->c, CURLOPT_ERRORBUFFER, r->errbuf);
	if (getenv("DOCKER_API_CURL_VERBOSE"))
		curl_easy_setopt(r->c, CURLOPT_VERBOSE, 1L);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(r->c, CURLOPT_POST, 1L);
		curl_easy_setopt(r->c, CURLOPT_POSTFIELDS, r->body ? r->body : "");
		curl_easy_setopt(r->c, CURLOPT_POSTFIELDSIZE,
		                 (long)(r->body ? strlen(r->body) : 0));
		if (r->body)
			r->hdrs = curl_slist_append(r->hdrs, "Content-Type: application/json");
	} else if (strcmp(method, "GET") != 0) {
		curl_easy_setopt(r->c, CURLOPT_CUSTOMREQUEST, method);
	}
	r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	curl_easy_setopt(r->c, CURLOPT_HTTPHEADER, r->hdrs);
}

static void req_free(struct req *r)
{
	if (r->c)
		curl_easy_cleanup(r->c);
	curl_slist_free_all(r->hdrs);
	free(r->body);
	free(r->path);
	buffer_free(&r->reply);
}

static int status_code(long st)
{
	if (st == 404)
		return -ENOENT;
	if (st == 409)
		return -EEXIST;
	return -EIO;
}

/* The outcome of a finished request: 0 for 2xx, else an error with *err. */
static int req_outcome(struct req *r, CURLcode cr, long *status, json_t **reply, char **err)
{
	long st = 0;
	curl_easy_getinfo(r->c, CURLINFO_RESPONSE_CODE, &st);
	if (status)
		*status = st;
	if (reply)
		*reply = NULL;
	if (cr != CURLE_OK && !(st >= 200 && st < 300 && r->demux && cr == CURLE_PARTIAL_FILE)) {
		long oserr = 0;
		curl_easy_getinfo(r->c, CURLINFO_OS_ERRNO, &oserr);
		int e = oserr > 0 ? -(int)oserr : -EIO;
		if (cr == CURLE_OPERATION_TIMEDOUT)
			e = -ETIMEDOUT;
		if (r->write_err) {
			*err = xasprintf("docker %s %s: cannot write the output: %s", r->method,
			                 r->path, htc_strerror(r->write_err));
			return r->write_err;
		}
		if (r->too_big) {
			*err = xasprintf("docker %s %s: the answer is larger than %d bytes",
			                 r->method, r->path, DOCKER_API_BODY_MAX);
			return HTC_ETOOBIG;
		}
		if (st == 0 || cr == CURLE_COULDNT_CONNECT) {
			*err = xasprintf("docker %s %s: cannot reach the Docker Engine at %s: %s",
			                 r->method, r->path, r->d->socket,
			                 r->errbuf[0] ? r->errbuf : curl_easy_strerror(cr));
			/* a socket that is not there: not the engine's "no such object" */
			return e == -ENOENT ? -ECONNREFUSED : e;
		}
		*err = xasprintf("docker %s %s: %s", r->method, r->path,
		                 r->errbuf[0] ? r->errbuf : curl_easy_strerror(cr));
		return e;
	}
	json_t *j = NULL;
	if (!r->demux && buffer_len(&r->reply) > 0)
		j = json_loadb(buffer_tostring(&r->reply), buffer_len(&r->reply), 0, NULL);
	if (st < 200 || st >= 300) {
		const char *msg = json_string_value(json_object_get(j, "message"));
		char *plain = NULL;
		if (!msg) {
			plain = xstrdup(buffer_len(&r->reply) ? buffer_tostring(&r->reply) : "");
			str_trim(plain);
			if (strlen(plain) > 300)
				plain[300] = 0;
			msg = *plain ? plain : "(no message)";
		}
		*err = xasprintf("docker %s %s: %ld: %s", r->method, r->path, st, msg);
		free(plain);
		json_decref(j);
		return status_code(st);
	}
	if (reply)
		*reply = j;
	else
		json_decref(j);
	return 0;
}

int docker_api_call(struct docker_api *d, const char *method, const char *path, json_t *body,
                    long *status, json_t **reply, char **err)
{
	struct req r;
	req_init(&r, d, method, path, body, false);
	CURLcode cr = curl_easy_perform(r.c);
	int e = req_outcome(&r, cr, status, reply, err);
	debug(D_WORKER, "docker %s %s: %d", method, path, e);
	req_free(&r);
	return e;
}

/* ---- loading an image archive ------------------------------------------------------------ */

static size_t on_read_file(char *p, size_t size, size_t n, void *arg)
{
	return fread(p, 1, size * n, (FILE *)arg);
}

/* The name the engine loaded, from one line of its progress stream ({"stream": "Loaded image:
 * NAME\n"}, or "Loaded image ID: ID"), or an error line ({"error": "..."}) into *ERR. */
static void load_line(json_t *j, char **ref, char **err)
{
	const char *e = json_string_value(json_object_get(j, "error"));
	if (e && !*err)
		*err = xstrdup(e);
	const char *s = json_string_value(json_object_get(j, "stream"));
	if (!s)
		return;
	static const char *const tags[] = {"Loaded image: ", "Loaded image ID: "};
	for (int k = 0; k < 2; k++) {
		size_t l = strlen(tags[k]);
		if (strncmp(s, tags[k], l) == 0 && !*ref) {
			*ref = xstrdup(s + l);
			str_trim(*ref);
		}
	}
}

int docker_api_load(struct docker_api *d, const char *path, char **ref, char **err)
{
	*ref = NULL;
	*err = NULL;
	FILE *f = fopen(path, "rbe");
	if (!f) {
		int e = -errno;
		*err = xasprintf("docker POST /images/load: cannot open %s: %s", path,
		                 htc_strerror(e));
		return e;
	}
	struct req r;
	req_init(&r, d, "POST", "/images/load?quiet=1", NULL, true);
	fseeko(f, 0, SEEK_END);
	curl_off_t size = (curl_off_t)ftello(f);
	rewind(f);
	curl_easy_setopt(r.c, CURLOPT_POSTFIELDS, NULL);
	curl_easy_setopt(r.c, CURLOPT_POSTFIELDSIZE_LARGE, size);
	curl_easy_setopt(r.c, CURLOPT_READFUNCTION, on_read_file);
	curl_easy_setopt(r.c, CURLOPT_READDATA, f);
	r.hdrs = curl_slist_append(r.hdrs, "Content-Type: application/x-tar");
	curl_easy_setopt(r.c, CURLOPT_HTTPHEADER, r.hdrs);
	CURLcode cr = curl_easy_perform(r.c);
	fclose(f);
	char *body = buffer_len(&r.reply) ? xstrdup(buffer_tostring(&r.reply)) : xstrdup("");
	int e = req_outcome(&r, cr, NULL, NULL, err);
	if (e == 0) {
		char *engine_err = NULL;
		for (char *line = body, *next; line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = 0;
			json_t *j = json_loads(line, 0, NULL);
			load_line(j, ref, &engine_err);
			json_decref(j);
		}
		if (engine_err || !*ref) {
			*err = xasprintf("docker POST /images/load: %s: %s", path,
			                 engine_err ? engine_err
			                            : "the engine named no image it loaded");
			free(*ref);
			*ref = NULL;
			e = -EIO;
		}
		free(engine_err);
	}
	debug(D_WORKER, "docker POST /images/load %s: %d %s", path, e, *ref ? *ref : "");
	free(body);
	req_free(&r);
	return e;
}

/* ---- calls -------------------------------------------------------------------------------- */

int docker_api_ping(struct docker_api *d, char **err)
{
	return docker_api_call(d, "GET", "/_ping", NULL, NULL, NULL, err);
}

static char *escape(const char *s)
{
	CURL *c = curl_easy_init();
	char *e = curl_easy_escape(c, s, 0);
	char *out = xstrdup(e ? e : "");
	curl_free(e);
	curl_easy_cleanup(c);
	return out;
}

int docker_api_image_exists(struct docker_api *d, const char *image, char **err)
{
	/* the name's '/' and ':' stay as they are: they are part of the path */
	for (const char *p = image; *p; p++)
		if (!(str_hex_digit(*p) >= 0 || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || strchr("._-/:@", *p))) {
			*err = xasprintf("image name \"%s\": the character '%c' is not allowed",
			                 image, *p);
			return HTC_EPARSE;
		}
	if (!*image) {
		*err = xstrdup("the image name is empty");
		return HTC_EPARSE;
	}
	char *path = xasprintf("/images/%s/json", image);
	int e = docker_api_call(d, "GET", path, NULL, NULL, NULL, err);
	free(path);
	return e;
}

int docker_api_nestable(struct docker_api *d, bool *nestable, char **err)
{
	json_t *j = NULL;
	*nestable = false;
	int e = docker_api_call(d, "GET", "/info", NULL, NULL, &j, err);
	if (e < 0)
		return e;
	const char *drv = json_string_value(json_object_get(j, "CgroupDriver"));
	const char *ver = json_string_value(json_object_get(j, "CgroupVersion"));
	*nestable = drv && ver && strcmp(drv, "cgroupfs") == 0 && strcmp(ver, "1") == 0;
	json_decref(j);
	return 0;
}

/* POST CONFIG to PATH; *ID (caller frees) is the answer's Id. 0 or an error with *ERR. */
static int post_for_id(struct docker_api *d, const char *path, json_t *config, char **id,
                       char **err)
{
	json_t *j = NULL;
	int e = docker_api_call(d, "POST", path, config, NULL, &j, err);
	if (e < 0)
		return e;
	const char *s = json_string_value(json_object_get(j, "Id"));
	if (!s) {
		*err = xasprintf("docker POST %s: the answer has no Id", path);
		json_decref(j);
		return HTC_EPROTO;
	}
	*id = xstrdup(s);
	json_decref(j);
	return 0;
}

int docker_api_create_container(struct docker_api *d, const char *name, json_t *config, char **id,
                                char **err)
{
	char *path;
	if (name) {
		char *n = escape(name);
		path = xasprintf("/containers/create?name=%s", n);
		free(n);
	} else {
		path = xstrdup("/containers/create");
	}
	int e = post_for_id(d, path, config, id, err);
	free(path);
	return e;
}

static int id_call(struct docker_api *d, const char *method, const char *fmt, const char *id,
                   char **err)
{
	char *path = xasprintf(fmt, id);
	int e = docker_api_call(d, method, path, NULL, NULL, NULL, err);
	free(path);
	return e;
}

int docker_api_start(struct docker_api *d, const char *id, char **err)
{
	return id_call(d, "POST", "/containers/%s/start", id, err);
}

int docker_api_kill(struct docker_api *d, const char *id, int sig, char **err)
{
	char *path = xasprintf("/containers/%s/kill?signal=%d", id, sig);
	long st = 0;
	int e = docker_api_call(d, "POST", path, NULL, &st, NULL, err);
	free(path);
	if (e < 0 && st == 409) { /* not running */
		free(*err);
		*err = NULL;
		return 0;
	}
	return e;
}

int docker_api_remove(struct docker_api *d, const char *id, char **err)
{
	int e = id_call(d, "DELETE", "/containers/%s?force=1", id, err);
	if (e == -ENOENT) {
		free(*err);
		*err = NULL;
		return 0;
	}
	return e;
}

int docker_api_list(struct docker_api *d, const char *label, json_t **list, char **err)
{
	json_t *f = json_pack("{s:[s]}", "label", label);
	char *fs = json_dumps(f, JSON_COMPACT);
	json_decref(f);
	char *fe = escape(fs);
	free(fs);
	char *path = xasprintf("/containers/json?all=1&filters=%s", fe);
	free(fe);
	int e = docker_api_call(d, "GET", path, NULL, NULL, list, err);
	free(path);
	if (e == 0 && !json_is_array(*list)) {
		json_decref(*list);
		*list = NULL;
		*err = xstrdup("docker GET /containers/json: the answer is not a list");
		return HTC_EPROTO;
	}
	return e;
}

/* GET /containers/{id}/json: *STATE (new reference) is its State object (NULL without one). */
static int inspect_state(struct docker_api *d, const char *id, json_t **state, char **err)
{
	*state = NULL;
	char *path = xasprintf("/containers/%s/json", id);
	json_t *j = NULL;
	int e = docker_api_call(d, "GET", path, NULL, NULL, &j, err);
	free(path);
	if (e < 0)
		return e;
	*state = json_incref(json_object_get(j, "State"));
	json_decref(j);
	return 0;
}

int docker_api_oom_killed(struct docker_api *d, const char *id, bool *oom, char **err)
{
	json_t *st;
	int e = inspect_state(d, id, &st, err);
	*oom = json_is_true(json_object_get(st, "OOMKilled"));
	json_decref(st);
	return e;
}

int docker_api_container_pid(struct docker_api *d, const char *id, long *pid, char **err)
{
	json_t *st;
	int e = inspect_state(d, id, &st, err);
	json_t *p = json_object_get(st, "Pid");
	*pid = json_is_integer(p) && json_integer_value(p) > 0 ? (long)json_integer_value(p) : 0;
	json_decref(st);
	return e;
}

/* POST /containers/{id}/update with BODY (taken). */
static int update(struct docker_api *d, const char *id, json_t *body, char **err)
{
	char *path = xasprintf("/containers/%s/update", id);
	json_t *j = NULL;
	int e = docker_api_call(d, "POST", path, body, NULL, &j, err);
	json_decref(body);
	json_decref(j);
	free(path);
	return e;
}

int docker_api_update_memory(struct docker_api *d, const char *id, int64_t bytes, char **err)
{
	return update(
	    d, id,
	    json_pack("{s:I,s:I}", "Memory", (json_int_t)bytes, "MemorySwap", (json_int_t)bytes),
	    err);
}

int docker_api_update_cores(struct docker_api *d, const char *id, double cores, char **err)
{
	return update(d, id, json_pack("{s:I}", "NanoCpus", (json_int_t)(cores * 1e9 + 0.5)), err);
}

/* ---- the attach stream ---------------------------------------------------------------------- */

void docker_api_demux_init(struct docker_api_demux *x, int out_fd, int err_fd)
{
	memset(x, 0, sizeof *x);
	x->out_fd = out_fd;
	x->err_fd = err_fd;
}

int docker_api_demux_feed(struct docker_api_demux *x, const char *buf, size_t n)
{
	while (n > 0) {
		if (x->left == 0) {
			size_t take = sizeof x->hdr - x->hdr_len;
			if (take > n)
				take = n;
			memcpy(x->hdr + x->hdr_len, buf, take);
			x->hdr_len += take;
			buf += take;
			n -= take;
			if (x->hdr_len < sizeof x->hdr)
				return 0;
			x->hdr_len = 0;
			x->stream = x->hdr[0];
			x->left = ((unsigned long)x->hdr[4] << 24) |
			          ((unsigned long)x->hdr[5] << 16) |
			          ((unsigned long)x->hdr[6] << 8) | (unsigned long)x->hdr[7];
			continue;
		}
		size_t take = x->left < n ? x->left : n;
		int fd = x->stream == 1 ? x->out_fd : x->err_fd;
		int e = fd >= 0 ? full_write(fd, buf, take) : 0;
		if (e < 0)
			return e;
		x->left -= take;
		buf += take;
		n -= take;
	}
	return 0;
}

/* Drives M for at most MS, or until DONE(arg) says so; marks finished requests. */
static void drive(CURLM *m, struct req **rs, int nr, long ms, bool (*done)(struct req **, int))
{
	int64_t deadline = time_monotonic_us() + ms * 1000;
	for (;;) {
		int running = 0;
		curl_multi_perform(m, &running);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			for (int i = 0; i < nr; i++)
				if (rs[i] && rs[i]->c == msg->easy_handle) {
					rs[i]->finished = true;
					rs[i]->result = msg->data.result;
				}
		}
		if (done && done(rs, nr))
			return;
		if (running == 0 || time_monotonic_us() >= deadline)
			return;
		curl_multi_poll(m, NULL, 0, POLL_MS, NULL);
		if (!done)
			return; /* one round */
	}
}

static bool all_registered(struct req **rs, int nr)
{
	for (int i = 0; i < nr; i++)
		if (rs[i] && !rs[i]->headers_done && !rs[i]->finished)
			return false;
	return true;
}

static bool all_finished(struct req **rs, int nr)
{
	for (int i = 0; i < nr; i++)
		if (rs[i] && !rs[i]->finished)
			return false;
	return true;
}

int docker_api_run(struct docker_api *d, const char *id, bool auto_removed, int out_fd, int err_fd,
                   volatile sig_atomic_t *stop, int *status, char **err)
{
	*status = -1;
	struct docker_api_demux dm;
	docker_api_demux_init(&dm, out_fd, err_fd);
	char *ap = xasprintf("/containers/%s/attach?stream=1&stdout=1&stderr=1", id);
	char *wp = xasprintf("/containers/%s/wait?condition=%s", id,
	                     auto_removed ? "removed" : "next-exit");
	struct req att, wt;
	req_init(&att, d, "POST", ap, NULL, true);
	att.demux = &dm;
	req_init(&wt, d, "POST", wp, NULL, true);
	free(ap);
	free(wp);
	CURLM *m = curl_multi_init();
	curl_multi_add_handle(m, att.c);
	curl_multi_add_handle(m, wt.c);
	struct req *rs[] = {&att, &wt};
	int e = 0;
	drive(m, rs, 2, ATTACH_MS, all_registered);
	for (int i = 0; i < 2; i++)
		if (rs[i]->finished || !rs[i]->headers_done) {
			e = rs[i]->finished ? req_outcome(rs[i], rs[i]->result, NULL, NULL, err)
			                    : -ETIMEDOUT;
			if (e == 0) {
				*err =
				    xasprintf("docker POST %s: ended before the container started",
				              rs[i]->path);
				e = HTC_EPROTO;
			} else if (e == -ETIMEDOUT && !*err) {
				*err = xasprintf("docker POST %s: no answer within %d ms",
				                 rs[i]->path, ATTACH_MS);
			}
			goto out;
		}
	e = docker_api_start(d, id, err);
	if (e < 0)
		goto out;
	bool killed = false;
	while (!wt.finished) {
		drive(m, rs, 2, POLL_MS, NULL);
		if (stop && *stop && !killed) {
			char *kerr = NULL;
			if (docker_api_kill(d, id, SIGKILL, &kerr) < 0) {
				warn("%s", kerr);
				free(kerr);
			}
			killed = true;
		}
	}
	/* the rest of the output */
	drive(m, rs, 2, GRACE_MS, all_finished);
	json_t *j = NULL;
	e = req_outcome(&wt, wt.result, NULL, &j, err);
	if (e < 0)
		goto out;
	json_t *code = json_object_get(j, "StatusCode");
	const char *werr =
	    json_string_value(json_object_get(json_object_get(j, "Error"), "Message"));
	if (!json_is_integer(code) || (werr && *werr)) {
		*err = xasprintf("docker POST /containers/%s/wait: %s", id,
		                 werr && *werr ? werr : "no StatusCode in the answer");
		e = HTC_EPROTO;
	} else {
		*status = (int)json_integer_value(code);
	}
	json_decref(j);
	if (dm.hdr_len || dm.left)
		debug(D_WORKER, "docker attach %s: the output ended inside a frame", id);
out:
	curl_multi_remove_handle(m, att.c);
	curl_multi_remove_handle(m, wt.c);
	curl_multi_cleanup(m);
	req_free(&att);
	req_free(&wt);
	return e;
}

static int exec_inspect(struct docker_api *d, const char *eid, bool *running, int *code, long *pid,
                        char **err)
{
	char *path = xasprintf("/exec/%s/json", eid);
	json_t *j = NULL;
	int e = docker_api_call(d, "GET", path, NULL, NULL, &j, err);
	free(path);
	if (e < 0)
		return e;
	*running = json_is_true(json_object_get(j, "Running"));
	json_t *c = json_object_get(j, "ExitCode");
	*code = json_is_integer(c) ? (int)json_integer_value(c) : -1;
	*pid = (long)json_integer_value(json_object_get(j, "Pid"));
	json_decref(j);
	return 0;
}

int docker_api_exec(struct docker_api *d, const char *id, json_t *config, int out_fd, int err_fd,
                    volatile sig_atomic_t *stop, int *status, char **err)
{
	*status = -1;
	char *path = xasprintf("/containers/%s/exec", id);
	char *eid = NULL;
	int e = post_for_id(d, path, config, &eid, err);
	free(path);
	if (e < 0)
		return e;

	struct docker_api_demux dm;
	docker_api_demux_init(&dm, out_fd, err_fd);
	char *sp = xasprintf("/exec/%s/start", eid);
	json_t *body = json_pack("{s:b,s:b}", "Detach", 0, "Tty", 0);
	struct req st;
	req_init(&st, d, "POST", sp, body, true);
	json_decref(body);
	free(sp);
	st.demux = &dm;
	CURLM *m = curl_multi_init();
	curl_multi_add_handle(m, st.c);
	struct req *rs[] = {&st};
	bool killed = false;
	while (!st.finished) {
		drive(m, rs, 1, POLL_MS, NULL);
		if (stop && *stop && !killed) {
			bool running;
			int code;
			long pid = 0;
			char *kerr = NULL;
			if (exec_inspect(d, eid, &running, &code, &pid, &kerr) < 0) {
				warn("%s", kerr);
				free(kerr);
			} else if (running && pid > 1) {
				kill((pid_t)pid, SIGKILL);
			}
			killed = true;
		}
	}
	e = req_outcome(&st, st.result, NULL, NULL, err);
	curl_multi_remove_handle(m, st.c);
	curl_multi_cleanup(m);
	req_free(&st);
	/* the exit code is set a moment after the stream ends */
	for (int i = 0; e == 0 && i < 100; i++) {
		bool running;
		int code;
		long pid;
		e = exec_inspect(d, eid, &running, &code, &pid, err);
		if (e == 0 && !running) {
			*status = code;
			break;
		}
		sleep_ms(20);
	}
	if (e == 0 && *status < 0) {
		*err = xasprintf("docker GET /exec/%s/json: still running after its output ended",
		                 eid);
		e = -ETIMEDOUT;
	}
	free(eid);
	return e;
}
