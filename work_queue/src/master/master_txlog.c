/* master_txlog.c: writes the master's transactions log, one event a line, "TIME PID KIND ...",
 * each line built in memory and written with one write(2) on an O_APPEND descriptor. The
 * grammar (also in doc/work-queue-api.md section 4):
 *
 *   # time pid MASTER|WORKER|TASK|TRANSFER|CATEGORY ...
 *   T P MASTER START PORT PROJECT
 *   T P MASTER END
 *   T P WORKER ID CONNECTION ADDRESS HOST
 *   T P WORKER ID DISCONNECTION UNKNOWN|IDLE_OUT|FAST_ABORT|FAILURE|STATUS_WORKER|EXPLICIT|LOST
 *   T P WORKER ID RESOURCES {"cores":C,"memory":M,"disk":D,"gpus":G}
 *   T P TASK ID STATE [DETAIL] [{resources}]
 *   T P TRANSFER INPUT|OUTPUT TASK_ID NAME BYTES SECONDS cache|task
 *   T P CATEGORY NAME MAX|MIN|FIRST {resources}
 *
 * T is microseconds since the epoch, P the master's pid. Words never contain spaces: names are
 * %XX-escaped. */
#include "master_txlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buffer.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

struct master_txlog {
	int fd;
	int64_t fixed_us;
	long pid;
};

static const char header[] = "# time pid MASTER|WORKER|TASK|TRANSFER|CATEGORY ...\n";

struct master_txlog *master_txlog_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || (st.st_size == 0 && write(fd, header, sizeof header - 1) !=
	                                                  (ssize_t)(sizeof header - 1))) {
		int e = errno ? errno : EIO;
		close(fd);
		errno = e;
		return NULL;
	}
	struct master_txlog *l = xcalloc(1, sizeof *l);
	l->fd = fd;
	l->pid = (long)getpid();
	return l;
}

void master_txlog_close(struct master_txlog *l)
{
	if (!l)
		return;
	close(l->fd);
	free(l);
}

void master_txlog_set_clock(struct master_txlog *l, int64_t fixed_us)
{
	l->fixed_us = fixed_us;
}

/* Writes one line: the time and pid, then the printf-formatted rest, then a newline. */
static int line(struct master_txlog *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int line(struct master_txlog *l, const char *fmt, ...)
{
	if (!l)
		return -EINVAL;
	struct buffer b;
	buffer_init(&b, 0);
	int64_t t = l->fixed_us ? l->fixed_us : time_now_us();
	buffer_printf(&b, "%lld %ld ", (long long)t, l->pid);
	va_list ap;
	va_start(ap, fmt);
	buffer_vprintf(&b, fmt, ap);
	va_end(ap);
	buffer_putc(&b, '\n');
	size_t n = buffer_len(&b);
	const char *p = buffer_tostring(&b);
	int r = 0;
	while (n > 0) {
		ssize_t w = write(l->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	buffer_free(&b);
	return r;
}

/* A word for the log: S with bytes <= 0x20, 0x7f, '%' and non-ASCII escaped as %XX; "-" for
 * NULL or "". Caller frees. */
static char *word(const char *s)
{
	if (!s || !*s)
		return xstrdup("-");
	struct buffer b;
	buffer_init(&b, 0);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p <= 0x20 || *p >= 0x7f || *p == '%')
			buffer_printf(&b, "%%%02X", *p);
		else
			buffer_putc(&b, (char)*p);
	}
	return buffer_steal(&b, NULL);
}

/* Compact JSON of the four allocated resources of R (only those set). Caller frees. */
static char *resources_json(const struct rmsummary *r)
{
	struct rmsummary box;
	rmsummary_init(&box);
	static const int fields[] = {RM_CORES, RM_MEMORY, RM_DISK, RM_GPUS};
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
		box.v[fields[i]] = r->v[fields[i]];
	char *j = rmsummary_to_json(&box, 0, 1);
	rmsummary_clear(&box);
	return j;
}

int master_txlog_master_start(struct master_txlog *l, int port, const char *project)
{
	char *p = word(project);
	int r = line(l, "MASTER START %d %s", port, p);
	free(p);
	return r;
}

int master_txlog_master_end(struct master_txlog *l)
{
	return line(l, "MASTER END");
}

int master_txlog_worker_connect(struct master_txlog *l, const char *worker_id, const char *address,
                                const char *host)
{
	char *id = word(worker_id), *a = word(address), *h = word(host);
	int r = line(l, "WORKER %s CONNECTION %s %s", id, a, h);
	free(id);
	free(a);
	free(h);
	return r;
}

int master_txlog_worker_disconnect(struct master_txlog *l, const char *worker_id,
                                   enum master_txlog_leave why)
{
	static const char *const names[] = {
	    [MASTER_TXLOG_LEAVE_UNKNOWN] = "UNKNOWN",
	    [MASTER_TXLOG_LEAVE_IDLE_OUT] = "IDLE_OUT",
	    [MASTER_TXLOG_LEAVE_FAST_ABORT] = "FAST_ABORT",
	    [MASTER_TXLOG_LEAVE_FAILURE] = "FAILURE",
	    [MASTER_TXLOG_LEAVE_STATUS] = "STATUS_WORKER",
	    [MASTER_TXLOG_LEAVE_EXPLICIT] = "EXPLICIT",
	    [MASTER_TXLOG_LEAVE_LOST] = "LOST",
	};
	const char *n = (unsigned)why < sizeof names / sizeof *names ? names[why] : "UNKNOWN";
	char *id = word(worker_id);
	int r = line(l, "WORKER %s DISCONNECTION %s", id, n);
	free(id);
	return r;
}

int master_txlog_worker_resources(struct master_txlog *l, const char *worker_id,
                                  const struct rmsummary *res)
{
	char *id = word(worker_id);
	char *j = resources_json(res);
	int r = line(l, "WORKER %s RESOURCES %s", id, j);
	free(id);
	free(j);
	return r;
}

int master_txlog_task(struct master_txlog *l, int64_t task_id, const char *state,
                      const char *detail, const struct rmsummary *res)
{
	if (!state || !*state || strpbrk(state, " \n") || (detail && strchr(detail, '\n')))
		return -EINVAL;
	char *j = NULL;
	if (res)
		j = strcmp(state, "RETRIEVED") == 0 ? rmsummary_to_json(res, 0, 1)
		                                    : resources_json(res);
	int r = line(l, "TASK %lld %s%s%s%s%s", (long long)task_id, state, detail ? " " : "",
	             detail ? detail : "", j ? " " : "", j ? j : "");
	free(j);
	return r;
}

int master_txlog_transfer(struct master_txlog *l, int output, int64_t task_id, const char *name,
                          int64_t bytes, double seconds, int cached)
{
	char *n = word(name);
	int r = line(l, "TRANSFER %s %lld %s %lld %.6f %s", output ? "OUTPUT" : "INPUT",
	             (long long)task_id, n, (long long)bytes, seconds, cached ? "cache" : "task");
	free(n);
	return r;
}

int master_txlog_category(struct master_txlog *l, const char *name, const char *which,
                          const struct rmsummary *res)
{
	if (!which || (strcmp(which, "MAX") && strcmp(which, "MIN") && strcmp(which, "FIRST")))
		return -EINVAL;
	char *n = word(name);
	char *j = resources_json(res);
	int r = line(l, "CATEGORY %s %s %s", n, which, j);
	free(n);
	free(j);
	return r;
}
