/* wq_sim.h: simulated Work Queue workers, a test instrument: N real TCP connections to a real
 * master on one libuv loop, each speaking the worker's side of the protocol with the same proto
 * modules the real worker uses (handshake with password, identity, capacity, cache, queued tasks
 * on a resource ledger, output transfers, task_done, keepalive, drain, dismiss). A task "runs" for
 * a duration drawn from a distribution and every output it declares is the concatenation of its
 * inputs. Used in-process by the master's tests and by the helper_sim_workers load generator. */
#ifndef HTC_WQ_SIM_H
#define HTC_WQ_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "wq_auth.h"
#include "wq_xfer.h"

/* ---- the worker's messages, shared with the scripted fake worker ----------------------------- */

/* `identity` of a Linux worker on HOST, WORKDIR, with QUEUE_MAX (> 0: the `queue` key). */
json_t *wq_sim_identity_msg(const char *host, const char *software, const char *workdir,
                            int queue_max);
/* `capacity`: CORES, MEMORY and DISK totals (MB, declared), DISK_FREE MB, DISK_FULL. */
json_t *wq_sim_capacity_msg(int cores, int64_t memory, int64_t disk, int64_t disk_free,
                            bool disk_full);
/* `task_done` of an `exited` try with EXIT_STATUS: stdout of STDOUT_SIZE bytes sent as
 * STDOUT_XFER (0: none), OUTPUTS (stolen: the array of {index, xfer}...), started and ended at
 * STARTED_US and ENDED_US (worker clock), a summary of 10 MB and 1 core. */
json_t *wq_sim_task_done_msg(int64_t id, int64_t try_, int exit_status, int64_t stdout_size,
                             uint32_t stdout_xfer, json_t *outputs, int64_t started_us,
                             int64_t ended_us);
/* A sender gives a handle when a transfer is queued and its id on the wire only when it begins
 * (wq_xfer.h), while task_done names wire ids: the sent callback notes R's pair in *MAP (made
 * at first use), and wq_sim_wire_id turns a handle into its wire id (0 if never sent) and
 * forgets it. */
void wq_sim_wire_note(json_t **map, const struct wq_xfer_sent *r);
uint32_t wq_sim_wire_id(json_t *map, uint32_t handle);

/* ---- the simulator ----------------------------------------------------------------------- */

enum wq_sim_dist {
	WQ_SIM_FIXED,   /* every task runs MEAN seconds (0: done at the next loop turn) */
	WQ_SIM_UNIFORM, /* uniform on [0, 2 MEAN] */
	WQ_SIM_EXP,     /* exponential with mean MEAN */
};

struct wq_sim_opts {
	const char *host; /* the master's IPv4 address; NULL: 127.0.0.1 */
	int port;
	int workers;    /* N >= 1 */
	int cores;      /* per worker; 0: 4 */
	int64_t memory; /* MB per worker; 0: 1000 per core */
	int64_t disk;   /* MB per worker; 0: 100000 */
	enum wq_sim_dist dist;
	double mean; /* seconds */
	int addrs;   /* > 1: worker I binds 127.0.0.(1 + I % ADDRS) before connecting */
	const struct wq_auth_key *key; /* the password (borrowed), or NULL */
	int queue_max; /* 0: offers `queue` with 2 x cores (at most 256); < 0: does not offer it */
	int exit_status;         /* of every task */
	const char *stdout_text; /* each task's stdout (copied); NULL or "": none */
	uint64_t seed;           /* of the durations and worker ids (0: 1) */
	double connect_window;   /* seconds over which the N connections are spread (0: all now) */
	/* seconds before a worker whose connect or handshake failed tries again, doubled at each
	 * failure up to 60 s, +-25 %, as the real worker does (0: 1 s, < 0: never); a permanent
	 * refusal (password) is never retried */
	double retry;
};

/* Counts over all workers. */
struct wq_sim_stats {
	int workers;
	int active;      /* past the handshake and connected now */
	int ever_active; /* workers that completed a handshake at least once */
	int ended;       /* workers closed for good (dismissed, shut down, refused, dropped) */
	uint64_t tasks_received, tasks_done, tasks_cancelled, tasks_refused;
	uint64_t objects_received;
	uint64_t errors;  /* failed connects and handshakes, unexpected closes, violations */
	uint64_t retries; /* connection attempts after the first */
	double
	    all_active_s; /* seconds from the start until all N were active at once; < 0: not yet */
};

struct wq_sim;

/* Starts N workers on LOOP (they connect once the loop runs). NULL (errno) for bad options. */
struct wq_sim *wq_sim_create(uv_loop_t *loop, const struct wq_sim_opts *o);
/* Closes every connection cleanly (`bye`) and stops retrying; the loop must run on to finish. */
void wq_sim_stop(struct wq_sim *s);
/* Frees S: connections still open are closed at once. The caller runs the loop afterwards until
 * the closes are done. NULL is accepted. */
void wq_sim_delete(struct wq_sim *s);

void wq_sim_get_stats(const struct wq_sim *s, struct wq_sim_stats *st);
/* The stats as a one-line JSON object (caller frees). */
char *wq_sim_stats_json(const struct wq_sim *s);

/* Controls and views of worker I (0 .. N-1), for tests. */
/* Drops the connection (no `bye`) when the worker receives its K-th task from now on. */
void wq_sim_drop_after(struct wq_sim *s, int i, int k);
/* Hangs the worker: it stops reading and stops its keepalive (the master must time it out). */
void wq_sim_mute(struct wq_sim *s, int i);
/* Bytes the worker's current connection received (0 when none). */
uint64_t wq_sim_bytes_received(const struct wq_sim *s, int i);
bool wq_sim_active(const struct wq_sim *s, int i);
uint64_t wq_sim_tasks_received(const struct wq_sim *s, int i);

#endif
