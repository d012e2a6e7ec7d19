/* worker_conn.c: the connection cycle of work_queue_worker (doc/work-queue-protocol.md section 1):
 * connect with a 10 s timeout and exponential backoff with jitter, find masters through the
 * catalog with -M and try them (by priority, then in random order), run the worker side of the
 * handshake (TLS and password included), and end the worker with the statuses 0/1/2/3 (idle
 * timeout, wall time, signals, refusals, no master). The messages of a session are handled in
 * worker_session.c (worker_session.h); worker_conn_internal.h declares what this file gives it. */
#include "worker_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_client.h"
#include "catalog_filter.h"
#include "catalog_project.h"
#include "config.h"
#include "debug.h"
#include "htc_error.h"
#include "worker_cpus.h"
#include "worker_elastic.h"
#include "path.h"
#include "timeutil.h"
#include "worker_conn_internal.h"
#include "worker_masters.h"
#include "wq_probe.h"
#include "worker_session.h"
#include "worker_task.h"
#include "wq_auth.h"
#include "worker_cache.h"
#include "worker_docker.h"
#include "worker_images.h"
#include "worker_engine.h"
#include "wq_conn.h"
#include "wq_handshake.h"
#include "worker_sandbox.h"
#include "worker_shared_session.h"
#include "wq_tls.h"
#include "xalloc.h"

#include "banned.h"

#define ENGINE_PERIOD_MS 2000 /* how often the container engine is asked */

#define ATTEMPT_TIMEOUT_MS 10000
#define BACKOFF_MIN_MS     1000
#define BACKOFF_MAX_MS     60000
#define STABLE_MS          60000 /* a connection up this long resets the backoff */
#define PROBE_TIMEOUT_MS   5000  /* the CCTools status probe of a silent peer */
#define CATALOG_TIMEOUT_S  10.0

struct worker {
	uv_loop_t *loop;
	const struct worker_opts *o;
	char id[33];
	char host[256];
	char software[64];
	char *workdir;
	bool workdir_made;
	int workdir_lock; /* --keep-cache with -s: the lock on the workdir, or -1 */
	int workdir_fd;
	struct worker_cache *cache;
	struct worker_shared *shared;
	struct worker_ledger *ledger;
	struct wq_auth_key *key;
	struct wq_tls_config *tls;
	struct worker_docker *docker;   /* --docker, or NULL */
	struct worker_engine *engine;   /* the watch on its engine, with docker */
	struct worker_cpus *cpus;       /* --pin-cores, made when first asked for */
	struct worker_elastic *elastic; /* --memory-grow / --memory-throttle, made when asked */

	struct worker_session *s;
	/* the master being tried */
	char *m_host;
	char *m_tls_name; /* the name a TLS certificate is checked against */
	char *m_project;  /* with -M: the project of the master being tried */
	int m_port;
	json_t *masters; /* -M: addresses to try (worker_masters.h) */
	size_t next_master;
	struct catalog_query_op *query;
	uv_getaddrinfo_t gai;
	bool gai_busy;
	uv_tcp_t *tcp; /* connecting */
	uv_connect_t creq;
	bool attempt_failed; /* the attempt timer closed the socket */

	uv_timer_t retry_timer, attempt_timer, deadline_timer, tick_timer, wall_timer, finish_timer;
	int finish_status;
	const char *finish_reason; /* static text */
	bool timers_closed;
	uint64_t backoff_ms;
	uint64_t idle_since_ms;
	int exit_status;
	bool finishing, stopped, permanent;
	int signals;
	bool ever_connected; /* a handshake has succeeded once */
	int64_t tasks_done;  /* tasks finished over every connection (--exit-after-tasks) */
	struct sockaddr_storage m_addr; /* the address of the master being tried, once connected */
	bool m_addr_ok;
	struct wq_probe *probe; /* asking a silent peer whether it is a CCTools master */
	bool probed;            /* the current master was probed once */
	char probe_said[256];   /* the failure to report when the probe finds no CCTools */
	char hs_failure[256];   /* why the last handshake failed, when the worker should say it */
	bool hs_said;           /* the handshake logged its refusal itself */
	char last_failure[512]; /* the last failure said on stderr (each reason is said once) */
};

static uint64_t now_ms(struct worker *w)
{
	uv_update_time(w->loop);
	return uv_now(w->loop);
}

struct worker_session *worker_session_of(struct worker *w)
{
	return w->s;
}
uv_loop_t *worker_loop(struct worker *w)
{
	return w->loop;
}
/* An object left the cache: the image loaded from it (an archive) goes too. */
static void on_object_removed(const char *name, void *arg)
{
	struct worker *w = arg;
	struct worker_images *im = w->docker ? worker_docker_images(w->docker) : NULL;
	if (im && worker_images_archive_removed(im, name) && w->s)
		worker_session_images_changed(w->s);
}

