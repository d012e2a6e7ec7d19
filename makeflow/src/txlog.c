/* txlog.c: writer and reader of the makeflow transaction log (see txlog.h
 * and doc/makeflow-log-format.md). Each record is formatted into one buffer,
 * checksummed with CRC-32 and written with a single write(2). */
#include "txlog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <zlib.h>

#include "debug.h"
#include "htc_error.h"
#include "xalloc.h"
#include "stringtools.h"
#include "banned.h"

#define HEADER_MAGIC "#htc-makeflow-log"

struct txlog {
	int fd;
	int dirty;
	char *path;
	off_t end;       /* length of the file up to its last complete record */
	int broken;      /* a torn tail could not be cut off: nothing more is written */
	int first_error; /* the first write error, 0 if none (txlog_error) */
	txlog_write_fn write_fn;
};

/* Writes all of BUF through T's write function; 0 or a negative errno. */
static int write_all(struct txlog *t, const char *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t w = t->write_fn(t->fd, buf + done, len - done);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno ? -errno : -EIO;
		}
		if (w == 0)
			return -ENOSPC;
		done += (size_t)w;
	}
	return 0;
}

/* Writes one whole record (or the header) at the end of the log. A write cut
 * short is undone by cutting the file back to its last complete record, so a
 * later record never joins a partial one; when even that fails the log is
 * marked broken and nothing more is written to it. */
static int append(struct txlog *t, const char *buf, size_t len)
{
	if (t->broken)
		return t->first_error ? t->first_error : -EIO;
	int r = write_all(t, buf, len);
	if (r == 0) {
		t->end += (off_t)len;
		t->dirty = 1;
		return 0;
	}
	if (!t->first_error)
		t->first_error = r;
	if (ftruncate(t->fd, t->end) < 0) {
		t->broken = 1;
		debug(D_LOG, "%s: cannot cut the log back to %lld bytes: %s", t->path,
		      (long long)t->end, strerror(errno));
	}
	debug(D_LOG, "cannot write transaction log %s: %s", t->path, strerror(-r));
	return r;
}

static int64_t now_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

int txlog_encode_name(const char *name, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (*p < 0x21 || *p == '%' || *p >= 0x7f) {
			if (n + 3 >= outlen)
				return HTC_ETOOBIG;
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		} else {
			if (n + 1 >= outlen)
				return HTC_ETOOBIG;
			out[n++] = (char)*p;
		}
	}
	if (n == 0) {
		/* An empty name would make the record ambiguous. */
		return HTC_EPARSE;
	}
	out[n] = 0;
	return (int)n;
}

