/* rmon_cgroup.c: cgroup v1 and v2 backend of the resource monitor (see rmon_cgroup.h).
 * Layout: <hierarchy>/<our own cgroup>/htc/htc.<owner pid>.<owner start>.<serial> (names and
 * stale groups: rmon_cgroup_stale.c), in every v1 hierarchy a task needs (memory, cpuacct,
 * pids and freezer; cpu, cpuset and blkio only when asked) or once in the v2 unified tree,
 * where "htc" has no processes and enables the controllers for its children in its
 * cgroup.subtree_control (the no-internal-processes rule). Where the hierarchies are is found
 * once per process (rmon_cgroup_layout.c); the statistics files of a group stay open for the
 * group's life and are read with pread. */
#include "rmon_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "rmon_cgroup_internal.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

#define CFS_PERIOD 100000

#define write_in rmon_cg_write_in
#define read_in  rmon_cg_read_in
#define has_word rmon_cg_has_word
#define file_in  rmon_cg_file_in
#define is_dir   rmon_cg_is_dir
#define make_dir rmon_cg_make_dir
#define cdir     rmon_cg_dir
#define sf_fd    rmon_cg_sf_fd
#define sf_read  rmon_cg_sf_read

static unsigned serial_counter;

/* Reads a file holding one integer (or "max", given as -1). */
static int64_t parse_int(char *buf)
{
	str_trim(buf);
	if (strcmp(buf, "max") == 0)
		return -1;
	int64_t v;
	if (str_to_int64(buf, &v) < 0)
		return -1;
	return v;
}

