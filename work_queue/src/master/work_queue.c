/* work_queue.c: the public queue API of the Work Queue master library (doc/work-queue-api.md 2.1):
 * create and delete, submit, wait (running the libuv loop with a timer, never busy-waiting),
 * empty, hungry, cancel, statistics and tuning, and fast abort, blocked hosts, drain and status
 * as thin wrappers over master_abort.c, master_worker.c and master_status.c. It owns the task
 * table and the scheduling passes; each connected worker is handled by master_worker.c. */
#include "work_queue.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <uthash.h>
#include <uv.h>

#include "catalog_client.h"
#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "sha256.h"
#include "timeutil.h"
#include "wq_listing.h"
#include "master_prepare.h"
#include "wq_msg.h"
#include "master_internal.h"
#include "master_images.h"
#include "master_url.h"
#include "xalloc.h"
#include "banned.h"

#define PASS_BATCH        128
#define DELETE_WAIT_MS    5000
#define CATALOG_PERIOD_US INT64_C(60000000)
#define CATALOG_MIN_US    INT64_C(1000000) /* between updates sent because the demand changed */
#define CATALOG_FINAL_MS  2000             /* waited for the last update when the queue ends */
#define DEFAULT_PORT      9123

static void on_sched_idle(uv_idle_t *h);

double master_queue_now(void)
{
	return (double)time_monotonic_us() / 1e6;
}

/* ---- internal API used by master_worker.c ---------------------------------------------------- */

void master_queue_request_pass(struct work_queue *q)
{
	if (!q->sched_wanted && q->sched_idle) {
		q->sched_wanted = true;
		uv_idle_start(q->sched_idle, on_sched_idle);
	}
}

struct mtask *master_queue_task_lookup(struct work_queue *q, int64_t id)
{
	if (id < 1 || id > INT32_MAX)
		return NULL;
	int key = (int)id;
	struct mtask *m = NULL;
	HASH_FIND_INT(q->tasks, &key, m);
	return m;
}

void master_queue_task_requeue(struct work_queue *q, struct mtask *m)
{
	m->state = MTASK_READY;
	m->w = NULL;
	if (m->st && master_sched_task_state(m->st) != MASTER_SCHED_TASK_READY)
		master_sched_task_requeue(q->sched, m->st, master_sched_task_level(m->st));
	master_queue_request_pass(q);
}

void master_queue_task_finish(struct work_queue *q, struct mtask *m)
{
	struct work_queue_task *t = m->t;
	if (m->st) {
		master_sched_task_remove(q->sched, m->st);
		m->st = NULL;
	}
	master_scalestat_ended(q, m,
	                       t->result == WORK_QUEUE_RESULT_SUCCESS && m->running_since > 0
	                           ? master_queue_now() - m->running_since
	                           : -1);
	m->state = MTASK_DONE;
	m->w = NULL;
	t->time_when_done = time_now_us();
	q->stats.tasks_with_results++;
	if (t->result == WORK_QUEUE_RESULT_SUCCESS)
		q->stats.tasks_done++;
	else
		q->stats.tasks_failed++;
	if (q->txlog) {
		char detail[64];
		snprintf(detail, sizeof detail, "%s %d", work_queue_result_str(t->result),
		         t->return_status);
		master_txlog_task(q->txlog, m->id, "DONE", detail, NULL);
	}
	m->done_next = NULL;
	if (q->done_tail)
		q->done_tail->done_next = m;
	else
		q->done_head = m;
	q->done_tail = m;
	master_queue_request_pass(q);
}

void master_queue_worker_resources(struct work_queue *q, const struct master_sched_box *o,
                                   const struct master_sched_box *n)
{
	struct master_sched_box zero = {0, 0, 0, 0};
	if (!o)
		o = &zero;
	q->stats.total_cores += n->cores - o->cores;
	q->stats.total_memory += n->memory - o->memory;
	q->stats.total_disk += n->disk - o->disk;
	q->stats.total_gpus += n->gpus - o->gpus;
}

const char *master_queue_tmpdir(struct work_queue *q)
{
	if (!q->tmpdir) {
		const char *base = getenv("TMPDIR");
		const char *where = base && *base ? base : "/tmp";
		char *tmpl = xasprintf("%s/wq-master-%s-XXXXXX", where, q->partial_tag);
		master_partial_sweep_tmpdirs(q, where); /* those of killed masters */
		if (!mkdtemp(tmpl)) {
			warn("wq: cannot create a temporary directory %s: %s", tmpl,
			     strerror(errno));
			free(tmpl);
			return NULL;
		}
		q->tmpdir = tmpl;
	}
	return q->tmpdir;
}

/* ---- the loop ----------------------------------------------------------------------------- */

static int64_t cached_bytes(void *worker_data, void *task_data, void *arg)
{
	(void)arg;
	return master_worker_cached_bytes(worker_data, task_data);
}

