/* rmon_proc.c: /proc sampling of a task's process tree, the kernel proc connector, disk use
 * of directories and machine figures (see rmon_proc.h). CPU time and I/O of a process that
 * vanishes are kept: when its parent is still in the tree they reappear in the parent's
 * cutime/cstime and /proc/PID/io once it is reaped, otherwise they are added to a "lost"
 * account, so the totals never forget a process that was seen at least once. */
#include "rmon_proc.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <uthash.h>

#include "debug.h"
#include "dir_entries.h"
#include "rmon_cgroup.h"
#include "timeutil.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

#define MAX_FILES 100000
#define MAX_DEPTH 256

struct pentry {
	pid_t pid, ppid;
	unsigned long long start; /* starttime in ticks since boot; 0 = not read yet */
	double own_cpu, child_cpu;
	int64_t rbytes, wbytes, ctx;
	unsigned gen;
	int exited; /* the connector saw it exit (it may still be a zombie) */
	UT_hash_handle hh;
};

struct fentry {
	char *name;
	UT_hash_handle hh;
};

struct rmon_proc {
	pid_t root;
	enum rmon_proc_mode mode;
	int report_files;
	struct pentry *tab;
	unsigned gen;
	double lost_cpu;
	int64_t lost_r, lost_w, lost_ctx;
	int live;
	struct rmon_proc_totals t;
	struct fentry *files;
	size_t nfiles;
	const char **file_list;
	long ticks;
	long page;
	int complete; /* every fork of the tree reaches us through the connector */
};

struct stat_info {
	pid_t ppid, sid;
	char state;
	double own, child;
	int threads;
	unsigned long long start;
	int64_t vm, rss;
};

struct rmon_proc *rmon_proc_create(pid_t root, enum rmon_proc_mode mode, int report_files)
{
	struct rmon_proc *p = xcalloc(1, sizeof *p);
	p->root = root;
	p->mode = mode;
	p->report_files = report_files;
	p->ticks = sysconf(_SC_CLK_TCK);
	if (p->ticks <= 0)
		p->ticks = 100;
	p->page = sysconf(_SC_PAGESIZE);
	if (p->page <= 0)
		p->page = 4096;
	p->t.rss = p->t.vm = p->t.swap = 0;
	return p;
}

void rmon_proc_delete(struct rmon_proc *p)
{
	if (!p)
		return;
	struct pentry *e, *tmp;
	HASH_ITER(hh, p->tab, e, tmp)
	{
		HASH_DEL(p->tab, e);
		free(e);
	}
	struct fentry *f, *ftmp;
	HASH_ITER(hh, p->files, f, ftmp)
	{
		HASH_DEL(p->files, f);
		free(f->name);
		free(f);
	}
	free(p->file_list);
	free(p);
}

static int read_stat(pid_t pid, long ticks, long page, struct stat_info *si)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if (rmon_read_file(path, buf, sizeof buf) <= 0)
		return -ESRCH;
	char *rp = strrchr(buf, ')');
	if (!rp)
		return -EINVAL;
	char state;
	long ppid, pgrp, sid, tty, tpgid, threads, itreal;
	unsigned long flags, minflt, cminflt, majflt, cmajflt, ut, st;
	long cut, cst, prio, nice;
	unsigned long long start;
	unsigned long vsize;
	long rss;
	int n = sscanf(rp + 2,
	               "%c %ld %ld %ld %ld %ld %lu %lu %lu %lu %lu %lu %lu %ld %ld %ld %ld %ld %ld "
	               "%llu %lu %ld",
	               &state, &ppid, &pgrp, &sid, &tty, &tpgid, &flags, &minflt, &cminflt, &majflt,
	               &cmajflt, &ut, &st, &cut, &cst, &prio, &nice, &threads, &itreal, &start,
	               &vsize, &rss);
	if (n != 22)
		return -EINVAL;
	si->state = state;
	si->ppid = (pid_t)ppid;
	si->sid = (pid_t)sid;
	si->own = (double)(ut + st) / (double)ticks;
	si->child = (double)(cut + cst) / (double)ticks;
	si->threads = (int)threads;
	si->start = start;
	si->vm = (int64_t)vsize;
	si->rss = (int64_t)rss * page;
	return 0;
}