/* Value of KEY in a "key value" per line file (memory.stat, cpu.stat, memory.events). */
static int64_t keyed_value(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *p = text;
	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ') {
			char *end;
			long long v = strtoll(p + klen + 1, &end, 10);
			if (end != p + klen + 1)
				return v;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

static char *group_name(const struct rmon_cgroup_opts *o, pid_t owner)
{
	if (o->name)
		return xstrdup(o->name);
	unsigned s = __atomic_add_fetch(&serial_counter, 1, __ATOMIC_RELAXED);
	return xasprintf("htc.%ld.%llu.%u", (long)owner, rmon_cg_owner_start(owner), s);
}

/* Creates BASE/NAME; without an explicit name a taken name is replaced by the next serial. */
static int make_group(const struct rmon_cgroup_opts *o, pid_t owner, const char *base, char **name,
                      char **dir)
{
	for (int tries = 0; tries < 100; tries++) {
		char *d = path_join(base, *name);
		int r = make_dir(d, o->name != NULL);
		if (r == 0) {
			*dir = d;
			return 0;
		}
		free(d);
		if (r != -EEXIST || o->name)
			return r;
		free(*name);
		*name = group_name(o, owner);
	}
	return -EEXIST;
}

/* The v2 controllers a task group may want, passed down from each parent, and the
 * RMON_CG_WANT_* bit each needs (0: always). */
static const char *const v2_wanted[] = {"cpu", "cpuset", "io", "memory", "pids"};
static const unsigned v2_want_bit[] = {RMON_CG_WANT_CPU, RMON_CG_WANT_CPUSET, RMON_CG_WANT_IO, 0,
                                       0};
#define V2_NWANTED (sizeof v2_wanted / sizeof *v2_wanted)

static int v2_wants(unsigned want, size_t i)
{
	return v2_want_bit[i] == 0 || (want & v2_want_bit[i]);
}

static void list_add(char *list, size_t size, const char *word)
{
	size_t len = strlen(list);
	snprintf(list + len, size - len, "%s%s", len ? " " : "", word);
}

/* Enables in DIR's cgroup.subtree_control every wanted controller that DIR has (AVAIL) and
 * has not enabled yet (ENABLED, which is updated). If the kernel refuses the set, tries them
 * one at a time: some controller may be refused while memory is fine. Failures are left for
 * the caller's later check. */
static void enable_controllers(const char *dir, const char *avail, char *enabled, unsigned want)
{
	char add[256] = "";
	size_t len = 0;
	for (size_t i = 0; i < V2_NWANTED; i++)
		if (v2_wants(want, i) && has_word(avail, v2_wanted[i]) &&
		    !has_word(enabled, v2_wanted[i]))
			len += (size_t)snprintf(add + len, sizeof add - len, "%s+%s",
			                        len ? " " : "", v2_wanted[i]);
	if (!len)
		return;
	int all = write_in(dir, "cgroup.subtree_control", add) == 0;
	for (size_t i = 0; i < V2_NWANTED; i++) {
		if (!v2_wants(want, i) || !has_word(avail, v2_wanted[i]) ||
		    has_word(enabled, v2_wanted[i]))
			continue;
		char one[32];
		snprintf(one, sizeof one, "+%s", v2_wanted[i]);
		if (all || write_in(dir, "cgroup.subtree_control", one) == 0)
			list_add(enabled, RMON_CG_LIST, v2_wanted[i]);
	}
}

static int create_v2(struct rmon_cgroup *cg, const struct rmon_cgroup_opts *o,
                     struct rmon_cg_layout *l, pid_t owner, unsigned want)
{
	/* Our own cgroup must pass the controllers down to "htc". */
	enable_controllers(l->own2, l->own_avail, l->own_enabled, want);
	if (!l->base2_ok) {
		char avail[RMON_CG_LIST];
		int r = make_dir(l->base2, 1);
		if (r < 0)
			return r;
		if (read_in(l->base2, "cgroup.controllers", avail, sizeof avail) < 0 ||
		    !has_word(avail, "memory")) {
			debug(D_RMON, "cgroup: no memory controller in %s (not delegated to us)",
			      l->base2);
			return HTC_EUNSUP;
		}
		memcpy(l->base_avail, avail, sizeof avail);
		if (read_in(l->base2, "cgroup.subtree_control", l->base_enabled,
		            sizeof l->base_enabled) < 0)
			*l->base_enabled = 0;
		l->base2_ok = 1;
	}
	enable_controllers(l->base2, l->base_avail, l->base_enabled, want);
	int r = make_group(o, owner, l->base2, &cg->name, &cg->dirs[0]);
	if (r < 0)
		return r;
	cg->ndirs = 1;
	char ctl[512];
	if (read_in(cg->dirs[0], "cgroup.controllers", ctl, sizeof ctl) < 0 ||
	    !has_word(ctl, "memory")) {
		rmdir(cg->dirs[0]);
		return HTC_EUNSUP;
	}
	cg->ctrl_dir[C_MEMORY] = 0;
	cg->ctrl_dir[C_CPUACCT] = 0; /* cpu.stat usage_usec is always there */
	cg->ctrl_dir[C_FREEZER] = 0; /* cgroup.kill / cgroup.freeze are core files */
	cg->ctrl_dir[C_CPU] = (want & RMON_CG_WANT_CPU) && has_word(ctl, "cpu") ? 0 : -1;
	cg->ctrl_dir[C_PIDS] = has_word(ctl, "pids") ? 0 : -1;
	cg->ctrl_dir[C_CPUSET] = (want & RMON_CG_WANT_CPUSET) && has_word(ctl, "cpuset") ? 0 : -1;
	cg->ctrl_dir[C_BLKIO] = (want & RMON_CG_WANT_IO) && has_word(ctl, "io") ? 0 : -1;
	return 0;
}

/* The v1 controllers a task with WANT uses. */
static int v1_wants(unsigned want, int i)
{
	switch (i) {
	case C_CPU: return (want & RMON_CG_WANT_CPU) != 0;
	case C_CPUSET: return (want & RMON_CG_WANT_CPUSET) != 0;
	case C_BLKIO: return (want & RMON_CG_WANT_IO) != 0;
	default: return 1;
	}
}

/* LAST: the layout was just discovered, so a missing parent is not worth a new discovery. */
static int create_v1(struct rmon_cgroup *cg, const struct rmon_cgroup_opts *o,
                     struct rmon_cg_layout *l, pid_t owner, unsigned want, int last)
{
	for (int i = 0; i < C_N; i++) {
		if (!v1_wants(want, i) || cg->ctrl_dir[i] >= 0)
			continue; /* not wanted, or its hierarchy is shared and made already */
		if (!l->base[i]) {
			if (i == C_MEMORY)
				return HTC_EUNSUP;
			continue;
		}
		int e = 0;
		if (!l->base_ok[i]) {
			e = make_dir(l->base[i], 1);
			if (e == 0 && i == C_CPUSET)
				rmon_cg_cpuset_inherit(l->owndir[i], l->base[i]);
			l->base_ok[i] = e == 0;
		}
		char *dir = NULL;
		if (e == 0) {
			if (i == C_MEMORY && !o->name) {
				/* The memory hierarchy picks the name; others follow it. */
				e = make_group(o, owner, l->base[i], &cg->name, &dir);
			} else {
				dir = path_join(l->base[i], cg->name);
				e = make_dir(dir, o->name != NULL);
				if (e < 0) {
					free(dir);
					dir = NULL;
				}
			}
		}
		if (e == 0 && i == C_CPUSET)
			rmon_cg_cpuset_inherit(l->base[i], dir);
		if (e < 0) {
			debug(D_RMON, "cgroup: cannot create %s group: %s", rmon_cg_ctrl_names[i],
			      htc_strerror(e));
			if (e == -ENOENT)
				l->base_ok[i] = 0;
			if (i == C_MEMORY || (e == -ENOENT && !last))
				return e;
			continue;
		}
		int idx = cg->ndirs++;
		cg->dirs[idx] = dir;
		for (int k = 0; k < C_N; k++)
			if (l->same[k] == l->same[i] && l->base[k])
				cg->ctrl_dir[k] = idx;
	}
	return 0;
}

static void sf_close_all(struct rmon_cgroup *cg);

static void cg_reset(struct rmon_cgroup *cg)
{
	sf_close_all(cg);
	for (int i = 0; i < C_N; i++) {
		free(cg->dirs[i]);
		cg->dirs[i] = NULL;
		cg->ctrl_dir[i] = -1;
	}
	cg->ndirs = 0;
}

struct rmon_cgroup *rmon_cgroup_create(const struct rmon_cgroup_opts *opts, int *err)
{
	struct rmon_cgroup_opts o = {0};
	if (opts)
		o = *opts;
	pid_t owner = o.owner ? o.owner : getpid();
	struct rmon_cgroup *cg = xcalloc(1, sizeof *cg);
	cg->mem_fd = -1;
	for (int i = 0; i < SF_N; i++)
		cg->sfd[i] = SF_UNOPENED;
	for (int i = 0; i < C_N; i++) {
		cg->ctrl_dir[i] = -1;
		cg->procs_fd[i] = -1;
		cg->dir_fd[i] = -1;
	}
	cg->last_mem = cg->last_cpu = cg->last_pids = RMON_CG_UNSET;
	cg->name = group_name(&o, owner);
	cg->key_root = xstrdup(o.root ? o.root : RMON_CG_DEFAULT_ROOT);
	cg->key_psc = xstrdup(o.proc_self_cgroup);
	cg->key_want = o.controllers;
	cg->poolable = o.name == NULL;
	int e = 0;
	/* A parent that vanished (ENOENT) since the layout was cached: discover it again once. */
	for (int attempt = 0; attempt < 2; attempt++) {
		struct rmon_cg_layout *l =
		    rmon_cg_layout_lock(o.root, o.proc_self_cgroup, attempt > 0, &e);
		if (!l)
			break;
		cg->version = l->version;
		e = l->version == RMON_CG_V2
		        ? create_v2(cg, &o, l, owner, o.controllers)
		        : create_v1(cg, &o, l, owner, o.controllers, attempt > 0);
		rmon_cg_layout_unlock();
		if (e != -ENOENT)
			break;
		rmon_cgroup_destroy(cg, 0);
		cg_reset(cg);
	}
	if (e < 0) {
		rmon_cgroup_destroy(cg, 0);
		rmon_cgroup_delete(cg);
		*err = e;
		return NULL;
	}
	debug(D_RMON, "cgroup: created %s (v%d, %d directories)", cg->dirs[cg->ctrl_dir[C_MEMORY]],
	      (int)cg->version, cg->ndirs);
	return cg;
}

enum rmon_cg_version rmon_cgroup_version(const struct rmon_cgroup *cg)
{
	return cg ? cg->version : RMON_CG_NONE;
}

const char *rmon_cgroup_name(const struct rmon_cgroup *cg)
{
	return cg->name;
}

const char *rmon_cg_dir(const struct rmon_cgroup *cg, int c)
{
	return cg->ctrl_dir[c] >= 0 ? cg->dirs[cg->ctrl_dir[c]] : NULL;
}

const char *rmon_cgroup_path(const struct rmon_cgroup *cg)
{
	return cdir(cg, C_MEMORY);
}

int rmon_cgroup_open_procs(struct rmon_cgroup *cg, int *fds, int max)
{
	int n = 0;
	for (int i = 0; i < cg->ndirs && n < max; i++) {
		if (cg->procs_fd[i] < 0) {
			char *p = path_join(cg->dirs[i], "cgroup.procs");
			cg->procs_fd[i] = open(p, O_WRONLY | O_CLOEXEC);
			int e = -errno;
			free(p);
			if (cg->procs_fd[i] < 0)
				return e;
		}
		fds[n++] = cg->procs_fd[i];
	}
	return n;
}

int rmon_cgroup_add_pid(struct rmon_cgroup *cg, pid_t pid)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%ld", (long)pid);
	for (int i = 0; i < cg->ndirs; i++) {
		int r = write_in(cg->dirs[i], "cgroup.procs", buf);
		if (r < 0)
			return r;
	}
	return 0;
}

