/* master_internal.h: internal header of the Work Queue master shared by work_queue.c (the public
 * queue API, the loop and the task table) and master_worker.c (one connected worker: handshake,
 * INIT and ACTIVE states, its cache view, sending tasks and receiving their results). Not
 * installed: only the master's own sources include it. */
#ifndef HTC_MASTER_INTERNAL_H
#define HTC_MASTER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uthash.h>
#include <uv.h>

#include "sha256.h"
#include "work_queue.h"
#include "wq_auth.h"
#include "wq_msg.h"
#include "wq_conn.h"
#include "wq_handshake.h"
#include "master_sched.h"
#include "wq_tls.h"
#include "master_txlog.h"
#include "master_scalestat.h"
#include "wq_xfer.h"

/* A task's state on the master (doc/work-queue-protocol.md 7.2). */
enum mtask_state {
	MTASK_READY = 0,
	MTASK_SENDING,
	MTASK_RUNNING,
	MTASK_RECEIVING,
	MTASK_DONE,       /* finished, waiting to be returned by work_queue_wait */
	MTASK_CANCELLING, /* fast-aborted: back to READY at the worker's task_cancelled */
	MTASK_PREPARING,  /* inputs being named in the thread pool (master_prepare.c) */
};

/* A received output (or stdout) of the current try. */
struct mtask_recv {
	uint32_t xfer; /* 0: nothing received */
	char *tmp;     /* temporary path (renamed at task_done) */
	bool ok;       /* stored with a matching hash */
	bool finished; /* the receiver is done with it (stored or failed) */
	bool is_dir;
	char *refused; /* why the master refused its transfer (its disk), or NULL */
	/* Watched outputs (protocol 5.6): increments are appended at the final path. */
	bool watching;      /* an increment of this try arrived: the final path holds them */
	bool watch_broken;  /* an increment failed: the output is missing at task_done */
	int watch_inflight; /* increments begun and not yet ended */
	int64_t watch_next; /* offset the next increment must carry */
	int64_t watch_done; /* bytes stored at the final path */
};

/* An output directory swept of the partial outputs of dead masters (master_partial.c). */
struct mswept {
	char *dir;
	UT_hash_handle hh;
};

struct mscale_cat;

/* What the master keeps per submitted task. */
struct mtask {
	int id;
	struct work_queue_task *t;
	enum mtask_state state;
	struct master_sched_task *st;
	struct mworker *w; /* SENDING, RUNNING, RECEIVING */
	int try_;          /* attempt number sent in `task` (>= 1) */
	int n_inputs, n_outputs;
	char **objects;    /* per input: cache object name, or NULL for a per-task input */
	int64_t *obj_size; /* per input: bytes of the object */
	bool *validated;   /* per input: a URL whose object name holds the server's validator (NULL
	                    * until one has) */
	int objects_waiting;
	int prep_pending;        /* MTASK_PREPARING: inputs still being named */
	struct mtask_recv *outs; /* per output */
	struct mtask_recv out_stdout;
	double dispatched_at;    /* seconds (monotonic) */
	double running_since;    /* seconds (monotonic), at task_running */
	double listed_at;        /* seconds (monotonic), when it joined its worker's list */
	bool scale_running;      /* counted as running by master_scalestat.c */
	struct mscale_cat *scat; /* its category's counters (master_scalestat.c) */
	bool disk_full_retried;  /* a non-zero exit on a full disk was retried once */
	uint64_t unlimited;      /* RM_MEMORY, RM_DISK bits: sent as 0 (no limit) after a try
	                          * exhausted a size the master chose (doc/allocation.md) */
	bool queued;             /* sent `queued` (prefetch), no task_running yet */
	bool unsent;             /* not queued, assigned, its `task` not sent yet */
	bool held; /* queued, inputs in place, its `task` held behind unsent ones (w->held) */
	struct wq_task_done *pending_done; /* task_done waiting for its outputs to be stored */
	struct mtask *done_next;
	struct mworker *listed;      /* the worker whose list of assigned tasks holds it */
	struct mtask *wprev, *wnext; /* in that list */
	UT_hash_handle hh;
};

/* An object in a worker's cache view. */
struct mobject {
	char *name;
	int64_t size;
	bool present;        /* xfer_end sent, or reported */
	bool keep;           /* master_full.c: a task still needs it */
	double last_use;     /* master_queue_now() when a task last named it here */
	struct mtask **wait; /* tasks waiting for it while it is being sent */
	int nwait;
	char *take_source; /* master_shared.c: being taken from the shared store; its file */
	bool take_dir;
	int64_t take_task;
	UT_hash_handle hh;
};

