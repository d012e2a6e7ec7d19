/* wq_msg.h: the control messages of the Work Queue protocol
 * (doc/work-queue-protocol.md sections 2.2, 2.4, 3.2 and 5): typed field
 * accessors that produce the violation texts, the table of the messages (an
 * id for each, which side may send it in which state), builders and parsers
 * of the frozen `hello` and `error` messages, and validators that turn decoded
 * messages (`task`, `xfer_*`, `task_done`, `capacity`, `identity`, `cache_*`)
 * into C structs after checking every limit. Nothing here touches a socket: inputs
 * are json_t objects already known to be objects with a string "m".
 *
 * Return convention of the validators: 0 on success; HTC_EPROTO for a
 * protocol violation, with *WHY set to its text (caller frees); HTC_EVERSION
 * for a `hello` of another major version. Structs filled by a validator hold a
 * reference to the message: their `const char *` fields point into it and stay
 * valid until the struct is freed with its _free function (which accepts
 * NULL). */
#ifndef WQ_MSG_H
#define WQ_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define WQ_PROTO_MAJOR 1
#define WQ_PROTO_MINOR 0

#define WQ_MAX_ID         INT64_C(9007199254740991) /* 2^53 - 1 */
#define WQ_MAX_XFER_ID    INT64_C(4294967295)       /* fits the frame's xfer field */
#define WQ_TEXT_SEND_MAX  1024                      /* text sent is cut to this */
#define WQ_TEXT_RECV_MAX  4096                      /* text received above is a violation */
#define WQ_COMMAND_MAX    131071
#define WQ_ENV_MAX        256
#define WQ_ENV_VALUE_MAX  4096
#define WQ_ENV_TOTAL_MAX  262144
#define WQ_FILES_MAX      100000 /* inputs or outputs per task */
#define WQ_CATEGORY_MAX   128
#define WQ_TAG_MAX        1024
#define MASTER_URL_MAX    4096
#define WQ_LABEL_MAX      128
#define WQ_LABELS_MAX     64
#define WQ_OBJECTS_MAX    1000 /* per cache_have / cache_drop */
#define WQ_STDOUT_DEFAULT (1024 * 1024)
#define WQ_STDOUT_MAX     (64 * 1024 * 1024)
#define WQ_CAPS_MAX       32
#define WQ_CORES_MAX      1048576.0

/* ---- (a) typed field accessors ---------------------------------------- */

/* Context of one validation: the message name and, for nested keys, the path
 * of the enclosing value ("resources", "inputs[3]"), so texts read
 *   message "task": key "resources.cores": expected a number > 0 ...
 * WHY holds the first violation (caller frees); later ones are dropped. */
struct wq_msg_v {
	const char *m;
	const char *where; /* NULL at the top level */
	char *why;
};

/* Flags of the accessors. */
#define WQ_REQ  1 /* the key must be present */
#define WQ_NULL 2 /* a JSON null is accepted (as absent), even with WQ_REQ */

/* Each accessor reads KEY of object O. It returns 0 when the value is present
 * and valid (and stores it), 1 when it is absent and not WQ_REQ, or null with
 * WQ_NULL (the output is left untouched), and HTC_EPROTO otherwise, with
 * the text in V->why. Texts:
 *   message "M": missing key "K"
 *   message "M": key "K": expected an integer in MIN..MAX
 *   message "M": key "K": expected a number in MIN..MAX
 *   message "M": key "K": expected a string of at most N bytes
 *   message "M": key "K": expected true or false
 *   message "M": key "K": expected an array of at most N elements
 *   message "M": key "K": expected an object */
int wq_msg_int(struct wq_msg_v *v, const json_t *o, const char *key, int flags, int64_t min,
               int64_t max, int64_t *out);
int wq_msg_num(struct wq_msg_v *v, const json_t *o, const char *key, int flags, double min,
               double max, double *out);
/* A string of at most MAXLEN bytes (jansson guarantees valid UTF-8 without
 * NUL). LEN may be NULL. */
int wq_msg_str(struct wq_msg_v *v, const json_t *o, const char *key, int flags, size_t maxlen,
               const char **out, size_t *len);
int wq_msg_bool(struct wq_msg_v *v, const json_t *o, const char *key, int flags, bool *out);
/* An array of at most MAX elements; *OUT is borrowed from O. */
int wq_msg_array(struct wq_msg_v *v, const json_t *o, const char *key, int flags, size_t max,
                 json_t **out);
