/* rmon_cgroup_stale.c: names of task groups and the removal of groups whose owner is gone.
 *
 * A group is named htc.<owner pid>.<owner start>.<serial>: the owner's start time (clock
 * ticks since boot, /proc/PID/stat) makes the name belong to one process, not to a pid. A
 * group left by a monitor killed with SIGKILL is stale once its owner is gone, also when the
 * pid was given to a later process since (pids wrap after pid_max, 32,768 by default, which a
 * busy machine reaches within minutes); without the start time such a group would look alive
 * for as long as the new process lives, and a new process with that pid would take the old
 * groups for its own. Names of the older form htc.<pid>.<serial> are still understood: they
 * are stale when the pid is gone or is this process (which never made such a name).
 *
 * With cgroup v1, a container runtime given our memory group as its cgroup parent (Docker's
 * cgroupfs driver, worker_docker.c) creates that path in every hierarchy, also in those where
 * our own groups are elsewhere. The cleanup also looks there, at the memory base's path in
 * every other mounted hierarchy, and removes only groups with our names whose owner is gone. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "rmon_cgroup_internal.h"
#include "rmon_proc.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

static pid_t self_pid;
static unsigned long long self_start;

unsigned long long rmon_cg_owner_start(pid_t owner)
{
	pid_t me = getpid();
	if (owner != me)
		return rmon_proc_start_ticks(owner);
	/* Read once per process (a forked child has another pid and reads its own). */
	if (__atomic_load_n(&self_pid, __ATOMIC_ACQUIRE) == me)
		return __atomic_load_n(&self_start, __ATOMIC_RELAXED);
	unsigned long long s = rmon_proc_start_ticks(me);
	__atomic_store_n(&self_start, s, __ATOMIC_RELAXED);
	__atomic_store_n(&self_pid, me, __ATOMIC_RELEASE);
	return s;
}

/* A decimal number of at most 20 digits at *P, which is moved past it; 0 when none. */
static int take_number(const char **p, unsigned long long *v)
{
	const char *s = *p;
	unsigned long long n = 0;
	int digits = 0;
	while (*s >= '0' && *s <= '9' && digits < 20) {
		n = n * 10 + (unsigned long long)(*s - '0');
		s++;
		digits++;
	}
	if (!digits)
		return 0;
	*p = s;
	*v = n;
	return 1;
}

/* Parses a group name htc.<pid>.<start>.<serial>, or the older htc.<pid>.<serial> (START
 * 0); 1 when NAME is one of ours. */
static int parse_name(const char *name, pid_t *pid, unsigned long long *start)
{
	if (strncmp(name, "htc.", 4) != 0)
		return 0;
	const char *p = name + 4;
	unsigned long long a, b, c;
	if (!take_number(&p, &a) || a == 0 || a > 0x7fffffff || *p++ != '.' || !take_number(&p, &b))
		return 0;
	*pid = (pid_t)a;
	*start = 0;
	if (!*p)
		return 1; /* htc.<pid>.<serial> */
	if (*p++ != '.' || !take_number(&p, &c) || *p)
		return 0;
	*start = b; /* htc.<pid>.<start>.<serial> */
	return 1;
}

/* Whether the process that made a group named after PID and START is gone. */
static int owner_gone(pid_t pid, unsigned long long start)
{
	if (pid == getpid())
		return start != rmon_cg_owner_start(pid);
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	if (start == 0)
		return 0;
	unsigned long long now = rmon_proc_start_ticks(pid);
	return now != 0 && now != start;
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
		pid_t owner;
		unsigned long long start;
		if (de->d_type != DT_DIR || !parse_name(de->d_name, &owner, &start) ||
		    !owner_gone(owner, start))
			continue;
		char *dir = path_join(base, de->d_name);
		char *fz = freezer_base ? path_join(freezer_base, de->d_name) : NULL;
		if (fz && !rmon_cg_is_dir(fz)) {
			free(fz);
			fz = NULL;
		}
		rmon_cg_kill_dir(v, dir, fz, 200);
		int r = rmon_cg_remove_tree(dir, 200);
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

/* v1: the memory base's path in every mounted hierarchy that is not one of BASES; a
 * NULL-terminated array, or NULL. */
static char **mirror_bases(const char *root, const char *mem_base, char *const *bases)
{
	char *mem_mount = path_join(root, rmon_cg_ctrl_names[C_MEMORY]);
	size_t ml = strlen(mem_mount);
	if (strncmp(mem_base, mem_mount, ml) != 0 || mem_base[ml] != '/') {
		free(mem_mount);
		return NULL;
	}
	const char *rel = mem_base + ml + 1;
	free(mem_mount);
	DIR *d = opendir(root);
	if (!d)
		return NULL;
	size_t n = 0, cap = 9; /* slots, the NULL that ends OUT included */
	char **out = xcalloc(cap, sizeof *out);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		/* co-mounted names (cpu,cpuacct) are symbolic links to a mount seen anyway */
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char *m = path_join(root, de->d_name);
		char *p = path_join(m, rel);
		free(m);
		int known = 0;
		for (int i = 0; i < C_N; i++)
			known |= bases[i] && strcmp(bases[i], p) == 0;
		if (known || !rmon_cg_is_dir(p)) {
			free(p);
			continue;
		}
		VEC_RESERVE(out, cap, n + 2);
		out[n++] = p;
		out[n] = NULL;
	}
	closedir(d);
	return out;
}

int rmon_cgroup_cleanup_stale(const struct rmon_cgroup_opts *opts)
{
	struct rmon_cgroup_opts o = {0};
	if (opts)
		o = *opts;
	int err = 0;
	struct rmon_cg_layout *l = rmon_cg_layout_lock(o.root, o.proc_self_cgroup, 0, &err);
	if (!l)
		return 0;
	enum rmon_cg_version v = l->version;
	/* Copies: the cleanup (slow, it kills) runs without the lock. */
	char *bases[C_N] = {0};
	char **mirrors = NULL;
	if (v == RMON_CG_V2) {
		bases[C_MEMORY] = xstrdup(l->base2);
	} else {
		for (int i = 0; i < C_N; i++)
			if (l->base[i] && l->same[i] == i)
				bases[i] = xstrdup(l->base[i]);
		mirrors = mirror_bases(l->root, l->base[C_MEMORY], bases);
	}
	rmon_cg_layout_unlock();
	int removed = 0;
	/* v1: the freezer hierarchy first kills; memory counts the groups. */
	int order[C_N] = {C_MEMORY, C_CPU, C_CPUACCT, C_PIDS, C_CPUSET, C_BLKIO, C_FREEZER};
	for (int k = 0; k < C_N; k++) {
		int i = order[k];
		if (!bases[i])
			continue;
		int r = cleanup_base(v, bases[i], i == C_FREEZER ? NULL : bases[C_FREEZER]);
		if (i == C_MEMORY)
			removed = r;
	}
	for (char **m = mirrors; m && *m; m++) {
		int r = cleanup_base(v, *m, NULL);
		if (r > 0)
			debug(D_RMON, "cgroup: %d stale groups removed under %s", r, *m);
		free(*m);
	}
	free(mirrors);
	for (int i = 0; i < C_N; i++)
		free(bases[i]);
	return removed;
}