static int set_memory(struct rmon_cgroup *cg, int64_t bytes, int pause);

int rmon_cgroup_set_memory(struct rmon_cgroup *cg, int64_t bytes, int pause)
{
	cg->changed |= RMON_CG_CHANGED_MEM;
	cg->set_now |= RMON_CG_CHANGED_MEM;
	if (bytes < 0)
		bytes = -1;
	pause = pause && bytes >= 0;
	if (bytes == cg->last_mem && pause == cg->last_mem_pause)
		return 0;
	cg->last_mem = RMON_CG_UNSET;
	int r = set_memory(cg, bytes, pause);
	if (r == 0) {
		cg->last_mem = bytes;
		cg->last_mem_pause = pause;
	}
	return r;
}

static int set_memory(struct rmon_cgroup *cg, int64_t bytes, int pause)
{
	const char *d = cdir(cg, C_MEMORY);
	char val[32];
	int r;
	if (cg->version == RMON_CG_V2) {
		if (bytes < 0) {
			r = write_in(d, "memory.max", "max");
			write_in(d, "memory.high", "max");
			if (file_in(d, "memory.swap.max"))
				write_in(d, "memory.swap.max", "max");
			return r;
		}
		int64_t margin = bytes / 20;
		if (margin < (16 << 20))
			margin = 16 << 20;
		snprintf(val, sizeof val, "%lld", (long long)(pause ? bytes + margin : bytes));
		r = write_in(d, "memory.max", val);
		if (r < 0)
			return r;
		if (pause)
			snprintf(val, sizeof val, "%lld", (long long)bytes);
		else
			snprintf(val, sizeof val, "max");
		r = write_in(d, "memory.high", val);
		if (file_in(d, "memory.swap.max"))
			write_in(d, "memory.swap.max", "0");
		if (file_in(d, "memory.oom.group"))
			write_in(d, "memory.oom.group", "1");
		return r;
	}
	if (bytes < 0)
		snprintf(val, sizeof val, "-1");
	else
		snprintf(val, sizeof val, "%lld", (long long)bytes);
	int has_memsw = file_in(d, "memory.memsw.limit_in_bytes");
	/* memsw must stay >= the memory limit: raise memsw first, lower it last. */
	if (bytes < 0 && has_memsw)
		write_in(d, "memory.memsw.limit_in_bytes", val);
	r = write_in(d, "memory.limit_in_bytes", val);
	if (r == -EINVAL && has_memsw) {
		write_in(d, "memory.memsw.limit_in_bytes", val);
		r = write_in(d, "memory.limit_in_bytes", val);
	}
	if (r < 0)
		return r;
	if (has_memsw && bytes >= 0)
		write_in(d, "memory.memsw.limit_in_bytes", val);
	write_in(d, "memory.oom_control", pause && bytes >= 0 ? "1" : "0");
	return 0;
}

