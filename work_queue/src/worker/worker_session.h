/* worker_session.h: one connection of work_queue_worker to a master, from TCP connect to close
 * (doc/work-queue-protocol.md sections 5 and 7.3): its state, which worker_conn.c creates and
 * watches, and what worker_conn.c calls once the handshake is done: the report, the master's
 * messages and data, drain, the periodic check, and the end of the tasks and of the connection.
 * The session's own files (worker_session*.c) share worker_session_internal.h besides. */
#ifndef HTC_WORKER_SESSION_H
#define HTC_WORKER_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

struct worker;
struct wq_conn;
struct wq_handshake;
struct wq_xfer_in;
struct wq_xfer_out;
struct wtask;

/* One connection to a master, from TCP connect to close. worker_conn.c allocates it (W, CONN,
 * HS, RETRY_AFTER), runs the handshake and frees it when the connection is over. */
struct worker_session {
	struct worker *w;
	struct wq_conn *conn;
	struct wq_handshake *hs;
	struct wq_xfer_in *xin;
	struct wq_xfer_out *xout;
	unsigned caps;
	bool active;         /* handshake done, report sent */
	bool draining;       /* `draining` sent */
	bool closing;        /* bye sent or close requested */
	bool lost;           /* closed callback seen */
	int64_t retry_after; /* from dismiss or a fatal error, seconds; -1 none */
	bool master_ending;  /* the dismiss said the master is ending (protocol 5.8) */
	uint64_t up_since_ms;
	struct wtask *tasks; /* uthash by id */
	void *own;           /* worker_session*.c: objects being received, URL downloads */
	int ntasks;
	int64_t last_disk_free;
	bool last_disk_full;
	uint64_t last_capacity_ms;
	bool reported; /* identity and the cache sent: `images` may follow */
};

/* The handshake succeeded: sets up transfers and sends identity, capacity and cache_have. */
void worker_session_begin(struct worker_session *s, const char *master_id, unsigned caps,
                          int64_t ka_interval, int64_t ka_timeout);
/* A message of an active session. */
void worker_session_message(struct worker_session *s, json_t *msg, const char *name);
/* The worker's images or its engine changed (worker_images.h): sends `images` when negotiated. */
void worker_session_images_changed(struct worker_session *s);
void worker_session_data(struct worker_session *s, uint32_t xfer, const uint8_t *b, size_t len);
void worker_session_writable(struct worker_session *s);
/* Kills and forgets every task and transfer of S (connection lost, dismiss, shutdown). */
void worker_session_drop_tasks(struct worker_session *s);
/* Sends `draining` (once) and refuses further tasks; says bye and ends when no task is left. */
void worker_session_drain(struct worker_session *s, const char *reason);
/* The periodic check (every second): capacity changes, drained and idle ends. */
void worker_session_tick(struct worker_session *s);
/* This side ends the connection (bye, dismiss, shutdown): closes with LAST (may be NULL). */
void worker_session_close(struct worker_session *s, json_t *last);

#endif