unsigned long long rmon_proc_start_ticks(pid_t pid)
{
	struct stat_info si;
	if (pid <= 0 || read_stat(pid, 100, 4096, &si) < 0)
		return 0;
	return si.start;
}

/* VmSwap and context switches from /proc/PID/status. */
static void read_status(pid_t pid, int64_t *swap, int64_t *ctx)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
	*swap = 0;
	*ctx = -1;
	if (rmon_read_file(path, buf, sizeof buf) <= 0)
		return;
	int64_t c = 0;
	int have = 0;
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		long long v;
		if (sscanf(l, "VmSwap: %lld", &v) == 1)
			*swap = v * 1024;
		else if (sscanf(l, "voluntary_ctxt_switches: %lld", &v) == 1)
			c += v, have = 1;
		else if (sscanf(l, "nonvoluntary_ctxt_switches: %lld", &v) == 1)
			c += v, have = 1;
	}
	if (have)
		*ctx = c;
}

static void read_io(pid_t pid, int64_t *r, int64_t *w)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/io", (long)pid);
	*r = *w = -1;
	if (rmon_read_file(path, buf, sizeof buf) <= 0)
		return;
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		long long v;
		if (sscanf(l, "read_bytes: %lld", &v) == 1)
			*r = v;
		else if (sscanf(l, "write_bytes: %lld", &v) == 1)
			*w = v;
	}
}

static void add_file(struct rmon_proc *p, const char *name)
{
	struct fentry *f;
	HASH_FIND_STR(p->files, name, f);
	if (f || p->nfiles >= MAX_FILES)
		return;
	f = xmalloc(sizeof *f);
	f->name = xstrdup(name);
	HASH_ADD_KEYPTR(hh, p->files, f->name, strlen(f->name), f);
	p->nfiles++;
}

static void scan_fds(struct rmon_proc *p, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/fd", (long)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char target[4096];
		ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (target[0] != '/' || strncmp(target, "/dev/", 5) == 0 ||
		    strncmp(target, "/proc/", 6) == 0 || strncmp(target, "/sys/", 5) == 0)
			continue;
		add_file(p, target);
	}
	closedir(d);
}

static struct pentry *new_entry(struct rmon_proc *p, pid_t pid, pid_t ppid)
{
	struct pentry *e = xcalloc(1, sizeof *e);
	e->pid = pid;
	e->ppid = ppid;
	e->gen = p->gen;
	HASH_ADD_INT(p->tab, pid, e);
	p->t.total_processes++;
	p->live++;
	if (p->live > p->t.max_concurrent)
		p->t.max_concurrent = p->live;
	return e;
}

/* E left the tree: keep what it used (see the comment at the top). */
static void vanish(struct rmon_proc *p, struct pentry *e, int parent_alive)
{
	if (!parent_alive) {
		p->lost_cpu += e->own_cpu + e->child_cpu;
		p->lost_r += e->rbytes;
		p->lost_w += e->wbytes;
	}
	p->lost_ctx += e->ctx;
	if (!e->exited)
		p->live--;
	HASH_DEL(p->tab, e);
	free(e);
}

void rmon_proc_add(struct rmon_proc *p, pid_t pid, pid_t ppid)
{
	struct pentry *e;
	HASH_FIND_INT(p->tab, &pid, e);
	if (!e)
		new_entry(p, pid, ppid);
}

void rmon_proc_final(struct rmon_proc *p, pid_t pid)
{
	struct pentry *e;
	HASH_FIND_INT(p->tab, &pid, e);
	struct stat_info si;
	if (!e || read_stat(pid, p->ticks, p->page, &si) < 0 || (e->start && e->start != si.start))
		return;
	e->start = si.start;
	if (si.own > e->own_cpu)
		e->own_cpu = si.own;
	if (si.child > e->child_cpu)
		e->child_cpu = si.child;
	int64_t swap, ctx, r, w;
	read_status(pid, &swap, &ctx);
	if (ctx >= 0)
		e->ctx = ctx;
	read_io(pid, &r, &w);
	if (r > e->rbytes)
		e->rbytes = r;
	if (w > e->wbytes)
		e->wbytes = w;
}

int rmon_proc_alone(const struct rmon_proc *p)
{
	return p->t.total_processes <= 1;
}

