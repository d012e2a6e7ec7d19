/* rmon_cgroup.c: cgroup v1 and v2 backend of the resource monitor (see rmon_cgroup.h).
 * Layout: <hierarchy>/<our own cgroup>/htc/htc.<ownerpid>.<serial>, in every v1 hierarchy we
 * use (memory required; cpu, cpuacct, pids, cpuset, freezer, blkio when mounted) or once in
 * the v2 unified tree, where "htc" has no processes and enables the controllers for its
 * children in its cgroup.subtree_control (the no-internal-processes rule). */
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
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

#define DEFAULT_ROOT "/sys/fs/cgroup"
#define PARENT_NAME  "htc"
#define CFS_PERIOD   100000

enum { C_MEMORY, C_CPU, C_CPUACCT, C_PIDS, C_CPUSET, C_FREEZER, C_BLKIO, C_N };
static const char *const ctrl_names[C_N] = {"memory", "cpu",     "cpuacct", "pids",
                                            "cpuset", "freezer", "blkio"};

struct rmon_cgroup {
	enum rmon_cg_version version;
	char *name;
	char *dirs[C_N]; /* distinct group directories (v2: one) */
	int ndirs;
	int ctrl_dir[C_N]; /* index into dirs per controller, -1 when not available */
	int mem_fd;        /* eventfd (v1) or inotify (v2); -1 until asked */
	int oom_ctl_fd;    /* v1: memory.oom_control kept open for the eventfd */
	int64_t max_seen;  /* v2 without memory.peak: highest memory.current read */
};

static unsigned serial_counter;

ssize_t rmon_read_file(const char *path, char *buf, size_t size)
{
	if (size == 0)
		return -EINVAL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len + 1 < size) {
		ssize_t r = read(fd, buf + len, size - 1 - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = 0;
	close(fd);
	return (ssize_t)len;
}

int rmon_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text);
	ssize_t w = write(fd, text, n);
	int e = 0;
	if (w < 0)
		e = -errno;
	else if ((size_t)w != n)
		e = -EIO;
	close(fd);
	return e;
}

static int write_in(const char *dir, const char *file, const char *text)
{
	char *p = path_join(dir, file);
	int r = rmon_write_file(p, text);
	debug(D_RMON, "cgroup: %s <- %s: %s", p, text, r ? htc_strerror(r) : "ok");
	free(p);
	return r;
}

static ssize_t read_in(const char *dir, const char *file, char *buf, size_t size)
{
	char *p = path_join(dir, file);
	ssize_t r = rmon_read_file(p, buf, size);
	free(p);
	return r;
}

/* Reads a file holding one integer (or "max", given as -1). */
static int64_t read_int_in(const char *dir, const char *file)
{
	char buf[64];
	if (read_in(dir, file, buf, sizeof buf) <= 0)
		return -1;
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

static int64_t keyed_in(const char *dir, const char *file, const char *key)
{
	char buf[8192];
	if (read_in(dir, file, buf, sizeof buf) <= 0)
		return -1;
	return keyed_value(buf, key);
}

/* 1 if WORD is one of the space-separated words of LIST. */
static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;
	while ((p = strstr(p, word)) != NULL) {
		int start_ok = p == list || p[-1] == ' ' || p[-1] == '\n' || p[-1] == '\t';
		char c = p[n];
		if (start_ok && (c == 0 || c == ' ' || c == '\n' || c == '\t'))
			return 1;
		p += n;
	}
	return 0;
}

/* The path of our own cgroup for controller CTRL (v1) or of the unified hierarchy (CTRL
 * NULL), from a /proc/self/cgroup style file. Caller frees; NULL when absent. */
static char *self_path(const char *file, const char *ctrl)
{
	char buf[8192];
	if (rmon_read_file(file ? file : "/proc/self/cgroup", buf, sizeof buf) < 0)
		return NULL;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':');
		if (!c1)
			continue;
		char *c2 = strchr(c1 + 1, ':');
		if (!c2)
			continue;
		*c2 = 0;
		const char *list = c1 + 1;
		const char *path = c2 + 1;
		if (!ctrl) {
			if (strncmp(line, "0:", 2) == 0 && *list == 0)
				return xstrdup(path);
			continue;
		}
		char *lc = xstrdup(list);
		char *s2 = NULL;
		int found = 0;
		for (char *w = strtok_r(lc, ",", &s2); w; w = strtok_r(NULL, ",", &s2))
			if (strcmp(w, ctrl) == 0)
				found = 1;
		free(lc);
		if (found)
			return xstrdup(path);
	}
	return NULL;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int file_in(const char *dir, const char *file)
{
	char *p = path_join(dir, file);
	int r = access(p, F_OK) == 0;
	free(p);
	return r;
}

