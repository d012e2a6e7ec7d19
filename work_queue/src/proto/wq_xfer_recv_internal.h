/* wq_xfer_recv_internal.h: what the two files of the receiving half of the transfer engine
 * share (internal to wq_xfer_recv.c, files, and wq_xfer_recv_dir.c, directories): the state of
 * a receiver, of one incoming file and of one incoming directory, and the functions one file
 * calls in the other. */
#ifndef HTC_WQ_XFER_RECV_INTERNAL_H
#define HTC_WQ_XFER_RECV_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uthash.h>
#include <uv.h>
#include <zlib.h>

#include "wq_listing.h"
#include "wq_xfer.h"

/* Received DATA bytes waiting for the disk. Frames are appended to the last chunk while it has
 * room, so a thread writes and hashes ~1 MiB at a time; full-size chunks are recycled through a
 * small pool per receiver (no page faults and zeroing of fresh memory for every frame). */
struct chunk {
	struct chunk *next;
	size_t len, cap;
	uint8_t data[];
};

#define RECV_CHUNK_CAP  (1u << 20)   /* capacity of a pooled chunk */
#define RECV_POOL_LIMIT 16           /* pooled chunks kept per receiver */
#define RECV_SPLIT_MIN  (256u << 10) /* smaller batches are hashed and written by one work */

enum end_kind { END_NONE, END_FINISH, END_ABORT };

struct in_dir;

struct in_xfer {
	UT_hash_handle hh;
	uint32_t id;
	struct wq_xfer_in *in;
	struct wq_xfer_begin *b;
	struct in_dir *dir; /* a member of this directory */
	bool refused;       /* xfer_error sent at begin (or its directory refused): discard */
	bool failed;        /* a write failed and was reported: discard until the end */
	bool closed;        /* xfer_end / xfer_abort received, or failed and ended */
	uint64_t raw;       /* DATA bytes received */
	/* destination */
	int fd;
	char *tmp_path, *final_path;
	bool fsync;
	const struct wq_xfer_sink_ops *sink_ops;
	void *sink;
	void *tag;
	/* queue and work */
	struct chunk *pending, *pending_last;
	size_t pending_bytes;
	struct chunk *batch;
	size_t batch_bytes;
	bool busy;
	int nwork; /* works in flight for the batch: 1, or 2 when hashing beside the write */
	uv_work_t work, hwork;
	int hresult; /* result of the hashing work */
	enum end_kind end;
	bool end_in_batch, end_done;
	char want[SHA256_HEX_SIZE];
	char *reason;
	/* thread side */
	struct sha256_ctx *sha;
	z_stream z;
	bool z_init, z_end;
	uint8_t *zbuf;
	uint64_t out;
	int result;
	bool result_seen; /* the loop has acted on result */
	bool cleaned;     /* the destination is closed / removed */
	char hex[SHA256_HEX_SIZE];
};

struct name_ent {
	UT_hash_handle hh;
	char name[];
};

struct in_dir {
	UT_hash_handle hh;
	uint32_t id;
	struct wq_xfer_in *in;
	json_t *msg; /* dir_begin, for the target strings */
	struct wq_target target;
	bool refused, failed, closed, aborted;
	int fail_status;
	enum wq_xfer_error_code fail_code;
	char *fail_text;
	int dirfd;
	bool dirfd_owned;
	char *tmp_path, *final_path;
	const struct wq_xfer_sink_ops *sink_ops;
	void *sink;
	void *tag;
	struct wq_listing *listing;
	struct name_ent *names;
	size_t nnames;
	size_t members; /* member transfers not finalized */
	bool end;
	int64_t entries;
	char want[SHA256_HEX_SIZE];
	bool busy;
	uv_work_t work;
	int result;
	char hex[SHA256_HEX_SIZE];
};

struct wq_xfer_in {
	uv_loop_t *loop;
	wq_xfer_member_fn *member_check; /* NULL: members are not checked */
	struct wq_conn *c;
	bool is_master;
	unsigned caps;
	struct wq_xfer_in_callbacks cb;
	void *user;
	struct in_xfer *xfers;
	struct in_dir *dirs;
	uint32_t last_id;
	size_t nopen, nopen_dirs;
	size_t pending, peak;
	bool paused;
	bool dead, deleted;
	size_t busy;
	size_t live; /* transfers and directories not yet freed */
	struct chunk *pool;
	size_t npool;
};

/* ---- wq_xfer_recv.c ------------------------------------------------------------------------ */

/* Fails the connection with a protocol violation (text as in section 5.4). */
void wq_xr_violation(struct wq_xfer_in *i, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void wq_xr_send_xfer_error(struct wq_xfer_in *i, uint32_t id, enum wq_xfer_error_code code,
                           const char *text);
enum wq_xfer_error_code wq_xr_code_of(int status);
/* A new transfer or directory id must be above the last one: 0, or -1 after a violation. */
int wq_xr_check_id(struct wq_xfer_in *i, int64_t id);
void wq_xr_maybe_free_in(struct wq_xfer_in *i);
void wq_xr_x_done(struct in_xfer *x, int status, const char *text);
void wq_xr_x_kick(struct in_xfer *x);

/* ---- wq_xfer_recv_dir.c -------------------------------------------------------------------- */

void wq_xr_dir_fail(struct in_dir *d, int status, enum wq_xfer_error_code code, const char *text,
                    bool send);
void wq_xr_dir_maybe_finish(struct in_dir *d);
int wq_xr_member_check(struct in_dir *d, const char *name);
void wq_xr_on_dir_begin(struct wq_xfer_in *i, json_t *msg);
void wq_xr_on_dir_mkdir(struct wq_xfer_in *i, json_t *msg);
void wq_xr_on_dir_end(struct wq_xfer_in *i, json_t *msg, bool abort);

#endif