/* The engine stopped or started answering: the master hears it (`images`). */
static void on_engine(bool up, const char *why, void *arg)
{
	struct worker *w = arg;
	const char *sock = worker_docker_socket(w->docker);
	if (up)
		notice(
		    "the container engine at %s answers again: container tasks are welcome again",
		    sock);
	else
		warn("the container engine at %s does not answer (%s): no container task until it "
		     "does",
		     sock, why ? why : "-");
	struct worker_images *im = worker_docker_images(w->docker);
	if (im && worker_images_set_engine(im, up) && w->s)
		worker_session_images_changed(w->s);
}

void worker_set_docker(struct worker *w, struct worker_docker *d)
{
	w->docker = d;
	worker_cache_set_removed_fn(w->cache, d ? on_object_removed : NULL, w);
	worker_engine_delete(w->engine);
	w->engine = d ? worker_engine_create(w->loop, worker_docker_socket(d), ENGINE_PERIOD_MS,
	                                     on_engine, w)
	              : NULL;
}
struct worker_engine *worker_engine_of(struct worker *w)
{
	return w->engine;
}
struct worker_docker *worker_docker_of(struct worker *w)
{
	return w->docker;
}

struct worker_elastic *worker_elastic_of(struct worker *w)
{
	if (!w->elastic)
		w->elastic = worker_elastic_create(w->loop, w->o, w->ledger);
	return w->elastic;
}

struct worker_cpus *worker_cpus_of(struct worker *w)
{
	if (!w->cpus && w->o->pin_cores)
		w->cpus = worker_cpus_create(NULL);
	return w->cpus;
}
const struct worker_opts *worker_opts_of(struct worker *w)
{
	return w->o;
}
struct worker_cache *worker_conn_cache(struct worker *w)
{
	return w->cache;
}
struct worker_shared *worker_conn_shared(struct worker *w)
{
	return w->shared;
}
struct worker_ledger *worker_ledger(struct worker *w)
{
	return w->ledger;
}
int worker_workdir_fd(struct worker *w)
{
	return w->workdir_fd;
}
const char *worker_workdir(struct worker *w)
{
	return w->workdir;
}
const char *worker_hostname(struct worker *w)
{
	return w->host;
}
int worker_exit_status(const struct worker *w)
{
	return w->exit_status;
}

int64_t worker_count_task(struct worker *w)
{
	return ++w->tasks_done;
}

int64_t worker_tasks_done(struct worker *w)
{
	return w->tasks_done;
}

void worker_touch(struct worker *w)
{
	w->idle_since_ms = now_ms(w);
}

/* ---- set-up -------------------------------------------------------------------------------- */

/* -s DIR: the worker's own workspace DIR/worker-UID-PID, as CCTools makes it, so that any
 * number of workers share one DIR; one left by a dead worker of the same pid (it cannot be
 * alive: the pid is ours) is removed first. With --keep-cache the workspace is DIR itself, so
 * that the next worker started with the same -s DIR finds the cache; a lock keeps a second such
 * worker out of it. 0, or -1 with *ERR. */
static int make_named_workdir(struct worker *w, char **err)
{
	int r = path_mkdir_p(w->o->workdir, 0755);
	if (r < 0) {
		*err = xasprintf("workdir %s: %s", w->o->workdir, strerror(-r));
		return -1;
	}
	char real[PATH_MAX];
	if (!realpath(w->o->workdir, real)) {
		*err = xasprintf("workdir %s: %s", w->o->workdir, strerror(errno));
		return -1;
	}
	if (w->o->keep_cache) {
		char *lock = path_join(real, ".worker.lock");
		w->workdir_lock = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (w->workdir_lock < 0 || flock(w->workdir_lock, LOCK_EX | LOCK_NB) < 0) {
			*err =
			    xasprintf("workdir %s: %s", real,
			              w->workdir_lock < 0
			                  ? strerror(errno)
			                  : "another worker with --keep-cache uses it (one at a "
			                    "time keeps a cache; without --keep-cache each worker "
			                    "gets a workspace of its own under it)");
			free(lock);
			return -1;
		}
		free(lock);
		w->workdir = xstrdup(real);
		return 0;
	}
	char *ws = xasprintf("%s/worker-%ld-%ld", real, (long)getuid(), (long)getpid());
	if (path_exists(ws)) {
		warn("removing %s, left by an earlier worker of this pid", ws);
		tree_remove(ws);
	}
	if (mkdir(ws, 0755) < 0) {
		*err = xasprintf("workdir %s: %s", ws, strerror(errno));
		free(ws);
		return -1;
	}
	w->workdir = ws;
	w->workdir_made = true;
	return 0;
}

static int make_workdir(struct worker *w, char **err)
{
	if (w->o->workdir) {
		if (make_named_workdir(w, err) < 0)
			return -1;
	} else {
		const char *tmp = getenv("TMPDIR");
		char *templ = xasprintf("%s/wq-worker-%ld-XXXXXX", tmp && *tmp ? tmp : "/tmp",
		                        (long)getpid());
		if (!mkdtemp(templ)) {
			*err = xasprintf("cannot make a work directory %s: %s", templ,
			                 strerror(errno));
			free(templ);
			return -1;
		}
		char real[PATH_MAX];
		w->workdir = xstrdup(realpath(templ, real) ? real : templ);
		w->workdir_made = true;
		free(templ);
	}
	w->workdir_fd = open(w->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->workdir_fd < 0) {
		*err = xasprintf("workdir %s: %s", w->workdir, strerror(errno));
		return -1;
	}
	return 0;
}

