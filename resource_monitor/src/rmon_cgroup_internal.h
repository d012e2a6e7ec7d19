/* rmon_cgroup_internal.h: what rmon_cgroup.c, rmon_cgroup_layout.c, rmon_cgroup_pool.c and
 * rmon_cgroup_stale.c share (internal to the cgroup backend): the controller indices, the group
 * structure, small file helpers, killing and removing a group, group names, and the per-process
 * cache of the cgroup layout (mounts, our own group, the parent "htc" groups), so that the
 * discovery is done once per process and not once per task. */
#ifndef HTC_RMON_CGROUP_INTERNAL_H
#define HTC_RMON_CGROUP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rmon_cgroup.h"

#define RMON_CG_DEFAULT_ROOT "/sys/fs/cgroup"
#define RMON_CG_PARENT       "htc"

enum { C_MEMORY, C_CPU, C_CPUACCT, C_PIDS, C_CPUSET, C_FREEZER, C_BLKIO, C_N };
extern const char *const rmon_cg_ctrl_names[C_N];

/* Statistics files kept open (v1 name / v2 name). */
enum {
	SF_CUR,     /* memory.usage_in_bytes / memory.current */
	SF_PEAK,    /* memory.max_usage_in_bytes / memory.peak (read-write: reset by the pool) */
	SF_STAT,    /* memory.stat */
	SF_LIMIT,   /* memory.limit_in_bytes / memory.high */
	SF_LIMIT2,  /* - / memory.max */
	SF_FAILCNT, /* memory.failcnt / - */
	SF_OOM,     /* memory.oom_control / memory.events */
	SF_CPU,     /* cpuacct.usage / cpu.stat */
	SF_PIDS,    /* pids.current */
	SF_IO,      /* blkio.*io_service_bytes* / io.stat */
	SF_FREEZER, /* freezer.state / - */
	SF_N
};
#define SF_UNOPENED (-2)

/* Limits rmon_cgroup_set_* changed since the group was made (CHANGED) and since it was taken
 * for the current task (SET_NOW): rmon_cgroup_settle puts the others back to none. */
#define RMON_CG_CHANGED_MEM  0x1u
#define RMON_CG_CHANGED_CPU  0x2u
#define RMON_CG_CHANGED_PIDS 0x4u
#define RMON_CG_UNSET        INT64_MIN

struct rmon_cgroup {
	enum rmon_cg_version version;
	char *name;
	char *dirs[C_N]; /* distinct group directories (v2: one) */
	int ndirs;
	int ctrl_dir[C_N]; /* index into dirs per controller, -1 when not available */
	int mem_fd;        /* eventfd (v1) or inotify (v2); -1 until asked */
	int sfd[SF_N];     /* statistics files; SF_UNOPENED until first read, -1 absent */
	int procs_fd[C_N]; /* cgroup.procs of dirs[i] opened for writing; -1 until asked */
	int dir_fd[C_N];   /* dirs[i] itself (O_PATH), for its link count; -1 until asked */
	int64_t max_seen;  /* v2 without memory.peak: highest memory.current read */
	/* Pool key: what makes two groups interchangeable (root, /proc/self/cgroup file,
	 * RMON_CG_WANT_* asked); POOLABLE is 0 for groups with an explicit name. */
	char *key_root, *key_psc;
	unsigned key_want;
	int poolable;
	unsigned changed, set_now; /* RMON_CG_CHANGED_* */
	/* The limits last written (a pooled group's next task often asks for the same ones, and
	 * then nothing is written); RMON_CG_UNSET when not known. */
	int64_t last_mem, last_cpu, last_pids;
	int last_mem_pause;
	/* Baselines of a reused group, subtracted from what the kernel reports: counters that
	 * cannot be reset, and the memory left charged (not page cache) after the reset. */
	int64_t base_cpu_ns, base_oom_events, base_high_events, base_oom_kills, base_mem;
};

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
/* Directory of CG for controller C, NULL when the group does not have it. */
const char *rmon_cg_dir(const struct rmon_cgroup *cg, int c);
/* Descriptor of statistics file I (opened on first use), -1 when absent. */
int rmon_cg_sf_fd(struct rmon_cgroup *cg, int i, const char *dir, const char *name);
/* Reads statistics file I (as rmon_cg_sf_fd opens it) from its start into BUF, NUL-terminated:
 * its length, or -errno. */
ssize_t rmon_cg_sf_read(struct rmon_cgroup *cg, int i, const char *dir, const char *name, char *buf,
                        size_t size);
/* 1 when the group's directory dirs[I] may hold nested groups (its link count is not 2, or it
 * cannot be known), through a descriptor kept open: an fstat, not a walk of its whole path. */
int rmon_cg_dir_may_nest(struct rmon_cgroup *cg, int i);
/* v1 cpuset: copies cpuset.cpus and cpuset.mems of PARENT into DIR where DIR's are empty. */
void rmon_cg_cpuset_inherit(const char *parent, const char *dir);
/* SIGKILLs every process of the group DIR (one hierarchy; FREEZER, when not NULL, is its
 * freezer group, used to stop forks between rounds) until it is empty or WAIT_MS passed;
 * 0 when empty (or gone), -EBUSY. */
int rmon_cg_kill_dir(enum rmon_cg_version v, const char *dir, const char *freezer, int wait_ms);
/* Removes DIR and the groups nested in it, retrying a busy group for WAIT_MS. 0 or -errno. */
int rmon_cg_remove_tree(const char *dir, int wait_ms);
/* 1 when CG certainly holds no process, read without cgroup.procs: its pids controller
 * counts no task (zombies included; a task is moved into every hierarchy before its program
 * starts and its forks follow it) and its memory group has no nested group (a container
 * runtime may nest groups there that the pids hierarchy does not see). 0 otherwise. */
int rmon_cg_pids_none(struct rmon_cgroup *cg);

/* The start time of OWNER in clock ticks since boot (cached for this process), the <owner
 * start> of a group name (rmon_cgroup_stale.c). */
unsigned long long rmon_cg_owner_start(pid_t owner);

#endif
