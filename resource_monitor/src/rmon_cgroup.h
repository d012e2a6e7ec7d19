/* rmon_cgroup.h: the cgroup backend of the resource monitor (internal to resource_monitor).
 * One group per task, named htc.<owner pid>.<owner start>.<serial>, under a parent group "htc"
 * created beneath this process's own cgroup; works on cgroup v1 (one hierarchy per controller) and
 * v2 (unified), sets limits, reads statistics, kills every process of a group and removes it.
 * The root is a parameter so the v2 logic can be tested against a fake directory tree. */
#ifndef HTC_RMON_CGROUP_H
#define HTC_RMON_CGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum rmon_cg_version {
	RMON_CG_NONE = 0,
	RMON_CG_V1 = 1,
	RMON_CG_V2 = 2,
};

struct rmon_cgroup_opts {
	const char *root;             /* NULL = /sys/fs/cgroup */
	const char *proc_self_cgroup; /* file in /proc/self/cgroup format; NULL = the real one */
	pid_t owner;                  /* 0 = getpid() */
	/* Exact group name to use (tests): an existing directory of that name is accepted.
	 * NULL = htc.<owner>.<owner start>.<serial>, a fresh directory. */
	const char *name;
	/* Optional controllers (RMON_CG_WANT_*). Default 0: the group gets memory, CPU
	 * accounting (v1 cpuacct, v2 cpu.stat), pids and the v1 freezer only. */
	unsigned controllers;
};

#define RMON_CG_WANT_CPU    0x1u /* a CPU quota (rmon_cgroup_set_cpu): v1 cpu, v2 cpu */
#define RMON_CG_WANT_CPUSET 0x2u /* pinning (rmon_cgroup_set_cpuset): v1/v2 cpuset */
#define RMON_CG_WANT_IO     0x4u /* block I/O statistics (io_read/io_write): blkio, v2 io */
#define RMON_CG_WANT_ALL    0x7u

struct rmon_cgroup;

/* Which layout is usable under ROOT (NULL = /sys/fs/cgroup): V2 when ROOT/cgroup.controllers
 * lists the memory controller, V1 when ROOT/memory is a memory hierarchy, else NONE. Read
 * afresh at each call; rmon_cgroup_create and rmon_cgroup_cleanup_stale use a per-process
 * cache of the layout instead (made on first use, made again when a parent group vanished). */
enum rmon_cg_version rmon_cgroup_detect(const char *root);

/* Creates the task group (and the parent "htc" group when missing) in every hierarchy used
 * (see rmon_cgroup_opts.controllers). Thread-safe.
 * Returns NULL with *err = -errno or HTC_EUNSUP (no usable layout / memory controller not
 * delegable). Caller deletes with rmon_cgroup_delete after rmon_cgroup_destroy. */
struct rmon_cgroup *rmon_cgroup_create(const struct rmon_cgroup_opts *opts, int *err);

enum rmon_cg_version rmon_cgroup_version(const struct rmon_cgroup *cg);
const char *rmon_cgroup_name(const struct rmon_cgroup *cg);
/* Directory of the group: v2 the group; v1 the group in the memory hierarchy. */
const char *rmon_cgroup_path(const struct rmon_cgroup *cg);

/* The cgroup.procs file of the group in every hierarchy, opened for writing (O_CLOEXEC) into
 * FDS (at most MAX); writing "0" to each of them moves the writer. Returns how many, or
 * -errno. The group keeps them open for its next tasks (a pooled group): the caller does
 * not close them. */
int rmon_cgroup_open_procs(struct rmon_cgroup *cg, int *fds, int max);
/* Moves PID into the group in every hierarchy. 0 or -errno. */
int rmon_cgroup_add_pid(struct rmon_cgroup *cg, pid_t pid);

/* Memory limit in bytes (< 0 = none). PAUSE: at the limit the task waits for us instead of
 * being killed by the kernel (v1 oom_kill_disable; v2 memory.high = limit, memory.max a bit
 * above). Swap is limited along (v1 memsw = limit, v2 memory.swap.max = 0) when it exists. */
