/* rmonitor.h: runs one command under measurement and limits, on a libuv loop. The command's
 * whole process tree is followed: in its own cgroup where cgroups can be used (exact peaks,
 * CPU time and process counts; limits enforced by the kernel), with /proc sampling as the
 * fallback and for what cgroups do not give. Wall time is enforced by a timer and memory by
 * kernel notification, so a violation is acted on within 100 ms, not at the next sample. Used
 * by the resource_monitor program, the cgroups batch driver and the worker. See
 * doc/resource-monitor.md. */
#ifndef HTC_RMONITOR_H
#define HTC_RMONITOR_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <uv.h>

#include "htc_error.h"
#include "rmsummary.h"

struct htc_clock;

enum rmonitor_cgroups {
	RMONITOR_CGROUPS_AUTO = 0, /* use cgroups when we can create them, else /proc only */
	RMONITOR_CGROUPS_OFF,      /* /proc sampling only */
	RMONITOR_CGROUPS_REQUIRED, /* fail to start (HTC_EUNSUP) when cgroups cannot be used */
};

struct rmonitor;

/* At its memory limit (cgroups only): return a new, larger limit in MB to let the task go on
 * (the raise is logged and counted in rmonitor_limit_raises), 0 to end it as exhausted, or a
 * negative number to keep it waiting at the limit (the caller raises it later with
 * rmonitor_set_memory_limit). */
typedef int64_t (*rmonitor_memory_fn)(struct rmonitor *m, int64_t limit_mb, void *arg);
/* The task has ended and its whole tree is gone. S is valid during the call only. */
typedef void (*rmonitor_done_fn)(struct rmonitor *m, const struct rmsummary *s, void *arg);

struct rmonitor_spec {
	/* What to run: argv[0] is looked up in PATH (execvp rules). Required. */
	const char *const *argv;
	/* The executable of argv[0] when the caller has looked it up already (e.g. with
	 * rmon_spawn_lookup): it is executed as is, PATH is not searched again. NULL = look
	 * argv[0] up here. */
	const char *path;
	const char *const *env;             /* complete environment; NULL = this process's */
	const char *cwd;                    /* NULL = this process's */
	int stdin_fd, stdout_fd, stderr_fd; /* dup2'd in the child; -1 = inherit */
	int new_session;                    /* setsid() in the child (default 0) */

	/* Limits: v[] fields set (>= 0) are enforced: wall_time by a timer; memory, cores (as a
	 * CPU quota) and max_concurrent_processes by the cgroup; disk and the others by sampling.
	 * Ignored when measure_only. */
	struct rmsummary limits;
	int measure_only;
	const char *cpuset;              /* e.g. "0-1": pin the task (cgroups only); NULL = none */
	double interval_s;               /* /proc sampling interval; <= 0 means 1 s */
	const char *const *measure_dirs; /* NULL-terminated; disk = MB under these; NULL = cwd */
	FILE *time_series;               /* one row per sample when not NULL (format in the doc) */
	int report_files;                /* collect the names of files the tree opened */
	enum rmonitor_cgroups cgroups;
	const char *cgroup_root;            /* NULL = /sys/fs/cgroup */
	rmonitor_memory_fn at_memory_limit; /* NULL: exceeding memory ends the task */
	void *at_memory_limit_arg;
	/* 1: the task gets a freshly made cgroup and it is removed at the end, instead of a
	 * reset one from the process's pool and back to the pool when it ended clean (the
	 * default; HTC_RMON_POOL=0 in the environment turns the pool off for everyone). */
	int no_pool;
	/* 1: the first process is made by a spawner thread (rmon_spawn_start) once its group has
	 * taken a task of this process before, and rmonitor_start returns as soon as it exists,
	 * without waiting for its cgroup join and exec (which a busy machine may delay by a few
	 * hundred microseconds, now and then by tens of milliseconds). For a loop that starts many
	 * tasks, like the worker's. A failure to execute is then known only from the exit status
	 * 127 and the message on the task's stderr. Default 0: rmonitor_start waits. */
	int spawn_async;
	/* The clock the task's wall time is measured on (timeutil.h; borrowed, must outlive the
	 * monitor): its reported value at each sample and the sampled check of its limit. NULL
	 * (the default): the monotonic clock. The wall-time limit's timer is a libuv timer and
	 * fires on real time whatever the clock. */
	const struct htc_clock *clock;
	/* The seccomp profile the task runs under (doc/seccomp.md): 0 none (the default), 1
	 * "default", 2 "strict", 3 "nonet". Its refused calls fail with EPERM and their names
	 * are listed in the summary's "seccomp_denied". A filter that cannot be built or
	 * installed makes the start fail: the task never runs unfiltered. */
	int seccomp_profile;
	/* 1: when the task has a cgroup, do not listen to the kernel's process events (the proc
	 * connector). Its CPU, memory and processes are the group's anyway; total_processes then
	 * counts the processes seen at samples, not those that started and ended between two.
	 * The kernel copies every fork and exit of the machine to every listener, so with many
	 * monitoring processes on one machine (a pool of 1-core workers) each task's events cost
	 * work in every one of them (doc/resource-monitor.md). Default 0. */
	int no_proc_events;
};