static int set_cpu(struct rmon_cgroup *cg, const char *d, long long quota);

int rmon_cgroup_set_cpu(struct rmon_cgroup *cg, double cores)
{
	const char *d = cdir(cg, C_CPU);
	if (!d)
		return HTC_EUNSUP;
	cg->changed |= RMON_CG_CHANGED_CPU;
	cg->set_now |= RMON_CG_CHANGED_CPU;
	long long quota = cores > 0 ? (long long)(cores * CFS_PERIOD + 0.5) : -1;
	if (quota >= 0 && quota < 1000)
		quota = 1000;
	if (quota == cg->last_cpu)
		return 0;
	cg->last_cpu = RMON_CG_UNSET;
	int r = set_cpu(cg, d, quota);
	if (r == 0)
		cg->last_cpu = quota;
	return r;
}

static int set_cpu(struct rmon_cgroup *cg, const char *d, long long quota)
{
	char val[64];
	if (cg->version == RMON_CG_V2) {
		if (quota < 0)
			snprintf(val, sizeof val, "max %d", CFS_PERIOD);
		else
			snprintf(val, sizeof val, "%lld %d", quota, CFS_PERIOD);
		return write_in(d, "cpu.max", val);
	}
	snprintf(val, sizeof val, "%d", CFS_PERIOD);
	int r = write_in(d, "cpu.cfs_period_us", val);
	if (r < 0)
		return r;
	snprintf(val, sizeof val, "%lld", quota);
	return write_in(d, "cpu.cfs_quota_us", val);
}

int rmon_cgroup_set_cpuset(struct rmon_cgroup *cg, const char *cpus)
{
	const char *d = cdir(cg, C_CPUSET);
	if (!d)
		return HTC_EUNSUP;
	return write_in(d, "cpuset.cpus", cpus);
}

int rmon_cgroup_set_pids(struct rmon_cgroup *cg, int64_t max)
{
	const char *d = cdir(cg, C_PIDS);
	if (!d)
		return HTC_EUNSUP;
	cg->changed |= RMON_CG_CHANGED_PIDS;
	cg->set_now |= RMON_CG_CHANGED_PIDS;
	if (max < 0)
		max = -1;
	if (max == cg->last_pids)
		return 0;
	cg->last_pids = RMON_CG_UNSET;
	char val[32];
	if (max < 0)
		snprintf(val, sizeof val, "max");
	else
		snprintf(val, sizeof val, "%lld", (long long)max);
	int r = write_in(d, "pids.max", val);
	if (r == 0)
		cg->last_pids = max;
	return r;
}

/* The descriptor of statistics file I (DIR/NAME; v1 blkio: the first of its names that
 * exists), opened on first use and kept; -1 when absent. */
int rmon_cg_sf_fd(struct rmon_cgroup *cg, int i, const char *dir, const char *name)
{
	if (cg->sfd[i] != SF_UNOPENED)
		return cg->sfd[i];
	cg->sfd[i] = -1;
	if (!dir)
		return -1;
	static const char *const blkio[] = {"blkio.throttle.io_service_bytes_recursive",
	                                    "blkio.throttle.io_service_bytes",
	                                    "blkio.io_service_bytes_recursive"};
	int v1_io = i == SF_IO && cg->version == RMON_CG_V1;
	for (size_t k = 0; k < (v1_io ? sizeof blkio / sizeof *blkio : 1); k++) {
		char *p = path_join(dir, v1_io ? blkio[k] : name);
		/* The peak is reset through its descriptor when a pooled group is reused. */
		int fd = i == SF_PEAK ? open(p, O_RDWR | O_CLOEXEC) : -1;
		if (fd < 0)
			fd = open(p, O_RDONLY | O_CLOEXEC);
		free(p);
		if (fd >= 0) {
			cg->sfd[i] = fd;
			break;
		}
	}
	return cg->sfd[i];
}