void rmon_proc_root_exited(struct rmon_proc *p, const struct rusage *ru)
{
	struct pentry *e;
	HASH_FIND_INT(p->tab, &p->root, e);
	if (!e)
		return;
	if (rmon_proc_alone(p)) {
		/* ru_inblock/ru_oublock are /proc/PID/io's read_bytes and write_bytes (less the
		 * writes cancelled by truncation) in 512-byte units. */
		int64_t r = (int64_t)ru->ru_inblock * 512, w = (int64_t)ru->ru_oublock * 512;
		int64_t ctx = (int64_t)ru->ru_nvcsw + (int64_t)ru->ru_nivcsw;
		if (r > e->rbytes)
			e->rbytes = r;
		if (w > e->wbytes)
			e->wbytes = w;
		if (ctx > e->ctx)
			e->ctx = ctx;
	}
	e->own_cpu = (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec / 1e6 +
	             (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
	e->child_cpu = 0;
	vanish(p, e, 0);
	rmon_proc_totals(p, &p->t);
}

struct cand {
	pid_t pid;
	struct stat_info si;
	int member;
};

static int is_tracked(struct rmon_proc *p, pid_t pid, const struct stat_info *si)
{
	struct pentry *e;
	HASH_FIND_INT(p->tab, &pid, e);
	return e && (e->start == 0 || e->start == si->start);
}

static void mark_members(struct rmon_proc *p, struct cand *c, size_t nc);

/* All processes of /proc with their stat, members marked per the mode. */
static struct cand *scan_proc(struct rmon_proc *p, size_t *nc)
{
	DIR *d = opendir("/proc");
	*nc = 0;
	if (!d)
		return NULL;
	size_t cap = 256;
	struct cand *c = xmalloc(cap * sizeof *c);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		VEC_RESERVE(c, cap, *nc + 1);
		if (read_stat((pid_t)pid, p->ticks, p->page, &c[*nc].si) < 0)
			continue;
		c[*nc].pid = (pid_t)pid;
		c[*nc].member = 0;
		(*nc)++;
	}
	closedir(d);
	mark_members(p, c, *nc);
	return c;
}

/* Marks the members of the tree among the NC candidates C, per the mode. */
static void mark_members(struct rmon_proc *p, struct cand *c, size_t nc)
{
	for (size_t i = 0; i < nc; i++) {
		if (c[i].pid == p->root || is_tracked(p, c[i].pid, &c[i].si))
			c[i].member = 1;
		else if (p->mode == RMON_PROC_SESSION && c[i].si.sid == p->root)
			c[i].member = 1;
	}
	/* Descendants: repeat until no new member is found (depth of the tree passes). */
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < nc; i++) {
			if (c[i].member)
				continue;
			for (size_t j = 0; j < nc; j++) {
				if (c[j].member && c[j].pid == c[i].si.ppid) {
					c[i].member = 1;
					changed = 1;
					break;
				}
			}
		}
	}
}

/* The processes known to the tracker with their stat (when the connector reports every fork
 * of the tree, these are all its processes: no need to read the whole of /proc). */
static struct cand *scan_known(struct rmon_proc *p, size_t *nc)
{
	size_t n = HASH_COUNT(p->tab);
	struct cand *c = xmalloc((n + 1) * sizeof *c);
	*nc = 0;
	struct pentry *e, *tmp;
	HASH_ITER(hh, p->tab, e, tmp)
	{
		if (read_stat(e->pid, p->ticks, p->page, &c[*nc].si) < 0)
			continue;
		c[*nc].pid = e->pid;
		c[*nc].member = 0;
		(*nc)++;
	}
	mark_members(p, c, *nc);
	return c;
}

static void account(struct rmon_proc *p, pid_t pid, const struct stat_info *si, int light,
                    struct rmon_proc_totals *t)
{
	struct pentry *e;
	HASH_FIND_INT(p->tab, &pid, e);
	if (e && e->start != 0 && e->start != si->start) {
		vanish(p, e, 0); /* pid reused */
		e = NULL;
	}
	if (!e)
		e = new_entry(p, pid, si->ppid);
	e->start = si->start;
	e->ppid = si->ppid;
	e->gen = p->gen;
	if (si->own > e->own_cpu)
		e->own_cpu = si->own;
	if (si->child > e->child_cpu)
		e->child_cpu = si->child;
	t->rss += si->rss;
	t->vm += si->vm;
	/* A zombie's figures are final and count, but it runs no more: its parent (perhaps an
	 * init that reaps slowly) is all that keeps it. */
	if (si->state != 'Z' && si->state != 'X') {
		t->nprocs++;
		t->nthreads += si->threads;
	}
	if (light)
		return;
	int64_t swap, ctx, r, w;
	read_status(pid, &swap, &ctx);
	t->swap += swap;
	if (ctx >= 0)
		e->ctx = ctx;
	read_io(pid, &r, &w);
	if (r > e->rbytes)
		e->rbytes = r;
	if (w > e->wbytes)
		e->wbytes = w;
	if (p->report_files)
		scan_fds(p, pid);
}