/* Initialises SPEC with defaults: fds -1, limits unset, interval 1 s, cgroups AUTO. */
void rmonitor_spec_init(struct rmonitor_spec *spec);

/* Starts the command. DONE is called once from the loop when the task has ended (never from
 * inside this call). Returns NULL with *err set (-errno; HTC_EUNSUP when cgroups are required
 * but unavailable) when it could not start; a command that cannot be executed is not an error
 * here: it ends with exit status 127 as from a shell. SPEC is copied. */
struct rmonitor *rmonitor_start(uv_loop_t *loop, const struct rmonitor_spec *spec,
                                rmonitor_done_fn done, void *arg, int *err);

pid_t rmonitor_pid(const struct rmonitor *m);
/* 1 when the task is measured through its own cgroup. */
int rmonitor_uses_cgroups(const struct rmonitor *m);
/* 1 if M listens to the kernel's process events (the proc connector). */
int rmonitor_uses_proc_events(const struct rmonitor *m);
/* Name of the task's cgroup (htc.<pid>.<start>.<serial>) while it has one, else NULL. */
const char *rmonitor_cgroup_name(const struct rmonitor *m);
/* 1 when the task's cgroup was taken from the pool (reused), 0 when freshly made. */
int rmonitor_cgroup_reused(const struct rmonitor *m);
/* Current measurements (a snapshot; valid until the next loop iteration). */
const struct rmsummary *rmonitor_current(const struct rmonitor *m);
/* The task's memory in use now, in MB (the current sample; rmonitor_current's memory is the
 * peak so far). 0 before the first sample. */
double rmonitor_memory_now(const struct rmonitor *m);
/* How many times the memory limit was raised by at_memory_limit. */
int rmonitor_limit_raises(const struct rmonitor *m);
/* The calls the seccomp profile refused, each once in the order first seen, NULL-terminated
 * (empty while running and without a profile); valid until delete. */
const char *const *rmonitor_seccomp_denied(const struct rmonitor *m);
/* Names of files the tree opened (report_files), NULL-terminated; valid until delete. */
const char *const *rmonitor_files(const struct rmonitor *m);

/* Changes the memory limit of a running task (cgroups only): 0, HTC_EUNSUP, -errno. */
int rmonitor_set_memory_limit(struct rmonitor *m, int64_t mb);
/* Changes the CPU quota of a running task whose cores are limited by its cgroup (CORES cores;
 * the limit the summary reports follows): 0, HTC_EUNSUP (no quota), -ESRCH, -errno. */
int rmonitor_set_cores(struct rmonitor *m, double cores);
/* Memory of the task measured by its owner outside the task's cgroup (its container, in a
 * group the engine made), MB: the summary's peak takes it when it is larger. */
void rmonitor_report_memory(struct rmonitor *m, double mb);
/* Ends the task as having exhausted FIELD (an rmsummary field) at LIMIT, a limit its owner
 * enforces where the monitor cannot (a container outside the task's cgroup): its summary says
 * so, as for a limit of its own, and its tree is killed. The task still ends through DONE. */
void rmonitor_exhausted(struct rmonitor *m, int field, double limit);
/* Sends SIG to every process of the task. The task still ends through DONE. */
int rmonitor_kill(struct rmonitor *m, int sig);

/* Frees M. If the task is still running it is killed (SIGKILL to the whole tree), its cgroup
 * removed once empty, and DONE is not called. NULL is ok. May be called from DONE. */
void rmonitor_delete(struct rmonitor *m);

/* Removes every cgroup kept in this process's pool of reusable groups (the pool also drains
 * itself at exit(); call this before a process ends in another way, or to give the groups
 * back). Returns how many were removed. */
int rmonitor_pool_drain(void);
/* Number of cgroups in this process's pool now. */
int rmonitor_pool_size(void);

/* Removes cgroups left by monitors of processes that no longer exist (after a kill -9 of their
 * owner), also when their pid was given to a later process. Returns how many were removed, or
 * -errno. */
int rmonitor_cleanup_stale(const char *cgroup_root);

/* Starts libuv's thread pool (one per process) with every signal blocked in its threads, so
 * that the SIGCHLD of each task wakes only the thread of LOOP instead of a sleeping pool thread
 * as well. Call before anything else in the process queues work; later calls do nothing. */
void rmonitor_prepare_pool(uv_loop_t *loop);

/* Machine resources as the monitor sees them (cores, memory MB, and disk MB free in DIR), in
 * the v[] of OUT (RM_CORES, RM_MEMORY, RM_DISK, RM_GPUS). */
void rmonitor_machine_resources(const char *dir, struct rmsummary *out);

/* Writes the header line of a time-series file (its columns, doc/resource-monitor.md) to F: the
 * one text both the monitor of a command and the tracker of --pid write. */
void rmonitor_series_header(FILE *f);

#endif