ssize_t rmon_cg_sf_read(struct rmon_cgroup *cg, int i, const char *dir, const char *name, char *buf,
                        size_t size)
{
	int fd = sf_fd(cg, i, dir, name);
	if (fd < 0)
		return -ENOENT;
	size_t len = 0;
	while (len + 1 < size) {
		ssize_t r = pread(fd, buf + len, size - 1 - len, (off_t)len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		/* A short read is the end: cgroup files (seq_file) fill the buffer as far as
		 * they can, and the fake files of the tests are small regular files. */
		if ((size_t)r < size - 1 - (len - (size_t)r))
			break;
	}
	buf[len] = 0;
	return (ssize_t)len;
}

static int64_t sf_int(struct rmon_cgroup *cg, int i, const char *dir, const char *name)
{
	char buf[64];
	if (sf_read(cg, i, dir, name, buf, sizeof buf) <= 0)
		return -1;
	return parse_int(buf);
}

/* Closes every descriptor the group keeps: statistics files, cgroup.procs, directories. */
static void sf_close_all(struct rmon_cgroup *cg)
{
	for (int i = 0; i < SF_N; i++) {
		if (cg->sfd[i] >= 0)
			close(cg->sfd[i]);
		cg->sfd[i] = SF_UNOPENED;
	}
	for (int i = 0; i < C_N; i++) {
		if (cg->procs_fd[i] >= 0)
			close(cg->procs_fd[i]);
		cg->procs_fd[i] = -1;
		if (cg->dir_fd[i] >= 0)
			close(cg->dir_fd[i]);
		cg->dir_fd[i] = -1;
	}
}

int rmon_cgroup_memory_fd(struct rmon_cgroup *cg)
{
	if (cg->mem_fd >= 0)
		return cg->mem_fd;
	const char *d = cdir(cg, C_MEMORY);
	int r;
	if (cg->version == RMON_CG_V2) {
		int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (fd < 0)
			return -errno;
		char *p = path_join(d, "memory.events");
		if (inotify_add_watch(fd, p, IN_MODIFY) < 0) {
			r = -errno;
			free(p);
			close(fd);
			return r;
		}
		free(p);
		cg->mem_fd = fd;
		return fd;
	}
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0)
		return -errno;
	/* memory.oom_control stays open anyway (statistics): the event is registered on it. */
	int ofd = sf_fd(cg, SF_OOM, d, "memory.oom_control");
	if (ofd < 0) {
		close(efd);
		return -ENOENT;
	}
	char val[64];
	snprintf(val, sizeof val, "%d %d", efd, ofd);
	r = write_in(d, "cgroup.event_control", val);
	if (r < 0) {
		close(efd);
		return r;
	}
	cg->mem_fd = efd;
	return efd;
}

/* Sums the Read and Write lines of a v1 blkio io_service_bytes file. */
static void blkio_v1(struct rmon_cgroup *cg, const char *d, int64_t *rd, int64_t *wr)
{
	char buf[16384];
	if (sf_read(cg, SF_IO, d, NULL, buf, sizeof buf) < 0)
		return;
	int64_t r = 0, w = 0;
	char *save = NULL;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char dev[64], op[32];
		long long v;
		if (sscanf(l, "%63s %31s %lld", dev, op, &v) != 3)
			continue;
		if (strcmp(op, "Read") == 0)
			r += v;
		else if (strcmp(op, "Write") == 0)
			w += v;
	}
	*rd = r;
	*wr = w;
}

/* Sums rbytes= and wbytes= over the devices of a v2 io.stat. */
static void io_v2(struct rmon_cgroup *cg, const char *d, int64_t *rd, int64_t *wr)
{
	char buf[16384];
	if (sf_read(cg, SF_IO, d, "io.stat", buf, sizeof buf) < 0)
		return;
	int64_t r = 0, w = 0;
	for (char *p = buf; (p = strstr(p, "bytes=")) != NULL; p += 6) {
		if (p == buf)
			continue;
		long long v = strtoll(p + 6, NULL, 10);
		if (p[-1] == 'r')
			r += v;
		else if (p[-1] == 'w')
			w += v;
	}
	*rd = r;
	*wr = w;
}