static void on_sched_idle(uv_idle_t *h)
{
	struct work_queue *q = h->data;
	if (q->wait_for_workers > 0) {
		/* work_queue_activate_worker_waiting: nothing is dispatched before N workers have
		 * connected; a worker becoming active asks for a pass again */
		if (q->stats.workers_connected < q->wait_for_workers) {
			q->sched_wanted = false;
			uv_idle_stop(h);
			return;
		}
		debug(D_WQ, "%d workers connected: dispatching starts", q->stats.workers_connected);
		q->wait_for_workers = 0;
	}
	struct master_sched_pass_opts o;
	master_sched_pass_opts_init(&o);
	static const enum master_sched_policy pol[] = {MASTER_SCHED_FCFS, MASTER_SCHED_FILES,
	                                               MASTER_SCHED_TIME, MASTER_SCHED_WORST,
	                                               MASTER_SCHED_RAND};
	o.policy = pol[q->algorithm];
	o.rng = &q->rng;
	o.now = master_queue_now();
	o.max_assignments = PASS_BATCH;
	struct master_sched_assignment as[PASS_BATCH];
	int n = master_sched_pass(q->sched, &o, as, PASS_BATCH, NULL);
	int np = 0;
	if (n >= 0 && n < PASS_BATCH && q->prefetch_per_worker != 0) {
		/* Nothing more fits: short tasks go ahead into the queues of `queue` workers. */
		struct master_sched_prefetch_opts po;
		master_sched_prefetch_opts_init(&po);
		po.per_worker = q->prefetch_per_worker;
		po.max_task_seconds = q->prefetch_max_s;
		po.container_task_seconds = q->prefetch_ctr_s;
		po.now = o.now;
		po.max_assignments = PASS_BATCH - n;
		np = master_sched_prefetch(q->sched, &po, as + n, (size_t)(PASS_BATCH - n));
		if (np < 0)
			np = 0;
	}
	if (n + np < PASS_BATCH) {
		q->sched_wanted = false;
		uv_idle_stop(h);
	}
	for (int i = 0; i < n + np; i++) {
		struct mtask *m = master_sched_task_data(as[i].task);
		struct mworker *w = master_sched_worker_data(as[i].worker);
		m->queued = i >= n;
		master_dispatch_task(w, m, &as[i].box);
	}
}

/* What of a catalog record a factory acts on: tasks waiting, tasks running, workers (bits). */
static int record_shape(const json_t *r)
{
	static const char *const keys[] = {"tasks_waiting", "tasks_running", "workers_connected"};
	int shape = 0;
	for (int i = 0; i < 3; i++)
		if (json_integer_value(json_object_get(r, keys[i])) > 0)
			shape |= 1 << i;
	return shape;
}

static void catalog_send(struct work_queue *q, const json_t *r)
{
	if (catalog_updater_send(q->catalog, r, CATALOG_SEND_AUTO) == 0) {
		q->catalog_last = time_now_us();
		q->catalog_busy = true;
		q->catalog_shape = record_shape(r);
	}
}

static void on_catalog_sent(void *arg, int failed, int n, const char *detail)
{
	struct work_queue *q = arg;
	q->catalog_busy = false;
	if (failed)
		debug(D_WQ, "catalog update: %d of %d failed: %s", failed, n, detail);
}

static void on_tick(uv_timer_t *h)
{
	struct work_queue *q = h->data;
	double now_s = (double)time_now_us() / 1e6;
	q->ticks++;
	/* only while some task has an end time: the queue may hold a million that have none */
	if (q->timed_tasks > 0) {
		int64_t timed = 0;
		struct mtask *m, *tmp;
		HASH_ITER(hh, q->tasks, m, tmp)
		{
			q->tick_examined++;
			if (m->t->end_time <= 0 || m->state == MTASK_DONE)
				continue;
			if (m->state == MTASK_READY && now_s > m->t->end_time) {
				m->t->result = WORK_QUEUE_RESULT_TASK_TIMEOUT;
				master_queue_task_finish(q, m);
			} else {
				timed++;
			}
		}
		q->timed_tasks = timed;
	}
	master_abort_check(q);
	master_full_check(q);
	master_admit_tick(q);
	int64_t since = time_now_us() - q->catalog_last;
	if (q->catalog && since >= CATALOG_MIN_US) {
		/* every period, and as soon as tasks or workers appear or vanish, so that a factory
		 * reading the catalog starts workers without waiting for the next period */
		json_t *r = master_status_record(q);
		if (since >= CATALOG_PERIOD_US || record_shape(r) != q->catalog_shape)
			catalog_send(q, r);
		json_decref(r);
	}
}

static void handle_free(uv_handle_t *h)
{
	free(h);
}

