/* batch_driver_mesos.c: the "mesos" driver. It is one Mesos framework per run, named
 * "htc-<run id>" (cluster_run.h), subscribed through mesos_sched.h; each job is one task whose id
 * carries the run id. Offers are matched against the waiting jobs (first fit) and the rest
 * declined with a filter; status updates complete the jobs. Design and options:
 * doc/batch-mesos.md, doc/batch-driver-interface.md. */
#include "batch_driver.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uthash.h>

#include "atomic_file.h"
#include "cluster_run.h"
#include "cluster_throttle.h"
#include "debug.h"
#include "mesos_proto.h"
#include "mesos_sched.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

enum mjob_state { MJ_WAITING, MJ_LAUNCHED, MJ_RUNNING };

struct mjob {
	struct batch_job *job;
	int state;
	char task_id[MESOS_TASK_ID_LEN];
	char agent_id[256];
	struct mjob *prev, *next; /* waiting list, in submission order */
	UT_hash_handle hh;        /* by task id, once launched */
};

struct mesos {
	struct batch_queue *q;
	uv_loop_t *loop;
	struct mesos_sched *sched;
	char *master;
	char *principal, *secret; /* HTTP basic authentication of the framework, or NULL */
	char *work_dir;           /* where <run id>.framework files go; default <cwd>/.htc-mesos */
	char cwd[PATH_MAX];
	char run_id[CLUSTER_RUN_ID_LEN + 1];
	char name[CLUSTER_JOB_NAME_LEN];
	int have_run;
	long long next_n;
	double refuse_s, default_mem, default_disk, failover_s, reconnect_s;
	int misses;
	struct cluster_throttle throttle;
	struct mjob *wait_head, *wait_tail;
	struct mjob *launched; /* hash by task id */
	int64_t n_launched;
	int declined; /* offers declined since the last REVIVE */
	char *fatal;  /* the master is lost: why */
	int wrote_fid;
};

static void wait_add(struct mesos *m, struct mjob *j)
{
	j->prev = m->wait_tail;
	j->next = NULL;
	if (m->wait_tail)
		m->wait_tail->next = j;
	else
		m->wait_head = j;
	m->wait_tail = j;
}

static void wait_del(struct mesos *m, struct mjob *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		m->wait_head = j->next;
	if (j->next)
		j->next->prev = j->prev;
	else
		m->wait_tail = j->prev;
	j->prev = j->next = NULL;
}

static char *fid_file(struct mesos *m, const char *run)
{
	return xasprintf("%s/%s.framework", m->work_dir, run);
}

/* Completes J (waiting or launched) and frees it. */
static void finish(struct mesos *m, struct mjob *j)
{
	if (j->state == MJ_WAITING) {
		wait_del(m, j);
	} else {
		HASH_DEL(m->launched, j);
		m->n_launched--;
	}
	if (j->job) {
		j->job->driver_data = NULL;
		if (!j->job->result.end_us)
			j->job->result.end_us = time_now_us();
		batch_job_complete(m->q, j->job);
	}
	free(j);
}

static void fail_job(struct mesos *m, struct mjob *j, const char *why)
{
	struct batch_result *r = &j->job->result;
	r->exited_normally = 0;
	r->exit_code = -1;
	batch_job_set_error(j->job, "%s", why);
	finish(m, j);
}

/* The master is lost: every unfinished job fails with WHY. */
static void fail_all(struct mesos *m, const char *why)
{
	while (m->wait_head)
		fail_job(m, m->wait_head, why);
	struct mjob *j, *tmp;
	HASH_ITER(hh, m->launched, j, tmp)
	fail_job(m, j, why);
}

/* ---- events ---- */