static struct wq_tls_config *make_tls(const struct worker_opts *o, char **err)
{
	enum wq_tls_verify mode = WQ_TLS_VERIFY_SYSTEM;
	const char *arg = NULL;
	if (o->ssl_fingerprint) {
		mode = WQ_TLS_VERIFY_FINGERPRINT;
		arg = o->ssl_fingerprint;
	} else if (o->ssl_no_verify) {
		mode = WQ_TLS_VERIFY_NONE;
		warn("the master's TLS certificate is not verified; only the password "
		     "(bound to this TLS session) protects against impersonation");
	} else if (o->ssl_ca) {
		mode = WQ_TLS_VERIFY_CA_FILE;
		arg = o->ssl_ca;
	}
	return wq_tls_config_client_create(mode, arg, err);
}

struct worker *worker_create(uv_loop_t *loop, const struct worker_opts *o, char **err)
{
	struct worker *w = xcalloc(1, sizeof *w);
	w->loop = loop;
	w->o = o;
	w->workdir_fd = -1;
	w->workdir_lock = -1;
	w->exit_status = WORKER_EXIT_OK;
	w->backoff_ms = BACKOFF_MIN_MS;
	snprintf(w->software, sizeof w->software, "htc %s", HTC_VERSION);
	if (gethostname(w->host, sizeof w->host - 1) != 0 || !w->host[0])
		snprintf(w->host, sizeof w->host, "localhost");
	char nonce[WQ_AUTH_NONCE_HEX];
	if (wq_auth_nonce(NULL, nonce) != 0) {
		*err = xstrdup("cannot get random bytes for the worker id");
		goto fail;
	}
	memcpy(w->id, nonce, 32);
	w->id[32] = 0;
	if (make_workdir(w, err) < 0)
		goto fail;
	w->cache = worker_cache_create(w->workdir);
	if (!w->cache) {
		*err = xasprintf("cache in %s: %s", w->workdir, strerror(errno));
		goto fail;
	}
	int r = worker_cache_scan(w->cache, false);
	if (r < 0) {
		*err = xasprintf("cache in %s: %s", w->workdir, htc_strerror(r));
		goto fail;
	}
	if (o->shared_cache && !(w->shared = worker_shared_open(o, err)))
		goto fail;
	char *tasks = path_join(w->workdir, "tasks");
	worker_sandbox_pool_forget(w->workdir);
	tree_remove(tasks); /* sandboxes of an earlier run */
	r = path_mkdir_p(tasks, 0700);
	free(tasks);
	if (r < 0) {
		*err = xasprintf("workdir %s: cannot make tasks/: %s", w->workdir, strerror(-r));
		goto fail;
	}
	w->ledger = worker_ledger_from_opts(o, w->workdir);
	worker_ledger_set_cache(w->ledger, (int64_t)(worker_cache_bytes(w->cache) >> 20));
	if (o->password_file) {
		char *why = NULL;
		w->key = wq_auth_key_load(o->password_file, &why);
		if (!w->key) {
			*err = why ? why
			           : xasprintf("password file %s: %s", o->password_file,
			                       strerror(errno));
			goto fail;
		}
	}
	if (o->ssl) {
		char *why = NULL;
		w->tls = make_tls(o, &why);
		if (!w->tls) {
			*err = why ? why : xstrdup("cannot set up TLS");
			goto fail;
		}
	}
	uv_timer_init(loop, &w->retry_timer);
	uv_timer_init(loop, &w->attempt_timer);
	uv_timer_init(loop, &w->deadline_timer);
	uv_timer_init(loop, &w->tick_timer);
	uv_timer_init(loop, &w->wall_timer);
	uv_timer_init(loop, &w->finish_timer);
	w->retry_timer.data = w->attempt_timer.data = w->deadline_timer.data = w;
	w->tick_timer.data = w->wall_timer.data = w->finish_timer.data = w;
	debug(D_WORKER, "worker %s on %s, workdir %s", w->id, w->host, w->workdir);
	return w;
fail:
	w->timers_closed = true;
	worker_delete(w);
	return NULL;
}

/* ---- ending -------------------------------------------------------------------------------- */

static void close_timer(uv_timer_t *t)
{
	if (!uv_is_closing((uv_handle_t *)t))
		uv_close((uv_handle_t *)t, NULL);
}

/* Everything is over: close the worker's own handles so that uv_run returns. */
static void stop_all(struct worker *w)
{
	if (w->stopped)
		return;
	w->stopped = true;
	if (w->query) {
		catalog_query_cancel(w->query);
		w->query = NULL;
	}
	if (w->gai_busy)
		uv_cancel((uv_req_t *)&w->gai);
	wq_probe_cancel(w->probe);
	w->probe = NULL;
	if (w->tcp) {
		uv_close((uv_handle_t *)w->tcp, (uv_close_cb)free);
		w->tcp = NULL;
	}
	if (!w->timers_closed) {
		w->timers_closed = true;
		close_timer(&w->retry_timer);
		close_timer(&w->attempt_timer);
		close_timer(&w->deadline_timer);
		close_timer(&w->tick_timer);
		close_timer(&w->wall_timer);
		close_timer(&w->finish_timer);
	}
	debug(D_WORKER, "worker ends with status %d", w->exit_status);
}