/* Starts (or restarts) the catalog updates to HOSTS (NULL: the default) and sends one now. */
static int start_catalog(struct work_queue *q, const char *hosts)
{
	char *err = NULL;
	struct catalog_updater *u =
	    catalog_updater_create(q->loop, hosts, on_catalog_sent, q, &err);
	if (!u) {
		warn("wq: catalog hosts: %s", err ? err : "invalid");
		free(err);
		return -EINVAL;
	}
	catalog_updater_delete(q->catalog);
	q->catalog = u;
	q->catalog_busy = false;
	json_t *r = master_status_record(q);
	catalog_send(q, r);
	json_decref(r);
	return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct work_queue *q = server->data;
	if (status < 0) {
		warn("wq: accept: %s", uv_strerror(status));
		return;
	}
	uv_tcp_t *tcp = xmalloc(sizeof *tcp);
	uv_tcp_init(q->loop, tcp);
	if (uv_accept(server, (uv_stream_t *)tcp) < 0) {
		uv_close((uv_handle_t *)tcp, handle_free);
		return;
	}
	master_worker_accept(q, tcp);
}

static void on_wait_timer(uv_timer_t *h)
{
	struct work_queue *q = h->data;
	q->wait_expired = true;
}

/* ---- create and delete -------------------------------------------------------------------- */

void work_queue_opts_init(struct work_queue_opts *o)
{
	memset(o, 0, sizeof *o);
	o->port = WORK_QUEUE_DEFAULT_PORT;
}

/* Binds and listens on the port of O and writes the port file; each failure is reported with
 * warn() naming the port or the file and the reason, then returned as a negative error. */