static void on_subscribed(void *arg, const char *fid, int again)
{
	struct mesos *m = arg;
	if (!m->wrote_fid) {
		char *p = fid_file(m, m->run_id);
		if (mkdir(m->work_dir, 0755) < 0 && errno != EEXIST)
			warn("mesos: cannot make %s: %s", m->work_dir, strerror(errno));
		char *text = xasprintf("%s\n%s\n", fid, m->master);
		int w = atomic_file_write(p, text, strlen(text), 0644);
		free(text);
		if (w < 0)
			warn("mesos: cannot write the framework id to %s: %s (a restarted makeflow "
			     "will not find this run's tasks)",
			     p, strerror(-w));
		free(p);
		m->wrote_fid = 1;
	}
	if (!again || !m->launched)
		return;
	/* reconcile every launched task: the master says where each is now */
	json_t *tasks = json_array();
	struct mjob *j, *tmp;
	HASH_ITER(hh, m->launched, j, tmp)
	{
		json_t *t = json_pack("{s:o}", "task_id", mesos_id(j->task_id));
		if (j->agent_id[0])
			json_object_set_new(t, "agent_id", mesos_id(j->agent_id));
		json_array_append_new(tasks, t);
	}
	debug(D_BATCH, "mesos: reconciling %zu tasks", json_array_size(tasks));
	json_t *c = mesos_call_new("RECONCILE", NULL);
	json_object_set_new(c, "reconcile", json_pack("{s:o}", "tasks", tasks));
	mesos_sched_call(m->sched, c);
}

static json_t *filters(struct mesos *m)
{
	return json_pack("{s:f}", "refuse_seconds", m->refuse_s);
}

static void offer(struct mesos *m, json_t *o)
{
	struct mesos_res have;
	const char *oid = json_string_value(json_object_get(json_object_get(o, "id"), "value"));
	if (mesos_offer_resources(o, &have) < 0 || !oid) {
		warn("mesos master %s: an offer without id, agent_id or resources is ignored",
		     m->master);
		return;
	}
	const char *agent =
	    json_string_value(json_object_get(json_object_get(o, "agent_id"), "value"));
	json_t *infos = json_array();
	int64_t now = time_monotonic_us();
	for (struct mjob *j = m->wait_head, *nx; j; j = nx) {
		nx = j->next;
		struct mesos_res need;
		mesos_job_need(&j->job->spec.resources, m->default_mem, m->default_disk, &need);
		if (!mesos_fits(&need, &have))
			continue;
		if (!cluster_throttle_may(&m->throttle, now, m->n_launched, NULL))
			break;
		cluster_throttle_take(&m->throttle, now);
		mesos_take(&have, &need);
		mesos_task_id(m->run_id, ++m->next_n, j->task_id);
		snprintf(j->agent_id, sizeof j->agent_id, "%s", agent);
		json_array_append_new(
		    infos, mesos_task_info(&j->job->spec, j->task_id, agent, &need, m->cwd));
		wait_del(m, j);
		j->state = MJ_LAUNCHED;
		HASH_ADD_STR(m->launched, task_id, j);
		m->n_launched++;
		j->job->result.submit_us = time_now_us();
		debug(D_BATCH, "mesos: job %" PRId64 " is task %s on %s", j->job->id, j->task_id,
		      agent);
	}
	json_t *c;
	if (json_array_size(infos) > 0) {
		c = mesos_call_new("ACCEPT", NULL);
		json_object_set_new(c, "accept",
		                    json_pack("{s:[o], s:[{s:s, s:{s:o}}], s:o}", "offer_ids",
		                              mesos_id(oid), "operations", "type", "LAUNCH",
		                              "launch", "task_infos", infos, "filters",
		                              filters(m)));
	} else {
		json_decref(infos);
		c = mesos_call_new("DECLINE", NULL);
		json_object_set_new(
		    c, "decline",
		    json_pack("{s:[o], s:o}", "offer_ids", mesos_id(oid), "filters", filters(m)));
		m->declined = 1;
	}
	mesos_sched_call(m->sched, c);
}

