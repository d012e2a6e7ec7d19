/* wq_factory_sweep.h: the record of work_queue_factory runs (one line per running factory: its
 * run id, pid, process start time and batch type), so that a factory started after another was
 * killed (even with -9) removes the workers the dead one left: on this machine (-T local,
 * -T cgroups) the processes whose command line carries the dead run's token prefix, on Slurm
 * the jobs named htc-<run id> (cluster_run.h). The record is locked while it is read and
 * rewritten, so factories starting together do not lose each other's lines. */
#ifndef HTC_WQ_FACTORY_SWEEP_H
#define HTC_WQ_FACTORY_SWEEP_H

#include <stddef.h>

/* The default record: $XDG_RUNTIME_DIR (else /tmp) "/work_queue_factory-UID.pool". Caller
 * frees. */
char *wq_factory_sweep_default_path(void);

/* Reads the record at PATH, removes the workers of every run in it whose factory is gone (the
 * pid is dead, or belongs to another process now), and rewrites it with the live runs and this
 * one (RUN, this pid, TYPE). Returns the number of worker processes or job names removed
 * (>= 0), or a negative error with ERR set (the record cannot be read or written). A malformed
 * line is named in a warning with its line number and dropped. */
int wq_factory_sweep_start(const char *path, const char *run, const char *type, char *err,
                           size_t errlen);

/* Removes RUN's line from the record (the factory stopped cleanly). */
void wq_factory_sweep_end(const char *path, const char *run);

/* Sends SIGKILL to the process group of every process on this machine whose command line
 * contains PREFIX, except this process's own group. Returns how many groups were signalled. */
int wq_factory_sweep_local(const char *prefix);

#endif