enum rmon_cg_version rmon_cgroup_detect(const char *root)
{
	if (!root)
		root = DEFAULT_ROOT;
	char buf[512];
	if (read_in(root, "cgroup.controllers", buf, sizeof buf) >= 0 && has_word(buf, "memory"))
		return RMON_CG_V2;
	char *mem = path_join(root, "memory");
	int v1 = file_in(mem, "memory.limit_in_bytes");
	free(mem);
	return v1 ? RMON_CG_V1 : RMON_CG_NONE;
}

static int make_dir(const char *p, int exist_ok)
{
	if (mkdir(p, 0755) == 0)
		return 0;
	if (errno == EEXIST && exist_ok && is_dir(p))
		return 0;
	return -errno;
}

/* v1 cpuset: a new group has no CPUs and no memory nodes; copy them from PARENT when empty. */
static void cpuset_inherit(const char *parent, const char *dir)
{
	static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
	for (int i = 0; i < 2; i++) {
		char cur[1024], up[1024];
		if (read_in(dir, files[i], cur, sizeof cur) < 0)
			continue;
		str_trim(cur);
		if (*cur)
			continue;
		if (read_in(parent, files[i], up, sizeof up) <= 0)
			continue;
		str_trim(up);
		write_in(dir, files[i], up);
	}
}