static void update(struct mesos *m, json_t *st)
{
	const char *tid =
	    json_string_value(json_object_get(json_object_get(st, "task_id"), "value"));
	const char *state = json_string_value(json_object_get(st, "state"));
	if (!tid || !state)
		return;
	struct mjob *j;
	HASH_FIND_STR(m->launched, tid, j);
	if (!j) {
		debug(D_BATCH, "mesos: %s of task %s, which this run does not wait for", state,
		      tid);
		return;
	}
	const char *agent =
	    json_string_value(json_object_get(json_object_get(st, "agent_id"), "value"));
	if (agent && !j->agent_id[0])
		snprintf(j->agent_id, sizeof j->agent_id, "%s", agent);
	switch (mesos_state_phase(state)) {
	case MESOS_PHASE_WAITING: return;
	case MESOS_PHASE_RUNNING:
		if (j->state != MJ_RUNNING) {
			j->state = MJ_RUNNING;
			batch_job_started(m->q, j->job);
		}
		return;
	case MESOS_PHASE_ENDED: break;
	default:
		warn("mesos: task %s is in state %s, which this driver does not know; it is "
		     "waited for",
		     tid, state);
		return;
	}
	if (strcmp(state, "TASK_DROPPED") == 0 && j->state == MJ_LAUNCHED) {
		/* the master dropped the launch (its offer was no longer valid): the task never
		 * ran, so the job waits for another offer, as a new task */
		debug(D_BATCH, "mesos: task %s was dropped; job %" PRId64 " waits again", tid,
		      j->job->id);
		HASH_DEL(m->launched, j);
		m->n_launched--;
		j->task_id[0] = j->agent_id[0] = 0;
		j->state = MJ_WAITING;
		wait_add(m, j);
		if (m->declined) {
			m->declined = 0;
			mesos_sched_call(m->sched, mesos_call_new("REVIVE", NULL));
		}
		return;
	}
	struct batch_result *r = &j->job->result;
	r->end_us = time_now_us();
	if (r->start_us)
		r->measured.wall_time_s = (r->end_us - r->start_us + 500000) / 1000000;
	const char *reason = json_string_value(json_object_get(st, "reason"));
	const char *msg = json_string_value(json_object_get(st, "message"));
	char *why = mesos_result_from_status(state, reason, msg, r);
	if (why) {
		notice("mesos: job %" PRId64 " (task %s): %s", j->job->id, tid, why);
		/* an exhausted job is reported as such by makeflow, not as a driver error */
		if (!r->exhausted)
			batch_job_set_error(j->job, "%s", why);
		free(why);
	}
	finish(m, j);
}

static void on_event(void *arg, const char *type, json_t *ev)
{
	struct mesos *m = arg;
	if (strcmp(type, "OFFERS") == 0) {
		size_t i;
		json_t *o;
		json_array_foreach(json_object_get(json_object_get(ev, "offers"), "offers"), i, o)
		    offer(m, o);
	} else if (strcmp(type, "UPDATE") == 0) {
		update(m, json_object_get(json_object_get(ev, "update"), "status"));
	} else if (strcmp(type, "RESCIND") == 0) {
		debug(D_BATCH, "mesos: offer rescinded");
	} else if (strcmp(type, "FAILURE") == 0) {
		char *t = json_dumps(json_object_get(ev, "failure"), JSON_COMPACT);
		notice("mesos master %s: FAILURE %s", m->master, t ? t : "");
		free(t);
	} else {
		debug(D_BATCH, "mesos: event %s ignored", type);
	}
}

static void on_lost(void *arg, const char *why)
{
	struct mesos *m = arg;
	free(m->fatal);
	m->fatal = xstrdup(why);
	fail_all(m, why);
}

static void on_refused(void *arg, json_t *call, const char *why)
{
	struct mesos *m = arg;
	const char *type = json_string_value(json_object_get(call, "type"));
	if (!type || strcmp(type, "ACCEPT") != 0)
		return;
	/* the tasks of a refused ACCEPT were not launched: their jobs fail with the answer */
	size_t i, k;
	json_t *op, *ti;
	json_array_foreach(json_object_get(json_object_get(call, "accept"), "operations"), i, op)
	{
		json_array_foreach(json_object_get(json_object_get(op, "launch"), "task_infos"), k,
		                   ti)
		{
			const char *tid = json_string_value(
			    json_object_get(json_object_get(ti, "task_id"), "value"));
			struct mjob *j;
			HASH_FIND_STR(m->launched, tid ? tid : "", j);
			if (j)
				fail_job(m, j, why);
		}
	}
}

static const struct mesos_sched_ops sched_ops = {
    .subscribed = on_subscribed,
    .event = on_event,
    .lost = on_lost,
    .refused = on_refused,
};

/* ---- stopping a dead run's tasks (option stop-run) ---- */

struct stopper {
	struct mesos_sched *sched;
	const char *run;
	int subscribed, done, reconciled;
	json_t *killing; /* task ids killed and not yet seen ended */
	char *err;
	uv_timer_t quiet; /* ends the wait once the master has been quiet after RECONCILE */
};

static void stop_quiet(uv_timer_t *t)
{
	struct stopper *st = t->data;
	if (json_object_size(st->killing) == 0)
		st->done = 1;
}