/* A task id the master cancelled on this worker: crossing messages are discarded until the
 * worker's task_cancelled. */
struct mcancel {
	int64_t id;
	UT_hash_handle hh;
};

enum mworker_state {
	MW_HANDSHAKE = 0,
	MW_INIT,
	MW_ACTIVE,
	MW_DRAINING,
	MW_CLOSING,
};

/* A worker's name in debug lines, which carry the wq subsystem already: its label without the
 * "wq: " it always begins with (set_label, master_worker.c). */
#define MW_LABEL_PREFIX "wq: "
#define MW_NAME(w)      ((w)->label + sizeof MW_LABEL_PREFIX - 1)

struct mworker {
	struct work_queue *q;
	struct wq_conn *c;
	struct wq_handshake *h;
	enum mworker_state state;
	char addr[64];
	char label[160]; /* "wq: " MW_NAME, for warnings and notices */
	char id[80];     /* worker_id#serial: unique among the scheduler's workers */
	char *host;
	unsigned caps;
	bool have_identity, have_capacity;
	struct master_sched_box total;
	bool disk_full;
	double
	    full_since; /* master_queue_now() when disk_full was first reported; 0 when not full */
	int64_t disk_free; /* MB, from the last capacity */
	char **labels;
	int nlabels;
	int64_t max_tasks;  /* from identity: tasks it will still run; 0 = no limit */
	int64_t tasks_sent; /* tasks dispatched to it (counted against max_tasks) */
	int queue_max;      /* from identity, with `queue` negotiated; else 0 */
	int64_t grow_step;  /* from identity, with `grow`: its memory growth step (MB); else 0 */
	bool cpu_grow;      /* from identity, with `grow`: it lends idle cores */
	bool cgroups_v1;    /* from identity: its tasks are measured in cgroup v1 */
	bool status_client; /* a status client (role status), not a worker */
	struct master_sched_worker *sw;
	struct wq_xfer_out *out;
	struct wq_xfer_in *in;
	struct mobject *objects;
	struct mstore *store; /* master_shared.c: its shared store (`shared_cache`), or NULL */
	struct master_images *images; /* its `images` report (master_images.c), or NULL */
	struct mcancel *cancelling;
	struct mworker *hs_prev, *hs_next; /* in q->admit.hs_list while counted */
	int ntasks;                        /* tasks assigned */
	struct mtask *assigned;            /* those tasks (the lost-worker procedure walks them) */
	/* Tasks assigned to run (not queued) whose `task` is not sent yet (their objects are on
	 * the way), and the ids of queued tasks whose `task` waits for them: a queued task sent
	 * first would be started by the worker in the place the master keeps for the other. */
	int unsent_running;
	int *held;
	int nheld, held_cap;
	int sandbox_errors;
	int64_t recv_reserved; /* bytes announced by its open output transfers (protocol 5.4) */
	int fast_aborts;
	uv_timer_t *deadline; /* handshake deadline until `identity` */
	bool counted;         /* counted in workers_connected */
	bool init_counted;    /* counted in workers_init */
	bool hs_counted;      /* counted in the queue's connections in handshake (q->admit) */
	char ip[48];          /* the peer's address, without the port */
	uint64_t accepted_ms; /* uv_now at accept */
	double idle_since;    /* master_queue_now() when its last task left it (or at accept) */
	bool was_active;
	struct mworker *prev, *next;
};

struct wq_abort_cat;
struct wq_block;
struct mstore;

/* Connections that have not finished the handshake (master_admit.c). */
struct master_admit_addr;
struct master_admit {
	int total;                         /* connections in handshake */
	struct master_admit_addr *by_addr; /* their count per peer address */
	uint64_t log_start;                /* uv_now at the start of the log window */
	unsigned log_lines, suppressed;    /* refusal lines logged, and dropped, in the window */
	struct mworker *hs_list;           /* the connections counted, oldest first */
	uint64_t silent_lookups, silent_examined; /* searches for a silent one, workers looked at */
};