void worker_finish(struct worker *w, int status, const char *reason)
{
	if (w->finishing)
		return;
	w->finishing = true;
	w->exit_status = status;
	notice("ending: %s", reason);
	struct worker_session *s = w->s;
	if (!s) {
		stop_all(w);
		return;
	}
	worker_session_drop_tasks(s);
	if (s->active && !s->closing) {
		json_t *bye = json_pack("{s:s,s:s}", "m", "bye", "reason", reason);
		worker_session_close(s, bye);
		json_decref(bye);
	} else if (!s->closing) {
		s->closing = true;
		wq_conn_close_now(s->conn);
	}
}

static void on_finish_timer(uv_timer_t *t)
{
	struct worker *w = t->data;
	worker_finish(w, w->finish_status, w->finish_reason);
}

void worker_finish_soon(struct worker *w, int status, const char *reason)
{
	if (w->finishing || w->stopped || w->finish_reason)
		return;
	w->finish_status = status;
	w->finish_reason = reason;
	uv_timer_start(&w->finish_timer, on_finish_timer, 0, 0);
}

void worker_signal(struct worker *w, int signum)
{
	w->signals++;
	if (w->signals == 1 && w->s && w->s->active && w->s->ntasks > 0) {
		notice("received signal %d: draining (send it again to kill the tasks)", signum);
		worker_session_drain(w->s, "the worker received a termination signal");
		return;
	}
	worker_finish(w, WORKER_EXIT_OK, "terminated by a signal");
}

void worker_delete(struct worker *w)
{
	if (!w)
		return;
	if (w->s) {
		worker_session_drop_tasks(w->s);
		wq_handshake_delete(w->s->hs);
		wq_conn_delete(w->s->conn);
		free(w->s);
		w->s = NULL;
	}
	worker_engine_delete(w->engine); /* before the loop runs out: a ping may be in flight */
	w->engine = NULL;
	stop_all(w);
	worker_elastic_delete(w->elastic); /* its tasks are gone: its timer closes */
	w->elastic = NULL;
	/* let transfers and sandbox removals in the thread pool finish while the cache lives */
	uv_run(w->loop, UV_RUN_DEFAULT);
	json_decref(w->masters);
	free(w->m_host);
	free(w->m_tls_name);
	free(w->m_project);
	worker_cache_delete(w->cache);
	worker_shared_delete(w->shared);
	worker_ledger_delete(w->ledger);
	wq_auth_key_delete(w->key);
	wq_tls_config_delete(w->tls);
	if (w->workdir_fd >= 0)
		close(w->workdir_fd);
	if (w->workdir)
		worker_sandbox_pool_forget(w->workdir);
	if (w->workdir && w->workdir_made && !w->o->keep_cache) {
		tree_remove(w->workdir); /* its own workspace, made at start */
	} else if (w->workdir) {
		char *p = path_join(w->workdir, "tasks");
		tree_remove(p);
		free(p);
	}
	if (w->workdir_lock >= 0)
		close(w->workdir_lock); /* releases it */
	free(w->workdir);
	worker_cpus_delete(w->cpus);
	free(w);
}

/* ---- connecting ---------------------------------------------------------------------------- */

static void attempt(struct worker *w);

static void on_retry(uv_timer_t *t)
{
	attempt(t->data);
}

/* Waits before the next attempt: the backoff (1, 2, 4 ... 60 s, +-25 %), at least MIN_MS. */
static void schedule_retry(struct worker *w, uint64_t min_ms)
{
	if (w->finishing || w->stopped)
		return;
	double jitter = 0.75 + 0.5 * ((double)random() / (double)RAND_MAX);
	uint64_t delay = (uint64_t)((double)w->backoff_ms * jitter);
	if (delay < min_ms)
		delay = min_ms;
	w->backoff_ms *= 2;
	if (w->backoff_ms > BACKOFF_MAX_MS)
		w->backoff_ms = BACKOFF_MAX_MS;
	debug(D_WORKER, "next attempt in %.1f s", (double)delay / 1000.0);
	uv_timer_start(&w->retry_timer, on_retry, delay, 0);
}

/* What a failed attempt means for the user: WHY (a libuv error text, a violation or the end of
 * the connection) with its likely cause, in OUT. */
