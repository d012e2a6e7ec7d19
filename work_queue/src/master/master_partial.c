/* master_partial.c: the names of the master's temporary output files and the removal of those a
 * dead master left. A partial output is DIR/.BASE.wq-HOST-PID-START-XFER.tmp (HOST: 8 hex digits
 * of a hash of the host name; START: the process's start in clock ticks since boot), so that the
 * name tells which process on which host wrote it, and whether that process is gone.
 *
 * A name is stale when its HOST is this host and PID is gone, or PID now names another process
 * (another start time). Files of other hosts (a shared file system), names of the older form
 * .BASE.wq-PID-XFER.tmp (whose owner cannot be told apart from a later process) and anything
 * that does not match exactly are never touched. The master's private temporary directory (the
 * stdout files), TMPDIR/wq-master-HOST-PID-START-XXXXXX, is named and cleaned the same way. */
#include "master_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "rmon_proc.h"
#include "xalloc.h"
#include "banned.h"

/* 8 hex digits naming this host: FNV-1a of its name. */
static unsigned host_hash(void)
{
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) < 0)
		host[0] = 0;
	unsigned h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)host; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

void master_partial_tag(char *buf, size_t len)
{
	pid_t me = getpid();
	snprintf(buf, len, "%08x-%d-%llu", host_hash(), (int)me, rmon_proc_start_ticks(me));
}

char *master_partial_name(const char *tag, const char *source, uint32_t xfer)
{
	char *dir = path_dirname(source);
	char *base = path_basename(source);
	char *p = xasprintf("%s/.%s.wq-%s-%u.tmp", dir, base, tag, xfer);
	free(dir);
	free(base);
	return p;
}

/* The decimal number that ends at END (exclusive) in [START, END): its first digit in *AT, its
 * value in *V; 0 when there is none or it has more than 20 digits. */
static int number_before(const char *start, const char *end, const char **at, unsigned long long *v)
{
	const char *p = end;
	while (p > start && p[-1] >= '0' && p[-1] <= '9' && end - p < 20)
		p--;
	if (p == end || (p > start && p[-1] >= '0' && p[-1] <= '9'))
		return 0;
	unsigned long long n = 0;
	for (const char *q = p; q < end; q++)
		n = n * 10 + (unsigned long long)(*q - '0');
	*at = p;
	*v = n;
	return 1;
}

int master_partial_parse(const char *name, unsigned *host, pid_t *pid, unsigned long long *start)
{
	size_t n = strlen(name);
	if (n < 2 || name[0] != '.' || n < 4 || strcmp(name + n - 4, ".tmp") != 0)
		return 0;
	const char *end = name + n - 4, *at;
	unsigned long long xfer, st, pd;
	if (!number_before(name, end, &at, &xfer) || at == name || at[-1] != '-')
		return 0;
	end = at - 1;
	if (!number_before(name, end, &at, &st) || at == name || at[-1] != '-')
		return 0;
	end = at - 1;
	if (!number_before(name, end, &at, &pd) || pd == 0 || pd > 0x7fffffff || at - name < 9 ||
	    at[-1] != '-')
		return 0;
	const char *hex = at - 9;
	unsigned h = 0;
	for (int k = 0; k < 8; k++) {
		char c = hex[k];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return 0;
		h = h * 16 + (unsigned)d;
	}
	/* ".wq-" before the host, and a BASE of at least one character after the leading dot */
	if (hex - name < 6 || strncmp(hex - 4, ".wq-", 4) != 0)
		return 0;
	(void)xfer;
	*host = h;
	*pid = (pid_t)pd;
	*start = st;
	return 1;
}

/* True when the master that wrote a partial named (HOST, PID, START) is gone, seen from this
 * process (ME, MY_START) on host MY_HOST. */
static bool owner_gone(unsigned host, pid_t pid, unsigned long long start, unsigned my_host,
                       pid_t me, unsigned long long my_start)
{
	if (host != my_host)
		return false; /* another host's: it cannot be asked */
	if (pid == me)
		return start != my_start; /* an earlier process with our pid */
	unsigned long long now = rmon_proc_start_ticks(pid);
	return now == 0 || now != start;
}

int work_queue_clean_partials(const char *dir)
{
	if (!dir || !*dir)
		return -EINVAL;
	int err = 0;
	DIR *d = path_opendir_at(AT_FDCWD, dir, &err);
	if (!d)
		return err;
	int dfd = dirfd(d);
	unsigned my_host = host_hash();
	pid_t me = getpid();
	unsigned long long my_start = rmon_proc_start_ticks(me);
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		unsigned host;
		pid_t pid;
		unsigned long long start;
		if (!master_partial_parse(e->d_name, &host, &pid, &start) ||
		    !owner_gone(host, pid, start, my_host, me, my_start))
			continue;
		struct stat st;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		int rc = -1;
		if (S_ISREG(st.st_mode)) {
			rc = unlinkat(dfd, e->d_name, 0);
		} else if (S_ISDIR(st.st_mode)) {
			char *p = xasprintf("%s/%s", dir, e->d_name);
			rc = path_rm_rf(p);
			free(p);
		} else {
			continue; /* we never make anything else */
		}
		if (rc == 0) {
			removed++;
			notice("wq: removed %s/%s, a partial output of a master that is gone", dir,
			       e->d_name);
		} else {
			debug(D_WQ, "cannot remove %s/%s: %s", dir, e->d_name, strerror(errno));
		}
	}
	closedir(d);
	return removed;
}

