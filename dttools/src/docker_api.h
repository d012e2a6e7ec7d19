/* docker_api.h: a small Docker Engine API client over the engine's Unix socket (libcurl, jansson
 * bodies), used by the worker to run tasks in containers (doc/work-queue-docker.md). Every
 * call has a timeout, and every error text names the call and gives Docker's own message. */
#ifndef HTC_DOCKER_API_H
#define HTC_DOCKER_API_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#define DOCKER_API_DEFAULT_SOCKET "/var/run/docker.sock"
#define DOCKER_API_TIMEOUT_MS     30000 /* default total timeout of a non-stream call */
#define DOCKER_API_CONNECT_MS     5000
#define DOCKER_API_BODY_MAX       (4 * 1024 * 1024) /* cap of a JSON answer */

struct docker_api;

/* The socket path: SOCKET when not NULL, else DOCKER_HOST (unix:///path only), else the
 * default. NULL with *err (caller frees) for another DOCKER_HOST scheme. */
struct docker_api *docker_api_create(const char *socket, char **err);
void docker_api_delete(struct docker_api *d);
const char *docker_api_socket(const struct docker_api *d);
/* Total timeout of non-stream calls (ms; <= 0: the default). */
void docker_api_set_timeout(struct docker_api *d, long ms);

/* One request: METHOD PATH (e.g. "/containers/create?name=x"), BODY (may be NULL) sent as
 * JSON. *STATUS gets the HTTP status, *REPLY (when not NULL) the parsed JSON answer or NULL
 * when it is not JSON. Returns 0 when the status is 2xx; otherwise a negative code with *ERR
 * (caller frees): "docker METHOD PATH: STATUS: MESSAGE" (MESSAGE = Docker's `message`), or
 * "docker METHOD PATH: cannot reach SOCKET: ..." (-ECONNREFUSED, also for a socket that is
 * not there, -ETIMEDOUT...). An HTTP 404 gives -ENOENT, and only it (callers take it for "no
 * such object"), 409 -EEXIST, other statuses -EIO. */
int docker_api_call(struct docker_api *d, const char *method, const char *path, json_t *body,
                    long *status, json_t **reply, char **err);

/* GET /_ping. */
int docker_api_ping(struct docker_api *d, char **err);
/* GET /images/{name}/json: 0, or -ENOENT when the image is not here. */
int docker_api_image_exists(struct docker_api *d, const char *image, char **err);
/* GET /info: true when the engine uses the cgroupfs driver on cgroup v1. */
int docker_api_nestable(struct docker_api *d, bool *nestable, char **err);
/* POST /containers/create with CONFIG (not stolen); *ID gets the id (caller frees). */
int docker_api_create_container(struct docker_api *d, const char *name, json_t *config, char **id,
                                char **err);
int docker_api_start(struct docker_api *d, const char *id, char **err);
/* POST /containers/{id}/kill?signal=SIG (a container that is not running is not an error). */
int docker_api_kill(struct docker_api *d, const char *id, int sig, char **err);
/* DELETE /containers/{id}?force=1 (a missing container is not an error). */
int docker_api_remove(struct docker_api *d, const char *id, char **err);
/* GET /containers/json?all=1&filters={"label":[LABEL]}: *LIST gets the array (new ref). */
int docker_api_list(struct docker_api *d, const char *label, json_t **list, char **err);
/* POST /images/load with the `docker save` archive at PATH as the body. *REF gets what the
 * engine says it loaded ("NAME:TAG", or "sha256:..." for an archive without a name; caller
 * frees). An archive the engine refuses gives its message ("docker POST /images/load: ..."). */
int docker_api_load(struct docker_api *d, const char *path, char **ref, char **err);
/* GET /containers/{id}/json: *OOM = State.OOMKilled. */
int docker_api_oom_killed(struct docker_api *d, const char *id, bool *oom, char **err);
/* GET /containers/{id}/json: *PID = State.Pid, the container's first process as the engine's
 * host sees it (0 while it is not running). */
int docker_api_container_pid(struct docker_api *d, const char *id, long *pid, char **err);
/* POST /containers/{id}/update with Memory and MemorySwap both BYTES (no swap beyond it): the
 * engine changes the limit of the running container's cgroup. */
int docker_api_update_memory(struct docker_api *d, const char *id, int64_t bytes, char **err);
/* POST /containers/{id}/update with NanoCpus CORES x 1e9: the engine changes the CPU quota of
 * the running container's cgroup (the container must have been made with NanoCpus, not
 * CpuQuota, which the engine refuses to mix). */
int docker_api_update_cores(struct docker_api *d, const char *id, double cores, char **err);

/* Demultiplexes Docker's attach stream: 8-byte headers (stream, 0, 0, 0, 32-bit big-endian
 * length) each followed by LENGTH bytes, stream 1 written to OUT_FD, 2 (and others) to ERR_FD.
 */
struct docker_api_demux {
	int out_fd, err_fd;
	unsigned char hdr[8];
	size_t hdr_len;
	unsigned long left; /* bytes of the current frame still to copy */
	int stream;
};
void docker_api_demux_init(struct docker_api_demux *x, int out_fd, int err_fd);
/* Feeds N bytes; returns 0, or -errno when a write failed. */
int docker_api_demux_feed(struct docker_api_demux *x, const char *buf, size_t n);

/* Runs the created, not yet started container ID: attaches (stdout, stderr) and registers a
 * wait (condition=removed when AUTO_REMOVED, else next-exit) before starting it, copies the
 * output to OUT_FD/ERR_FD until the container ends, and sets *STATUS to its exit status. While
 * it runs, *STOP becoming non-zero kills the container (SIGKILL) once. */
int docker_api_run(struct docker_api *d, const char *id, bool auto_removed, int out_fd, int err_fd,
                   volatile sig_atomic_t *stop, int *status, char **err);

/* Runs CONFIG (the body of POST /containers/{id}/exec: Cmd, Env, WorkingDir, User...) in the
 * running container ID, attached, copying its output; *STATUS gets its ExitCode. *STOP
 * becoming non-zero kills the exec's process (SIGKILL, by its host pid). */
int docker_api_exec(struct docker_api *d, const char *id, json_t *config, int out_fd, int err_fd,
                    volatile sig_atomic_t *stop, int *status, char **err);

#endif
