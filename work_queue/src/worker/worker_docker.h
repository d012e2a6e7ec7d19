/* worker_docker.h: tasks of work_queue_worker in Docker containers (--docker, --docker-preserve;
 * doc/work-queue-docker.md). The worker checks the engine and the image at start, keeps the
 * shared container, and gives the task starter the argv of the runner: the worker binary in its
 * hidden --container-run mode (worker_runner.h), which runs one task in a container under the
 * resource monitor. */
#ifndef HTC_WORKER_DOCKER_H
#define HTC_WORKER_DOCKER_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct docker_api;

/* Exit statuses of the runner besides the command's own. */
#define WORKER_DOCKER_EXIT_DOCKER 125 /* Docker refused or failed: message on stderr */
#define WORKER_DOCKER_EXIT_OOM    250 /* Docker says OOMKilled: message on stderr */

/* The label keys of containers made by workers and runners. */
#define WORKER_DOCKER_LABEL_PID  "org.htc.wq.pid"
#define WORKER_DOCKER_LABEL_HOST "org.htc.wq.host"

struct worker_docker;
struct worker_aheads;

/* Checks that the engine answers (DOCKER_HOST or the default socket) and that IMAGE is on this
 * machine, finds whether containers can nest in the task's cgroup, and removes containers left
 * by dead workers or runners of this host. SHARED: --docker-preserve. IMAGE NULL: no image of
 * the worker's own (--containers: only tasks that name an image run in containers). NULL with
 * *ERR (caller frees) naming the socket or the image. */
struct worker_docker *worker_docker_create(const char *image, bool shared, char **err);

/* The worker's workdir (bind-mounted in the shared container; its cache is bind-mounted
 * read-only in per-task containers). Then, in shared mode, creates and starts the shared
 * container. Returns 0 or a negative code with *ERR. */
int worker_docker_start(struct worker_docker *d, const char *workdir, char **err);

/* The images held for tasks that name theirs (worker_images.h): made by worker_docker_start,
 * owned by D. NULL before. */
struct worker_images *worker_docker_images(struct worker_docker *d);

/* KEEP: the worker's cache outlives it (--keep-cache): the images loaded from its archives are
 * left in the engine at the end (by default they are removed with the cache). */
void worker_docker_keep_images(struct worker_docker *d, bool keep);

/* Removes the shared container (if any) and frees D. NULL is accepted. */
void worker_docker_delete(struct worker_docker *d);

/* The runner's argv for COMMAND in the sandbox work directory SANDBOX_WORK_DIR, NULL-terminated
 * (caller frees with worker_docker_argv_free). ENV is the task's environment, which the runner
 * receives as its own (spec.env) and gives to the container; it is not read here. Run it with
 * spec.path = worker_docker_runner_path(D). */
char **worker_docker_argv(const struct worker_docker *d, const char *sandbox_work_dir,
                          const char *const *env, const char *command);

/* Whether a task's own container may be made ahead of the task (worker_ahead.h): the agent
 * is installed, the engine nests containers in the tasks' cgroups (cgroupfs on cgroup v1, where
 * the task joins its task cgroups from the container: worker_runner_agent.h), and it was not
 * turned off. */
bool worker_docker_can_make_ahead(const struct worker_docker *d);
/* --no-containers-ahead: every task's own container is made when the task starts. */
void worker_docker_set_no_ahead(struct worker_docker *d, bool no);
/* ENGINE (--container-cgroups engine): the tasks' own containers stay in the engine's cgroups,
 * never nested in the tasks' (where the engine cannot nest them, they are not anyway). */
void worker_docker_set_engine_cgroups(struct worker_docker *d, bool engine);
/* Whether the tasks' own containers are nested in the tasks' cgroups (cgroupfs on v1). */
bool worker_docker_nests(const struct worker_docker *d);
/* The engine's client (borrowed from D): blocking calls, a few ms each. */
struct docker_api *worker_docker_api(const struct worker_docker *d);
/* The worker's containers made ahead (worker_ahead.h); NULL before worker_docker_start. */
struct worker_aheads *worker_docker_aheads(struct worker_docker *d);
/* The argv of a task whose own container the process MAKER makes ahead, its agent in DIR: the
 * agent's client (`--run-task`), which becomes the runner argv V when no container comes.
 * Takes V. */
char **worker_docker_ahead_argv(const struct worker_docker *d, char **v, pid_t maker,
                                const char *dir, const char *sandbox_work_dir);

/* The container a task names (protocol `containers`). */
struct worker_container_spec {
	const char *image;   /* an image the engine has, or NULL */
	const char *archive; /* the path of an image archive to load first (once), or NULL */
	const char *key;     /* the archive's cache object name */
	bool shared;         /* in the worker's one container of the image, not one of its own */
};
/* As worker_docker_argv, for a task that names its container C. */
char **worker_docker_argv_spec(const struct worker_docker *d, const char *sandbox_work_dir,
                               const char *command, const struct worker_container_spec *c);
/* The runner's record of a task's container, in the task's sandbox directory (the parent of its
 * work directory): what it cost, as a JSON object (doc/work-queue-protocol.md, `task_done`
 * `container`). */
#define WORKER_CONTAINER_RECORD "container.json"
/* Writes REC as the record NAME (WORKER_CONTAINER_RECORD, or the record of a container made
 * ahead) beside the task's work directory WORKDIR, atomically. */
void worker_container_record_write(const char *workdir, const char *name, json_t *rec);
/* Reads the record in SANDBOX (at most 4 KiB, an object): a new reference, or NULL. */
json_t *worker_container_record_read(const char *sandbox);
/* The text of a record REC (may be NULL) whose runner found the engine gone (engine_lost), or
 * NULL. Borrowed from REC. */
const char *worker_container_engine_lost(const json_t *rec);
/* The engine's socket (borrowed from D). */
const char *worker_docker_socket(const struct worker_docker *d);

/* The worker's own image (--docker IMAGE), or NULL. */
const char *worker_docker_image(const struct worker_docker *d);
/* Whether the tasks of the worker's own image (worker_docker_image) run in its one shared
 * container (--docker-preserve), not each in its own (--docker). */
bool worker_docker_shared(const struct worker_docker *d);
void worker_docker_argv_free(char **argv);
/* The worker's own executable (resolved /proc/self/exe when D was made). Owned by D. */
const char *worker_docker_runner_path(const struct worker_docker *d);

/* The labels of a container made on HOST by this process (WORKER_DOCKER_LABEL_PID and _HOST),
 * a new JSON object, and the user its containers run as ("uid:gid", caller frees): shared with
 * the runner (worker_runner.c). */
json_t *worker_docker_labels(const char *host);
char *worker_docker_user(void);

/* The command of the shared container NAME whose state directory is STATE: AGENT (the agent
 * program, worker_runner_agent.h), appended read-only to BINDS at RUNNER_AGENT_IN_CONTAINER,
 * listening on NAME.sock in STATE; without AGENT, a shell loop (tasks are then execs). */
json_t *worker_docker_shared_cmd(const char *agent, const char *state, const char *name,
                                 json_t *binds);

#endif