int rmon_cgroup_set_memory(struct rmon_cgroup *cg, int64_t bytes, int pause);
/* CPU quota in cores (<= 0 = none): cfs_quota_us/cfs_period_us or cpu.max. */
int rmon_cgroup_set_cpu(struct rmon_cgroup *cg, double cores);
/* CPUs the task may use ("0-1"); v1 also copies cpuset.mems from the parent. */
int rmon_cgroup_set_cpuset(struct rmon_cgroup *cg, const char *cpus);
/* Maximum number of processes (< 0 = none). HTC_EUNSUP without the pids controller. */
int rmon_cgroup_set_pids(struct rmon_cgroup *cg, int64_t max);

/* A descriptor that becomes readable when the memory situation changes: v1 an eventfd
 * signalled on OOM (through cgroup.event_control), v2 an inotify descriptor watching
 * memory.events. Created on the first call, owned by CG. Returns the fd or -errno. */
int rmon_cgroup_memory_fd(struct rmon_cgroup *cg);

/* Statistics; every field is -1 when unknown. */
struct rmon_cg_stats {
	int64_t mem_current; /* bytes charged now */
	int64_t mem_peak;    /* highest charge (v1 max_usage_in_bytes, v2 memory.peak) */
	int64_t mem_cache;   /* page cache part of mem_current (v1 total_cache, v2 file) */
	int64_t mem_anon;    /* anonymous memory (v1 total_rss, v2 anon) */
	int64_t mem_limit;   /* current limit (v1 limit_in_bytes, v2 memory.high or max) */
	int64_t cpu_ns;      /* CPU time of all tasks, ever */
	int64_t pids_current;
	int64_t io_read, io_write; /* block I/O bytes (blkio / io.stat) */
	int64_t under_oom;         /* v1: a task waits at the limit now */
	int64_t oom_events;        /* times the limit was hit (v1 failcnt; v2 max + oom) */
	int64_t high_events;       /* v2 memory.events high */
	int64_t oom_kills;         /* tasks the kernel killed for memory */
};
/* Fills ST (fields that cannot be read stay -1). Returns 0. The statistics files are opened
 * on first use and stay open until rmon_cgroup_destroy or rmon_cgroup_delete. */
int rmon_cgroup_stats(struct rmon_cgroup *cg, struct rmon_cg_stats *st);
/* The same, for the groups of fields in WHAT only (the others stay -1). */
#define RMON_CGS_MEMORY 0x01u /* mem_current, mem_peak, mem_cache, mem_anon */
#define RMON_CGS_LIMIT  0x02u /* mem_limit */
#define RMON_CGS_OOM    0x04u /* under_oom, oom_events, high_events, oom_kills */
#define RMON_CGS_CPU    0x08u /* cpu_ns */
#define RMON_CGS_PIDS   0x10u /* pids_current */
#define RMON_CGS_IO     0x20u /* io_read, io_write (with RMON_CG_WANT_IO only) */
#define RMON_CGS_USAGE  0x40u /* mem_current only (part of RMON_CGS_MEMORY; no memory.stat) */
#define RMON_CGS_ALL    0x7fu
int rmon_cgroup_stats_some(struct rmon_cgroup *cg, struct rmon_cg_stats *st, unsigned what);

/* The processes of the group (cgroup.procs). *PIDS is allocated (caller frees), *N set.
 * Returns 0 or -errno. */
int rmon_cgroup_pids(struct rmon_cgroup *cg, pid_t **pids, size_t *n);
/* 1 when no process is left in the group, 0 when some are, -errno when it cannot be read. */
int rmon_cgroup_is_empty(struct rmon_cgroup *cg);
/* Sends SIG to every process of the group (one pass). Returns how many were signalled. */
int rmon_cgroup_signal(struct rmon_cgroup *cg, int sig);
/* Kills every process of the group: v2 cgroup.kill when present; otherwise freeze (v1
 * freezer), SIGKILL every pid, thaw, repeated until empty or WAIT_MS elapsed. Returns 0 when
 * the group is empty, -EBUSY when some process is still there (e.g. still exiting). */
