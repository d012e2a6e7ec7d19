/* stderr_tap.c: the stderr pipe of a local job, read on the loop (see stderr_tap.h). The read end
 * is a libuv pipe on the queue's loop; each chunk is written on to fd 2 at once (so the terminal
 * shows what it showed before) and appended to a buffer that keeps only the last BATCH_TAIL_BYTES.
 */
#include "stderr_tap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch_driver.h"
#include "xalloc.h"
#include "banned.h"

struct stderr_tap {
	uv_pipe_t pipe;
	size_t used;
	char tail[BATCH_TAIL_BYTES];
	char chunk[16384]; /* libuv reads into it */
};

/* Passes N bytes on to this process's stderr; waits for a full stderr at most a second per
 * attempt, then drops the rest rather than stop the loop for good. */
static void forward(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(2, p, n);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = 2, .events = POLLOUT};
			if (poll(&pfd, 1, 1000) <= 0)
				return;
		} else {
			return;
		}
	}
}

static void keep(struct stderr_tap *t, const char *p, size_t n)
{
	if (n >= sizeof t->tail) {
		memcpy(t->tail, p + n - sizeof t->tail, sizeof t->tail);
		t->used = sizeof t->tail;
		return;
	}
	if (t->used + n > sizeof t->tail) {
		size_t drop = t->used + n - sizeof t->tail;
		memmove(t->tail, t->tail + drop, t->used - drop);
		t->used -= drop;
	}
	memcpy(t->tail + t->used, p, n);
	t->used += n;
}

static void take(struct stderr_tap *t, const char *p, size_t n)
{
	forward(p, n);
	keep(t, p, n);
}

static void tap_closed(uv_handle_t *h)
{
	free(h->data);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)suggested;
	struct stderr_tap *t = h->data;
	*buf = uv_buf_init(t->chunk, sizeof t->chunk);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct stderr_tap *t = s->data;
	if (n > 0)
		take(t, buf->base, (size_t)n);
	else if (n < 0) /* EOF (every holder of the write end is gone) or an error */
		uv_read_stop(s);
}

struct stderr_tap *stderr_tap_open(uv_loop_t *loop, int *child_fd)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return NULL;
	struct stderr_tap *t = xcalloc(1, sizeof *t);
	uv_pipe_init(loop, &t->pipe, 0);
	t->pipe.data = t;
	int rc = uv_pipe_open(&t->pipe, fds[0]);
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&t->pipe, on_alloc, on_read);
	if (rc < 0) {
		close(fds[1]);
		uv_close((uv_handle_t *)&t->pipe, tap_closed);
		errno = -rc;
		return NULL;
	}
	*child_fd = fds[1];
	return t;
}

void stderr_tap_finish(struct stderr_tap *t, struct batch_job *job)
{
	uv_os_fd_t fd;
	if (uv_fileno((uv_handle_t *)&t->pipe, &fd) == 0) {
		/* non-blocking (uv_pipe_open made it so): stops at EAGAIN when a leftover process
		 * of the job still holds the write end */
		for (;;) {
			ssize_t n = read(fd, t->chunk, sizeof t->chunk);
			if (n > 0)
				take(t, t->chunk, (size_t)n);
			else if (!(n < 0 && errno == EINTR))
				break;
		}
	}
	if (job)
		batch_job_set_stderr_tail(job, t->tail, t->used);
	uv_read_stop((uv_stream_t *)&t->pipe);
	uv_close((uv_handle_t *)&t->pipe, tap_closed);
}
