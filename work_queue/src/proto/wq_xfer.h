/* wq_xfer.h: the file-transfer engine of the Work Queue protocol (doc/work-queue-protocol.md
 * sections 5.4 and 5.5), used by the master and the worker alike. A sender turns files, buffers
 * and directory trees into xfer_begin / DATA / xfer_end (and dir_*) on one wq_conn, reading and
 * hashing in libuv worker threads under write-queue flow control; a receiver checks every rule of
 * 5.4, inflates, hashes and writes incoming transfers off the loop thread, with backpressure. */
#ifndef HTC_WQ_XFER_H
#define HTC_WQ_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "sha256.h"
#include "wq_conn.h"
#include "wq_msg.h"

#define WQ_XFER_CHUNK         262144     /* bytes read per DATA frame (WQ_MAX_DATA) */
#define WQ_XFER_MAX_OPEN      4          /* open file transfers per direction */
#define WQ_XFER_MAX_OPEN_DIRS 1          /* open directory transfers per direction */
#define WQ_XFER_ZLIB_MIN      4096       /* smaller files are never compressed */
#define WQ_XFER_INFLATE_BUF   65536      /* the receiver's fixed inflate output buffer */
#define WQ_XFER_RECV_HIGH     (8u << 20) /* receiver pauses reading above this ... */
#define WQ_XFER_RECV_LOW      (4u << 20) /* ... and resumes below this */
#define WQ_XFER_ABORT_CHANGED "file changed while being sent"

/* ---- targets ----------------------------------------------------------------------------- */

/* Builders of the `target` objects of section 5.3 (new references). */
json_t *wq_xfer_target_object(const char *name, enum wq_keep keep);
json_t *wq_xfer_target_input(int64_t task, int64_t index);
json_t *wq_xfer_target_output(int64_t task, int64_t index);
json_t *wq_xfer_target_stdout(int64_t task);

/* True if PATH ends with an extension of an already compressed format (.gz .bz2 .xz .zst .zip
 * .tgz .bam .jpg .png), compared without case. */
bool wq_xfer_compressed_name(const char *path);

/* ---- sender ------------------------------------------------------------------------------- */

struct wq_xfer_out;
struct wq_listing; /* wq_listing.h */

/* A sink takes a transfer in place of a plain file or directory: the receiver hands it the bytes
 * (files) or writes the members beneath its directory fd (directories) and asks it to check and
 * keep the result. The worker's cache is one (worker_cache_sink_ops, worker_cache.h). Each
 * function is called from a libuv pool thread, one call at a time for one OBJ. */
struct wq_xfer_sink_ops {
	/* Appends LEN bytes of a file. 0, or -ENOSPC, HTC_ETOOBIG (more than announced), -errno. */
	int (*store)(void *obj, const void *data, size_t len);
	/* The end of a file: HEX is the receiver's SHA-256 of the bytes stored, WANT the announced
	 * one. 0, HTC_ECORRUPT or -errno; OBJ's data is deleted on error. */
	int (*finish_file)(void *obj, const char *hex, const char *want);
	/* The directory fd (owned by OBJ) beneath which a directory's members are created. */
	int (*dirfd)(const void *obj);
	/* The end of a directory: its LISTING of ENTRIES members hashes to WANT. Same returns. */
	int (*finish_dir)(void *obj, struct wq_listing *listing, uint64_t entries,
	                  const char *want);
	/* Deletes what was stored (abort, error). */
	int (*abort)(void *obj);
};

/* Flags of the send functions. */
#define WQ_XFER_ZLIB         0x1 /* compress when 5.4 allows it (zlib negotiated, >= 4 KiB, ...) */
#define WQ_XFER_EXEC         0x2 /* exec: true (ignored for directories: taken from the modes) */
#define WQ_XFER_FOLLOW_LINKS 0x4 /* directories, master side: dereference symbolic links */

/* How a transfer ended for the sender. */
enum wq_xfer_outcome {
	WQ_XFER_SENT,    /* xfer_end (dir_end) was queued; the peer may still answer xfer_error */
	WQ_XFER_ABORTED, /* this side gave up: xfer_abort (dir_abort) was sent, TEXT says why */
	WQ_XFER_REFUSED, /* the peer answered xfer_error CODE, TEXT (xfer_abort sent if needed) */
	WQ_XFER_FAILED,  /* nothing could be sent (e.g. the file cannot be opened; TEXT says why) */
};

struct wq_xfer_sent {
	uint32_t id;     /* transfer or dir id on the wire; 0 if it never began */
	uint32_t handle; /* what the send call gave (*ID) */
	void *tag;       /* the caller's tag */
	bool is_dir;
	enum wq_xfer_outcome outcome;
	enum wq_xfer_error_code code; /* REFUSED */
	const char *text;             /* reason, "" when SENT */
	uint64_t bytes;               /* uncompressed bytes sent (directories: all members) */
	uint64_t wire_bytes;          /* DATA payload bytes sent */
	bool zlib;                    /* the transfer was compressed */
	const char *sha256;           /* SENT: the content hash (directories: the listing hash) */
	uint64_t entries;             /* directories: entries of dir_end */
};

