/* rmonitor_internal.h: the state of one monitored task, shared by rmonitor.c (start, the
 * loop's callbacks, the end and the summary) and rmonitor_sample.c (sampling, limit checks and
 * killing). Not a public header: users of the library include rmonitor.h. */
#ifndef HTC_RMONITOR_INTERNAL_H
#define HTC_RMONITOR_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "rmon_cgroup.h"
#include "rmon_cn_shared.h"
#include "rmon_proc.h"
#include "rmon_seccomp.h"
#include "rmon_sigchld.h"
#include "rmonitor.h"
#include "timeutil.h"

#define MB      (1024.0 * 1024.0)
#define WIN_MAX 512
#define FAST_S  0.05 /* limit checks without cgroups */
/* How fast a task is assumed to be able to fill its directories at most (MB/s): a light
 * check of a disk limit walks them only once the room left at the last walk could have been
 * filled since. */
#define DISK_FILL_MB_S 4096.0
#define DRAIN_MS       20 /* polling for the rest of the tree after the first process exits */
#define MAX_CGFDS      8

enum state { ST_RUNNING, ST_DRAINING, ST_DONE };

struct win_sample {
	int64_t t;  /* monotonic us */
	double cpu; /* s */
	int threads;
};

struct rmonitor {
	uv_loop_t *loop;
	rmonitor_done_fn done;
	void *arg;

	/* Owned copy of the spec. */
	char **argv, **env, *cwd, *cpuset, **measure_dirs, *cgroup_root, *path;
	int stdio[3];
	int new_session;
	int measure_only;
	double interval;
	FILE *time_series;
	int report_files;
	enum rmonitor_cgroups cg_mode;
	rmonitor_memory_fn at_memory_limit;
	void *at_memory_limit_arg;
	double limits[RM_N_FIELDS];
	int pool, cg_reused;           /* reuse cgroups (spec.no_pool == 0); this one was reused */
	int spawn_async;               /* spec.spawn_async */
	const struct htc_clock *clock; /* spec.clock: of the wall time */
	const struct rmon_seccomp_prog *seccomp; /* NULL = no filter */
	struct rmon_seccomp_watch *seccomp_watch;
	char **seccomp_denied; /* the watch's names, kept once it is gone */

	pid_t pid;
	enum state state;
	int wstatus;
	int reaped;
	struct rmon_cgroup *cg;
	struct rmon_cg_stats st;     /* the cgroup's figures at the last sample */
	int cg_mem, cg_cpu, cg_pids; /* limits the kernel enforces */
	int used_cgroups;
	struct rmon_proc *proc;
	int cn_on; /* on the loop's shared proc connector (cn) */
	struct rmon_cn_entry cn;

	struct rmon_sigchld_entry sigchld; /* on the loop's shared SIGCHLD handle */
	uv_timer_t sample_timer, fast_timer, wall_timer, drain_timer;
	uv_poll_t mem_poll;
	int mem_poll_on, fast_on, wall_on;
	int n_handles;
	int deleting;

	int64_t start_us, start_mono, end_us; /* start_mono: on the clock */
	struct rmsummary cur;
	int64_t mem_limit_mb; /* current memory limit (may be raised) */
	int limit_raises;
	int killed_for_limits;
	double exceeded[RM_N_FIELDS];
	int64_t prev_high, prev_oom_kills;

	struct win_sample win[WIN_MAX];
	int nwin;
	double cores_peak; /* -1 until a full window was seen */
	double cores_now;
	int64_t rss_peak, peak_bytes, cache_now;
	uint64_t next_ms; /* delay of the next sample: doubles from 50 ms up to the interval */
	double mem_now, vm_now, swap_now, disk_now;
	int procs_now;
	int64_t disk_next_mono, disk_cost_us;
	int64_t disk_at_mono; /* when the directories were last walked; 0: never */
	int machine_cpus;
	struct rmon_proc_totals tot;
};

/* ---- rmonitor_sample.c ---- */

/* Seconds since the start, on the task's clock. */
double rmonitor_now_wall(const struct rmonitor *m);
/* Raises field F of the summary to V (and its peak time) when V is larger. */
void rmonitor_set_peak(struct rmonitor *m, int f, double v);
/* Sends SIG to every process known to belong to the task. */
void rmonitor_signal_tracked(struct rmonitor *m, int sig);
/* Samples /proc without a cgroup (the connector's forks taken in first). */
void rmonitor_proc_sample(struct rmonitor *m, int light, struct rmon_proc_totals *out);
/* Kills every process of the task, as fast as possible. */
void rmonitor_kill_tree(struct rmonitor *m);
/* Records that FIELD exceeded LIMIT and kills the task. */
void rmonitor_limit_kill(struct rmonitor *m, int field, double limit);
/* Walks the measured directories (FORCE: even if the last walk was recent). */
void rmonitor_measure_disk(struct rmonitor *m, int force);
/* 1 when a light check of the disk limit should walk the directories. */
int rmonitor_disk_check_due(struct rmonitor *m);
/* The memory of a task in a cgroup, in MB (see the definition). */
double rmonitor_cgroup_memory_mb(struct rmonitor *m);
/* One line of the time series, when asked for. */
void rmonitor_time_series_row(struct rmonitor *m);
/* Takes one sample. LIGHT: only what the limit checks need. */
void rmonitor_sample(struct rmonitor *m, int light);

#endif
