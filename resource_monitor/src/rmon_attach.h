/* rmon_attach.h: resource_monitor --pid: measures a process that already runs, and its
 * descendants, with the /proc tracker (rmon_proc.h) in "descendants" mode, since librmonitor
 * starts its own commands only. No cgroup can be used; limits are enforced by SIGKILL to the
 * tree at the next sample, wall time by a timer. */
#ifndef HTC_RMON_ATTACH_H
#define HTC_RMON_ATTACH_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <uv.h>

#include "rmsummary.h"

struct rmon_attach;

/* The tree is gone (or was killed). S is valid during the call only. Its exit type is set
 * when a limit or a signal ended it; otherwise the exit status is unknown (the process is not
 * our child) and the exit type stays unset. */
typedef void (*rmon_attach_done_fn)(const struct rmsummary *s, void *arg);

struct rmon_attach_spec {
	pid_t pid;
	const struct rmsummary *limits; /* copied */
	int enforce;                    /* 0: report the limits, do not act on them */
	double interval_s;
	FILE *time_series;               /* one row per sample when not NULL */
	const char *const *measure_dirs; /* disk = MB under these; NULL = no disk measure */
	int report_files;
	rmon_attach_done_fn done;
	void *done_arg;
};

/* Starts sampling SPEC->pid every interval on LOOP. NULL with a message in ERR when there is
 * no such process. */
struct rmon_attach *rmon_attach_start(uv_loop_t *loop, const struct rmon_attach_spec *spec,
                                      char *err, size_t errlen);

/* The monitor received SIGNUM: forwards it to the tree, which then ends as killed by it. */
void rmon_attach_signal(struct rmon_attach *a, int signum);

/* SIGKILL to the tree, and a sample to notice that it is gone. */
void rmon_attach_kill(struct rmon_attach *a);

/* Closes the timers (the loop then has nothing of A left); call once, after done. */
void rmon_attach_close(struct rmon_attach *a);

/* The files the tree opened (when report_files), NULL-terminated; valid until delete. */
const char *const *rmon_attach_files(struct rmon_attach *a);

/* Frees A once its timers are closed. NULL is accepted. */
void rmon_attach_delete(struct rmon_attach *a);

#endif
