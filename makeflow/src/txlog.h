/* txlog.h: the makeflow transaction log, an append-only, versioned,
 * checksummed record of rule and file state changes (format in
 * doc/makeflow-log-format.md). Reading tolerates a torn last line; writing
 * emits each record with one write(2) so a kill -9 cannot interleave. */
#ifndef MAKEFLOW_TXLOG_H
#define MAKEFLOW_TXLOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TXLOG_VERSION  1
#define TXLOG_MAX_LINE (64 * 1024)

enum txlog_node_state {
	TXLOG_NODE_WAITING = 1,
	TXLOG_NODE_RUNNING = 2,
	TXLOG_NODE_COMPLETE = 3,
	TXLOG_NODE_FAILED = 4,
	TXLOG_NODE_ABORTED = 5,
};

enum txlog_file_state {
	TXLOG_FILE_EXPECTED = 1,
	TXLOG_FILE_EXISTS = 2,
	TXLOG_FILE_DELETED = 3,
	TXLOG_FILE_SOURCE = 4,
};

struct txlog_record {
	char type; /* 'S', 'N', 'F' or 'E' */
	int line;  /* line number in the log, 1-based */
	int64_t time_us;
	/* 'S' */
	int64_t pid, rules;
	const char *run_id; /* 'S': the run id (32 hex digits), NULL in logs older than it */
	/* 'N' */
	int64_t node_id;
	int state; /* node or file state for 'N' / 'F'; status for 'E' */
	/* 'N' failed: how ("exit:N", "signal:N", "exhausted", "error"), NULL when not recorded */
	const char *failure;
	uint64_t key;
	/* 'F' */
	int64_t size, mtime_ns;
	const char *name; /* 'F': decoded file name; 'E': reason. Valid during the callback only. */
};

/* Called once per record, in file order; a non-zero return stops reading and
 * is returned by txlog_read. */
typedef int (*txlog_record_fn)(const struct txlog_record *r, void *arg);

/* Reads the log at PATH. Returns 0, -ENOENT when there is no log, or another
 * negative code with a "PATH:LINE: message" in err (HTC_ECORRUPT for a bad
 * record, HTC_EVERSION for an unknown version). *good_end (may be NULL) gets
 * the offset just past the last complete line, so a torn tail can be cut off
 * before appending; *torn is set to 1 when such a tail was found. If
 * expect_workflow is not NULL the header must name it. */
int txlog_read(const char *path, const char *expect_workflow, txlog_record_fn fn, void *arg,
               off_t *good_end, int *torn, char *err, size_t errlen);

/* The pieces of txlog_read, shared with the incremental reader (txlog_read.h). */
/* Checks LINE, the log's first line without its newline (changed in place), naming PATH in
 * messages. 0, with *WORKFLOW (may be NULL) pointing into LINE at the decoded workflow name
 * (NULL when the header names none); HTC_EUNSUP for a CCTools makeflow log, HTC_EVERSION for
 * an unknown version, HTC_ECORRUPT otherwise, each with a "PATH:1: message" in ERR. */
int txlog_parse_header(char *line, const char *path, const char *expect_workflow,
                       const char **workflow, char *err, size_t errlen);
/* Parses one record line (without its newline; changed in place: R's strings point into it).
 * 0, or -1 when the CRC does not match or the record does not parse. R->line is not set. */
int txlog_parse_record(char *line, struct txlog_record *r);

struct txlog;

/* Opens PATH for appending, creating it with a header naming WORKFLOW when it
 * does not exist. truncate_to >= 0 first cuts the file to that length (to
 * remove a torn tail found by txlog_read). NULL + errno on failure. */
struct txlog *txlog_open(const char *path, const char *workflow, off_t truncate_to);
/* Every record is written whole or not at all: a write cut short (a full disk) is undone by
 * cutting the log back to its last complete record, and the writing function returns the
 * negative errno. Later records may still be written (when space came back). */
/* RUN_ID: TXLOG_RUN_ID_LEN lowercase hex digits (txlog_new_run_id), or NULL to leave it out. */
int txlog_start(struct txlog *t, int64_t pid, int64_t rules, const char *run_id);
int txlog_node(struct txlog *t, int64_t id, int state, uint64_t key);
/* Rule ID failed: a TXLOG_NODE_FAILED record that also says how, in one word of at most
 * TXLOG_MAX_FAILURE characters from [a-z0-9:-] ("exit:N", "signal:N", "exhausted", "error"). */
#define TXLOG_MAX_FAILURE 31
int txlog_node_failed(struct txlog *t, int64_t id, uint64_t key, const char *how);
int txlog_file(struct txlog *t, int state, int64_t size, int64_t mtime_ns, const char *name);
int txlog_end(struct txlog *t, int status, const char *reason);
/* fsync()s the log if anything was written since the last sync. */
int txlog_sync(struct txlog *t);
/* The first write (or fsync) error of T (a negative errno), or 0 when every record was written. */
int txlog_error(const struct txlog *t);
/* Replaces write(2) for T's records (NULL restores it); for tests that cut writes short. */
typedef ssize_t (*txlog_write_fn)(int fd, const void *buf, size_t len);
void txlog_set_write_fn(struct txlog *t, txlog_write_fn fn);
/* Syncs and closes; NULL is accepted. */
void txlog_close(struct txlog *t);

/* The run id: 128 random bits as 32 lowercase hex digits, one per run of makeflow, recorded in
 * the run's 'S' record and given to every job it starts as HTC_RUN_ID (doc/makeflow-log-format.md,
 * doc/batch-driver-interface.md). Fills OUT (TXLOG_RUN_ID_LEN + 1 bytes); 0 or a negative errno. */
#define TXLOG_RUN_ID_LEN 32
int txlog_new_run_id(char out[TXLOG_RUN_ID_LEN + 1]);

/* The lock of a workflow: an exclusive flock(2) on LOG_PATH.lock, which holds the PID of the
 * makeflow holding it, taken before the log is read and held for the whole run. It is released
 * by txlog_unlock or when the process ends (even by kill -9: jobs do not inherit it). NULL with
 * errno EWOULDBLOCK (and *holder set to the holder's PID, 0 if unknown) when another process
 * holds it, or with another errno. */
struct txlog_lock;
struct txlog_lock *txlog_lock(const char *log_path, long *holder);
/* Removes the lock file and releases the lock; NULL is accepted. */
void txlog_unlock(struct txlog_lock *l);

/* Percent-encodes NAME (see the format doc) into out; returns the length
 * written or HTC_ETOOBIG if it does not fit. Exposed for tests. */
int txlog_encode_name(const char *name, char *out, size_t outlen);

#endif
