/* wq_fake_master.h: a scripted fake master for tests of the worker, on one connection: the
 * master's side of the handshake (wq_conn, wq_handshake), a transfer sender for inputs and a
 * receiver for outputs, and a record of every message the worker sends. The test plays the
 * script (messages and inputs) and waits, through the loop, for what comes back on the wire. */
#ifndef HTC_WQ_FAKE_MASTER_H
#define HTC_WQ_FAKE_MASTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "wq_handshake.h"

#define FAKE_MASTER_ID "0123456789abcdef0123456789abcdef"

/* A transfer the worker sent (an output or a stdout), once received. */
struct fake_master_recv {
	uint32_t xfer;
	enum wq_target_kind kind;
	int64_t task, index;
	int status;    /* 0: stored; else the receiver's status */
	char *content; /* status 0: the bytes, NUL-terminated */
	size_t len;
};

#define FAKE_MASTER_RECV_MAX 16

struct fake_master {
	uv_loop_t *loop;
	char *dir; /* where received transfers are stored */
	struct wq_conn *c;
	struct wq_handshake *h;
	struct wq_xfer_in *in;
	struct wq_xfer_out *out;
	bool hs_done;
	enum wq_hs_outcome outcome;
	char hs_code[64];
	char worker_id[64];
	unsigned caps;
	json_t *msgs; /* every message after the handshake, in order (transfers' excepted) */
	struct fake_master_recv recv[FAKE_MASTER_RECV_MAX];
	int nrecv;
	int sends_done; /* sends of fake_master_send_input that reported */
	bool closed;
	enum wq_conn_end why;
	char why_text[256];
};

/* The master's side on TCP (a connected stream on LOOP, taken over), offering CAPS and announcing
 * a keepalive of KA_INTERVAL/KA_TIMEOUT seconds (0: the defaults); received transfers go into
 * DIR (made here). Call before the loop runs. The fake's own keepalive is off, so pings and
 * pongs from the worker are recorded like any message. */
struct fake_master *fake_master_start(uv_loop_t *loop, uv_tcp_t *tcp, const char *dir,
                                      unsigned caps, int64_t ka_interval, int64_t ka_timeout);
/* Closes the connection at once and frees M (the receiver's files stay in DIR). */
void fake_master_delete(struct fake_master *m);

/* Sends MSG (stolen). */
void fake_master_send(struct fake_master *m, json_t *msg);
/* Sends TEXT as per-task input INDEX of TASK; returns the send's handle (wq_xfer.h). */
uint32_t fake_master_send_input(struct fake_master *m, int64_t task, int64_t index,
                                const char *text);

/* The NTH (from 1) message named NAME received, or NULL (borrowed). */
json_t *fake_master_msg(const struct fake_master *m, const char *name, int nth);
/* How many messages named NAME were received. */
int fake_master_count(const struct fake_master *m, const char *name);
/* The position (from 0) of MSG among the messages received, or -1. */
int fake_master_index(const struct fake_master *m, const json_t *msg);
/* The transfer XFER once received, or NULL. */
const struct fake_master_recv *fake_master_recv_of(const struct fake_master *m, uint32_t xfer);

/* Run the loop until: the handshake ended; N messages named NAME have arrived (returns the
 * N-th); transfer XFER was received; the connection closed. Each fails the test after
 * TS_WAIT_MS. */
void fake_master_wait_handshake(struct fake_master *m);
json_t *fake_master_wait_msg(struct fake_master *m, const char *name, int n);
const struct fake_master_recv *fake_master_wait_recv(struct fake_master *m, uint32_t xfer);
void fake_master_wait_closed(struct fake_master *m);

#endif