static void stop_subscribed(void *arg, const char *fid, int again)
{
	(void)fid, (void)again;
	struct stopper *st = arg;
	st->subscribed = 1;
	json_t *c = mesos_call_new("RECONCILE", NULL);
	json_object_set_new(c, "reconcile", json_pack("{s:[]}", "tasks"));
	mesos_sched_call(st->sched, c);
	uv_timer_start(&st->quiet, stop_quiet, 2000, 500);
}

static void stop_event(void *arg, const char *type, json_t *ev)
{
	struct stopper *st = arg;
	if (strcmp(type, "OFFERS") == 0) { /* not used: declined at once */
		size_t i;
		json_t *o;
		json_t *ids = json_array();
		json_array_foreach(json_object_get(json_object_get(ev, "offers"), "offers"), i, o)
		    json_array_append(ids, json_object_get(o, "id"));
		json_t *c = mesos_call_new("DECLINE", NULL);
		json_object_set_new(c, "decline", json_pack("{s:o}", "offer_ids", ids));
		mesos_sched_call(st->sched, c);
		return;
	}
	if (strcmp(type, "UPDATE") != 0)
		return;
	json_t *s = json_object_get(json_object_get(ev, "update"), "status");
	const char *tid =
	    json_string_value(json_object_get(json_object_get(s, "task_id"), "value"));
	const char *state = json_string_value(json_object_get(s, "state"));
	if (!tid || !state || !mesos_task_of_run(tid, st->run))
		return;
	uv_timer_again(&st->quiet);
	if (mesos_state_phase(state) == MESOS_PHASE_ENDED) {
		json_object_del(st->killing, tid);
		return;
	}
	if (json_object_get(st->killing, tid))
		return;
	notice("mesos: killing task %s of the earlier run %s (%s)", tid, st->run, state);
	json_object_set_new(st->killing, tid, json_true());
	json_t *c = mesos_call_new("KILL", NULL);
	json_t *k = json_pack("{s:O}", "task_id", json_object_get(s, "task_id"));
	if (json_object_get(s, "agent_id"))
		json_object_set(k, "agent_id", json_object_get(s, "agent_id"));
	json_object_set_new(c, "kill", k);
	mesos_sched_call(st->sched, c);
}

static void stop_lost(void *arg, const char *why)
{
	struct stopper *st = arg;
	st->err = xstrdup(why);
	st->done = 1;
}

static void on_closed_free_nothing(uv_handle_t *h)
{
	(void)h;
}

/* Subscribes as the framework of run RUN (its id from its file), kills its unfinished tasks and
 * tears the framework down, on a private loop. Blocking, bounded. */
static int stop_run(struct mesos *m, const char *run)
{
	char *p = fid_file(m, run);
	char *fid = NULL;
	FILE *f = fopen(p, "r");
	if (!f) {
		debug(D_BATCH, "mesos: no framework file %s: run %s left no tasks", p, run);
		free(p);
		return 0;
	}
	char buf[256] = "", mbuf[512] = "";
	if (fgets(buf, sizeof buf, f))
		fid = xstrdup(str_trim(buf));
	/* the master the run used, for makeflow -c, which gives no options */
	if (fgets(mbuf, sizeof mbuf, f) && !m->master && *str_trim(mbuf))
		m->master = xstrdup(str_trim(mbuf));
	fclose(f);
	if (!fid || !*fid) {
		free(fid);
		free(p);
		return 0;
	}
	if (!m->master) {
		warn("mesos: the run %s left tasks in framework %s, but no master is given "
		     "(--mesos-master)",
		     run, fid);
		free(fid);
		free(p);
		return -EINVAL;
	}
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct stopper st = {.run = run, .killing = json_object()};
	char name[CLUSTER_JOB_NAME_LEN];
	cluster_job_name(run, name);
	struct mesos_sched_config cfg = {.master = m->master,
	                                 .name = name,
	                                 .fid = fid,
	                                 .failover_timeout = m->failover_s,
	                                 .heartbeat_misses = m->misses,
	                                 .reconnect_timeout = 10,
	                                 .principal = m->principal,
	                                 .secret = m->secret};
	struct mesos_sched_ops ops = {
	    .subscribed = stop_subscribed, .event = stop_event, .lost = stop_lost};
	uv_timer_init(&loop, &st.quiet);
	st.quiet.data = &st;
	st.sched = mesos_sched_new(&loop, &cfg, &ops, &st);
	int rc = 0;
	int64_t deadline = time_monotonic_us() + 120 * 1000000LL;
	if (st.sched && mesos_sched_start(st.sched) == 0) {
		while (!st.done && time_monotonic_us() < deadline)
			uv_run(&loop, UV_RUN_ONCE);
	}
	if (st.err) {
		warn("mesos: cannot stop the tasks of the earlier run %s: %s", run, st.err);
		rc = -EIO;
	} else if (!st.done) {
		warn("mesos: the tasks of the earlier run %s did not end in 120 s", run);
		rc = -ETIMEDOUT;
	} else {
		rc = mesos_sched_teardown_sync(st.sched, 30000);
		if (rc == 0) {
			notice("mesos: the tasks of the earlier run %s are gone", run);
			unlink(p);
		}
	}
	mesos_sched_delete(st.sched);
	uv_close((uv_handle_t *)&st.quiet, on_closed_free_nothing);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	json_decref(st.killing);
	free(st.err);
	free(fid);
	free(p);
	return rc;
}

