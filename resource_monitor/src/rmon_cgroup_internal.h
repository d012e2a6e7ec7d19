/* rmon_cgroup_internal.h: what rmon_cgroup.c and rmon_cgroup_layout.c share (internal to the
 * cgroup backend): the controller indices, small file helpers, and the per-process cache of
 * the cgroup layout (mounts, our own group, the parent "htc" groups), so that the discovery is
 * done once per process and not once per task. */
#ifndef HTC_RMON_CGROUP_INTERNAL_H
#define HTC_RMON_CGROUP_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

#include "rmon_cgroup.h"

#define RMON_CG_DEFAULT_ROOT "/sys/fs/cgroup"
#define RMON_CG_PARENT       "htc"

enum { C_MEMORY, C_CPU, C_CPUACCT, C_PIDS, C_CPUSET, C_FREEZER, C_BLKIO, C_N };
extern const char *const rmon_cg_ctrl_names[C_N];

/* Size of the cached controller lists of a v2 layout. */
#define RMON_CG_LIST 512

/* The layout of cgroups under one root as seen by this process. Entries live in a list owned
 * by rmon_cgroup_layout.c and may be changed only while the cache is locked. */
struct rmon_cg_layout {
	struct rmon_cg_layout *next;
	char *root, *psc; /* the key: root and /proc/self/cgroup file (NULL = the real one) */
	enum rmon_cg_version version;
	/* v1, per controller: our own group in the hierarchy, the parent "htc" beneath it
	 * (NULL when the hierarchy is not usable), the first controller sharing the same
	 * hierarchy (co-mounted, e.g. cpu,cpuacct; itself when alone), and whether "htc"
	 * is known to exist (cpuset: with its cpus and mems filled). */
	char *owndir[C_N], *base[C_N];
	int same[C_N];
	int base_ok[C_N];
	/* v2: our own group and "htc", the controllers available in each and those enabled
	 * for their children (as far as we know: what we read once and what we enabled). */
	char *own2, *base2;
	int base2_ok;
	char own_avail[RMON_CG_LIST], own_enabled[RMON_CG_LIST];
	char base_avail[RMON_CG_LIST], base_enabled[RMON_CG_LIST];
};

/* Locks the cache and returns the layout of ROOT (NULL = /sys/fs/cgroup) seen through PSC,
 * discovering it when it is not cached or REFRESH is set. Returns NULL with *ERR set
 * (HTC_EUNSUP when no usable layout) and the cache unlocked; otherwise the caller uses the
 * layout and then calls rmon_cg_layout_unlock(). Only usable layouts are cached. */
struct rmon_cg_layout *rmon_cg_layout_lock(const char *root, const char *psc, int refresh,
                                           int *err);
void rmon_cg_layout_unlock(void);

/* File helpers: DIR/FILE as a path. */
int rmon_cg_write_in(const char *dir, const char *file, const char *text);
ssize_t rmon_cg_read_in(const char *dir, const char *file, char *buf, size_t size);
/* 1 if WORD is one of the blank-separated words of LIST. */
int rmon_cg_has_word(const char *list, const char *word);
int rmon_cg_file_in(const char *dir, const char *file);
int rmon_cg_is_dir(const char *p);
/* mkdir; with EXIST_OK an existing directory is fine. 0 or -errno. */
int rmon_cg_make_dir(const char *p, int exist_ok);
/* v1 cpuset: copies cpuset.cpus and cpuset.mems of PARENT into DIR where DIR's are empty. */
void rmon_cg_cpuset_inherit(const char *parent, const char *dir);

#endif