static void describe_failure(const char *why, char *out, size_t size)
{
	unsigned a, b;
	const char *magic = strstr(why, "bad magic ");
	if (!strcmp(why, "connection refused")) {
		snprintf(out, size,
		         "connection refused: nothing listens on that port (is the master running, "
		         "and is the port the one it wrote?)");
	} else if (strstr(why, "unreachable")) {
		snprintf(out, size, "%s: no route to the master's host", why);
	} else if (!strcmp(why, "connect timed out")) {
		snprintf(out, size,
		         "no answer to the connection within %d s (a firewall, or a "
		         "wrong address?)",
		         ATTEMPT_TIMEOUT_MS / 1000);
	} else if (magic && sscanf(magic, "bad magic %x %x", &a, &b) == 2 && a >= 0x20 &&
	           a < 0x7f && b >= 0x20 && b < 0x7f) {
		snprintf(
		    out, size,
		    "not a Work Queue master of this project: it answered in text (\"%c%c...\"), "
		    "as an HTTP server or a CCTools Work Queue master (a text-line protocol this "
		    "worker does not speak) would",
		    (char)a, (char)b);
	} else if (strstr(why, "not the work queue protocol")) {
		snprintf(out, size, "not a Work Queue master of this project: %s", why);
	} else if (strstr(why, "unknown node or service") || strstr(why, "name lookup")) {
		snprintf(out, size, "cannot resolve the master's host name (%s)", why);
	} else if (!strcmp(why, "connection closed by the peer") ||
	           strstr(why, "connection reset by peer")) {
		snprintf(
		    out, size,
		    "the peer closed the connection during the handshake without a word: not a "
		    "Work Queue master of this project (a CCTools master, or another service?)");
	} else if (strstr(why, "handshake not completed")) {
		snprintf(out, size,
		         "connected, but no Work Queue answer came (%s): not a master of this "
		         "project (a CCTools master, or another service, stays silent)",
		         why);
	} else {
		snprintf(out, size, "%s", why);
	}
}

/* Says on stderr why an attempt failed, once for each reason in a row (not at every retry). */
static void report_failure(struct worker *w, const char *why)
{
	char text[400];
	describe_failure(why, text, sizeof text);
	char line[sizeof w->last_failure];
	snprintf(line, sizeof line, "master %s:%d: %s", w->m_host ? w->m_host : "?", w->m_port,
	         text);
	if (!strcmp(line, w->last_failure))
		return;
	snprintf(w->last_failure, sizeof w->last_failure, "%s", line);
	warn("%s; trying again (said once for each reason)", line);
}

/* The attempt on the current master failed: the next candidate of -M at once, else backoff. */
static void attempt_failed(struct worker *w, const char *why, uint64_t min_ms)
{
	uv_timer_stop(&w->attempt_timer);
	if (why)
		debug(D_WORKER, "master %s:%d: %s", w->m_host ? w->m_host : "?", w->m_port, why);
	if (why && !w->finishing && !w->permanent)
		report_failure(w, why);
	if (w->finishing) {
		stop_all(w);
		return;
	}
	if (w->permanent) {
		w->exit_status = WORKER_EXIT_REFUSED;
		w->finishing = true;
		stop_all(w);
		return;
	}
	if ((w->o->project || w->o->nlist) && w->masters &&
	    w->next_master < json_array_size(w->masters) && min_ms == 0) {
		attempt(w);
		return;
	}
	json_decref(w->masters);
	w->masters = NULL;
	schedule_retry(w, min_ms);
}

static void on_deadline(uv_timer_t *t)
{
	struct worker *w = t->data;
	if (w->s && w->s->active)
		return;
	warn("no master reachable within %lld s; giving up", (long long)w->o->connect_timeout);
	w->exit_status = WORKER_EXIT_NO_MASTER;
	w->finishing = true;
	if (w->s && !w->s->closing) {
		w->s->closing = true;
		wq_conn_close_now(w->s->conn);
	}
	if (!w->s)
		stop_all(w);
}

static void arm_deadline(struct worker *w)
{
	uv_timer_start(&w->deadline_timer, on_deadline, (uint64_t)w->o->connect_timeout * 1000, 0);
}

static void on_tick(uv_timer_t *t)
{
	struct worker *w = t->data;
	wq_conn_warn_flush(NULL); /* the violation lines dropped by the rate limit, summed up */
	if (w->finishing)
		return;
	if (w->s && w->s->active)
		worker_session_tick(w->s);
	bool busy = w->s && w->s->ntasks > 0;
	if (!busy && now_ms(w) - w->idle_since_ms >= (uint64_t)w->o->idle_timeout * 1000) {
		if (w->ever_connected)
			worker_finish(w, WORKER_EXIT_OK, "idle timeout");
		else
			worker_finish(w, WORKER_EXIT_NEVER_CONNECTED,
			              "idle timeout, without ever connecting to a master");
	}
}

static void on_wall(uv_timer_t *t)
{
	worker_finish(t->data, WORKER_EXIT_OK, "wall time reached");
}

/* ---- one session ----------------------------------------------------------------------------- */

/* True for the failures of a peer that closed or stayed silent in the handshake. */
static bool silent_peer(const char *why)
{
	return !strcmp(why, "connection closed by the peer") ||
	       strstr(why, "connection reset by peer") || strstr(why, "handshake not completed");
}

/* The probe of a silent peer is over: a CCTools master is said in one line and ends the
 * worker (status 2) unless -M has other masters to try; anything else is the usual retry. */
