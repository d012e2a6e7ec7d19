/* wq_docker.h: a small Docker Engine API client over the engine's Unix socket (libcurl, jansson
 * bodies), used by the worker to run tasks in containers (doc/work-queue-docker.md). Every
 * call has a timeout, and every error text names the call and gives Docker's own message. */
#ifndef HTC_WQ_DOCKER_H
#define HTC_WQ_DOCKER_H

#include <signal.h>
#include <stdbool.h>

#include <jansson.h>

#define WQ_DOCKER_DEFAULT_SOCKET "/var/run/docker.sock"
#define WQ_DOCKER_TIMEOUT_MS     30000 /* default total timeout of a non-stream call */
#define WQ_DOCKER_CONNECT_MS     5000
#define WQ_DOCKER_BODY_MAX       (4 * 1024 * 1024) /* cap of a JSON answer */

struct wq_docker;

/* The socket path: SOCKET when not NULL, else DOCKER_HOST (unix:///path only), else the
 * default. NULL with *err (caller frees) for another DOCKER_HOST scheme. */
struct wq_docker *wq_docker_create(const char *socket, char **err);
void wq_docker_delete(struct wq_docker *d);
const char *wq_docker_socket(const struct wq_docker *d);
/* Total timeout of non-stream calls (ms; <= 0: the default). */
void wq_docker_set_timeout(struct wq_docker *d, long ms);

/* One request: METHOD PATH (e.g. "/containers/create?name=x"), BODY (may be NULL) sent as
 * JSON. *STATUS gets the HTTP status, *REPLY (when not NULL) the parsed JSON answer or NULL
 * when it is not JSON. Returns 0 when the status is 2xx; otherwise a negative code with *ERR
 * (caller frees): "docker METHOD PATH: STATUS: MESSAGE" (MESSAGE = Docker's `message`), or
 * "docker METHOD PATH: cannot reach SOCKET: ..." (-ECONNREFUSED, -ENOENT, -ETIMEDOUT...).
 * An HTTP 404 gives -ENOENT, 409 -EEXIST, other statuses -EIO. */
int wq_docker_call(struct wq_docker *d, const char *method, const char *path, json_t *body,
                   long *status, json_t **reply, char **err);

/* GET /_ping. */
int wq_docker_ping(struct wq_docker *d, char **err);
/* GET /images/{name}/json: 0, or -ENOENT when the image is not here. */
int wq_docker_image_exists(struct wq_docker *d, const char *image, char **err);
/* GET /info: true when the engine uses the cgroupfs driver on cgroup v1. */
int wq_docker_nestable(struct wq_docker *d, bool *nestable, char **err);
/* POST /containers/create with CONFIG (not stolen); *ID gets the id (caller frees). */
int wq_docker_create_container(struct wq_docker *d, const char *name, json_t *config, char **id,
                               char **err);
int wq_docker_start(struct wq_docker *d, const char *id, char **err);
/* POST /containers/{id}/kill?signal=SIG (a container that is not running is not an error). */
int wq_docker_kill(struct wq_docker *d, const char *id, int sig, char **err);
/* DELETE /containers/{id}?force=1 (a missing container is not an error). */
int wq_docker_remove(struct wq_docker *d, const char *id, char **err);
/* GET /containers/json?all=1&filters={"label":[LABEL]}: *LIST gets the array (new ref). */
int wq_docker_list(struct wq_docker *d, const char *label, json_t **list, char **err);
/* GET /containers/{id}/json: *OOM = State.OOMKilled. */
int wq_docker_oom_killed(struct wq_docker *d, const char *id, bool *oom, char **err);

/* Demultiplexes Docker's attach stream: 8-byte headers (stream, 0, 0, 0, 32-bit big-endian
 * length) each followed by LENGTH bytes, stream 1 written to OUT_FD, 2 (and others) to ERR_FD.
 */
struct wq_docker_demux {
	int out_fd, err_fd;
	unsigned char hdr[8];
	size_t hdr_len;
	unsigned long left; /* bytes of the current frame still to copy */
	int stream;
};
void wq_docker_demux_init(struct wq_docker_demux *x, int out_fd, int err_fd);
/* Feeds N bytes; returns 0, or -errno when a write failed. */
int wq_docker_demux_feed(struct wq_docker_demux *x, const char *buf, size_t n);

/* Runs the created, not yet started container ID: attaches (stdout, stderr) and registers a
 * wait (condition=removed when AUTO_REMOVED, else next-exit) before starting it, copies the
 * output to OUT_FD/ERR_FD until the container ends, and sets *STATUS to its exit status. While
 * it runs, *STOP becoming non-zero kills the container (SIGKILL) once. */
int wq_docker_run(struct wq_docker *d, const char *id, bool auto_removed, int out_fd, int err_fd,
                  volatile sig_atomic_t *stop, int *status, char **err);

/* Runs CONFIG (the body of POST /containers/{id}/exec: Cmd, Env, WorkingDir, User...) in the
 * running container ID, attached, copying its output; *STATUS gets its ExitCode. *STOP
 * becoming non-zero kills the exec's process (SIGKILL, by its host pid). */
int wq_docker_exec(struct wq_docker *d, const char *id, json_t *config, int out_fd, int err_fd,
                   volatile sig_atomic_t *stop, int *status, char **err);

#endif