static char *group_name(const struct rmon_cgroup_opts *o, pid_t owner)
{
	if (o->name)
		return xstrdup(o->name);
	unsigned s = __atomic_add_fetch(&serial_counter, 1, __ATOMIC_RELAXED);
	return xasprintf("htc.%ld.%u", (long)owner, s);
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

/* The v2 controllers a task group wants, passed down from each parent. */
static const char *const v2_wanted[] = {"cpu", "cpuset", "io", "memory", "pids"};

/* Enables in DIR's cgroup.subtree_control every wanted controller that DIR
 * has (AVAIL) and has not enabled yet (ENABLED). If the kernel refuses the
 * set, tries them one at a time: some controller may be refused while memory
 * is fine. Failures are left for the caller's later check. */
static void enable_controllers(const char *dir, const char *avail, const char *enabled)
{
	char add[256] = "";
	size_t len = 0;
	for (size_t i = 0; i < sizeof v2_wanted / sizeof *v2_wanted; i++)
		if (has_word(avail, v2_wanted[i]) && !has_word(enabled, v2_wanted[i]))
			len += (size_t)snprintf(add + len, sizeof add - len, "%s+%s",
			                        len ? " " : "", v2_wanted[i]);
	if (!len || write_in(dir, "cgroup.subtree_control", add) == 0)
		return;
	for (size_t i = 0; i < sizeof v2_wanted / sizeof *v2_wanted; i++) {
		if (!has_word(avail, v2_wanted[i]) || has_word(enabled, v2_wanted[i]))
			continue;
		char one[32];
		snprintf(one, sizeof one, "+%s", v2_wanted[i]);
		write_in(dir, "cgroup.subtree_control", one);
	}
}

static int create_v2(struct rmon_cgroup *cg, const struct rmon_cgroup_opts *o, const char *root,
                     pid_t owner)
{
	char *own = self_path(o->proc_self_cgroup, NULL);
	if (!own)
		return HTC_EUNSUP;
	char *owndir = path_join(root, own);
	char *base = path_join(owndir, PARENT_NAME);
	int r = 0;
	char avail[512], enabled[512];

	/* Our own cgroup must pass the controllers down to "htc". */
	if (read_in(owndir, "cgroup.controllers", avail, sizeof avail) < 0 ||
	    read_in(owndir, "cgroup.subtree_control", enabled, sizeof enabled) < 0) {
		r = HTC_EUNSUP;
		goto out;
	}
	enable_controllers(owndir, avail, enabled);
	r = make_dir(base, 1);
	if (r < 0)
		goto out;
	if (read_in(base, "cgroup.controllers", avail, sizeof avail) < 0 ||
	    !has_word(avail, "memory")) {
		debug(D_RMON, "cgroup: no memory controller in %s (not delegated to us)", base);
		r = HTC_EUNSUP;
		goto out;
	}
	if (read_in(base, "cgroup.subtree_control", enabled, sizeof enabled) < 0)
		*enabled = 0;
	enable_controllers(base, avail, enabled);
	r = make_group(o, owner, base, &cg->name, &cg->dirs[0]);
	if (r < 0)
		goto out;
	cg->ndirs = 1;
	char ctl[512];
	if (read_in(cg->dirs[0], "cgroup.controllers", ctl, sizeof ctl) < 0 ||
	    !has_word(ctl, "memory")) {
		rmdir(cg->dirs[0]);
		r = HTC_EUNSUP;
		goto out;
	}
	cg->ctrl_dir[C_MEMORY] = 0;
	cg->ctrl_dir[C_CPUACCT] = 0; /* cpu.stat usage_usec is always there */
	cg->ctrl_dir[C_FREEZER] = file_in(cg->dirs[0], "cgroup.freeze") ? 0 : -1;
	cg->ctrl_dir[C_CPU] = has_word(ctl, "cpu") ? 0 : -1;
	cg->ctrl_dir[C_PIDS] = has_word(ctl, "pids") ? 0 : -1;
	cg->ctrl_dir[C_CPUSET] = has_word(ctl, "cpuset") ? 0 : -1;
	cg->ctrl_dir[C_BLKIO] = has_word(ctl, "io") ? 0 : -1;
out:
	free(own);
	free(owndir);
	free(base);
	return r;
}

/* The v1 hierarchy directory of controller I under ROOT and our path in it, or NULL. */
static char *v1_mount(const char *root, const struct rmon_cgroup_opts *o, int i, char **own)
{
	char *m = path_join(root, ctrl_names[i]);
	if (!is_dir(m) || !file_in(m, "cgroup.procs") ||
	    (i == C_MEMORY && !file_in(m, "memory.limit_in_bytes"))) {
		free(m);
		return NULL;
	}
	*own = self_path(o->proc_self_cgroup, ctrl_names[i]);
	if (!*own) {
		free(m);
		return NULL;
	}
	return m;
}

static int create_v1(struct rmon_cgroup *cg, const struct rmon_cgroup_opts *o, const char *root,
                     pid_t owner)
{
	char *real[C_N] = {0};
	int r = 0;
	for (int i = 0; i < C_N; i++) {
		char *own = NULL;
		char *m = v1_mount(root, o, i, &own);
		if (!m) {
			if (i == C_MEMORY) {
				r = HTC_EUNSUP;
				goto out;
			}
			continue;
		}
		char rp[PATH_MAX];
		const char *key = realpath(m, rp) ? rp : m;
		int shared = -1;
		for (int j = 0; j < cg->ndirs; j++)
			if (real[j] && strcmp(real[j], key) == 0)
				shared = j;
		if (shared >= 0) {
			cg->ctrl_dir[i] = shared;
			free(m);
			free(own);
			continue;
		}
		char *owndir = path_join(m, own);
		char *base = path_join(owndir, PARENT_NAME);
		int e = make_dir(base, 1);
		if (e == 0 && i == C_CPUSET)
			cpuset_inherit(owndir, base);
		char *dir = NULL;
		if (e == 0) {
			char *d = path_join(base, cg->name);
			e = make_dir(d, o->name != NULL);
			if (e == -EEXIST && i == C_MEMORY && !o->name) {
				/* The memory hierarchy picks the name; others follow it. */
				free(d);
				d = NULL;
				e = make_group(o, owner, base, &cg->name, &dir);
			} else if (e == 0) {
				dir = d;
			} else {
				free(d);
			}
		}
		if (e == 0 && i == C_CPUSET)
			cpuset_inherit(base, dir);
		free(owndir);
		free(base);
		free(own);
		free(m);
		if (e < 0) {
			debug(D_RMON, "cgroup: cannot create %s group: %s", ctrl_names[i],
			      htc_strerror(e));
			if (i == C_MEMORY) {
				r = e;
				goto out;
			}
			continue;
		}
		real[cg->ndirs] = xstrdup(key);
		cg->ctrl_dir[i] = cg->ndirs;
		cg->dirs[cg->ndirs++] = dir;
	}
out:
	for (int j = 0; j < C_N; j++)
		free(real[j]);
	return r;
}

struct rmon_cgroup *rmon_cgroup_create(const struct rmon_cgroup_opts *opts, int *err)
{
	struct rmon_cgroup_opts o = {0};
	if (opts)
		o = *opts;
	const char *root = o.root ? o.root : DEFAULT_ROOT;
	pid_t owner = o.owner ? o.owner : getpid();
	enum rmon_cg_version v = rmon_cgroup_detect(root);
	int e = 0;
	if (v == RMON_CG_NONE) {
		*err = HTC_EUNSUP;
		return NULL;
	}
	struct rmon_cgroup *cg = xcalloc(1, sizeof *cg);
	cg->version = v;
	cg->mem_fd = -1;
	cg->oom_ctl_fd = -1;
	for (int i = 0; i < C_N; i++)
		cg->ctrl_dir[i] = -1;
	cg->name = group_name(&o, owner);
	e = v == RMON_CG_V2 ? create_v2(cg, &o, root, owner) : create_v1(cg, &o, root, owner);
	if (e < 0) {
		rmon_cgroup_destroy(cg, 0);
		rmon_cgroup_delete(cg);
		*err = e;
		return NULL;
	}
	debug(D_RMON, "cgroup: created %s (v%d, %d directories)", cg->dirs[cg->ctrl_dir[C_MEMORY]],
	      (int)v, cg->ndirs);
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

static const char *cdir(const struct rmon_cgroup *cg, int c)
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
		char *p = path_join(cg->dirs[i], "cgroup.procs");
		int fd = open(p, O_WRONLY | O_CLOEXEC);
		int e = -errno;
		free(p);
		if (fd < 0) {
			while (n > 0)
				close(fds[--n]);
			return e;
		}
		fds[n++] = fd;
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

int rmon_cgroup_set_memory(struct rmon_cgroup *cg, int64_t bytes, int pause)
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
	r = write_in(d, "memory.limit_in_bytes", val);
	if (r == -EINVAL && has_memsw) {
		write_in(d, "memory.memsw.limit_in_bytes", val);
		r = write_in(d, "memory.limit_in_bytes", val);
	}
	if (r < 0)
		return r;
	if (has_memsw)
		write_in(d, "memory.memsw.limit_in_bytes", val);
	write_in(d, "memory.oom_control", pause && bytes >= 0 ? "1" : "0");
	return 0;
}

int rmon_cgroup_set_cpu(struct rmon_cgroup *cg, double cores)
{
	const char *d = cdir(cg, C_CPU);
	if (!d)
		return HTC_EUNSUP;
	char val[64];
	long long quota = cores > 0 ? (long long)(cores * CFS_PERIOD + 0.5) : -1;
	if (quota >= 0 && quota < 1000)
		quota = 1000;
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
	char val[32];
	if (max < 0)
		snprintf(val, sizeof val, "max");
	else
		snprintf(val, sizeof val, "%lld", (long long)max);
	return write_in(d, "pids.max", val);
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
	char *p = path_join(d, "memory.oom_control");
	int ofd = open(p, O_RDONLY | O_CLOEXEC);
	r = -errno;
	free(p);
	if (ofd < 0) {
		close(efd);
		return r;
	}
	char val[64];
	snprintf(val, sizeof val, "%d %d", efd, ofd);
	r = write_in(d, "cgroup.event_control", val);
	if (r < 0) {
		close(efd);
		close(ofd);
		return r;
	}
	cg->mem_fd = efd;
	cg->oom_ctl_fd = ofd;
	return efd;
}

/* Sums the Read and Write lines of a v1 blkio io_service_bytes file. */
static void blkio_v1(const char *d, int64_t *rd, int64_t *wr)
{
	static const char *const files[] = {"blkio.throttle.io_service_bytes_recursive",
	                                    "blkio.throttle.io_service_bytes",
	                                    "blkio.io_service_bytes_recursive"};
	char buf[16384];
	for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
		if (read_in(d, files[f], buf, sizeof buf) < 0)
			continue;
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
		return;
	}
}