struct work_queue {
	struct mstore *stores;  /* master_shared.c: the shared stores of workers, by id */
	uint64_t lost_examined; /* tasks looked at by lost-worker procedures (tests) */
	int64_t timed_tasks;    /* tasks with an end time, not done (recounted at each tick) */
	uint64_t ticks, tick_examined; /* ticks, and tasks their end-time check looked at */
	uint64_t abort_examined;       /* tasks the fast-abort check looked at */
	uv_loop_t *loop;
	uv_loop_t own_loop;
	bool own;
	uv_tcp_t *listener;
	int port;
	uv_timer_t *wait_timer;
	uv_idle_t *sched_idle;
	uv_timer_t *tick;
	bool sched_wanted;
	bool wait_expired;
	bool running; /* inside uv_run called by work_queue_wait */
	struct master_sched *sched;
	struct master_prepare *prep; /* naming the inputs of new tasks (master_prepare.c) */
	struct mtask *tasks;         /* by id */
	struct mtask *done_head, *done_tail;
	struct mworker *workers;
	struct master_admit admit;
	struct work_queue_stats stats;
	int64_t n_known, n_busy; /* workers known to the scheduler, and those with a task */
	int next_taskid;
	int worker_serial;
	char master_id[33];
	char *project;
	struct wq_auth_key *key;
	struct wq_tls_config *tls;
	int keepalive_interval, keepalive_timeout;
	bool shutdown;
	bool ending;       /* work_queue_delete: dismissals say the master is ending */
	bool sync_outputs; /* fsync each output and its directory (off by default) */
	enum work_queue_schedule algorithm;
	uint64_t rng;
	struct master_txlog *txlog;
	char *tmpdir; /* private temporary directory (stdout files), or NULL until needed */
	int64_t recv_reserved; /* bytes announced by open output transfers of all workers */
	char
	    partial_tag[64]; /* HOST-PID-START in the names of partial outputs (master_partial.c) */
	struct mswept *swept; /* output directories already swept of dead masters' partials */
	struct catalog_updater *catalog;
	char *catalog_hosts;     /* given with work_queue_specify_catalog_servers, or NULL */
	double fast_abort;       /* default multiplier, 0 = off */
	bool abort_on;           /* fast abort applies to some category (master_abort.c) */
	int prefetch_per_worker; /* work_queue_specify_prefetch: -1 queue_max, 0 off */
	double prefetch_max_s;
	double prefetch_ctr_s;      /* work_queue_specify_prefetch_containers */
	double full_worker_timeout; /* work_queue_specify_full_worker_timeout */
	struct wq_abort_cat *abort_cats;
	struct wq_block *blocked;
	int64_t catalog_last;
	bool catalog_busy;             /* an update round is in flight */
	int catalog_shape;             /* record_shape of the last record sent */
	int priority;                  /* work_queue_specify_priority: in the catalog record */
	char preferred_connection[16]; /* by_ip, by_hostname or by_apparent_ip */
	char listen_addr[64];          /* the address bound, "" for all */
	json_t *net_ifaces;   /* the record's network_interfaces, made once (master_status.c) */
	int wait_for_workers; /* work_queue_activate_worker_waiting: 0 once reached */
	struct mscale_cat *scale_cats; /* per-category counters for scalers (master_scalestat.c) */
};

/* Seconds on a monotonic clock. */
double master_queue_now(void);

/* The private temporary directory (stdout files), created on first use; NULL on failure. */
const char *master_queue_tmpdir(struct work_queue *q);

/* Called by master_worker.c. */
void master_queue_request_pass(struct work_queue *q);
/* Frees T's index of file names once T is queued: it is rebuilt from T's lists if files are
 * added again (work_queue_task.c). Saves about 600 bytes per queued task. */
void master_task_drop_name_index(struct work_queue_task *t);
struct mtask *master_queue_task_lookup(struct work_queue *q, int64_t id);
/* The task goes back to READY with the same try (not counted). */
void master_queue_task_requeue(struct work_queue *q, struct mtask *m);
/* The task finished for good with T->result already set; queued for work_queue_wait. */
void master_queue_task_finish(struct work_queue *q, struct mtask *m);
/* A worker's resources changed (stats). */
void master_queue_worker_resources(struct work_queue *q, const struct master_sched_box *old_total,
                                   const struct master_sched_box *new_total);

/* Shared by master_worker.c and master_dispatch.c. */
bool master_worker_assigned(struct mworker *w,
                            struct mtask *m); /* M is SENDING/RUNNING/RECEIVING on W */