/* 1 when NAME is a master's private temporary directory, wq-master-HOST-PID-START-XXXXXX, with
 * its writer's host hash, pid and start time. */
static int tmpdir_parse(const char *name, unsigned *host, pid_t *pid, unsigned long long *start)
{
	size_t n = strlen(name);
	if (strncmp(name, "wq-master-", 10) != 0 || n < 10 + 8 + 1 + 1 + 1 + 1 + 1 + 6)
		return 0;
	const char *p = name + 10;
	unsigned h = 0;
	for (int k = 0; k < 8; k++, p++) {
		int d = *p >= '0' && *p <= '9'   ? *p - '0'
		        : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
		                                 : -1;
		if (d < 0)
			return 0;
		h = h * 16 + (unsigned)d;
	}
	const char *end = name + n - 7; /* the '-' before mkdtemp's six characters */
	if (*p != '-' || *end != '-')
		return 0;
	const char *at;
	unsigned long long st, pd;
	if (!number_before(p + 1, end, &at, &st) || at <= p + 1 || at[-1] != '-' ||
	    !number_before(p + 1, at - 1, &at, &pd) || at != p + 1 || pd == 0 || pd > 0x7fffffff)
		return 0;
	*host = h;
	*pid = (pid_t)pd;
	*start = st;
	return 1;
}

/* Removes from BASE the private temporary directories (stdout files) of dead masters of this
 * host; how many, or a negative errno. */
static int clean_tmpdirs(const char *base)
{
	DIR *d = opendir(base);
	if (!d)
		return -errno;
	unsigned my_host = host_hash();
	pid_t me = getpid();
	unsigned long long my_start = rmon_proc_start_ticks(me);
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		unsigned host;
		pid_t pid;
		unsigned long long start;
		struct stat st;
		if (!tmpdir_parse(e->d_name, &host, &pid, &start) ||
		    !owner_gone(host, pid, start, my_host, me, my_start) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		char *p = xasprintf("%s/%s", base, e->d_name);
		if (path_rm_rf(p) == 0) {
			removed++;
			notice("wq: removed %s, the temporary directory of a master that is gone",
			       p);
		}
		free(p);
	}
	closedir(d);
	return removed;
}

/* ---- sweeping the output directories of a queue, off the loop ---------------------------- */

struct sweep {
	uv_work_t req;
	char *dir;
	bool tmpdirs; /* DIR holds masters' temporary directories, not outputs */
	int rc;
};

static void sweep_work(uv_work_t *req)
{
	struct sweep *s = req->data;
	s->rc = s->tmpdirs ? clean_tmpdirs(s->dir) : work_queue_clean_partials(s->dir);
}

/* Touches nothing of the queue, which may be gone by now. */
static void sweep_after(uv_work_t *req, int status)
{
	struct sweep *s = req->data;
	if (status == 0 && s->rc < 0 && s->rc != -ENOENT)
		debug(D_WQ, "cannot look for partial outputs in %s: %s", s->dir,
		      htc_strerror(s->rc));
	free(s->dir);
	free(s);
}

static void sweep_start(struct work_queue *q, const char *dir, bool tmpdirs)
{
	struct sweep *s = xcalloc(1, sizeof *s);
	s->dir = xstrdup(dir);
	s->tmpdirs = tmpdirs;
	s->req.data = s;
	if (uv_queue_work(q->loop, &s->req, sweep_work, sweep_after) != 0) {
		free(s->dir);
		free(s);
	}
}

void master_partial_sweep_tmpdirs(struct work_queue *q, const char *base)
{
	sweep_start(q, base, true);
}

void master_partial_sweep(struct work_queue *q, const struct work_queue_task *t)
{
	for (const struct work_queue_file *f = t->outputs; f; f = f->next) {
		char *dir = path_dirname(f->source);
		struct mswept *seen = NULL;
		HASH_FIND_STR(q->swept, dir, seen);
		if (seen) {
			free(dir);
			continue;
		}
		seen = xcalloc(1, sizeof *seen);
		seen->dir = dir;
		HASH_ADD_KEYPTR(hh, q->swept, seen->dir, strlen(seen->dir), seen);
		sweep_start(q, dir, false);
	}
}

void master_partial_forget(struct work_queue *q)
{
	struct mswept *s, *tmp;
	HASH_ITER(hh, q->swept, s, tmp)
	{
		HASH_DEL(q->swept, s);
		free(s->dir);
		free(s);
	}
}