void rmon_proc_set_complete(struct rmon_proc *p, int complete)
{
	p->complete = complete;
}

void rmon_proc_totals(const struct rmon_proc *p, struct rmon_proc_totals *out)
{
	*out = p->t;
}

int rmon_proc_sample(struct rmon_proc *p, const pid_t *pids, size_t n, int light,
                     struct rmon_proc_totals *out)
{
	struct rmon_proc_totals t = p->t;
	t.rss = t.vm = t.swap = 0;
	t.nprocs = t.nthreads = 0;
	p->gen++;
	if (p->mode == RMON_PROC_CGROUP) {
		for (size_t i = 0; i < n; i++) {
			struct stat_info si;
			if (read_stat(pids[i], p->ticks, p->page, &si) == 0)
				account(p, pids[i], &si, light, &t);
		}
	} else {
		size_t nc;
		struct cand *c = p->complete ? scan_known(p, &nc) : scan_proc(p, &nc);
		for (size_t i = 0; i < nc; i++)
			if (c[i].member)
				account(p, c[i].pid, &c[i].si, light, &t);
		free(c);
	}
	/* Processes not seen in this sample have vanished. */
	struct pentry *e, *tmp;
	HASH_ITER(hh, p->tab, e, tmp)
	{
		if (e->gen == p->gen)
			continue;
		struct pentry *parent;
		HASH_FIND_INT(p->tab, &e->ppid, parent);
		vanish(p, e, parent && parent->gen == p->gen);
	}
	double cpu = p->lost_cpu;
	int64_t r = p->lost_r, w = p->lost_w, ctx = p->lost_ctx;
	HASH_ITER(hh, p->tab, e, tmp)
	{
		cpu += e->own_cpu + e->child_cpu;
		r += e->rbytes;
		w += e->wbytes;
		ctx += e->ctx;
	}
	/* Totals never go back (a vanished process counted as inherited by a parent that has
	 * not reaped it yet would otherwise dip). */
	t.cpu_s = cpu > p->t.cpu_s ? cpu : p->t.cpu_s;
	t.read_bytes = r > p->t.read_bytes ? r : p->t.read_bytes;
	t.write_bytes = w > p->t.write_bytes ? w : p->t.write_bytes;
	t.ctx_switches = ctx > p->t.ctx_switches ? ctx : p->t.ctx_switches;
	t.total_processes = p->t.total_processes;
	if (t.nprocs > t.max_concurrent)
		t.max_concurrent = t.nprocs;
	if (p->t.max_concurrent > t.max_concurrent)
		t.max_concurrent = p->t.max_concurrent;
	p->t = t;
	if (out)
		*out = t;
	return 0;
}

size_t rmon_proc_live(struct rmon_proc *p, pid_t **pids)
{
	size_t n = HASH_COUNT(p->tab), i = 0;
	*pids = xmalloc((n + 1) * sizeof **pids);
	struct pentry *e, *tmp;
	HASH_ITER(hh, p->tab, e, tmp)
	{
		(*pids)[i++] = e->pid;
	}
	return i;
}

const char *const *rmon_proc_files(struct rmon_proc *p)
{
	free(p->file_list);
	p->file_list = xmalloc((p->nfiles + 1) * sizeof *p->file_list);
	size_t i = 0;
	struct fentry *f, *tmp;
	HASH_ITER(hh, p->files, f, tmp)
	{
		p->file_list[i++] = f->name;
	}
	p->file_list[i] = NULL;
	return p->file_list;
}

size_t rmon_proc_nfiles(const struct rmon_proc *p)
{
	return p->nfiles;
}