static void stats_v2(struct rmon_cgroup *cg, struct rmon_cg_stats *st, unsigned what)
{
	const char *m = cdir(cg, C_MEMORY);
	const char *d;
	char buf[8192];
	if (what & (RMON_CGS_MEMORY | RMON_CGS_USAGE)) {
		st->mem_current = sf_int(cg, SF_CUR, m, "memory.current");
		if (st->mem_current > cg->max_seen)
			cg->max_seen = st->mem_current;
	}
	if (what & RMON_CGS_MEMORY) {
		st->mem_peak = sf_int(cg, SF_PEAK, m, "memory.peak");
		if (st->mem_peak < 0 || st->mem_peak < cg->max_seen)
			st->mem_peak = cg->max_seen > 0 ? cg->max_seen : st->mem_peak;
		if (sf_read(cg, SF_STAT, m, "memory.stat", buf, sizeof buf) > 0) {
			st->mem_cache = keyed_value(buf, "file");
			st->mem_anon = keyed_value(buf, "anon");
		}
	}
	if (what & RMON_CGS_LIMIT) {
		st->mem_limit = sf_int(cg, SF_LIMIT, m, "memory.high");
		if (st->mem_limit < 0)
			st->mem_limit = sf_int(cg, SF_LIMIT2, m, "memory.max");
	}
	if ((what & RMON_CGS_CPU) && sf_read(cg, SF_CPU, m, "cpu.stat", buf, sizeof buf) > 0) {
		st->cpu_ns = keyed_value(buf, "usage_usec");
		if (st->cpu_ns >= 0)
			st->cpu_ns *= 1000;
	}
	if ((what & RMON_CGS_PIDS) && (d = cdir(cg, C_PIDS)))
		st->pids_current = sf_int(cg, SF_PIDS, d, "pids.current");
	if ((what & RMON_CGS_IO) && (d = cdir(cg, C_BLKIO)))
		io_v2(cg, d, &st->io_read, &st->io_write);
	if ((what & RMON_CGS_OOM) && sf_read(cg, SF_OOM, m, "memory.events", buf, sizeof buf) > 0) {
		int64_t mx = keyed_value(buf, "max"), oom = keyed_value(buf, "oom");
		st->oom_events = (mx > 0 ? mx : 0) + (oom > 0 ? oom : 0);
		st->high_events = keyed_value(buf, "high");
		st->oom_kills = keyed_value(buf, "oom_kill");
	}
}

/* *V minus BASE, not below 0 (unknown, -1, stays so). */
static void minus_base(int64_t *v, int64_t base)
{
	if (*v >= 0 && base > 0)
		*v = *v > base ? *v - base : 0;
}

static void stats_raw(struct rmon_cgroup *cg, struct rmon_cg_stats *st, unsigned what);

int rmon_cgroup_stats_some(struct rmon_cgroup *cg, struct rmon_cg_stats *st, unsigned what)
{
	int64_t *f = (int64_t *)st;
	for (size_t i = 0; i < sizeof *st / sizeof(int64_t); i++)
		f[i] = -1;
	stats_raw(cg, st, what);
	/* A reused group (rmon_cgroup_pool.c): what the earlier tasks left is taken out. */
	minus_base(&st->mem_current, cg->base_mem);
	minus_base(&st->mem_peak, cg->base_mem);
	minus_base(&st->cpu_ns, cg->base_cpu_ns);
	minus_base(&st->oom_events, cg->base_oom_events);
	minus_base(&st->high_events, cg->base_high_events);
	minus_base(&st->oom_kills, cg->base_oom_kills);
	return 0;
}

/* 1 when the v1 group in directory M is charged to within 2% of its limit. under_oom stays
 * set for a moment after the limit was raised (until the kernel wakes the waiting tasks):
 * such a waiter is about to run on, not at the limit. */
static int stuck_at_limit_v1(struct rmon_cgroup *cg, const char *m)
{
	int64_t usage = sf_int(cg, SF_CUR, m, "memory.usage_in_bytes");
	int64_t limit = sf_int(cg, SF_LIMIT, m, "memory.limit_in_bytes");
	return usage < 0 || limit < 0 || usage >= limit - limit / 50;
}

static void stats_raw(struct rmon_cgroup *cg, struct rmon_cg_stats *st, unsigned what)
{
	if (cg->version == RMON_CG_V2) {
		stats_v2(cg, st, what);
		return;
	}
	const char *m = cdir(cg, C_MEMORY);
	const char *d;
	char buf[8192];
	if (what & (RMON_CGS_MEMORY | RMON_CGS_USAGE))
		st->mem_current = sf_int(cg, SF_CUR, m, "memory.usage_in_bytes");
	if (what & RMON_CGS_MEMORY) {
		st->mem_peak = sf_int(cg, SF_PEAK, m, "memory.max_usage_in_bytes");
		if (sf_read(cg, SF_STAT, m, "memory.stat", buf, sizeof buf) > 0) {
			st->mem_cache = keyed_value(buf, "total_cache");
			if (st->mem_cache < 0)
				st->mem_cache = keyed_value(buf, "cache");
			st->mem_anon = keyed_value(buf, "total_rss");
			if (st->mem_anon < 0)
				st->mem_anon = keyed_value(buf, "rss");
		}
	}
	if (what & RMON_CGS_LIMIT)
		st->mem_limit = sf_int(cg, SF_LIMIT, m, "memory.limit_in_bytes");
	if (what & RMON_CGS_OOM) {
		st->oom_events = sf_int(cg, SF_FAILCNT, m, "memory.failcnt");
		if (sf_read(cg, SF_OOM, m, "memory.oom_control", buf, sizeof buf) > 0) {
			st->under_oom = keyed_value(buf, "under_oom");
			st->oom_kills = keyed_value(buf, "oom_kill");
		}
		if (st->under_oom > 0 && !stuck_at_limit_v1(cg, m))
			st->under_oom = 0;
	}
	if ((what & RMON_CGS_CPU) && (d = cdir(cg, C_CPUACCT)))
		st->cpu_ns = sf_int(cg, SF_CPU, d, "cpuacct.usage");
	if ((what & RMON_CGS_PIDS) && (d = cdir(cg, C_PIDS)))
		st->pids_current = sf_int(cg, SF_PIDS, d, "pids.current");
	if ((what & RMON_CGS_IO) && (d = cdir(cg, C_BLKIO)))
		blkio_v1(cg, d, &st->io_read, &st->io_write);
}