static void on_probe(void *arg, bool cctools, const char *text)
{
	struct worker *w = arg;
	w->probe = NULL;
	if (!cctools) {
		attempt_failed(w, w->probe_said, 0);
		return;
	}
	warn("master %s:%d: %s: this worker cannot serve it; run CCTools' work_queue_worker for it",
	     w->m_host ? w->m_host : "?", w->m_port, text);
	if (w->o->project || w->o->nlist) {
		attempt_failed(w, NULL, 0);
		return;
	}
	w->exit_status = WORKER_EXIT_REFUSED;
	w->finishing = true;
	stop_all(w);
}

static void session_lost(struct worker_session *s, enum wq_conn_end why, const char *text)
{
	struct worker *w = s->w;
	bool was_active = s->active;
	uint64_t up = was_active ? now_ms(w) - s->up_since_ms : 0;
	int64_t retry_after = s->retry_after;
	bool master_ending = s->master_ending;
	/* A close this side asked for (after dismiss or bye) is not a loss. */
	if (was_active && !w->finishing && why != WQ_CONN_END_LOCAL)
		warn("master %s:%d: connection lost (%s: %s)", w->m_host, w->m_port,
		     wq_conn_end_name(why), text);
	worker_session_drop_tasks(s);
	wq_handshake_delete(s->hs);
	wq_conn_delete(s->conn);
	free(s);
	w->s = NULL;
	if (w->finishing) {
		stop_all(w);
		return;
	}
	bool tasks_done = w->o->exit_after_tasks > 0 && w->tasks_done >= w->o->exit_after_tasks;
	if (was_active && (w->o->single_shot || tasks_done)) {
		/* --single-shot: the first master served is the only one */
		notice("ending: disconnected from the master (%s)",
		       tasks_done ? "--exit-after-tasks" : "--single-shot");
		w->finishing = true;
		w->exit_status = WORKER_EXIT_OK;
		stop_all(w);
		return;
	}
	if (was_active) {
		if (up > STABLE_MS)
			w->backoff_ms = BACKOFF_MIN_MS;
		arm_deadline(w);
		json_decref(w->masters); /* start again from the catalog */
		w->masters = NULL;
	}
	if (retry_after >= 0 && master_ending && !w->o->project && !w->o->nlist) {
		/* its master has ended: a worker given HOST PORT has nothing to come back to (one
		 * given -M looks for the project's next master, one given a list the next one) */
		notice("ending: the master ended");
		w->finishing = true;
		w->exit_status = WORKER_EXIT_OK;
		stop_all(w);
		return;
	}
	if (retry_after >= 0) {
		/* dismissed: exit instead when the idle timeout has passed */
		if (now_ms(w) - w->idle_since_ms >= (uint64_t)w->o->idle_timeout * 1000) {
			w->finishing = true;
			w->exit_status = WORKER_EXIT_OK;
			stop_all(w);
			return;
		}
		attempt_failed(w, NULL, (uint64_t)retry_after * 1000);
		return;
	}
	/* a loss was said above; a failed handshake is said here unless it said so itself */
	const char *said = was_active || w->hs_said ? NULL
	                   : w->hs_failure[0]       ? w->hs_failure
	                                            : text;
	if (said && silent_peer(said) && !w->tls && w->m_addr_ok && !w->probed) {
		/* a CCTools master reads lines and closes without a word: ask it as CCTools would
		 */
		w->probed = true;
		snprintf(w->probe_said, sizeof w->probe_said, "%s", said);
		w->probe = wq_probe_start(w->loop, (const struct sockaddr *)&w->m_addr,
		                          PROBE_TIMEOUT_MS, on_probe, w);
		w->hs_failure[0] = 0;
		w->hs_said = false;
		return;
	}
	attempt_failed(w, said, was_active ? BACKOFF_MIN_MS : 0);
	w->hs_failure[0] = 0;
	w->hs_said = false;
}

static void on_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                       size_t len, void *user)
{
	(void)c;
	struct worker_session *s = user;
	if (s->hs && wq_handshake_message(s->hs, msg, name, raw, len))
		return;
	if (s->active && !s->lost)
		worker_session_message(s, msg, name);
}

static void on_data(struct wq_conn *c, uint32_t xfer, const uint8_t *b, size_t len, void *user)
{
	(void)c;
	struct worker_session *s = user;
	if (s->hs && wq_handshake_data(s->hs, xfer))
		return;
	if (s->active && !s->lost)
		worker_session_data(s, xfer, b, len);
}

static void on_writable(struct wq_conn *c, void *user)
{
	(void)c;
	struct worker_session *s = user;
	if (s->active)
		worker_session_writable(s);
}

static void on_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	(void)c;
	struct worker_session *s = user;
	s->lost = true;
	if (s->hs && !wq_handshake_finished(s->hs))
		wq_handshake_closed(s->hs, why, text);
	session_lost(s, why, text);
}

static const struct wq_conn_callbacks conn_cb = {on_message, on_data, on_writable, on_closed};