/* Decodes in place; returns 0 or -1 on a bad escape. */
static int decode_name(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (*r == '%') {
			int a = str_hex_digit(r[1]), b = a < 0 ? -1 : str_hex_digit(r[2]);
			if (a < 0 || b < 0)
				return -1;
			*w++ = (char)(a * 16 + b);
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
	return 0;
}

static int emit(struct txlog *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int emit(struct txlog *t, const char *fmt, ...)
{
	char line[TXLOG_MAX_LINE];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 16, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof line - 16)
		return HTC_ETOOBIG;
	uLong crc = crc32(0L, (const Bytef *)line, (uInt)n);
	n += snprintf(line + n, 16, " %08lx\n", (unsigned long)crc);
	return append(t, line, (size_t)n);
}

struct txlog *txlog_open(const char *path, const char *workflow, off_t truncate_to)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	if (truncate_to >= 0 && ftruncate(fd, truncate_to) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	struct txlog *t = xcalloc(1, sizeof *t);
	t->fd = fd;
	t->path = xstrdup(path);
	t->end = st.st_size;
	t->write_fn = write;
	if (st.st_size == 0) {
		char enc[4096];
		if (txlog_encode_name(workflow, enc, sizeof enc) < 0) {
			txlog_close(t);
			errno = ENAMETOOLONG;
			return NULL;
		}
		char head[4200];
		int n = snprintf(head, sizeof head, "%s %d %s\n", HEADER_MAGIC, TXLOG_VERSION, enc);
		int r = append(t, head, (size_t)n);
		if (r < 0) {
			txlog_close(t);
			errno = -r;
			return NULL;
		}
	}
	return t;
}

void txlog_set_write_fn(struct txlog *t, txlog_write_fn fn)
{
	t->write_fn = fn ? fn : write;
}

int txlog_error(const struct txlog *t)
{
	return t ? t->first_error : 0;
}

int txlog_start(struct txlog *t, int64_t pid, int64_t rules, const char *run_id)
{
	if (run_id)
		return emit(t, "S %" PRId64 " %" PRId64 " %" PRId64 " %s", now_us(), pid, rules,
		            run_id);
	return emit(t, "S %" PRId64 " %" PRId64 " %" PRId64, now_us(), pid, rules);
}

int txlog_new_run_id(char out[TXLOG_RUN_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[TXLOG_RUN_ID_LEN / 2];
	size_t got = 0;
	while (got < sizeof raw) {
		ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof raw; i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[TXLOG_RUN_ID_LEN] = 0;
	return 0;
}

static int is_run_id(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return 0;
	return n == TXLOG_RUN_ID_LEN;
}

/* ---- the workflow's lock -------------------------------------------------- */

struct txlog_lock {
	int fd;
	char *path;
};

static long read_holder(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *end;
	long pid = strtol(buf, &end, 10);
	return (end != buf && (*end == '\n' || *end == 0) && pid > 0) ? pid : 0;
}

struct txlog_lock *txlog_lock(const char *log_path, long *holder)
{
	char *path = xasprintf("%s.lock", log_path);
	int fd = -1, e = 0;
	*holder = 0;
	/* The holder removes the file before releasing it: a lock taken on a file that is no
	 * longer (or not the one) at PATH is let go and taken again on the new one. */
	for (int tries = 0; tries < 100; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			e = errno;
			goto fail;
		}
		/* A POSIX record lock, not flock: it belongs to this process alone, so a job
		 * caught between fork and exec when makeflow is killed does not keep it. */
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if (fcntl(fd, F_SETLK, &fl) < 0) {
			e = errno;
			if (e == EACCES || e == EAGAIN) {
				e = EWOULDBLOCK;
				*holder = read_holder(fd);
			}
			goto fail;
		}
		struct stat a, b;
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		e = EAGAIN;
		goto fail;
	}
	char pid[32];
	int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		debug(D_LOG, "%s: cannot write the PID into the lock file: %s", path,
		      strerror(errno));
	struct txlog_lock *l = xmalloc(sizeof *l);
	l->fd = fd;
	l->path = path;
	return l;
fail:
	if (fd >= 0)
		close(fd);
	free(path);
	errno = e;
	return NULL;
}

void txlog_unlock(struct txlog_lock *l)
{
	if (!l)
		return;
	unlink(l->path);
	close(l->fd);
	free(l->path);
	free(l);
}

int txlog_node(struct txlog *t, int64_t id, int state, uint64_t key)
{
	return emit(t, "N %" PRId64 " %" PRId64 " %d %016" PRIx64, now_us(), id, state, key);
}

static int is_failure_word(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == ':' ||
		      s[n] == '-'))
			return 0;
	return n > 0 && n <= TXLOG_MAX_FAILURE;
}

int txlog_node_failed(struct txlog *t, int64_t id, uint64_t key, const char *how)
{
	if (!how || !is_failure_word(how))
		return txlog_node(t, id, TXLOG_NODE_FAILED, key);
	return emit(t, "N %" PRId64 " %" PRId64 " %d %016" PRIx64 " %s", now_us(), id,
	            TXLOG_NODE_FAILED, key, how);
}

