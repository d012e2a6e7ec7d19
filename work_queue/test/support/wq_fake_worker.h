/* wq_fake_worker.h: the fixture of the master library's integration tests: a libuv loop, a
 * temporary directory and the debug log in it, and a scripted fake worker built from wq_conn,
 * wq_handshake (worker side), wq_msg and wq_xfer that plays the worker's side of the protocol on
 * the queue's own loop. Every wait runs the queue (work_queue_wait) until a condition holds. */
#ifndef HTC_WQ_FAKE_WORKER_H
#define HTC_WQ_FAKE_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "work_queue.h"
#include "wq_handshake.h"

#define FAKE_WORKER_ID "fedcba9876543210fedcba9876543210"

/* The group fixture: fake_env_setup makes it (cmocka's state), fake_env_teardown ends it. */
struct fake_env {
	uv_loop_t loop;
	char *dir; /* the temporary directory */
	char *log; /* DIR/log: the debug log, subsystem wq */
	int serial;
};

int fake_env_setup(void **state);
/* Lets the loop finish what the tests closed (lingering connections: up to 2 s). Handles still
 * open after 5 s belong to a test that failed half-way (its queue was never deleted): they are
 * closed so that the failure is reported instead of waiting for ever. */
int fake_env_teardown(void **state);
/* The debug log has a line containing S. */
bool fake_log_has(const struct fake_env *e, const char *s);

enum fake_mode {
	FAKE_RUN,            /* run tasks: output = object content + buffer content */
	FAKE_REFUSE_MISSING, /* refuse the first task with missing_object */
	FAKE_DISCONNECT,     /* close the connection when a task arrives */
	FAKE_VIOLATE,        /* answer a task with a task_done for an unknown task */
	FAKE_EXHAUST_FIRST,  /* a first try given less than 2000 MB exhausts its memory */
	FAKE_HOLD,           /* task_running, then nothing until task_cancel */
	FAKE_SIGNAL,         /* every try is killed by signal 11 */
	FAKE_SANDBOX_ERROR,  /* every task ends with sandbox_error; the fake stays connected */
};

struct fake_task {
	int64_t id, try_;
	json_t *msg;
	char *input_text; /* concatenation of its inputs, in arrival order */
	int stage;        /* 0 staging, 1 sending outputs, 2 done */
	int queued;       /* sent `queued`: held until the test starts it (fake_start_queued) */
	uint32_t out_xfer, stdout_xfer;
	int pending_sends;
};

/* One fake worker: what it is told to do, its connection, and what arrived. */
struct fake {
	enum fake_mode mode;
	uv_loop_t *loop;
	struct wq_auth_key *key;
	struct wq_tls_config *tls;
	uv_tcp_t *tcp;
	uv_connect_t creq;
	struct wq_conn *c;
	struct wq_handshake *h;
	struct wq_xfer_in *in;
	struct wq_xfer_out *out;
	json_t *wire_ids; /* wq_sim_wire_note */
	int hs_done;
	enum wq_hs_outcome outcome;
	char hs_code[64];
	int closed;
	char dir[256]; /* where its inputs are stored */
	/* what arrived */
	int objects_received;
	char last_object[80];
	int tasks_received;
	int refused_once;
	json_t *refuse_pending; /* REFUSE_MISSING: the task to refuse once its object is stored */
	int cancels;
	int drains;
	json_t *task_msgs[16];
	struct fake_task tasks[16];
	int ntasks;
	char cache[4][80]; /* names held */
	int ncache;
	int queue_max; /* > 0: offers `queue` with this queue_max (set before the loop runs) */
	int cores;     /* capacity; 0: 4 */
	int queued_received;
	int watch;      /* offers `watch` (set before the loop runs); its sends are not asserted */
	int containers; /* offers `containers` and `images`, docker: true (set before the loop runs)
	                 */
	int watch_sent; /* sent callbacks seen while WATCH (any outcome) */
	int watch_fails;     /* ... of which not WQ_XFER_SENT */
	int drop_msgs;       /* cache_drop messages received */
	char dropped[8][80]; /* the names they carried, in order (the first 8) */
	int ndropped;
	int dismissed; /* a dismiss arrived, with this reason */
	char dismiss_reason[64];
	char store[40];     /* non-empty: offers `shared_cache` with this store (before the loop) */
	int shared_dirs;    /* with STORE, offers `shared_dirs` too (before the loop) */
	int takes;          /* cache_take messages received; the test answers them */
	char last_take[80]; /* the object of the last one */
};

/* Connects a fake worker in MODE to Q (with PASSWORD, NULL for none; over TLS, not checking the
 * certificate, with TLS). It handshakes and reports once the queue's loop runs. */
struct fake *fake_start(struct fake_env *e, struct work_queue *q, enum fake_mode mode,
                        const char *password);
struct fake *fake_start_tls(struct fake_env *e, struct work_queue *q, enum fake_mode mode,
                            const char *password, bool tls);
/* Frees F, its connection and its directory. */
void fake_free(struct fake *f);

/* Sends MSG (stolen) on F's connection. */
void fake_send(struct fake *f, json_t *msg);
/* `capacity`: 4 cores (or f->cores), 4000 MB, 9000 MB of disk free, or none with FULL. */
void fake_capacity(struct fake *f, int full);
/* The task ID still staging or sending, or NULL. */
struct fake_task *fake_task_find(struct fake *f, int64_t id);
/* The rest of a run: the output and stdout, then task_done (FAKE_HOLD: called by the test). */
void fake_send_results(struct fake *f, struct fake_task *t);
/* The worker frees room: queued task ID starts (task_running), as a real worker would. */
void fake_start_queued(struct fake *f, int64_t id);

/* A queue on the fixture's loop, on a free port, with PASSWORD (NULL: none). */
struct work_queue *fake_queue(struct fake_env *e, const char *password);
/* Deletes Q and lets the loop take in the closes. */
void fake_queue_delete(struct work_queue *q);
/* A task: cat of a cached file and a buffer into out.txt (1 core, 100 MB, 100 MB of disk). */
struct work_queue_task *fake_make_task(const char *in_path, const char *out_path);

/* Runs the queue (work_queue_wait with short waits, the master's loop turning) until DONE(ARG)
 * or SECONDS pass; no task may finish meanwhile. Returns DONE(ARG). */
bool fake_queue_until(struct work_queue *q, bool (*done)(void *arg), void *arg, double seconds);
/* The same until *FLAG is non-zero; returns *FLAG. */
int fake_wait_flag(struct work_queue *q, int *flag, double seconds);
/* Runs the queue until N workers are connected (or SECONDS pass); returns whether they are. */
int fake_wait_workers(struct work_queue *q, int n, double seconds);
/* Runs the queue until a task finishes (or SECONDS pass) and returns it (NULL). */
struct work_queue_task *fake_wait_task(struct work_queue *q, double seconds);

#endif
