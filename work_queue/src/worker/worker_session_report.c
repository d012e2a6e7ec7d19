/* worker_session_report.c: the report a work_queue_worker sends on a connection after the
 * handshake and afterwards (doc/work-queue-protocol.md section 5.2): identity, capacity (with the
 * disk and cache as they are now) and cache_have, batch by batch. Split from worker_session.c;
 * worker_session_internal.h holds what they share. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "timeutil.h"
#include "worker_conn_internal.h"
#include "worker_docker.h"
#include "worker_images.h"
#include "worker_queue.h"
#include "worker_session_internal.h"
#include "worker_task.h"
#include "worker_cache.h"
#include "worker_shared_session.h"
#include "wq_msg.h"

#include "banned.h"

static const char *cgroups_kind(void)
{
	if (access("/sys/fs/cgroup/memory", F_OK) == 0)
		return "v1";
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
		return "v2";
	return "none";
}

void ws_send_capacity(struct worker_session *s)
{
	struct worker *w = W(s);
	struct worker_ledger *l = worker_ledger(w);
	worker_ledger_refresh_disk(l);
	worker_ledger_set_cache(l, (int64_t)(worker_cache_bytes(worker_conn_cache(w)) >> 20));
	s->last_disk_free = worker_ledger_disk_free(l);
	s->last_disk_full = worker_ledger_disk_full(l);
	s->last_capacity_ms = uv_now(worker_loop(w));
	ws_send(s, worker_ledger_capacity_json(l));
}

int ws_have_batch(const struct worker_cache_item *items, size_t n, bool last, void *arg)
{
	struct worker_session *s = arg;
	json_t *objs = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(objs,
		                      json_pack("[s,I]", items[i].name, (json_int_t)items[i].size));
	ws_send(s, json_pack("{s:s,s:o,s:b}", "m", "cache_have", "objects", objs, "last", last));
	return 0;
}

void ws_send_identity(struct worker_session *s)
{
	struct worker *w = W(s);
	const struct worker_opts *o = worker_opts_of(w);
	struct utsname u;
	if (uname(&u) != 0)
		memset(&u, 0, sizeof u);
	json_t *labels = json_array();
	for (int i = 0; i < o->feature_count; i++)
		json_array_append_new(labels, json_string(o->features[i]));
	json_t *end = json_null();
	if (o->wall_time > 0)
		end = json_integer(time_now_us() + o->wall_time * 1000000);
	char sw[64];
	snprintf(sw, sizeof sw, "htc %s", HTC_VERSION);
	json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:s,s:o,s:o,s:b,s:s}", "m", "identity",
	                      "host", worker_hostname(w), "os", u.sysname, "os_release", u.release,
	                      "arch", u.machine, "software", sw, "pid", (json_int_t)getpid(),
	                      "workdir", worker_workdir(w), "labels", labels, "end_time", end,
	                      "docker", worker_docker_of(w) != NULL, "cgroups", cgroups_kind());
	if (m && o->exit_after_tasks > 0) {
		/* the tasks still to run over this worker's life (at least 1: it drains at 0) */
		int64_t left = o->exit_after_tasks - worker_tasks_done(w);
		json_object_set_new(m, "max_tasks", json_integer(left > 0 ? left : 1));
	}
	if (m && (s->caps & WQ_CAP_QUEUE)) {
		struct worker_total c;
		worker_ledger_totals(worker_ledger(w), &c, NULL, NULL, NULL);
		json_object_set_new(m, "queue_max",
		                    json_integer(worker_queue_default_max(c.total)));
	}
	if (m && o->memory_grow && (s->caps & WQ_CAP_GROW))
		json_object_set_new(m, "memory_grow_step",
		                    json_integer(o->grow_step_up_mb > 0 ? o->grow_step_up_mb : 1));
	if (m && o->cpu_grow && (s->caps & WQ_CAP_GROW))
		json_object_set_new(m, "cpu_grow", json_true());
	struct worker_shared *sh = worker_conn_shared(w);
	if (m && sh && (s->caps & WQ_CAP_SHARED_CACHE))
		json_object_set_new(m, "store", json_string(worker_shared_id(sh)));
	ws_send(s, m);
}

void worker_session_images_changed(struct worker_session *s)
{
	struct worker_docker *dk = worker_docker_of(W(s));
	struct worker_images *im = dk ? worker_docker_images(dk) : NULL;
	/* not before identity and the cache report: a new master_id empties the cache (and
	 * drops images) before them */
	if (im && s->reported && !s->closing && (s->caps & WQ_CAP_IMAGES))
		ws_send(s, worker_images_message(im));
}