struct wq_xfer_out_callbacks {
	/* Every send ends with exactly one call (unless the sender is deleted first). */
	void (*sent)(struct wq_xfer_out *o, const struct wq_xfer_sent *r, void *user);
	/* An xfer_error for an id that is no longer open here (e.g. `corrupt` after xfer_end). */
	void (*peer_error)(struct wq_xfer_out *o, uint32_t id, enum wq_xfer_error_code code,
	                   const char *text, void *user);
	/* wq_xfer_out_delete: once for each send that had not ended, with its TAG (not NULL), so
	 * that the caller can free what the tag owns; no `sent` call follows for it. */
	void (*dropped)(struct wq_xfer_out *o, void *tag, void *user);
};

/* A sender for connection C (not owned) that may use zlib when ZLIB_OK (the capability was
 * negotiated). LOOP runs the connection. Never NULL. */
struct wq_xfer_out *wq_xfer_out_create(uv_loop_t *loop, struct wq_conn *c, bool zlib_ok,
                                       const struct wq_xfer_out_callbacks *cb, void *user);
/* Stops every transfer without sending anything more, and frees O once the reads in flight
 * have finished (no callback is called after this). May be called from inside O's own
 * callbacks. NULL is accepted. */
void wq_xfer_out_delete(struct wq_xfer_out *o);

/* Sends the file at PATH (or the open FD when PATH is NULL; the fd is then owned and closed) as
 * one transfer to TARGET (borrowed). SIZE < 0 takes the size from fstat; otherwise at most SIZE
 * bytes are sent and a shorter file is aborted. *ID (if not NULL) is set to the send's handle,
 * for wq_xfer_out_abort: it is NOT the transfer id on the wire, which is given when the
 * transfer begins (ids must rise in the order the peer sees them, and a directory's members go
 * before what was queued after it) and reported by the sent callback. Sends begin in the order
 * they were queued once a slot among the 4 open transfers is free. Returns 0 or
 * -EINVAL (bad arguments). Errors opening the file come through the sent callback. */
int wq_xfer_send_file(struct wq_xfer_out *o, const char *path, int fd, int64_t size, json_t *target,
                      int flags, void *tag, uint32_t *id);
/* Sends SIZE bytes of the open FD (owned and closed) starting at file position START, as one
 * transfer (a watched output's increment, protocol 5.6). Returns 0 or -EINVAL. */
int wq_xfer_send_file_range(struct wq_xfer_out *o, int fd, int64_t start, int64_t size,
                            json_t *target, int flags, void *tag, uint32_t *id);
/* The same for LEN bytes at BUF (copied). */
int wq_xfer_send_buffer(struct wq_xfer_out *o, const void *buf, size_t len, json_t *target,
                        int flags, void *tag, uint32_t *id);
/* Sends the directory tree at PATH: it is walked in a worker thread (a symbolic link inside is
 * an error unless WQ_XFER_FOLLOW_LINKS), then dir_begin, dir_mkdir parents first, members as
 * transfers, and dir_end with the entry count and the listing hash of what was sent. */
int wq_xfer_send_dir(struct wq_xfer_out *o, const char *path, json_t *target, int flags, void *tag,
                     uint32_t *id);

/* To be called by the connection's owner: its writable callback, and every `xfer_error`
 * message received (returns 0, or HTC_EPROTO after raising a violation for a malformed one). */
void wq_xfer_out_writable(struct wq_xfer_out *o);
int wq_xfer_out_message(struct wq_xfer_out *o, json_t *msg, const char *name);

/* Transfers queued or open (files and directories). */
size_t wq_xfer_out_pending(const struct wq_xfer_out *o);

/* Gives up the send with HANDLE (what the send call gave): one not begun yet ends without a
 * message; an open one sends no more data and ends with `xfer_abort` (`dir_abort` for a directory)
 * carrying REASON, at once or when the read in flight returns. Its sent callback reports
 * WQ_XFER_ABORTED with REASON, maybe from inside this call. Returns 0, or -ENOENT when HANDLE is
 * not queued or open (it has ended, or is a member of a directory: abort the directory). Calling it
 * again for a transfer that is still ending is harmless: the first reason stays. */
int wq_xfer_out_abort(struct wq_xfer_out *o, uint32_t handle, const char *reason);

/* ---- receiver ------------------------------------------------------------------------------ */

struct wq_xfer_in;