struct mobject *master_worker_object_find(struct mworker *w, const char *name);
struct mobject *master_worker_object_add(struct mworker *w, const char *name, int64_t size);
void master_worker_object_free(struct mworker *w, struct mobject *o);

/* master_dispatch.c: sends object O to W (for task TASK, the transactions log), from SOURCE (a
 * directory when IS_DIR). Returns 0 or the sender's error. */
int master_dispatch_send_object(struct mworker *w, struct mobject *o, const char *source,
                                bool is_dir, int64_t task);
/* Object O of W is in place (HOW > 0), refused (0: its tasks go back to READY; NO_ROOM: for
 * want of disk) or failed (< 0: its tasks fail, input missing); the tasks waiting for it go on.
 * O is freed unless in place. */
void master_dispatch_object_done(struct mworker *w, struct mobject *o, int how, bool no_room);

/* master_shared.c: workers that share a store (protocol 5.12, doc/work-queue-shared-cache.md).
 * W's identity named store ID (32 hex): W joins it. */
void master_shared_join(struct mworker *w, const char *id);
/* Object O (fresh in W's view, from SOURCE) is needed on W: true when it will come from W's
 * shared store (a `cache_take` now, or after the transfer to another worker of the store) and
 * must not be sent; false: send it (W is then the store's sender of it). */
bool master_shared_route(struct mworker *w, struct mobject *o, const char *source, bool is_dir,
                         int64_t task);
/* The transfer of NAME to W failed: another worker of its store waiting for it gets it. */
void master_shared_send_failed(struct mworker *w, const char *name);
/* W is lost: the objects it was receiving for its store go to the workers waiting for them. */
void master_shared_worker_lost(struct mworker *w);
/* `store_have` and `cache_taken` from W. */
void master_shared_on_store_have(struct mworker *w, json_t *msg);
void master_shared_on_taken(struct mworker *w, json_t *msg);
/* Frees the stores of Q. */
void master_shared_free(struct work_queue *q);
void master_worker_rm_path(const char *p, bool is_dir);
struct work_queue_file *master_worker_nth_file(struct work_queue_file *f, int i);
void master_worker_detach(struct mworker *w, struct mtask *m); /* M leaves W (stats) */
/* The list of tasks assigned to a worker: M joins W's (leaving any other), or leaves its own. */
void master_worker_list_add(struct mworker *w, struct mtask *m);
void master_worker_list_del(struct mtask *m);
void master_dispatch_release_held(struct mworker *w); /* sends the queued tasks held (w->held) */
void master_worker_back_to_ready(struct mworker *w, struct mtask *m); /* same try, not counted */
void master_worker_finish(struct mworker *w, struct mtask *m, enum work_queue_result result);
/* master_task_done.c: task_done. */
bool master_dispatch_done_ready(struct mtask *m, const struct wq_task_done *d);
/* 0 when every transfer D names was opened for M on its connection; -1 (a violation) with the
 * text in WHY otherwise. */
int master_dispatch_done_check(const struct mtask *m, const struct wq_task_done *d, char *why,
                               size_t len);
void master_dispatch_handle_done(struct mworker *w, struct mtask *m, const struct wq_task_done *d);
extern const struct wq_xfer_out_callbacks master_worker_out_cb;
extern const struct wq_xfer_in_callbacks master_worker_in_cb;
extern wq_xfer_member_fn *const master_worker_member_check; /* the master's disk, per member */

/* master_abort.c: fast abort (7.2) and the host blocklist. work_queue.c's public functions of
 * work_queue.h call the first four (same arguments and results). */
int master_abort_set_multiplier(struct work_queue *q, double multiplier);
int master_abort_set_category_multiplier(struct work_queue *q, const char *category,
                                         double multiplier);
/* Blocks HOST for SECONDS (0: until unblocked) and dismisses its connected workers. */
int master_abort_block_workers(struct work_queue *q, const char *host, double seconds);
int master_abort_unblock(struct work_queue *q, const char *host);
void master_abort_record(struct work_queue *q, const char *category, double wall_s);
void master_abort_check(struct work_queue *q);                    /* every second */
void master_abort_started(struct work_queue *q, struct mtask *m); /* M began running */
void master_abort_block_host(struct work_queue *q, const char *host, double seconds);
double master_abort_blocked_for(struct work_queue *q, const char *host); /* seconds left, 0 */
void master_abort_free(struct work_queue *q, bool categories);