int rmon_cgroup_kill_all(struct rmon_cgroup *cg, int wait_ms);
/* Removes the group directories, retrying for up to WAIT_MS while tasks exit. 0 or -errno
 * (-EBUSY when a process is still inside). */
int rmon_cgroup_destroy(struct rmon_cgroup *cg, int wait_ms);
/* Frees CG and its descriptors; does not remove anything. NULL is ok. */
void rmon_cgroup_delete(struct rmon_cgroup *cg);

/* The pool of reusable groups (rmon_cgroup_pool.c): a group whose task has ended and left
 * nothing behind is reset and kept, and the next task asking for the same kind of group
 * (same root, /proc/self/cgroup file and controllers) takes it instead of a mkdir.
 * rmon_cgroup_take: a pooled group of that kind, or a fresh one (rmon_cgroup_create; always
 * fresh when POOL is 0, OPTS names the group, or HTC_RMON_POOL=0 is in the environment).
 * *REUSED (may be NULL) is set to 1 for a pooled group. Thread-safe. */
struct rmon_cgroup *rmon_cgroup_take(const struct rmon_cgroup_opts *opts, int pool, int *reused,
                                     int *err);
/* Ends with CG (which is freed in every case): kills what is left in it (waiting up to
 * WAIT_MS); then, with POOL, a group that is empty in every hierarchy, has no nested group and
 * could be reset goes back to the pool; any other is removed. Returns 1 when pooled, 0 when
 * removed, -errno (-EBUSY) when it could not be removed (rmonitor_cleanup_stale will). */
int rmon_cgroup_release(struct rmon_cgroup *cg, int pool, int wait_ms);
/* Resets an empty group for another task: freezer thawed, peak reset,
 * page cache dropped, counters baselined, pending notifications read. 0, or -errno /
 * HTC_EUNSUP when the group cannot be made to look fresh (it must then be removed). */
int rmon_cgroup_reset(struct rmon_cgroup *cg);
/* After the limits of the task were set (rmon_cgroup_set_*): limits that an earlier task of
 * a reused group set and this one did not go back to none (a reset leaves them, as most
 * tasks set their own). 0 or -errno (the group must then not be used). */
int rmon_cgroup_settle(struct rmon_cgroup *cg);
/* Removes every pooled group; returns how many were removed. */
int rmon_cgroup_pool_drain(void);
/* Groups in the pool now. */
int rmon_cgroup_pool_size(void);
#define RMON_CG_POOL_MAX 64

/* Removes groups htc.<pid>.* under our parent "htc" groups whose owner is gone: the pid is
 * dead or names a process with another start time (rmon_cgroup_stale.c; their processes are
 * killed first). Returns the number of groups removed, or -errno. */
int rmon_cgroup_cleanup_stale(const struct rmon_cgroup_opts *opts);

/* The memory group directory of a process whose /proc/PID/cgroup reads TEXT, under ROOT (NULL
 * = /sys/fs/cgroup) of version V: ROOT/PATH on V2 (the unified line), ROOT/memory/PATH on V1.
 * Caller frees; NULL when TEXT has no such line. For a group another program made (a
 * container's), which the monitor follows without owning it. */
char *rmon_cgroup_memory_dir_of(const char *root, enum rmon_cg_version v, const char *text);
/* The same for its CPU accounting group: ROOT/cpuacct/PATH on V1 (the cpuacct line; where
 * cpu and cpuacct share a hierarchy, ROOT/cpuacct is the distribution's link to it), the
 * unified group on V2. */
char *rmon_cgroup_cpu_dir_of(const char *root, enum rmon_cg_version v, const char *text);

/* Helpers shared with the tests: read a whole small file into BUF (NUL-terminated);
 * returns the length or -errno. */
ssize_t rmon_read_file(const char *path, char *buf, size_t size);
/* Writes TEXT to an existing file (O_WRONLY|O_TRUNC, no creation). 0 or -errno. */
int rmon_write_file(const char *path, const char *text);

#endif