int txlog_file(struct txlog *t, int state, int64_t size, int64_t mtime_ns, const char *name)
{
	char enc[TXLOG_MAX_LINE / 2];
	int r = txlog_encode_name(name, enc, sizeof enc);
	if (r < 0)
		return r;
	return emit(t, "F %" PRId64 " %d %" PRId64 " %" PRId64 " %s", now_us(), state, size,
	            mtime_ns, enc);
}

int txlog_end(struct txlog *t, int status, const char *reason)
{
	char enc[256];
	if (txlog_encode_name(reason && *reason ? reason : "-", enc, sizeof enc) < 0)
		return HTC_EPARSE;
	return emit(t, "E %" PRId64 " %d %s", now_us(), status, enc);
}

int txlog_sync(struct txlog *t)
{
	if (!t || !t->dirty)
		return 0;
	t->dirty = 0;
	if (fsync(t->fd) < 0) {
		/* records the kernel accepted may not reach the disk (an NFS server out of
		 * space): as lost as a write that failed */
		int r = -errno;
		if (!t->first_error)
			t->first_error = r;
		return r;
	}
	return 0;
}

void txlog_close(struct txlog *t)
{
	if (!t)
		return;
	txlog_sync(t);
	close(t->fd);
	free(t->path);
	free(t);
}

/* ---- reading ------------------------------------------------------------ */