static int listen_on(struct work_queue *q, const struct work_queue_opts *o)
{
	int port = o->port;
	if (port == WORK_QUEUE_DEFAULT_PORT) {
		const char *e = getenv("WORK_QUEUE_PORT");
		port = e && *e ? atoi(e) : DEFAULT_PORT;
	}
	if (port < 0 || port > 65535) {
		warn("wq: port %d is out of range (0 to 65535)", port);
		return -EINVAL;
	}
	struct sockaddr_storage ss;
	const char *iface = o->interface ? o->interface : "0.0.0.0";
	if (strcmp(iface, "0.0.0.0") && strcmp(iface, "::"))
		snprintf(q->listen_addr, sizeof q->listen_addr, "%s", iface);
	if (uv_ip4_addr(iface, port, (struct sockaddr_in *)&ss) != 0 &&
	    uv_ip6_addr(iface, port, (struct sockaddr_in6 *)&ss) != 0) {
		warn("wq: cannot listen on %s: not an IPv4 or IPv6 address", iface);
		return -EINVAL;
	}
	q->listener = xmalloc(sizeof *q->listener);
	uv_tcp_init(q->loop, q->listener);
	q->listener->data = q;
	int rc = uv_tcp_bind(q->listener, (struct sockaddr *)&ss, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)q->listener, 128, on_connection);
	if (rc < 0) {
		warn("wq: cannot listen on port %d: %s%s", port, uv_strerror(rc),
		     rc == UV_EADDRINUSE ? " (another program holds it; -p 0 takes any free port)"
		                         : "");
		return rc;
	}
	int n = sizeof ss;
	uv_tcp_getsockname(q->listener, (struct sockaddr *)&ss, &n);
	q->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                         : ((struct sockaddr_in *)&ss)->sin_port);
	if (o->port_file) {
		FILE *f = fopen(o->port_file, "w");
		if (!f) {
			rc = -errno;
			warn("wq: cannot write the port file %s: %s", o->port_file, strerror(-rc));
			return rc;
		}
		fprintf(f, "%d\n", q->port);
		if (fclose(f) != 0) {
			rc = -errno;
			warn("wq: cannot write the port file %s: %s", o->port_file, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

static void queue_free(struct work_queue *q);

struct work_queue *work_queue_create_opts(const struct work_queue_opts *o)
{
	struct work_queue *q = xcalloc(1, sizeof *q);
	int rc = 0;
	/* A worker that goes away must not kill the application with SIGPIPE on the next write:
	 * ignore it unless the application chose a handler. */
	struct sigaction sa;
	if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
		sa.sa_handler = SIG_IGN;
		sigaction(SIGPIPE, &sa, NULL);
	}
	if (o->loop) {
		q->loop = o->loop;
	} else {
		uv_loop_init(&q->own_loop);
		q->loop = &q->own_loop;
		q->own = true;
	}
	q->sched = master_sched_create();
	q->prep = master_prepare_create();
	master_partial_tag(q->partial_tag, sizeof q->partial_tag);
	q->next_taskid = 1;
	q->keepalive_interval = 30;
	q->prefetch_per_worker = -1;
	q->prefetch_max_s = 1.0;
	q->prefetch_ctr_s = MASTER_SCHED_CONTAINER_PREFETCH_S;
	q->full_worker_timeout = 60;
	q->keepalive_timeout = 120;
	q->algorithm = WORK_QUEUE_SCHEDULE_FILES;
	snprintf(q->preferred_connection, sizeof q->preferred_connection, "by_ip");
	q->rng = (uint64_t)time_now_us() ^ (uint64_t)getpid();
	q->stats.time_when_started = time_now_us();
	master_sched_set_cached_bytes_fn(q->sched, cached_bytes, q);
	master_sched_set_image_fn(q->sched, master_images_state, q);
	char hex[80];
	if (wq_auth_nonce(NULL, hex) < 0) {
		rc = -EIO;
		warn("wq: cannot draw the master's random id");
		goto fail;
	}
	memcpy(q->master_id, hex, 32);
	q->master_id[32] = 0;
	if (o->project)
		q->project = xstrdup(o->project);
	if (o->password_file) {
		char *why = NULL;
		q->key = wq_auth_key_load(o->password_file, &why);
		if (!q->key) {
			rc = -(errno ? errno : EINVAL);
			warn("wq: %s", why ? why : o->password_file);
			free(why);
			goto fail;
		}
	}
	if (o->ssl_cert || o->ssl_key) {
		char *err = NULL;
		if (!o->ssl_cert || !o->ssl_key) {
			rc = -EINVAL;
			warn("wq: TLS needs both a certificate and a key");
			goto fail;
		}
		q->tls =
		    wq_tls_config_server_create(o->ssl_cert, o->ssl_key, o->ssl_client_ca, &err);
		if (!q->tls) {
			rc = -(errno ? errno : EINVAL);
			warn("wq: %s", err ? err : "cannot set up TLS");
			free(err);
			goto fail;
		}
	}
	if (o->txlog) {
		q->txlog = master_txlog_open(o->txlog);
		if (!q->txlog) {
			rc = -errno;
			warn("wq: cannot open the transactions log %s: %s", o->txlog,
			     strerror(errno));
			goto fail;
		}
	}
	rc = listen_on(q, o);
	if (rc < 0)
		goto fail;
	q->sched_idle = xmalloc(sizeof *q->sched_idle);
	uv_idle_init(q->loop, q->sched_idle);
	q->sched_idle->data = q;
	q->wait_timer = xmalloc(sizeof *q->wait_timer);
	uv_timer_init(q->loop, q->wait_timer);
	q->wait_timer->data = q;
	q->tick = xmalloc(sizeof *q->tick);
	uv_timer_init(q->loop, q->tick);
	q->tick->data = q;
	uv_timer_start(q->tick, on_tick, 1000, 1000);
	uv_unref((uv_handle_t *)q->tick);
	if (o->catalog_hosts)
		q->catalog_hosts = xstrdup(o->catalog_hosts);
	if (o->project && start_catalog(q, q->catalog_hosts) < 0)
		warn("wq: no catalog updates for project %s", o->project);
	if (q->txlog)
		master_txlog_master_start(q->txlog, q->port, q->project);
	debug(D_WQ, "listening on port %d", q->port);
	return q;
fail:
	queue_free(q);
	errno = rc < 0 ? (rc <= -10000 ? EINVAL : -rc) : EINVAL;
	return NULL;
}

struct work_queue *work_queue_create(int port)
{
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = port;
	return work_queue_create_opts(&o);
}

int work_queue_port(const struct work_queue *q)
{
	return q ? q->port : -1;
}

static void mtask_free(struct mtask *m)
{
	master_worker_list_del(m);
	master_worker_clear_recv(m);
	for (int i = 0; i < m->n_inputs; i++)
		free(m->objects[i]);
	free(m->objects);
	free(m->obj_size);
	free(m->validated);
	free(m->outs);
	free(m);
}

static void close_handle(uv_handle_t *h)
{
	if (h && !uv_is_closing(h))
		uv_close(h, handle_free);
}

static void queue_free(struct work_queue *q)
{
	master_prepare_end(q->prep);
	q->prep = NULL;
	while (q->workers)
		master_worker_free(q->workers);
	master_shared_free(q);
	struct mtask *m, *tmp;
	HASH_ITER(hh, q->tasks, m, tmp)
	{
		HASH_DEL(q->tasks, m);
		work_queue_task_delete(m->t);
		mtask_free(m);
	}
	master_scalestat_free(q);
	master_sched_delete(q->sched);
	close_handle((uv_handle_t *)q->listener);
	close_handle((uv_handle_t *)q->sched_idle);
	close_handle((uv_handle_t *)q->wait_timer);
	close_handle((uv_handle_t *)q->tick);
	catalog_updater_delete(q->catalog);
	if (q->own) {
		uv_run(q->loop, UV_RUN_DEFAULT);
		if (uv_loop_close(q->loop) != 0)
			warn("wq: the loop still has handles at exit");
	} else {
		for (int i = 0; i < 10; i++)
			uv_run(q->loop, UV_RUN_NOWAIT);
	}
	if (q->txlog) {
		master_txlog_master_end(q->txlog);
		master_txlog_close(q->txlog);
	}
	if (q->tmpdir) {
		path_rm_rf(q->tmpdir);
		free(q->tmpdir);
	}
	master_partial_forget(q);
	wq_auth_key_delete(q->key);
	wq_tls_config_delete(q->tls);
	free(q->project);
	free(q->catalog_hosts);
	json_decref(q->net_ifaces);
	master_abort_free(q, true);
	master_admit_free(q);
	free(q);
}

/* Runs the loop until the catalog round in flight ends, at most MS milliseconds. */
static void catalog_wait(struct work_queue *q, uint64_t ms)
{
	if (!q->catalog_busy)
		return;
	q->wait_expired = false;
	uv_timer_start(q->wait_timer, on_wait_timer, ms, 0);
	while (q->catalog_busy && !q->wait_expired)
		uv_run(q->loop, UV_RUN_ONCE);
	uv_timer_stop(q->wait_timer);
	q->wait_expired = false;
}

/* The master's last record, with a lifetime of 1 s: the catalog drops it at once instead of
 * listing a master that is gone until its record expires (doc/catalog.md). */
static void catalog_goodbye(struct work_queue *q)
{
	if (!q->catalog)
		return;
	catalog_wait(q, CATALOG_FINAL_MS);
	json_t *r = master_status_record(q);
	json_object_set_new(r, "lifetime", json_integer(1));
	catalog_send(q, r);
	json_decref(r);
	catalog_wait(q, CATALOG_FINAL_MS);
}

void work_queue_delete(struct work_queue *q)
{
	if (!q)
		return;
	q->ending = true;
	for (struct mworker *w = q->workers, *n; w; w = n) {
		n = w->next;
		master_worker_end(w, q->shutdown, q->shutdown ? "master exiting" : "master done",
		                  5);
	}
	uv_timer_stop(q->wait_timer);
	q->wait_expired = false;
	if (q->workers) {
		uv_timer_start(q->wait_timer, on_wait_timer, DELETE_WAIT_MS, 0);
		while (q->workers && !q->wait_expired)
			uv_run(q->loop, UV_RUN_ONCE);
		uv_timer_stop(q->wait_timer);
	}
	catalog_goodbye(q);
	queue_free(q);
}

/* ---- submit ------------------------------------------------------------------------------- */

static size_t message_estimate(const struct work_queue_task *t)
{
	size_t n = 1024 + (t->command_line ? strlen(t->command_line) * 2 : 0);
	for (int i = 0; i < t->env_count; i++)
		n += 16 + strlen(t->env_names[i]) +
		     (t->env_values[i] ? 2 * strlen(t->env_values[i]) : 0);
	for (const struct work_queue_file *f = t->inputs; f; f = f->next)
		n += 200 + 2 * strlen(f->remote) +
		     (f->kind == WORK_QUEUE_FILE_URL ? 2 * strlen(f->source) : 0);
	for (const struct work_queue_file *f = t->outputs; f; f = f->next)
		n += 100 + 2 * strlen(f->remote);
	return n;
}

int work_queue_submit(struct work_queue *q, struct work_queue_task *t)
{
	if (!q || !t || !t->command_line || !*t->command_line)
		return -EINVAL;
	size_t cl = strlen(t->command_line);
	if (cl > WQ_COMMAND_MAX) {
		/* a worker would take the task for a protocol violation and drop the connection,
		 * and the task would go round for ever */
		warn("wq: task \"%.40s...\": the command is %zu bytes; the limit is %d (run a "
		     "longer one from a script sent as an input file)",
		     t->command_line, cl, WQ_COMMAND_MAX);
		return HTC_ETOOBIG;
	}
	if (message_estimate(t) > WQ_MAX_MSG) {
		warn("wq: task \"%.40s\": its task message would exceed 4 MiB", t->command_line);
		return HTC_ETOOBIG;
	}
	struct mtask *m = xcalloc(1, sizeof *m);
	m->t = t;
	/* Cheap checks now; inputs to hash or to ask a server about are named in the thread pool
	 * (master_prepare.c), and the task waits in MTASK_PREPARING meanwhile. */
	int pending = master_prepare_inputs(q, m);
	if (pending < 0) {
		mtask_free(m);
		return pending == -ELOOP ? HTC_ECYCLE : pending;
	}
	for (struct work_queue_file *f = t->outputs; f; f = f->next)
		m->n_outputs++;
	m->outs = xcalloc((size_t)m->n_outputs + 1, sizeof *m->outs);
	struct master_sched_task_spec spec;
	master_sched_task_spec_from_task(&spec, t);
	spec.data = m;
	/* A task still being prepared is only checked now: it enters the scheduler when its
	 * inputs are named. */
	if (pending > 0 ? master_sched_task_spec_check(&spec) < 0
	                : !(m->st = master_sched_task_add(q->sched, &spec))) {
		warn("wq: task \"%.40s\": invalid resources or features", t->command_line);
		mtask_free(m);
		return -EINVAL;
	}
	m->id = q->next_taskid++;
	m->try_ = 1;
	m->state = pending > 0 ? MTASK_PREPARING : MTASK_READY;
	t->taskid = m->id;
	t->result = WORK_QUEUE_RESULT_UNKNOWN;
	t->try_count = 0;
	t->time_when_submitted = time_now_us();
	HASH_ADD_INT(q->tasks, id, m);
	master_task_drop_name_index(t);
	master_scalestat_added(q, m);
	q->stats.tasks_submitted++;
	if (t->end_time > 0)
		q->timed_tasks++;
	master_partial_sweep(q, t); /* what a killed master left where this task's outputs go */
	if (q->txlog)
		master_txlog_task(q->txlog, m->id, "WAITING", t->category ? t->category : "default",
		                  t->resources_requested);
	if (pending > 0)
		master_prepare_start(q, m);
	else
		master_queue_request_pass(q);
	return m->id;
}

/* ---- wait, empty, hungry, cancel ---------------------------------------------------------- */

static bool tag_matches(const struct mtask *m, const char *tag)
{
	return !tag || (m->t->tag && !strcmp(m->t->tag, tag));
}

/* The first finished task (with TAG if not NULL), taken out of the queue. */
static struct work_queue_task *pop_done_tag(struct work_queue *q, const char *tag)
{
	struct mtask *m = q->done_head, *prev = NULL;
	while (m && !tag_matches(m, tag)) {
		prev = m;
		m = m->done_next;
	}
	if (!m)
		return NULL;
	if (prev)
		prev->done_next = m->done_next;
	else
		q->done_head = m->done_next;
	if (q->done_tail == m)
		q->done_tail = prev;
	HASH_DEL(q->tasks, m);
	master_scalestat_removed(q, m);
	q->stats.tasks_with_results--;
	struct work_queue_task *t = m->t;
	mtask_free(m);
	return t;
}

/* True when a finished task with TAG (any if NULL) waits to be returned. */
static bool have_done(struct work_queue *q, const char *tag)
{
	for (struct mtask *m = q->done_head; m; m = m->done_next)
		if (tag_matches(m, tag))
			return true;
	return false;
}

struct work_queue_task *work_queue_wait(struct work_queue *q, double timeout)
{
	return work_queue_wait_for_tag(q, NULL, timeout);
}

struct work_queue_task *work_queue_wait_for_tag(struct work_queue *q, const char *tag,
                                                double timeout)
{
	if (!q)
		return NULL;
	struct work_queue_task *t = pop_done_tag(q, tag);
	if (t)
		return t;
	bool forever = timeout < 0;
	if (forever && HASH_COUNT(q->tasks) == 0)
		return NULL;
	q->wait_expired = false;
	if (timeout == 0) {
		/* On the application's own loop this may be called from one of its callbacks, and
		 * uv_run must not be entered again: the loop is the application's to run. */
		if (q->own && !q->running) {
			q->running = true;
			uv_run(q->loop, UV_RUN_NOWAIT);
			q->running = false;
		}
		return pop_done_tag(q, tag);
	}
	if (q->running) {
		warn("wq: work_queue_wait called from inside the queue's own loop");
		return pop_done_tag(q, tag);
	}
	if (!forever)
		uv_timer_start(q->wait_timer, on_wait_timer, (uint64_t)ceil(timeout * 1000), 0);
	q->running = true;
	while (!have_done(q, tag) && !q->wait_expired) {
		if (forever && HASH_COUNT(q->tasks) == 0)
			break;
		uv_run(q->loop, UV_RUN_ONCE);
	}
	q->running = false;
	uv_timer_stop(q->wait_timer);
	return pop_done_tag(q, tag);
}

int work_queue_empty(struct work_queue *q)
{
	return !q || HASH_COUNT(q->tasks) == 0;
}

int work_queue_hungry(struct work_queue *q)
{
	if (!q)
		return 0;
	int64_t ready = master_sched_ready_count(q->sched) + master_prepare_count(q);
	int64_t want;
	if (!q->stats.workers_connected) {
		want = 10;
	} else {
		/* The scheduler's sums, kept as workers and tasks change: no walk per call. */
		double free_cores = 0;
		int64_t room = 0;
		master_sched_sums(q->sched, NULL, &free_cores, &room);
		want = (int64_t)ceil(2 * free_cores);
		/* Free room in the prefetch queues, so that a client that asks keeps them fed. */
		want += room;
	}
	return ready < want ? (int)(want - ready) : 0;
}

struct work_queue_task *work_queue_cancel_by_taskid(struct work_queue *q, int id)
{
	struct mtask *m = q ? master_queue_task_lookup(q, id) : NULL;
	if (!m)
		return NULL;
	if (m->state == MTASK_DONE) {
		/* Take it out of the done list. */
		struct mtask **p = &q->done_head, *prev = NULL;
		while (*p && *p != m) {
			prev = *p;
			p = &(*p)->done_next;
		}
		if (*p) {
			*p = m->done_next;
			if (q->done_tail == m)
				q->done_tail = prev;
		}
		q->stats.tasks_with_results--;
	} else {
		master_prepare_forget(q, m); /* a preparing task: its jobs only fill the memo */
		if (m->w) {
			master_sched_task_release(q->sched, m->st, master_queue_now());
			master_dispatch_cancel(m->w, m, "cancelled by the application");
		}
		if (m->st)
			master_sched_task_remove(q->sched, m->st);
		m->st = NULL;
		m->t->result = WORK_QUEUE_RESULT_CANCELLED;
		master_scalestat_ended(q, m, -1);
		q->stats.tasks_cancelled++;
		if (q->txlog)
			master_txlog_task(q->txlog, m->id, "CANCELED", NULL, NULL);
	}
	HASH_DEL(q->tasks, m);
	master_scalestat_removed(q, m);
	struct work_queue_task *t = m->t;
	mtask_free(m);
	master_queue_request_pass(q);
	return t;
}

struct work_queue_task *work_queue_cancel_by_tasktag(struct work_queue *q, const char *tag)
{
	if (!q || !tag)
		return NULL;
	struct mtask *m, *tmp;
	HASH_ITER(hh, q->tasks, m, tmp)
	{
		if (tag_matches(m, tag))
			return work_queue_cancel_by_taskid(q, m->id);
	}
	return NULL;
}

/* ---- tuning and statistics ---------------------------------------------------------------- */

int work_queue_specify_keepalive_interval(struct work_queue *q, int seconds)
{
	if (!q || seconds < 5 || seconds > 3600)
		return -EINVAL;
	q->keepalive_interval = seconds;
	if (q->keepalive_timeout < 2 * seconds)
		q->keepalive_timeout = 2 * seconds;
	return 0;
}

int work_queue_specify_keepalive_timeout(struct work_queue *q, int seconds)
{
	if (!q || seconds < 2 * q->keepalive_interval)
		return -EINVAL;
	q->keepalive_timeout = seconds;
	return 0;
}

int work_queue_specify_algorithm(struct work_queue *q, enum work_queue_schedule alg)
{
	if (!q || (int)alg < WORK_QUEUE_SCHEDULE_FCFS || alg > WORK_QUEUE_SCHEDULE_RAND)
		return -EINVAL;
	q->algorithm = alg;
	return 0;
}

int work_queue_specify_name(struct work_queue *q, const char *name)
{
	if (!q || !name || !*name || strlen(name) > 255)
		return -EINVAL;
	free(q->project);
	q->project = xstrdup(name);
	return start_catalog(q, q->catalog_hosts);
}

int work_queue_specify_priority(struct work_queue *q, int priority)
{
	if (!q)
		return -EINVAL;
	q->priority = priority;
	q->catalog_shape = -1; /* the next tick sends the record */
	return 0;
}

int work_queue_activate_worker_waiting(struct work_queue *q, int n)
{
	if (!q || n < 0)
		return -EINVAL;
	q->wait_for_workers = n;
	master_queue_request_pass(q);
	return 0;
}

int work_queue_master_preferred_connection(struct work_queue *q, const char *how)
{
	if (!q || !how ||
	    (strcmp(how, "by_ip") && strcmp(how, "by_hostname") && strcmp(how, "by_apparent_ip")))
		return -EINVAL;
	snprintf(q->preferred_connection, sizeof q->preferred_connection, "%s", how);
	q->catalog_shape = -1;
	return 0;
}

int work_queue_specify_catalog_servers(struct work_queue *q, const char *hosts)
{
	if (!q || !hosts || !*hosts)
		return -EINVAL;
	free(q->catalog_hosts);
	q->catalog_hosts = xstrdup(hosts);
	if (!q->project)
		return 0; /* used once a name is given */
	return start_catalog(q, q->catalog_hosts);
}

int work_queue_specify_password_file(struct work_queue *q, const char *path)
{
	if (!q || !path)
		return -EINVAL;
	char *why = NULL;
	struct wq_auth_key *k = wq_auth_key_load(path, &why);
	if (!k) {
		int rc = -(errno ? errno : EINVAL);
		warn("wq: %s", why ? why : path);
		free(why);
		return rc;
	}
	wq_auth_key_delete(q->key);
	q->key = k;
	return 0;
}

void *work_queue_loop(struct work_queue *q)
{
	return q ? q->loop : NULL;
}

void work_queue_specify_shutdown(struct work_queue *q, int shutdown)
{
	if (q)
		q->shutdown = shutdown != 0;
}

void work_queue_specify_sync_outputs(struct work_queue *q, int sync)
{
	if (q)
		q->sync_outputs = sync != 0;
}

int work_queue_specify_category_mode(struct work_queue *q, const char *category, int mode)
{
	if (!q || mode < CATEGORY_MODE_FIXED || mode > CATEGORY_MODE_WARMUP)
		return -EINVAL;
	category_set_mode(master_sched_category(q->sched, category), (enum category_mode)mode);
	master_queue_request_pass(q);
	return 0;
}

int work_queue_specify_category_max_resources(struct work_queue *q, const char *category,
                                              const struct rmsummary *max)
{
	if (!q || !max)
		return -EINVAL;
	category_set_max(master_sched_category(q->sched, category), max);
	master_queue_request_pass(q);
	return 0;
}

int work_queue_specify_category_update_interval(struct work_queue *q, const char *category, int n)
{
	if (!q || n < 1)
		return -EINVAL;
	category_set_update_interval(master_sched_category(q->sched, category), n);
	return 0;
}

int work_queue_specify_category_min_resources(struct work_queue *q, const char *category,
                                              const struct rmsummary *min)
{
	if (!q || !min)
		return -EINVAL;
	category_set_min(master_sched_category(q->sched, category), min);
	return 0;
}

int work_queue_specify_category_max_concurrent(struct work_queue *q, const char *category, int n)
{
	if (!q)
		return -EINVAL;
	return master_sched_category_set_max_concurrent(q->sched, category, n);
}

int work_queue_specify_full_worker_timeout(struct work_queue *q, double seconds)
{
	if (!q || !(seconds >= 0) || seconds > 86400)
		return -EINVAL;
	q->full_worker_timeout = seconds;
	return 0;
}

int work_queue_specify_prefetch(struct work_queue *q, int per_worker, double max_task_seconds)
{
	if (!q || per_worker < -1 || !isfinite(max_task_seconds) || max_task_seconds < 0)
		return -EINVAL;
	q->prefetch_per_worker = per_worker;
	master_sched_set_room_cap(q->sched, per_worker);
	q->prefetch_max_s = max_task_seconds;
	if (per_worker != 0)
		master_queue_request_pass(q);
	return 0;
}

int work_queue_specify_prefetch_containers(struct work_queue *q, double max_task_seconds)
{
	if (!q || !isfinite(max_task_seconds) || max_task_seconds < 0)
		return -EINVAL;
	q->prefetch_ctr_s = max_task_seconds;
	master_queue_request_pass(q);
	return 0;
}

void work_queue_get_stats(struct work_queue *q, struct work_queue_stats *s)
{
	*s = q->stats;
	s->tasks_waiting = (int)(master_sched_ready_count(q->sched) + master_prepare_count(q));
	/* Counts and sums kept as workers and tasks change: no walk of the workers. */
	s->workers_busy = (int)q->n_busy;
	s->workers_idle = (int)(q->n_known - q->n_busy);
	struct master_sched_box c;
	master_sched_sums(q->sched, &c, NULL, NULL);
	s->committed_cores = c.cores;
	s->committed_memory = c.memory;
	s->committed_disk = c.disk;
	s->committed_gpus = c.gpus;
}

/* ---- fast abort, blocked hosts, drain and status (master_abort.c, master_worker.c,
 * master_status.c) ---------------------------------------------------------------------------- */

int work_queue_activate_fast_abort(struct work_queue *q, double multiplier)
{
	return master_abort_set_multiplier(q, multiplier);
}

int work_queue_activate_fast_abort_category(struct work_queue *q, const char *category,
                                            double multiplier)
{
	return master_abort_set_category_multiplier(q, category, multiplier);
}

int work_queue_block_host(struct work_queue *q, const char *host)
{
	return work_queue_block_host_with_timeout(q, host, 0);
}

int work_queue_block_host_with_timeout(struct work_queue *q, const char *host, double seconds)
{
	return master_abort_block_workers(q, host, seconds);
}

int work_queue_unblock_host(struct work_queue *q, const char *host)
{
	return master_abort_unblock(q, host);
}

void work_queue_unblock_all(struct work_queue *q)
{
	if (q)
		master_abort_free(q, false);
}

int work_queue_drain_worker(struct work_queue *q, const char *worker)
{
	return master_worker_drain(q, worker);
}

json_t *work_queue_status(struct work_queue *q, const char *what)
{
	return master_status_items(q, what);
}