/* ---- driver operations ---- */

static int mesos_create(struct batch_queue *q, void **state)
{
	struct mesos *m = xcalloc(1, sizeof *m);
	m->q = q;
	m->loop = batch_queue_loop(q);
	if (!getcwd(m->cwd, sizeof m->cwd)) {
		int e = errno;
		free(m);
		return -e;
	}
	m->refuse_s = 5;
	m->default_mem = 256;
	m->default_disk = 0;
	m->failover_s = 3600;
	m->reconnect_s = 60;
	m->misses = 5;
	cluster_throttle_init(&m->throttle, 1000, 0);
	*state = m;
	return 0;
}

static int set_double(const char *value, double lo, double hi, double *out)
{
	double v;
	if (str_to_double(value, &v) < 0 || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Option secret-file: the secret is the file's first line (without its newline). */
static int read_secret(struct mesos *m, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		warn("mesos: cannot read the secret file %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	char line[1024];
	int ok = fgets(line, sizeof line, f) != NULL;
	fclose(f);
	line[ok ? strcspn(line, "\r\n") : 0] = 0;
	if (!line[0]) {
		warn("mesos: the secret file %s is empty", path);
		return -EINVAL;
	}
	free(m->secret);
	m->secret = xstrdup(line);
	return 0;
}

static int mesos_set_option(void *state, const char *key, const char *value)
{
	struct mesos *m = state;
	int r = cluster_throttle_set_option(&m->throttle, key, value);
	if (r <= 0)
		return r;
	if (strcmp(key, "master") == 0) {
		if (!*value || strchr(value, ' '))
			return -EINVAL;
		free(m->master);
		m->master = xstrdup(value);
		return 0;
	}
	if (strcmp(key, "principal") == 0 || strcmp(key, "secret") == 0) {
		if (!*value || strchr(value, '\n'))
			return -EINVAL;
		char **slot = key[0] == 'p' ? &m->principal : &m->secret;
		free(*slot);
		*slot = xstrdup(value);
		return 0;
	}
	if (strcmp(key, "secret-file") == 0)
		return read_secret(m, value);
	if (strcmp(key, "work-dir") == 0) {
		if (value[0] != '/')
			return -EINVAL;
		free(m->work_dir);
		m->work_dir = xstrdup(value);
		return 0;
	}
	if (strcmp(key, "refuse-seconds") == 0)
		return set_double(value, 0, 86400, &m->refuse_s);
	if (strcmp(key, "default-memory") == 0)
		return set_double(value, 1, 1e9, &m->default_mem);
	if (strcmp(key, "default-disk") == 0)
		return set_double(value, 0, 1e12, &m->default_disk);
	if (strcmp(key, "failover-timeout") == 0)
		return set_double(value, 0, 1e9, &m->failover_s);
	if (strcmp(key, "reconnect-timeout") == 0)
		return set_double(value, 0, 86400, &m->reconnect_s);
	if (strcmp(key, "heartbeat-misses") == 0) {
		int64_t v;
		if (str_to_int64(value, &v) < 0 || v < 1 || v > 1000)
			return -EINVAL;
		m->misses = (int)v;
		return 0;
	}
	if (strcmp(key, "stop-run") == 0) {
		if (!cluster_run_id_valid(value))
			return -EINVAL;
		if (!m->work_dir)
			m->work_dir = xasprintf("%s/.htc-mesos", m->cwd);
		return stop_run(m, value) < 0 ? -EIO : 0;
	}
	return -EINVAL;
}

static int begin(struct mesos *m, struct batch_job *job)
{
	if (m->have_run)
		return 0;
	if (!m->master) {
		warn("mesos: no master given: --mesos-master HOST:PORT");
		return -EINVAL;
	}
	if (m->secret && !m->principal) {
		warn(
		    "mesos: a secret is given without a principal (--batch-option principal=NAME)");
		return -EINVAL;
	}
	if (cluster_run_id_from_env(job->spec.env, m->run_id) < 0) {
		int r = cluster_run_id_random(m->run_id);
		if (r < 0)
			return r;
	}
	cluster_job_name(m->run_id, m->name);
	if (!m->work_dir)
		m->work_dir = xasprintf("%s/.htc-mesos", m->cwd);
	struct mesos_sched_config cfg = {.master = m->master,
	                                 .name = m->name,
	                                 .failover_timeout = m->failover_s,
	                                 .heartbeat_misses = m->misses,
	                                 .reconnect_timeout = m->reconnect_s,
	                                 .principal = m->principal,
	                                 .secret = m->secret};
	m->sched = mesos_sched_new(m->loop, &cfg, &sched_ops, m);
	if (!m->sched)
		return -errno;
	m->have_run = 1;
	debug(D_BATCH, "mesos: framework %s on master %s", m->name, m->master);
	mesos_sched_start(m->sched);
	return 0;
}

static int mesos_submit(void *state, struct batch_job *job)
{
	struct mesos *m = state;
	int r = begin(m, job);
	if (r < 0)
		return r;
	struct mjob *j = xcalloc(1, sizeof *j);
	j->job = job;
	j->state = MJ_WAITING;
	job->driver_data = j;
	wait_add(m, j);
	if (m->fatal) {
		fail_job(m, j, m->fatal);
		return 0;
	}
	if (m->declined) {
		m->declined = 0;
		mesos_sched_call(m->sched, mesos_call_new("REVIVE", NULL));
	}
	return 0;
}

static int mesos_remove(void *state, struct batch_job *job)
{
	struct mesos *m = state;
	struct mjob *j = job->driver_data;
	if (!j)
		return -ENOENT;
	struct batch_result *r = &job->result;
	r->removed = 1;
	r->exited_normally = 0;
	r->signal = SIGKILL;
	if (j->state != MJ_WAITING) {
		json_t *c = mesos_call_new("KILL", NULL);
		json_t *k = json_pack("{s:o}", "task_id", mesos_id(j->task_id));
		if (j->agent_id[0])
			json_object_set_new(k, "agent_id", mesos_id(j->agent_id));
		json_object_set_new(c, "kill", k);
		mesos_sched_call(m->sched, c);
	}
	finish(m, j);
	return 0;
}

static void mesos_destroy(void *state)
{
	struct mesos *m = state;
	/* the framework ends with the queue: TEARDOWN kills every task it still has */
	if (m->sched && mesos_sched_up(m->sched) && !m->fatal &&
	    mesos_sched_teardown_sync(m->sched, 30000) == 0 && m->wrote_fid) {
		char *p = fid_file(m, m->run_id);
		unlink(p);
		free(p);
		rmdir(m->work_dir);
	}
	while (m->wait_head) {
		struct mjob *j = m->wait_head;
		wait_del(m, j);
		if (j->job)
			j->job->driver_data = NULL;
		free(j);
	}
	struct mjob *j, *tmp;
	HASH_ITER(hh, m->launched, j, tmp)
	{
		HASH_DEL(m->launched, j);
		if (j->job)
			j->job->driver_data = NULL;
		free(j);
	}
	mesos_sched_delete(m->sched);
	free(m->master);
	free(m->principal);
	free(m->secret);
	free(m->work_dir);
	free(m->fatal);
	free(m);
}

const struct batch_driver batch_driver_mesos = {
    .name = "mesos",
    .features = BATCH_FEATURE_ABSOLUTE_PATHS | BATCH_FEATURE_REMOVE | BATCH_FEATURE_RUN_LABEL |
                BATCH_FEATURE_WALL_TIME,
    .create = mesos_create,
    .destroy = mesos_destroy,
    .set_option = mesos_set_option,
    .submit = mesos_submit,
    .remove = mesos_remove,
};