/* Sums rbytes= and wbytes= over the devices of a v2 io.stat. */
static void io_v2(const char *d, int64_t *rd, int64_t *wr)
{
	char buf[16384];
	if (read_in(d, "io.stat", buf, sizeof buf) < 0)
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

int rmon_cgroup_stats(struct rmon_cgroup *cg, struct rmon_cg_stats *st)
{
	int64_t *f = (int64_t *)st;
	for (size_t i = 0; i < sizeof *st / sizeof(int64_t); i++)
		f[i] = -1;
	const char *m = cdir(cg, C_MEMORY);
	const char *d;
	if (cg->version == RMON_CG_V2) {
		char buf[8192];
		st->mem_current = read_int_in(m, "memory.current");
		if (st->mem_current > cg->max_seen)
			cg->max_seen = st->mem_current;
		st->mem_peak = read_int_in(m, "memory.peak");
		if (st->mem_peak < 0 || st->mem_peak < cg->max_seen)
			st->mem_peak = cg->max_seen > 0 ? cg->max_seen : st->mem_peak;
		if (read_in(m, "memory.stat", buf, sizeof buf) > 0) {
			st->mem_cache = keyed_value(buf, "file");
			st->mem_anon = keyed_value(buf, "anon");
		}
		st->mem_limit = read_int_in(m, "memory.high");
		if (st->mem_limit < 0)
			st->mem_limit = read_int_in(m, "memory.max");
		st->cpu_ns = keyed_in(m, "cpu.stat", "usage_usec");
		if (st->cpu_ns >= 0)
			st->cpu_ns *= 1000;
		if ((d = cdir(cg, C_PIDS)))
			st->pids_current = read_int_in(d, "pids.current");
		if ((d = cdir(cg, C_BLKIO)))
			io_v2(d, &st->io_read, &st->io_write);
		if (read_in(m, "memory.events", buf, sizeof buf) > 0) {
			int64_t mx = keyed_value(buf, "max"), oom = keyed_value(buf, "oom");
			st->oom_events = (mx > 0 ? mx : 0) + (oom > 0 ? oom : 0);
			st->high_events = keyed_value(buf, "high");
			st->oom_kills = keyed_value(buf, "oom_kill");
		}
		return 0;
	}
	char buf[8192];
	st->mem_current = read_int_in(m, "memory.usage_in_bytes");
	st->mem_peak = read_int_in(m, "memory.max_usage_in_bytes");
	if (read_in(m, "memory.stat", buf, sizeof buf) > 0) {
		st->mem_cache = keyed_value(buf, "total_cache");
		if (st->mem_cache < 0)
			st->mem_cache = keyed_value(buf, "cache");
		st->mem_anon = keyed_value(buf, "total_rss");
		if (st->mem_anon < 0)
			st->mem_anon = keyed_value(buf, "rss");
	}
	st->mem_limit = read_int_in(m, "memory.limit_in_bytes");
	st->oom_events = read_int_in(m, "memory.failcnt");
	if (read_in(m, "memory.oom_control", buf, sizeof buf) > 0) {
		st->under_oom = keyed_value(buf, "under_oom");
		st->oom_kills = keyed_value(buf, "oom_kill");
	}
	if ((d = cdir(cg, C_CPUACCT)))
		st->cpu_ns = read_int_in(d, "cpuacct.usage");
	if ((d = cdir(cg, C_PIDS)))
		st->pids_current = read_int_in(d, "pids.current");
	if ((d = cdir(cg, C_BLKIO)))
		blkio_v1(d, &st->io_read, &st->io_write);
	return 0;
}

/* How deep pids_of() and remove_tree() follow groups nested inside a task's group (a task
 * may itself run a monitor, which makes groups of its own below ours). */
#define NEST_DEPTH 8

/* Appends the processes of DIR and of the groups nested in it to *pids. */
static int pids_append(const char *dir, pid_t **pids, size_t *n, size_t *cap, int depth)
{
	char *p = path_join(dir, "cgroup.procs");
	FILE *f = fopen(p, "re");
	int e = -errno;
	free(p);
	if (!f)
		return e;
	long v;
	while (fscanf(f, "%ld", &v) == 1) {
		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 16;
			*pids = xrealloc(*pids, *cap * sizeof **pids);
		}
		(*pids)[(*n)++] = (pid_t)v;
	}
	fclose(f);
	DIR *d = depth < NEST_DEPTH ? opendir(dir) : NULL;
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

int rmon_cgroup_pids(struct rmon_cgroup *cg, pid_t **pids, size_t *n)
{
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
static int kill_dir(enum rmon_cg_version v, const char *dir, const char *freezer, int wait_ms)
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
	const char *fz = cg->version == RMON_CG_V1 ? cdir(cg, C_FREEZER) : NULL;
	int r = kill_dir(cg->version, cdir(cg, C_MEMORY), fz, wait_ms);
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

/* Removes DIR after the groups nested in it, deepest first. */
static int remove_tree(const char *dir, int wait_ms, int depth)
{
	DIR *d = depth < NEST_DEPTH ? opendir(dir) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char *sub = path_join(dir, de->d_name);
		remove_tree(sub, wait_ms, depth + 1);
		free(sub);
	}
	if (d)
		closedir(d);
	return rmdir_retry(dir, wait_ms);
}

int rmon_cgroup_destroy(struct rmon_cgroup *cg, int wait_ms)
{
	if (!cg)
		return 0;
	if (cg->mem_fd >= 0) {
		close(cg->mem_fd);
		cg->mem_fd = -1;
	}
	if (cg->oom_ctl_fd >= 0) {
		close(cg->oom_ctl_fd);
		cg->oom_ctl_fd = -1;
	}
	int first = 0;
	for (int i = 0; i < cg->ndirs; i++) {
		if (!cg->dirs[i])
			continue;
		int r = remove_tree(cg->dirs[i], wait_ms, 0);
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
	if (cg->oom_ctl_fd >= 0)
		close(cg->oom_ctl_fd);
	for (int i = 0; i < C_N; i++)
		free(cg->dirs[i]);
	free(cg->name);
	free(cg);
}

/* Parses "htc.<pid>.<serial>"; returns the pid or 0. */
static pid_t stale_owner(const char *name)
{
	if (strncmp(name, "htc.", 4) != 0)
		return 0;
	char *end;
	long pid = strtol(name + 4, &end, 10);
	if (end == name + 4 || *end != '.' || pid <= 0)
		return 0;
	char *end2;
	strtoul(end + 1, &end2, 10);
	if (end2 == end + 1 || *end2)
		return 0;
	return (pid_t)pid;
}

static int owner_dead(pid_t pid)
{
	if (pid == getpid())
		return 0;
	return kill(pid, 0) < 0 && errno == ESRCH;
}

/* Removes stale groups under BASE; returns how many were removed. */
static int cleanup_base(enum rmon_cg_version v, const char *base, const char *freezer_base)
{
	DIR *d = opendir(base);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	int removed = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		pid_t owner = stale_owner(de->d_name);
		if (!owner || !owner_dead(owner))
			continue;
		char *dir = path_join(base, de->d_name);
		char *fz = freezer_base ? path_join(freezer_base, de->d_name) : NULL;
		if (fz && !is_dir(fz)) {
			free(fz);
			fz = NULL;
		}
		kill_dir(v, dir, fz, 200);
		int r = remove_tree(dir, 200, 0);
		if (r == 0) {
			removed++;
			debug(D_RMON, "cgroup: removed stale %s", dir);
		} else {
			warn("cannot remove stale cgroup %s: %s", dir, htc_strerror(r));
		}
		free(dir);
		free(fz);
	}
	closedir(d);
	return removed;
}

int rmon_cgroup_cleanup_stale(const struct rmon_cgroup_opts *opts)
{
	struct rmon_cgroup_opts o = {0};
	if (opts)
		o = *opts;
	const char *root = o.root ? o.root : DEFAULT_ROOT;
	enum rmon_cg_version v = rmon_cgroup_detect(root);
	if (v == RMON_CG_NONE)
		return 0;
	if (v == RMON_CG_V2) {
		char *own = self_path(o.proc_self_cgroup, NULL);
		if (!own)
			return 0;
		char *owndir = path_join(root, own);
		char *base = path_join(owndir, PARENT_NAME);
		int r = cleanup_base(v, base, NULL);
		free(own);
		free(owndir);
		free(base);
		return r;
	}
	/* v1: the freezer hierarchy first kills; memory counts the groups. */
	char *bases[C_N] = {0};
	for (int i = 0; i < C_N; i++) {
		char *own = NULL;
		char *m = v1_mount(root, &o, i, &own);
		if (!m)
			continue;
		char *owndir = path_join(m, own);
		bases[i] = path_join(owndir, PARENT_NAME);
		free(owndir);
		free(own);
		free(m);
	}
	int removed = 0;
	int order[C_N] = {C_MEMORY, C_CPU, C_CPUACCT, C_PIDS, C_CPUSET, C_BLKIO, C_FREEZER};
	for (int k = 0; k < C_N; k++) {
		int i = order[k];
		if (!bases[i])
			continue;
		int dup = 0;
		for (int j = 0; j < k; j++)
			if (bases[order[j]] && strcmp(bases[order[j]], bases[i]) == 0)
				dup = 1;
		if (dup)
			continue;
		int r = cleanup_base(v, bases[i], i == C_FREEZER ? NULL : bases[C_FREEZER]);
		if (i == C_MEMORY)
			removed = r;
	}
	for (int i = 0; i < C_N; i++)
		free(bases[i]);
	return removed;
}