int rmon_cgroup_stats(struct rmon_cgroup *cg, struct rmon_cg_stats *st)
{
	return rmon_cgroup_stats_some(cg, st, RMON_CGS_ALL);
}

/* How deep pids_of() and remove_tree() follow groups nested inside a task's group (a task
 * may itself run a monitor, which makes groups of its own below ours). */
#define NEST_DEPTH 8

/* 1 when directory DIR may hold nested groups: cgroupfs, tmpfs and most file systems count
 * a directory's subdirectories in its link count (2 + subdirectories); anything else (an
 * unreadable directory, a file system that does not count them) is walked to be safe. */
static int may_have_subdirs(const char *dir)
{
	struct stat st;
	return stat(dir, &st) != 0 || st.st_nlink != 2;
}

static void pids_push(pid_t **pids, size_t *n, size_t *cap, const char *num)
{
	VEC_PUSH(*pids, *n, *cap, (pid_t)strtol(num, NULL, 10));
}

/* Appends the processes of DIR and of the groups nested in it to *pids. */
static int pids_append(const char *dir, pid_t **pids, size_t *n, size_t *cap, int depth)
{
	char *p = path_join(dir, "cgroup.procs");
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	int e = -errno;
	free(p);
	if (fd < 0)
		return e;
	char buf[4096];
	char part[32]; /* a number cut by the end of a read */
	size_t plen = 0;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				if (plen + 1 < sizeof part)
					part[plen++] = buf[i];
			} else if (plen) {
				part[plen] = 0;
				plen = 0;
				pids_push(pids, n, cap, part);
			}
		}
	}
	if (plen) { /* the last number had no newline after it */
		part[plen] = 0;
		pids_push(pids, n, cap, part);
	}
	close(fd);
	DIR *d = depth < NEST_DEPTH && may_have_subdirs(dir) ? opendir(dir) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char *sub = path_join(dir, de->d_name);
		pids_append(sub, pids, n, cap, depth + 1);
		free(sub);
	}
	if (d)
		closedir(d);
	return 0;
}

/* Every process of the group in DIR, nested groups included. Caller frees *pids. */
static int pids_of(const char *dir, pid_t **pids, size_t *n)
{
	size_t cap = 0;
	*pids = NULL;
	*n = 0;
	return pids_append(dir, pids, n, &cap, 0);
}

int rmon_cg_dir_may_nest(struct rmon_cgroup *cg, int i)
{
	if (i < 0 || i >= cg->ndirs)
		return 1;
	if (cg->dir_fd[i] < 0)
		cg->dir_fd[i] = open(cg->dirs[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	/* A directory removed under us has no links left: "may nest" keeps it out of reuse. */
	return cg->dir_fd[i] < 0 || fstat(cg->dir_fd[i], &st) != 0 || st.st_nlink != 2;
}

int rmon_cg_pids_none(struct rmon_cgroup *cg)
{
	const char *d = cdir(cg, C_PIDS);
	return d && sf_int(cg, SF_PIDS, d, "pids.current") == 0 &&
	       !rmon_cg_dir_may_nest(cg, cg->ctrl_dir[C_MEMORY]);
}

int rmon_cgroup_pids(struct rmon_cgroup *cg, pid_t **pids, size_t *n)
{
	if (rmon_cg_pids_none(cg)) {
		*pids = NULL;
		*n = 0;
		return 0;
	}
	return pids_of(cdir(cg, C_MEMORY), pids, n);
}

int rmon_cgroup_is_empty(struct rmon_cgroup *cg)
{
	pid_t *p;
	size_t n;
	int r = rmon_cgroup_pids(cg, &p, &n);
	free(p);
	if (r < 0)
		return r;
	return n == 0;
}

static int signal_dir(const char *dir, int sig)
{
	pid_t *p;
	size_t n;
	if (pids_of(dir, &p, &n) < 0)
		return 0;
	int count = 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] > 0 && kill(p[i], sig) == 0)
			count++;
	free(p);
	return count;
}