/* 1 when the running kernel (6.6 or later) takes a proc connector subscription that names the
 * events wanted. */
static int connector_filters_events(void)
{
	struct utsname u;
	int major = 0, minor = 0;
	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major > 6 || (major == 6 && minor >= 6);
}

int rmon_proc_connector_open(void)
{
	int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
	if (s < 0)
		return -errno;
	int rcv = 4 << 20;
	setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv);
	struct sockaddr_nl a = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = 0};
	if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
		int e = -errno;
		close(s);
		return e;
	}
	/* From Linux 6.6 the subscription may name the events wanted, and the kernel then copies
	 * only those to this socket: forks and exits are all the trackers read (execs, session
	 * and name changes are half of a task's events, and every connector of the machine
	 * gets every one). An older kernel ignores a subscription of that size, so it gets the
	 * plain one. */
	struct {
		uint32_t mcast_op;   /* enum proc_cn_mcast_op */
		uint32_t event_type; /* PROC_EVENT_* wanted */
	} in = {PROC_CN_MCAST_LISTEN, PROC_EVENT_FORK | PROC_EVENT_EXIT};
	size_t in_len = connector_filters_events() ? sizeof in : sizeof in.mcast_op;
	union {
		char buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof in)];
		struct nlmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct nlmsghdr *nh = &u.align;
	struct cn_msg *cn = NLMSG_DATA(nh);
	nh->nlmsg_len = NLMSG_LENGTH(sizeof *cn + in_len);
	nh->nlmsg_type = NLMSG_DONE;
	nh->nlmsg_pid = 0;
	cn->id.idx = CN_IDX_PROC;
	cn->id.val = CN_VAL_PROC;
	cn->len = (uint16_t)in_len;
	memcpy(cn->data, &in, in_len);
	if (send(s, nh, nh->nlmsg_len, 0) < 0) {
		int e = -errno;
		close(s);
		return e;
	}
	return s;
}

static void cn_fork(struct rmon_proc *p, pid_t parent, pid_t child)
{
	struct pentry *e;
	HASH_FIND_INT(p->tab, &parent, e);
	if (!e)
		return;
	struct pentry *c;
	HASH_FIND_INT(p->tab, &child, c);
	if (c && c->ppid == parent && !c->exited)
		return; /* a sample found it between its fork and the reading of the fork */
	if (c) {
		/* Pid reused before a sample noticed the old process was gone. */
		struct pentry *pp;
		HASH_FIND_INT(p->tab, &c->ppid, pp);
		vanish(p, c, pp != NULL);
	}
	new_entry(p, child, parent);
	if (p->live > p->t.max_concurrent)
		p->t.max_concurrent = p->live;
}

static void cn_exit(struct rmon_proc *p, pid_t pid)
{
	struct pentry *e;
	HASH_FIND_INT(p->tab, &pid, e);
	if (!e || e->exited)
		return;
	e->exited = 1;
	p->live--;
}

static void cn_message(const struct nlmsghdr *first, size_t len, struct rmon_proc *const *ps,
                       size_t n)
{
	for (const struct nlmsghdr *h = first; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
		if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP)
			continue;
		const struct cn_msg *cn = NLMSG_DATA(h);
		if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
			continue;
		struct proc_event ev;
		size_t evlen = cn->len < sizeof ev ? cn->len : sizeof ev;
		memset(&ev, 0, sizeof ev);
		memcpy(&ev, cn->data, evlen);
		if (ev.what == PROC_EVENT_FORK) {
			if (ev.event_data.fork.child_pid != ev.event_data.fork.child_tgid)
				continue; /* a thread */
			for (size_t i = 0; i < n; i++)
				if (ps[i])
					cn_fork(ps[i], ev.event_data.fork.parent_tgid,
					        ev.event_data.fork.child_tgid);
		} else if (ev.what == PROC_EVENT_EXIT) {
			if (ev.event_data.exit.process_pid != ev.event_data.exit.process_tgid)
				continue;
			for (size_t i = 0; i < n; i++)
				if (ps[i])
					cn_exit(ps[i], ev.event_data.exit.process_tgid);
		}
	}
}

#define CN_BATCH 32
#define CN_MSG   1024 /* a proc event message is under 200 bytes */