/* master_full.c: a worker whose disk is full (doc/work-queue-protocol.md 5.10). After each
 * `capacity` of W (WAS_FULL: its disk_full before): the cached objects no READY or assigned task
 * needs are dropped (`cache_drop`, oldest use first). Every second: a worker full for
 * full_worker_timeout seconds with no task is dismissed. */
void master_full_capacity(struct mworker *w, bool was_full);
/* W refused an object with `disk_full` (no room in what it may use): the same drop. */
void master_full_no_room(struct mworker *w);
void master_full_check(struct work_queue *q);

/* master_status.c: the status document WHAT (work_queue_status), answers a `query` from a status
 * client; the catalog record. */
json_t *master_status_items(struct work_queue *q, const char *what);
void master_status_query(struct mworker *w, json_t *msg);
json_t *master_status_record(struct work_queue *q);

/* master_worker.c */
/* Accepts a new connection from the listener. */
void master_worker_accept(struct work_queue *q, uv_tcp_t *tcp);

/* master_admit.c: the limits on connections in handshake (protocol 2.4). master_admit_room
 * makes room for a connection from IP (closing the oldest silent connection in handshake when a
 * limit is reached) and says whether it may be accepted; master_admit_add counts an accepted
 * connection until master_admit_release (the end of its handshake, or its loss; idempotent). */
bool master_admit_room(struct work_queue *q, const char *ip);
void master_admit_add(struct mworker *w);
void master_admit_release(struct mworker *w);
void master_admit_tick(struct work_queue *q); /* every second: the suppressed lines summed up */
void master_admit_free(struct work_queue *q);
/* Sends task M (assigned by a pass with BOX) to W; `queued: true` when M->queued is set. */
/* The `task` message of M for W in BOX (master_task_msg.c); a new reference. */
json_t *master_task_message(struct mworker *w, struct mtask *m, const struct master_sched_box *box);
void master_dispatch_task(struct mworker *w, struct mtask *m, const struct master_sched_box *box);
/* Cancels M on its worker (M leaves the worker at once). */
void master_dispatch_cancel(struct mworker *w, struct mtask *m, const char *reason);
/* No more tasks are scheduled to W (its connection is closing or failed): the draining flag of
 * the scheduler, which lets it finish what it has. */
void master_worker_stop_scheduling(struct mworker *w);
/* Dismisses (or shuts down) W and detaches it from the queue. */
void master_worker_end(struct mworker *w, bool shutdown, const char *reason, int retry_after);
/* Sends `drain` to the active workers named by WORKER (work_queue_drain_worker). */
int master_worker_drain(struct work_queue *q, const char *worker);
/* Frees a worker entirely (queue deletion). */
void master_worker_free(struct mworker *w);
/* FILES policy: cached input bytes of task M on W. */
int64_t master_worker_cached_bytes(struct mworker *w, struct mtask *m);
/* Deletes the temporary files of M's current try. */
void master_worker_clear_recv(struct mtask *m);

/* ---- master_partial.c: names of partial outputs, and those of dead masters removed ---- */
/* This process's HOST-PID-START, into BUF. */
void master_partial_tag(char *buf, size_t len);
/* The temporary path of transfer XFER of the output at SOURCE: DIR/.BASE.wq-TAG-XFER.tmp.
 * Caller frees. */
char *master_partial_name(const char *tag, const char *source, uint32_t xfer);
/* 1 when NAME (a file name, no directory) is a partial output's name of the current form, with
 * its writer's host hash, pid and start time; 0 otherwise. */
int master_partial_parse(const char *name, unsigned *host, pid_t *pid, unsigned long long *start);
/* Removes, in the thread pool, the partial outputs of dead masters from the directories of T's
 * outputs not swept yet by Q. */
void master_partial_sweep(struct work_queue *q, const struct work_queue_task *t);
/* Removes, in the thread pool, the private temporary directories of dead masters from BASE. */
void master_partial_sweep_tmpdirs(struct work_queue *q, const char *base);
/* Frees Q's list of swept directories. */
void master_partial_forget(struct work_queue *q);

/* W's part of q->n_known and q->n_busy: SIGN -1 before a change of W's scheduler record or
 * task count, +1 after it (the status counts workers without walking them). */
static inline void master_worker_count(struct mworker *w, int sign)
{
	w->q->n_known += sign * (w->sw != NULL);
	w->q->n_busy += sign * (w->sw != NULL && w->ntasks > 0);
}

#endif