int rmon_cgroup_signal(struct rmon_cgroup *cg, int sig)
{
	return signal_dir(cdir(cg, C_MEMORY), sig);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* v1 freezer: freeze DIR and wait (briefly) until the kernel says FROZEN. */
static void freeze_v1(const char *dir, int on)
{
	write_in(dir, "freezer.state", on ? "FROZEN" : "THAWED");
	if (!on)
		return;
	for (int i = 0; i < 20; i++) {
		char buf[32];
		if (read_in(dir, "freezer.state", buf, sizeof buf) <= 0)
			return;
		if (strncmp(buf, "FROZEN", 6) == 0)
			return;
		sleep_ms(1);
	}
}

/* Kills every process of the group found in DIR (one hierarchy); 0 when empty. */
int rmon_cg_kill_dir(enum rmon_cg_version v, const char *dir, const char *freezer, int wait_ms)
{
	int64_t deadline = time_monotonic_us() + (int64_t)wait_ms * 1000;
	int used_kill = 0, round = 0;
	for (;;) {
		pid_t *p;
		size_t n;
		if (pids_of(dir, &p, &n) < 0)
			return 0; /* gone */
		if (n == 0) {
			free(p);
			return 0;
		}
		if (v == RMON_CG_V2 && !used_kill && file_in(dir, "cgroup.kill")) {
			used_kill = write_in(dir, "cgroup.kill", "1") == 0;
		}
		if (!used_kill) {
			/* First round at once (a task waiting at its memory limit may take a
			 * while to freeze); later rounds freeze first so that nothing forks
			 * between reading the list and the kills. */
			if (freezer && round > 0)
				freeze_v1(freezer, 1);
			signal_dir(dir, SIGKILL);
			if (freezer && round > 0)
				freeze_v1(freezer, 0);
		}
		round++;
		free(p);
		if (time_monotonic_us() >= deadline)
			break;
		sleep_ms(1);
	}
	pid_t *p;
	size_t n;
	if (pids_of(dir, &p, &n) < 0)
		return 0;
	free(p);
	return n == 0 ? 0 : -EBUSY;
}

int rmon_cgroup_kill_all(struct rmon_cgroup *cg, int wait_ms)
{
	if (rmon_cg_pids_none(cg))
		return 0;
	const char *fz = cg->version == RMON_CG_V1 ? cdir(cg, C_FREEZER) : NULL;
	int r = rmon_cg_kill_dir(cg->version, cdir(cg, C_MEMORY), fz, wait_ms);
	/* Processes that were never moved into the memory group (should not happen) are
	 * found through the other hierarchies. */
	for (int i = 0; i < cg->ndirs; i++)
		if (cg->dirs[i] != cdir(cg, C_MEMORY))
			signal_dir(cg->dirs[i], SIGKILL);
	return r;
}

static int rmdir_retry(const char *dir, int wait_ms)
{
	int64_t deadline = time_monotonic_us() + (int64_t)wait_ms * 1000;
	for (;;) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		int e = -errno;
		if (e != -EBUSY || time_monotonic_us() >= deadline)
			return e;
		sleep_ms(2);
	}
}

/* Removes DIR after the groups nested in it, deepest first. The usual group has none: it
 * is removed at once, and only a refusal makes us look inside. */
static int remove_tree_at(const char *dir, int wait_ms, int depth)
{
	if (rmdir(dir) == 0 || errno == ENOENT)
		return 0;
	if (errno != EBUSY && errno != ENOTEMPTY)
		return -errno;
	DIR *d = depth < NEST_DEPTH ? opendir(dir) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char *sub = path_join(dir, de->d_name);
		remove_tree_at(sub, wait_ms, depth + 1);
		free(sub);
	}
	if (d)
		closedir(d);
	return rmdir_retry(dir, wait_ms);
}

int rmon_cg_remove_tree(const char *dir, int wait_ms)
{
	return remove_tree_at(dir, wait_ms, 0);
}

int rmon_cgroup_destroy(struct rmon_cgroup *cg, int wait_ms)
{
	if (!cg)
		return 0;
	if (cg->mem_fd >= 0) {
		close(cg->mem_fd);
		cg->mem_fd = -1;
	}
	sf_close_all(cg);
	int first = 0;
	for (int i = 0; i < cg->ndirs; i++) {
		if (!cg->dirs[i])
			continue;
		int r = rmon_cg_remove_tree(cg->dirs[i], wait_ms);
		if (r < 0) {
			debug(D_RMON, "cgroup: cannot remove %s: %s", cg->dirs[i], htc_strerror(r));
			if (!first)
				first = r;
		}
	}
	return first;
}

void rmon_cgroup_delete(struct rmon_cgroup *cg)
{
	if (!cg)
		return;
	if (cg->mem_fd >= 0)
		close(cg->mem_fd);
	sf_close_all(cg);
	for (int i = 0; i < C_N; i++)
		free(cg->dirs[i]);
	free(cg->name);
	free(cg->key_root);
	free(cg->key_psc);
	free(cg);
}