/* An incoming transfer or directory, as announced. */
struct wq_xfer_incoming {
	uint32_t id;
	bool is_dir;
	const struct wq_target *target; /* valid during the callback */
	int64_t size;                   /* files */
	bool exec;
	enum wq_enc enc;
	const char *sha256;   /* recv_end with status 0: the content or listing hash */
	uint64_t entries;     /* directories, at recv_end */
	const char *tmp_path; /* from the destination, NULL if none */
	void *sink;           /* from the destination */
	void *tag;            /* set by recv_begin in the destination */
};

/* Where an accepted transfer goes, filled by recv_begin. Files: FD (taken over) or TMP_PATH
 * (created O_CREAT|O_EXCL with mode 0755/0644 by exec), or SINK with its SINK_OPS (the data goes
 * through them; the owner ends the sink object at recv_end).
 * Directories: DIRFD (taken over) or TMP_PATH (created with mkdir 0755) or SINK (its dirfd).
 * TMP_PATH is removed on failure; with FINAL_PATH it is renamed there on success, otherwise the
 * owner renames it at recv_end. FSYNC: fsync files before success (master). */
struct wq_xfer_dest {
	int fd;
	int dirfd;
	const char *tmp_path;   /* copied */
	const char *final_path; /* copied */
	bool fsync;
	const struct wq_xfer_sink_ops *sink_ops; /* with SINK */
	void *sink;
	void *tag;
};

/* A refusal chosen by recv_begin: sent as xfer_error CODE TEXT. */
struct wq_xfer_refusal {
	enum wq_xfer_error_code code;
	char text[256];
};

struct wq_xfer_in_callbacks {
	/* xfer_begin of a file (not a directory member) or dir_begin: fill DEST (fd and dirfd
	 * start at -1) and return 0, or fill R and return -1 to refuse. */
	int (*recv_begin)(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
	                  struct wq_xfer_dest *dest, struct wq_xfer_refusal *r, void *user);
	/* Exactly once per accepted transfer or directory: STATUS 0 (stored; renamed to
	 * final_path if one was given), HTC_ECORRUPT (hash or listing mismatch), -ENOSPC,
	 * another -errno (write error), -ECANCELED (xfer_abort / dir_abort, TEXT the reason, or
	 * a failed member), HTC_EPROTO (a violation; the connection is closing). Temporary files
	 * are already removed on failure. Not called for members. */
	void (*recv_end)(struct wq_xfer_in *i, const struct wq_xfer_incoming *in, int status,
	                 const char *text, void *user);
};

/* A check of each member of an accepted directory before it is created: xfer_begin of a member
 * of SIZE bytes of the directory whose recv_begin set DIR_TAG, to be written beneath DIRFD. 0 to
 * accept, or -1 with R filled to refuse it (the directory fails). */
typedef int wq_xfer_member_fn(struct wq_xfer_in *i, void *dir_tag, int dirfd, int64_t size,
                              struct wq_xfer_refusal *r, void *user);

/* A receiver on connection C (not owned). IS_MASTER selects the direction of the messages it
 * accepts (a bad member name is then a violation, not a `bad_name` refusal); CAPS are the
 * negotiated capabilities. Never NULL. */
struct wq_xfer_in *wq_xfer_in_create(uv_loop_t *loop, struct wq_conn *c, bool is_master,
                                     unsigned caps, const struct wq_xfer_in_callbacks *cb,
                                     void *user);
/* Installs FN (NULL: none, the default) as I's check of directory members. */
void wq_xfer_in_set_member_check(struct wq_xfer_in *i, wq_xfer_member_fn *fn);
/* Deletes every partial file or directory (in a worker thread) and frees I once the writes in
 * flight are done; no callback is called after this. NULL is accepted. */
void wq_xfer_in_delete(struct wq_xfer_in *i);

/* The owner forwards `xfer_begin`, `xfer_end`, `xfer_abort` and `dir_*` messages (returns 1 if
 * NAME is one of them, else 0) and every DATA frame, or piece of one: the receiver turns on
 * wq_conn_set_data_pieces() on C at creation. Violations are raised on the connection. */
int wq_xfer_in_message(struct wq_xfer_in *i, json_t *msg, const char *name);
/* The same for a message already looked up (wq_msg_lookup): ID instead of its name. */
int wq_xfer_in_message_id(struct wq_xfer_in *i, json_t *msg, enum wq_msg_id id);
void wq_xfer_in_data(struct wq_xfer_in *i, uint32_t xfer, const uint8_t *bytes, size_t len);

/* Received bytes waiting to be written, its peak, and open incoming transfers. */
size_t wq_xfer_in_pending_bytes(const struct wq_xfer_in *i);
size_t wq_xfer_in_pending_peak(const struct wq_xfer_in *i);
size_t wq_xfer_in_open(const struct wq_xfer_in *i);

#endif