/* An object; *OUT is borrowed from O. */
int wq_msg_object(struct wq_msg_v *v, const json_t *o, const char *key, int flags, json_t **out);
/* A string that must be one of the NULL-terminated CHOICES; *OUT receives its
 * index. Text: key "K": expected one of "a", "b". */
int wq_msg_enum(struct wq_msg_v *v, const json_t *o, const char *key, int flags,
                const char *const *choices, int *out);
/* Records a violation of KEY with the text after "key "K": " (printf). Returns
 * HTC_EPROTO. KEY may be NULL for a message-level text. */
int wq_msg_fail(struct wq_msg_v *v, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- (b) which message, from whom, in which state ---------------------- */

/* States of a connection (section 7.1) as far as messages are concerned. */
enum wq_state {
	WQ_STATE_HELLO,
	WQ_STATE_AUTH,
	WQ_STATE_INIT,
	WQ_STATE_ACTIVE,
	WQ_STATE_DRAINING,
};

/* Direction of a message: sender -> receiver. */
enum wq_dir {
	WQ_DIR_W2M, /* worker -> master */
	WQ_DIR_M2W, /* master -> worker */
	WQ_DIR_S2M, /* status client -> master */
	WQ_DIR_M2S, /* master -> status client */
};

const char *wq_state_name(enum wq_state s);

/* The messages of version 1.0, one id each, in the order of their names (the
 * table is searched by halves: a new message goes where its name sorts). A
 * receiver looks the name up once and dispatches on the id through an array
 * indexed by it. The ids are local to this build: never sent. */
enum wq_msg_id {
	WQ_MSG_AUTH_OK,
	WQ_MSG_AUTH_PROOF,
	WQ_MSG_BYE,
	WQ_MSG_CACHE_DROP,
	WQ_MSG_CACHE_HAVE,
	WQ_MSG_CACHE_TAKE,
	WQ_MSG_CACHE_TAKEN,
	WQ_MSG_CAPACITY,
	WQ_MSG_DIR_ABORT,
	WQ_MSG_DIR_BEGIN,
	WQ_MSG_DIR_END,
	WQ_MSG_DIR_MKDIR,
	WQ_MSG_DISMISS,
	WQ_MSG_DRAIN,
	WQ_MSG_DRAINING,
	WQ_MSG_ERROR,
	WQ_MSG_HELLO,
	WQ_MSG_IDENTITY,
	WQ_MSG_IMAGES,
	WQ_MSG_PING,
	WQ_MSG_PONG,
	WQ_MSG_QUERY,
	WQ_MSG_QUERY_REPLY,
	WQ_MSG_SHUTDOWN,
	WQ_MSG_STORE_HAVE,
	WQ_MSG_TASK,
	WQ_MSG_TASK_CANCEL,
	WQ_MSG_TASK_CANCELLED,
	WQ_MSG_TASK_DONE,
	WQ_MSG_TASK_REFUSED,
	WQ_MSG_TASK_RESIZED,
	WQ_MSG_TASK_RUNNING,
	WQ_MSG_XFER_ABORT,
	WQ_MSG_XFER_BEGIN,
	WQ_MSG_XFER_END,
	WQ_MSG_XFER_ERROR,
	WQ_MSG_COUNT,                 /* the number of messages */
	WQ_MSG_UNKNOWN = WQ_MSG_COUNT /* a name that is none of them */
};

/* The id of message name M (a binary search of the table; no allocation), or
 * WQ_MSG_UNKNOWN for another name or NULL. */
enum wq_msg_id wq_msg_lookup(const char *m);

/* The name of message ID (a static string), or NULL for WQ_MSG_UNKNOWN. */
const char *wq_msg_name(enum wq_msg_id id);

/* Checks that message M, whose id wq_msg_lookup gave as ID, may arrive in
 * direction DIR while the receiver is in STATE. Returns 0, or HTC_EPROTO with
 * *WHY (caller frees) one of
 *   unknown message "frobnicate"
 *   message "task" not allowed from a worker     (from the master, from a status client)
 *   message "hello" not expected in state ACTIVE */
int wq_msg_check(enum wq_msg_id id, const char *m, enum wq_dir dir, enum wq_state state,
                 char **why);

/* The same for a name not looked up yet. */
int wq_msg_allowed(const char *m, enum wq_dir dir, enum wq_state state, char **why);

/* True if M is a message name of version 1.0. */
bool wq_msg_known(const char *m);

/* ---- (c) text helpers, hello and error --------------------------------- */

/* A printable copy of LEN bytes at S: control characters (0x00-0x1f, 0x7f)
 * and bytes that are not valid UTF-8 become \xNN; with QUOTED also '"' and
 * '\' become \" and \\. At most MAX bytes of S are shown: a longer S is cut at
 * a character boundary and "…" is appended. Caller frees. */
char *wq_msg_escape(const char *s, size_t len, size_t max, bool quoted);

/* The length of the longest prefix of the LEN bytes at S that is at most MAX
 * bytes and does not end inside a UTF-8 sequence. */
size_t wq_msg_utf8_cut(const char *s, size_t len, size_t max);

/* Encodes MSG compactly (json_dumpb, JSON_COMPACT) into a new buffer (caller
 * frees) of *LEN bytes, without a terminating NUL. NULL on failure. */
char *wq_msg_encode(const json_t *msg, size_t *len);

/* Capabilities (section 3.2) as bits. */
#define WQ_CAP_ZLIB   1u
#define WQ_CAP_FETCH  2u
#define WQ_CAP_WATCH  4u
#define WQ_CAPS_ALL   (WQ_CAP_ZLIB | WQ_CAP_FETCH | WQ_CAP_WATCH) /* the first set */
#define WQ_CAP_QUEUE  8u  /* task prefetch (`queued` tasks, `queue_max`; protocol 5.6) */
#define WQ_CAP_DIROUT 16u /* a `dir: false` output made a directory comes back as one (5.6) */
#define WQ_CAP_CONTAINERS                                                                          \
	32u /* a `task` may name its own container: an image of the engine or a cached archive */
#define WQ_CAP_SHARED_CACHE                                                                        \
	64u /* workers of one file system share a store (`store`, `cache_take`; protocol 5.12) */
#define WQ_CAP_IMAGES 128u /* the worker reports its images and its engine (`images`, 5.2) */
/* a `task` may carry `max_memory`; the worker sends `task_resized` and `grown` (5.6) */
#define WQ_CAP_GROW 256u
/* with `shared_cache`: directory objects (D-) enter the store too (`store_have`, `cache_take`) */
#define WQ_CAP_SHARED_DIRS 512u
#define WQ_CAPS_KNOWN                                                                              \
	(WQ_CAPS_ALL | WQ_CAP_QUEUE | WQ_CAP_DIROUT | WQ_CAP_CONTAINERS | WQ_CAP_SHARED_CACHE |    \
	 WQ_CAP_IMAGES | WQ_CAP_GROW |                                                             \
	 WQ_CAP_SHARED_DIRS) /* every capability this release knows */

/* Section 2.4: queued tasks one worker may hold (its `queue_max` is 1 .. this). */
#define WQ_QUEUE_MAX 256

/* The master's caps: the intersection of the worker's offer and its own. */
unsigned wq_msg_caps_negotiate(unsigned offered, unsigned ours);

enum wq_role {
	WQ_ROLE_WORKER,
	WQ_ROLE_STATUS,
	WQ_ROLE_MASTER,
};

/* A `hello`, from either side. Strings point into the message (parsed) or
 * are the caller's (built). */
struct wq_hello {
	int64_t proto_major, proto_minor;
	enum wq_role role;
	const char *software;
	const char *id;      /* worker_id or master_id: 32 lowercase hex */
	const char *host;    /* worker and status only */
	const char *project; /* NULL: absent (worker) or null (master) */
	unsigned caps;       /* known names only; unknown ones are ignored */
	bool auth;           /* hmac-sha256 offered (worker) or required (master) */
	const char *nonce;   /* 64 lowercase hex when auth, else NULL */
	int64_t keepalive_interval, keepalive_timeout; /* master only */
	json_t *msg;                                   /* reference held by a parsed hello */
};

/* Builds the hello of H->role with every key of section 3.2, in the order of
 * the section 8 example (so the bytes match it). Returns a new reference, or
 * NULL if a required field is missing. */
json_t *wq_msg_hello_build(const struct wq_hello *h);

/* Parses a hello. FROM_MASTER says which side sent it (the master's hello
 * has role "master"; the others "worker" or "status"). The `proto` key is
 * checked first: on a major version other than WQ_PROTO_MAJOR it returns
 * HTC_EVERSION with H->proto_* set and *WHY the text of the fatal `error`
 * `version` to send (section 3.2); wq_msg_version_log gives the line to log.
 * Otherwise all keys are checked (HTC_EPROTO and *WHY on a violation). Free
 * with wq_msg_hello_free. */
int wq_msg_hello_parse(const json_t *msg, bool from_master, struct wq_hello *h, char **why);
void wq_msg_hello_free(struct wq_hello *h);

/* Texts of a version refusal by this side (LOCAL_IS_MASTER) of a peer that
 * speaks PEER_MAJOR.PEER_MINOR. The error text is what goes into the fatal
 * `error` `version`; the log text is what follows "wq: PEER: " on the master
 * or "work_queue_worker: master HOST:PORT " on the worker. Caller frees. */
char *wq_msg_version_error(int64_t peer_major, int64_t peer_minor, bool local_is_master);
char *wq_msg_version_log(int64_t peer_major, int64_t peer_minor, bool local_is_master);

/* An `error` message. */
struct wq_error {
	const char *code;
	const char *text;
	bool fatal;
	int64_t retry_after; /* -1 when absent */
	json_t *msg;
};

/* Builds `error`; TEXT is cut to WQ_TEXT_SEND_MAX bytes at a UTF-8
 * boundary, RETRY_AFTER < 0 leaves the key out. New reference. */
json_t *wq_msg_error_build(const char *code, const char *text, bool fatal, int64_t retry_after);
/* Parses `error`: code (<= 64 bytes), text (<= WQ_TEXT_RECV_MAX), fatal,
 * optional retry_after. Unknown codes are accepted (the receiver treats a
 * fatal one as fatal). Free with wq_msg_error_free. */
int wq_msg_error_parse(const json_t *msg, struct wq_error *e, char **why);
void wq_msg_error_free(struct wq_error *e);

/* ---- (d) validators ----------------------------------------------------- */

struct wq_resources {
	double cores;
	int64_t memory, disk, gpus;
};

enum wq_input_from { WQ_FROM_CACHE, WQ_FROM_TASK, WQ_FROM_URL };
enum wq_when { WQ_WHEN_ALWAYS, WQ_WHEN_SUCCESS, WQ_WHEN_FAILURE };
enum wq_container_mode { WQ_CONTAINER_TASK, WQ_CONTAINER_SHARED };

struct wq_task_input {
	const char *name;
	enum wq_input_from from;
	const char *object; /* cache and url */
	const char *url;    /* url */
	bool validated;     /* url: the object's name holds the server's validator */
	bool dir;           /* task */
};

struct wq_task_output {
	const char *name;
	enum wq_when when;
	bool dir, watch;
	bool dir_ok; /* parsed with `dirout`: a `dir: false` output may be sent as a directory */
};

struct wq_env_var {
	const char *name, *value; /* value NULL: unset the variable (JSON null) */
};

/* A `task` (M->W). Defaults of optional keys: category "default", tag "",
 * env empty, wall_time 0, stdout_max 1 MiB (clamped to 64 MiB), inputs and
 * outputs empty, no container. */
struct wq_task_msg {
	int64_t id, try_;
	const char *command;
	const char *category, *tag;
	struct wq_env_var *env;
	size_t nenv;
	struct wq_resources resources;
	int64_t wall_time, stdout_max;
	struct wq_task_input *inputs;
	size_t ninputs;
	struct wq_task_output *outputs;
	size_t noutputs;
	bool has_container;          /* needs `containers` */
	const char *container_image; /* a cache object (an image archive), or NULL */
	const char *container_name;  /* an image the engine has, or NULL (exactly one is set) */
	enum wq_container_mode container_mode;
	bool queued;        /* `queued: true` (needs `queue`) */
	int64_t max_memory; /* `max_memory` (needs `grow`): MB the task may grow to; 0 = absent */
	json_t *msg;
};

/* Validates a `task` against sections 2.4, 5.3 and 5.6 with the negotiated
 * CAPS (a `url` input needs fetch, a `watch` output needs watch). Returns:
 *   0            *OUT is the task;
 *   HTC_EPROTO   a violation, *WHY its text, *OUT is NULL;
 *   HTC_EPARSE   the message is well formed but a name breaks section 6:
 *                *WHY is the text for `task_refused` `bad_name` and *OUT is
 *                the task (for its id and try).
 * Free *OUT with wq_task_msg_free. */
int wq_msg_task_parse(const json_t *msg, unsigned caps, struct wq_task_msg **out, char **why);
void wq_task_msg_free(struct wq_task_msg *t);

/* Transfer targets (section 5.3). */
enum wq_target_kind {
	WQ_TARGET_OBJECT, /* M->W */
	WQ_TARGET_INPUT,  /* M->W */
	WQ_TARGET_OUTPUT, /* W->M */
	WQ_TARGET_STDOUT, /* W->M */
	WQ_TARGET_MEMBER, /* both */
};
enum wq_keep { WQ_KEEP_RUN, WQ_KEEP_WORKER };
enum wq_enc { WQ_ENC_NONE, WQ_ENC_ZLIB };

struct wq_target {
	enum wq_target_kind kind;
	const char *object; /* OBJECT */
	enum wq_keep keep;  /* OBJECT */
	int64_t task;       /* INPUT, OUTPUT, STDOUT */
	int64_t index;      /* INPUT, OUTPUT */
	int64_t offset;     /* OUTPUT with watch; -1 when absent */
	int64_t dir;        /* MEMBER */
	const char *member; /* MEMBER */
};

struct wq_xfer_begin {
	int64_t xfer;
	struct wq_target target;
	int64_t size;
	enum wq_enc enc;
	bool exec;
	json_t *msg;
};

/* Validates `xfer_begin` sent in direction DIR with the negotiated CAPS:
 * the target must be one allowed from that side, enc "zlib" needs the zlib
 * capability and size > 0, offset needs watch. HTC_EPARSE (with *OUT filled
 * and *WHY the text for `xfer_error` `bad_name`) when only the member name
 * breaks section 6. */
int wq_msg_xfer_begin_parse(const json_t *msg, enum wq_dir dir, unsigned caps,
                            struct wq_xfer_begin **out, char **why);
void wq_xfer_begin_free(struct wq_xfer_begin *x);

struct wq_xfer_end {
	int64_t xfer;
	const char *sha256; /* xfer_end: 64 lowercase hex */
	const char *reason; /* xfer_abort */
	json_t *msg;
};
int wq_msg_xfer_end_parse(const json_t *msg, struct wq_xfer_end **out, char **why);
int wq_msg_xfer_abort_parse(const json_t *msg, struct wq_xfer_end **out, char **why);
void wq_xfer_end_free(struct wq_xfer_end *x);

enum wq_xfer_error_code {
	WQ_XERR_DISK_FULL,
	WQ_XERR_IO,
	WQ_XERR_CORRUPT,
	WQ_XERR_BAD_NAME,
	WQ_XERR_HAVE,
	WQ_XERR_NO_TASK,
};
struct wq_xfer_error {
	int64_t id;
	enum wq_xfer_error_code code;
	const char *text;
	json_t *msg;
};
int wq_msg_xfer_error_parse(const json_t *msg, struct wq_xfer_error **out, char **why);
void wq_xfer_error_free(struct wq_xfer_error *x);

enum wq_outcome {
	WQ_OUTCOME_EXITED,
	WQ_OUTCOME_SIGNALED,
	WQ_OUTCOME_EXHAUSTED,
	WQ_OUTCOME_INPUT_MISSING,
	WQ_OUTCOME_SANDBOX_ERROR,
};

enum wq_done_output_kind { WQ_DONE_XFER, WQ_DONE_DIR, WQ_DONE_MISSING, WQ_DONE_SKIPPED };
struct wq_done_output {
	int64_t index;
	enum wq_done_output_kind kind;
	int64_t xfer;     /* XFER: transfer id; DIR: dir id */
	int64_t size;     /* watched outputs: total size, else -1 */
	const char *text; /* MISSING */
};

struct wq_task_done {
	int64_t id, try_;
	enum wq_outcome outcome;
	int64_t exit_status;    /* exited */
	int64_t signal;         /* signaled, exhausted */
	const char **exhausted; /* exhausted: resource names */
	size_t nexhausted;
	int64_t missing_input; /* input_missing */
	const char *text;      /* input_missing (missing.text), sandbox_error */
	int64_t stdout_size, stdout_head, stdout_xfer; /* absent stdout: 0, -1, 0 */
	bool stdout_truncated;
	struct wq_done_output *outputs;
	size_t noutputs;
	json_t *summary;   /* borrowed from msg, NULL if absent */
	json_t *container; /* borrowed from msg, NULL if absent (a task that named a container) */
	json_t *grown;     /* borrowed from msg, NULL if absent (`grow`: its memory changed) */
	int64_t t_received, t_inputs_ready, t_started, t_ended, t_reported; /* -1 absent */
	bool disk_full;
	json_t *msg;
};
int wq_msg_task_done_parse(const json_t *msg, struct wq_task_done **out, char **why);
void wq_task_done_free(struct wq_task_done *d);

struct wq_capacity_item {
	double total;
	bool declared;
};
struct wq_capacity {
	struct wq_capacity_item cores, memory, disk, gpus;
	int64_t disk_free, cache;
	bool disk_full;
	json_t *msg;
};
int wq_msg_capacity_parse(const json_t *msg, struct wq_capacity **out, char **why);
void wq_capacity_free(struct wq_capacity *c);

enum wq_cgroups { WQ_CGROUPS_V1, WQ_CGROUPS_V2, WQ_CGROUPS_NONE };
struct wq_identity {
	const char *host, *os, *os_release, *arch, *software, *workdir;
	int64_t pid;
	const char **labels;
	size_t nlabels;
	int64_t end_time; /* -1 when null */
	bool docker;
	int64_t max_tasks; /* tasks the worker will still run (--exit-after-tasks); 0 = no limit */
	enum wq_cgroups cgroups;
	int64_t queue_max; /* 1 .. WQ_QUEUE_MAX; 0 when absent (needed only with `queue`) */
	const char *store; /* 32 hex with `shared_cache` (section 5.12); NULL when absent */
	/* with `grow`: the step (MB) in which the worker grows a task's memory; 0 when absent
	 * (it does not grow memory) */
	int64_t memory_grow_step;
	/* with `grow`: the worker lends its idle cores to tasks that use all of theirs */
	bool cpu_grow;
	json_t *msg;
};
int wq_msg_identity_parse(const json_t *msg, struct wq_identity **out, char **why);
void wq_identity_free(struct wq_identity *i);

/* `cache_have` (objects with sizes, last) and `cache_drop` (objects, reason). */
struct worker_cache_list {
	const char **names;
	int64_t *sizes; /* cache_have only */
	size_t n;
	bool last;          /* cache_have */
	const char *reason; /* cache_drop, NULL if absent */
	json_t *msg;
};
int wq_msg_cache_have_parse(const json_t *msg, struct worker_cache_list **out, char **why);
int wq_msg_cache_drop_parse(const json_t *msg, struct worker_cache_list **out, char **why);
void worker_cache_list_free(struct worker_cache_list *c);
/* `store_have` (section 5.12): the form of `cache_have`, F- names only, and D- names too when
 * DIRS (capability `shared_dirs`). */
int wq_msg_store_have_parse(const json_t *msg, bool dirs, struct worker_cache_list **out,
                            char **why);

/* `cache_take` {object, size} and `cache_taken` {object, ok, size, text} (section 5.12). */
struct wq_cache_take {
	const char *object;
	int64_t size;
	bool ok;          /* cache_taken */
	const char *text; /* cache_taken, NULL if absent */
	json_t *msg;
};
/* `cache_take`, or `cache_taken` when TAKEN: an F- object, or a D- one too when DIRS. */
int wq_msg_cache_take_parse(const json_t *msg, bool taken, bool dirs, struct wq_cache_take **out,
                            char **why);
void wq_cache_take_free(struct wq_cache_take *t);

/* `images` (section 5.2, capability `images`): the worker's engine answers (ENGINE), the images
 * named by tasks that it holds (NAMES), and the archives whose image it has loaded (ARCHIVES). */
struct wq_images {
	bool engine;
	const char **names;
	size_t nnames;
	const char **archives;
	size_t narchives;
	json_t *msg;
};
int wq_msg_images_parse(const json_t *msg, struct wq_images **out, char **why);
void wq_images_free(struct wq_images *im);

#endif