static int parse_i64(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

/* Splits a record into at most max fields (in place). Returns the count. */
static int split(char *line, char **f, int max)
{
	int n = 0;
	char *p = line;
	while (*p && n < max) {
		f[n++] = p;
		char *sp = strchr(p, ' ');
		if (!sp)
			break;
		*sp = 0;
		p = sp + 1;
	}
	return n;
}

int txlog_parse_record(char *line, struct txlog_record *r)
{
	size_t len = strlen(line);
	if (len < 10 || line[len - 9] != ' ')
		return -1;
	char *crc_text = line + len - 8;
	char *end;
	unsigned long want = strtoul(crc_text, &end, 16);
	if (*end)
		return -1;
	line[len - 9] = 0;
	uLong crc = crc32(0L, (const Bytef *)line, (uInt)(len - 9));
	if (crc != want)
		return -1;
	char *f[8];
	int n = split(line, f, 8);
	if (n < 2 || strlen(f[0]) != 1)
		return -1;
	r->type = f[0][0];
	if (parse_i64(f[1], &r->time_us))
		return -1;
	int64_t v;
	switch (r->type) {
	case 'S':
		if ((n != 4 && n != 5) || parse_i64(f[2], &r->pid) || parse_i64(f[3], &r->rules))
			return -1;
		if (n == 5 && !is_run_id(f[4]))
			return -1;
		r->run_id = n == 5 ? f[4] : NULL;
		return 0;
	case 'N':
		if ((n != 5 && n != 6) || parse_i64(f[2], &r->node_id) || parse_i64(f[3], &v) ||
		    v < 1 || v > 5)
			return -1;
		r->state = (int)v;
		if (n == 6 && (v != TXLOG_NODE_FAILED || !is_failure_word(f[5])))
			return -1;
		r->failure = n == 6 ? f[5] : NULL;
		if (strlen(f[4]) != 16)
			return -1;
		r->key = strtoull(f[4], &end, 16);
		if (*end)
			return -1;
		return 0;
	case 'F':
		if (n != 6 || parse_i64(f[2], &v) || v < 1 || v > 4 || parse_i64(f[3], &r->size) ||
		    parse_i64(f[4], &r->mtime_ns) || decode_name(f[5]) || !f[5][0])
			return -1;
		r->state = (int)v;
		r->name = f[5];
		return 0;
	case 'E':
		if (n != 4 || parse_i64(f[2], &v) || decode_name(f[3]))
			return -1;
		r->state = (int)v;
		r->name = f[3];
		return 0;
	default: return -1;
	}
}

/* A CCTools makeflow log opens with "# WORD ..." lines (STARTED, FILE, NODE, ...) or with a
 * line of numbers (a node record); ours opens with HEADER_MAGIC. */
static int looks_like_cctools(const char *line)
{
	if (line[0] == '#' && line[1] == ' ' && line[2] >= 'A' && line[2] <= 'Z')
		return 1;
	int digits = 0;
	for (const char *p = line; *p; p++) {
		if (*p >= '0' && *p <= '9')
			digits++;
		else if (*p != ' ')
			return 0;
	}
	return digits > 0;
}

int txlog_parse_header(char *line, const char *path, const char *expect_workflow,
                       const char **workflow, char *err, size_t errlen)
{
	if (workflow)
		*workflow = NULL;
	if (looks_like_cctools(line)) {
		snprintf(
		    err, errlen,
		    "%s:1: this is a CCTools makeflow log, which is not read here (this "
		    "makeflow's transaction log has its own format: doc/makeflow-log-format.md)",
		    path);
		return HTC_EUNSUP;
	}
	char *fl[3];
	int n = split(line, fl, 3);
	if (n < 2 || strcmp(fl[0], HEADER_MAGIC)) {
		snprintf(err, errlen, "%s:1: not a makeflow transaction log", path);
		return HTC_ECORRUPT;
	}
	int64_t ver;
	if (parse_i64(fl[1], &ver) || ver != TXLOG_VERSION) {
		snprintf(err, errlen,
		         "%s:1: log format version %s is not supported (this "
		         "makeflow writes version %d)",
		         path, fl[1], TXLOG_VERSION);
		return HTC_EVERSION;
	}
	if (expect_workflow && n == 3) {
		char enc[4096];
		if (txlog_encode_name(expect_workflow, enc, sizeof enc) > 0 && strcmp(enc, fl[2])) {
			snprintf(err, errlen, "%s:1: log belongs to workflow '%s', not '%s'", path,
			         fl[2], expect_workflow);
			return HTC_ECORRUPT;
		}
	}
	if (workflow && n == 3) {
		decode_name(fl[2]);
		*workflow = fl[2];
	}
	return 0;
}

int txlog_read(const char *path, const char *expect_workflow, txlog_record_fn fn, void *arg,
               off_t *good_end, int *torn, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	if (torn)
		*torn = 0;
	char *line = xmalloc(TXLOG_MAX_LINE + 2);
	int result = 0;
	int lineno = 0;
	off_t offset = 0;
	for (;;) {
		if (!fgets(line, TXLOG_MAX_LINE + 2, f))
			break;
		size_t len = strlen(line);
		int complete = len > 0 && line[len - 1] == '\n';
		if (!complete) {
			if (len >= TXLOG_MAX_LINE) {
				snprintf(err, errlen, "%s:%d: record longer than %d bytes", path,
				         lineno + 1, TXLOG_MAX_LINE);
				result = HTC_ECORRUPT;
				goto out;
			}
			/* A final line without a newline: a write cut short. */
			if (torn)
				*torn = 1;
			debug(D_LOG, "%s:%d: ignoring torn last record", path, lineno + 1);
			break;
		}
		lineno++;
		line[len - 1] = 0;
		if (lineno == 1) {
			result = txlog_parse_header(line, path, expect_workflow, NULL, err, errlen);
			if (result < 0)
				goto out;
			offset += (off_t)len;
			continue;
		}
		struct txlog_record r;
		memset(&r, 0, sizeof r);
		if (txlog_parse_record(line, &r) < 0) {
			snprintf(err, errlen, "%s:%d: corrupt record", path, lineno);
			result = HTC_ECORRUPT;
			goto out;
		}
		r.line = lineno;
		offset += (off_t)len;
		if (fn) {
			int rc = fn(&r, arg);
			if (rc) {
				result = rc;
				goto out;
			}
		}
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
		result = -EIO;
		goto out;
	}
out:
	if (good_end && result == 0)
		*good_end = offset;
	free(line);
	fclose(f);
	return result;
}