int rmon_proc_connector_read(int fd, struct rmon_proc *const *ps, size_t n)
{
	int lost = 0;
	/* Every process of the machine reports here: many messages per call, read in batches. */
	static __thread union {
		char buf[CN_MSG];
		struct nlmsghdr align;
	} bufs[CN_BATCH];
	struct mmsghdr msgs[CN_BATCH];
	struct iovec iov[CN_BATCH];
	for (;;) {
		memset(msgs, 0, sizeof msgs);
		for (int i = 0; i < CN_BATCH; i++) {
			iov[i].iov_base = bufs[i].buf;
			iov[i].iov_len = sizeof bufs[i].buf;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		int r = recvmmsg(fd, msgs, CN_BATCH, 0, NULL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				lost = 1;
				continue;
			}
			break;
		}
		if (r == 0)
			break;
		for (int i = 0; i < r; i++)
			cn_message(&bufs[i].align, msgs[i].msg_len, ps, n);
		if (r < CN_BATCH)
			break; /* drained (a new message wakes the poller again) */
	}
	if (lost)
		for (size_t i = 0; i < n; i++)
			if (ps[i])
				ps[i]->complete = 0; /* forks were missed: scan /proc from now on */
	return lost ? -ENOBUFS : 0;
}

struct walk {
	dev_t dev;
	int depth;
	int64_t total;
};

/* One entry of the walk: its blocks, and a directory of the same file system below. */
static int walk_entry(int dirfd, const char *name, unsigned char type, void *arg)
{
	(void)type; /* stat'ed anyway: its blocks count */
	struct walk *w = arg;
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	w->total += (int64_t)st.st_blocks * 512;
	if (S_ISDIR(st.st_mode) && st.st_dev == w->dev && w->depth < MAX_DEPTH) {
		int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			struct walk below = {w->dev, w->depth + 1, 0};
			dir_entries(sub, walk_entry, &below);
			close(sub);
			w->total += below.total;
		}
	}
	return 0;
}

int64_t rmon_disk_usage(const char *const *dirs)
{
	int64_t total = 0;
	int ok = 0, err = -ENOENT;
	for (size_t i = 0; dirs && dirs[i]; i++) {
		int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		struct stat st;
		if (fstat(fd, &st) < 0) {
			err = -errno;
			close(fd);
			continue;
		}
		ok = 1;
		struct walk w = {st.st_dev, 0, 0};
		dir_entries(fd, walk_entry, &w);
		close(fd);
		total += w.total;
	}
	return ok ? total : err;
}

/* Machine-wide figures change slowly (the load average every 5 s, online CPUs on hotplug):
 * they are read at most once per MACHINE_CPUS_US / MACHINE_LOAD_US by the whole process. */
#define MACHINE_CPUS_US 5000000
#define MACHINE_LOAD_US 1000000

static pthread_mutex_t machine_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t cpus_at = -1, load_at = -1;
static int cpus_cached;
static double load_cached;

int rmon_machine_cpus(void)
{
	int64_t now = time_monotonic_us();
	pthread_mutex_lock(&machine_lock);
	if (cpus_at < 0 || now - cpus_at >= MACHINE_CPUS_US) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		cpus_cached = n > 0 ? (int)n : 1;
		cpus_at = now;
	}
	int r = cpus_cached;
	pthread_mutex_unlock(&machine_lock);
	return r;
}

double rmon_machine_load(void)
{
	int64_t now = time_monotonic_us();
	pthread_mutex_lock(&machine_lock);
	if (load_at < 0 || now - load_at >= MACHINE_LOAD_US) {
		char buf[256];
		double l;
		if (rmon_read_file("/proc/loadavg", buf, sizeof buf) <= 0 ||
		    sscanf(buf, "%lf", &l) != 1)
			l = -1;
		load_cached = l;
		load_at = now;
	}
	double r = load_cached;
	pthread_mutex_unlock(&machine_lock);
	return r;
}

void rmon_machine_memory(int64_t *total, int64_t *available)
{
	char buf[8192];
	*total = *available = -1;
	if (rmon_read_file("/proc/meminfo", buf, sizeof buf) <= 0)
		return;
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		long long v;
		if (sscanf(l, "MemTotal: %lld", &v) == 1)
			*total = v * 1024;
		else if (sscanf(l, "MemAvailable: %lld", &v) == 1)
			*available = v * 1024;
	}
}