static void hs_done(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
{
	struct worker_session *s = user;
	struct worker *w = s->w;
	if (r->outcome == WQ_HS_OK) {
		debug(D_WORKER, "master %s:%d: connected (master %s, %s%s)", w->m_host, w->m_port,
		      r->peer_id, r->tls ? "TLS" : "plain",
		      r->authenticated ? ", authenticated" : "");
		uv_timer_stop(&w->deadline_timer);
		w->ever_connected = true;
		w->last_failure[0] = 0;
		wq_conn_set_quiet(s->conn, false);
		s->up_since_ms = now_ms(w);
		worker_touch(w);
		char *mid = xstrdup(r->peer_id);
		unsigned caps = r->caps;
		int64_t ki = r->keepalive_interval, kt = r->keepalive_timeout;
		wq_handshake_delete(h);
		s->hs = NULL;
		worker_session_begin(s, mid, caps, ki, kt);
		free(mid);
		return;
	}
	debug(D_WORKER, "master %s:%d: handshake %s: %s %s", w->m_host, w->m_port,
	      wq_hs_outcome_name(r->outcome), r->code, r->text);
	if (r->outcome == WQ_HS_PERMANENT)
		w->permanent = true;
	/* refusals (sent or received) were logged by the handshake; violations and timeouts not */
	if (!r->code[0] || !strcmp(r->code, "proto") || !strcmp(r->code, "timeout"))
		snprintf(w->hs_failure, sizeof w->hs_failure, "%s", r->text);
	else
		w->hs_said = true;
}

static void start_session(struct worker *w, uv_tcp_t *tcp)
{
	struct worker_session *s = xcalloc(1, sizeof *s);
	s->w = w;
	s->retry_after = -1;
	char *label = xasprintf("master %s:%d", w->m_host, w->m_port);
	s->conn = wq_conn_create(tcp, label, &conn_cb, s);
	free(label);
	if (!s->conn) {
		free(s);
		attempt_failed(w, "cannot start reading", 0);
		return;
	}
	w->s = s;
	wq_conn_set_quiet(s->conn, true); /* a failed handshake is said by report_failure */
	struct wq_hs_config cfg = {
	    .role = WQ_ROLE_WORKER,
	    .key = w->key,
	    .tls = w->tls,
	    .tls_host = w->m_tls_name,
	    .software = w->software,
	    .id = w->id,
	    .host = w->host,
	    .project = w->o->project ? w->m_project : NULL, /* the one -M chose */
	    .caps =
	        WQ_CAP_ZLIB | WQ_CAP_FETCH | WQ_CAP_WATCH | WQ_CAP_QUEUE | WQ_CAP_DIROUT |
	        (w->docker ? WQ_CAP_CONTAINERS | WQ_CAP_IMAGES : 0) |
	        (w->shared ? WQ_CAP_SHARED_CACHE | WQ_CAP_SHARED_DIRS : 0) |
	        (w->o->memory_grow || w->o->memory_throttle || w->o->cpu_grow ? WQ_CAP_GROW : 0),
	};
	char *err = NULL;
	s->hs = wq_handshake_start(w->loop, s->conn, &cfg, hs_done, s, &err);
	if (!s->hs) {
		warn("master %s:%d: %s", w->m_host, w->m_port, err ? err : "handshake failed");
		free(err);
		s->closing = true;
		wq_conn_close_now(s->conn);
	}
}

static void on_connect(uv_connect_t *req, int status)
{
	struct worker *w = req->data;
	uv_tcp_t *tcp = w->tcp;
	w->tcp = NULL;
	if (w->stopped) {
		if (tcp && !uv_is_closing((uv_handle_t *)tcp))
			uv_close((uv_handle_t *)tcp, (uv_close_cb)free);
		return;
	}
	uv_timer_stop(&w->attempt_timer);
	if (status < 0) {
		if (tcp && !uv_is_closing((uv_handle_t *)tcp))
			uv_close((uv_handle_t *)tcp, (uv_close_cb)free);
		attempt_failed(w, w->attempt_failed ? "connect timed out" : uv_strerror(status), 0);
		return;
	}
	int alen = (int)sizeof w->m_addr;
	w->m_addr_ok = uv_tcp_getpeername(tcp, (struct sockaddr *)&w->m_addr, &alen) == 0;
	start_session(w, tcp);
}

static void on_attempt_timeout(uv_timer_t *t)
{
	struct worker *w = t->data;
	w->attempt_failed = true;
	if (w->tcp && !uv_is_closing((uv_handle_t *)w->tcp))
		uv_close((uv_handle_t *)w->tcp, (uv_close_cb)free); /* on_connect gets ECANCELED */
	else if (w->gai_busy)
		uv_cancel((uv_req_t *)&w->gai);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct worker *w = req->data;
	w->gai_busy = false;
	if (w->stopped) {
		uv_freeaddrinfo(res);
		return;
	}
	if (status < 0) {
		uv_freeaddrinfo(res);
		attempt_failed(
		    w, status == UV_ECANCELED ? "name lookup timed out" : uv_strerror(status), 0);
		return;
	}
	w->tcp = xmalloc(sizeof *w->tcp);
	uv_tcp_init(w->loop, w->tcp);
	w->creq.data = w;
	int r = uv_tcp_connect(&w->creq, w->tcp, res->ai_addr, on_connect);
	uv_freeaddrinfo(res);
	if (r < 0) {
		uv_close((uv_handle_t *)w->tcp, (uv_close_cb)free);
		w->tcp = NULL;
		attempt_failed(w, uv_strerror(r), 0);
	}
}

static void connect_to(struct worker *w, const char *host, const char *tls_name, int port)
{
	if (!w->m_host || strcmp(w->m_host, host) || w->m_port != port)
		w->probed = false; /* another master: it may be probed once too */
	w->m_addr_ok = false;
	free(w->m_host);
	w->m_host = xstrdup(host);
	free(w->m_tls_name);
	w->m_tls_name = xstrdup(tls_name ? tls_name : host);
	w->m_port = port;
	w->attempt_failed = false;
	debug(D_WORKER, "connecting to %s:%d", host, port);
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
	w->gai.data = w;
	uv_timer_start(&w->attempt_timer, on_attempt_timeout, ATTEMPT_TIMEOUT_MS, 0);
	int r = uv_getaddrinfo(w->loop, &w->gai, on_resolved, host, ps, &hints);
	if (r < 0) {
		attempt_failed(w, uv_strerror(r), 0);
		return;
	}
	w->gai_busy = true;
}

static void try_next_master(struct worker *w)
{
	if (w->masters && w->next_master < json_array_size(w->masters)) {
		json_t *c = json_array_get(w->masters, w->next_master++);
		const char *proj = json_string_value(json_object_get(c, "project"));
		free(w->m_project);
		w->m_project = proj ? xstrdup(proj) : NULL;
		/* the name is for TLS checks */
		connect_to(w, json_string_value(json_object_get(c, "host")),
		           json_string_value(json_object_get(c, "name")),
		           (int)json_integer_value(json_object_get(c, "port")));
		return;
	}
	json_decref(w->masters);
	w->masters = NULL;
	if (w->o->project)
		debug(D_WORKER, "no master of project %s could be reached", w->o->project);
	else
		debug(D_WORKER, "none of the %d masters given could be reached", w->o->nlist);
	schedule_retry(w, 0);
}

static void on_catalog(void *arg, json_t *records, const char *err)
{
	struct worker *w = arg;
	w->query = NULL;
	if (!records) {
		warn("catalog: %s", err ? err : "no answer");
		schedule_retry(w, 0);
		return;
	}
	json_decref(w->masters);
	/* higher priority first, random among equals; each at the addresses it asks for */
	w->masters = worker_masters_order(records, w->o->project_re);
	json_decref(records);
	w->next_master = 0;
	debug(D_WORKER, "catalog: %zu address(es) of masters of project %s",
	      json_array_size(w->masters), w->o->project);
	try_next_master(w);
}

static void attempt(struct worker *w)
{
	if (w->finishing || w->stopped)
		return;
	if (w->o->nlist && !w->masters) {
		/* "HOST:PORT;HOST:PORT": each in turn, as for the masters of a project */
		w->masters = json_array();
		w->next_master = 0;
		for (int i = 0; i < w->o->nlist; i++)
			json_array_append_new(w->masters, json_pack("{s:s,s:s,s:i}", "host",
			                                            w->o->list_hosts[i], "name",
			                                            w->o->list_hosts[i], "port",
			                                            w->o->list_ports[i]));
	}
	if (!w->o->project && !w->o->nlist) {
		connect_to(w, w->o->host, NULL, w->o->port);
		return;
	}
	if (w->masters) {
		try_next_master(w);
		return;
	}
	struct catalog_filter *f = catalog_filter_create();
	char *err = NULL;
	catalog_filter_add(f, "type", "wq_master", NULL);
	/* a plain name is filtered by the catalog too; a pattern only here */
	const char *literal = catalog_project_literal(w->o->project_re);
	if (literal)
		catalog_filter_add(f, "project", literal, NULL);
	w->query = catalog_query_start(w->loop, w->o->catalog_hosts, f, CATALOG_TIMEOUT_S,
	                               on_catalog, w, &err);
	catalog_filter_delete(f);
	if (!w->query) {
		warn("catalog: %s", err ? err : "cannot query");
		free(err);
		schedule_retry(w, 0);
	}
}

/* The clocks of a starting worker: the idle and connect deadlines, the tick, the wall time. */
static void start_timers(struct worker *w)
{
	srandom((unsigned)getpid() ^ (unsigned)time_now_us());
	worker_touch(w);
	arm_deadline(w);
	uv_timer_start(&w->tick_timer, on_tick, 1000, 1000);
	if (w->o->wall_time > 0)
		uv_timer_start(&w->wall_timer, on_wall, (uint64_t)w->o->wall_time * 1000, 0);
}

void worker_start(struct worker *w)
{
	start_timers(w);
	attempt(w);
}

void worker_start_connected(struct worker *w, uv_tcp_t *tcp, const char *name)
{
	start_timers(w);
	free(w->m_host);
	w->m_host = xstrdup(name);
	free(w->m_tls_name);
	w->m_tls_name = xstrdup(name);
	w->m_port = 0;
	start_session(w, tcp);
}
