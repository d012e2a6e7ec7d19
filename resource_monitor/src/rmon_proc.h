/* rmon_proc.h: /proc measurements of a process tree for the resource monitor (internal).
 * A tracker follows the processes of one task (given by its cgroup, its session, or as the
 * descendants of its first process), sums their memory, CPU, I/O and context switches, keeps
 * the CPU and I/O of processes that vanished, counts processes (also through the kernel
 * proc connector, so short-lived children are not missed), and lists the files they opened.
 * Also: disk use of directories and the machine's CPUs, load and memory. */
#ifndef HTC_RMON_PROC_H
#define HTC_RMON_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum rmon_proc_mode {
	RMON_PROC_CGROUP,      /* members are given to rmon_proc_sample (cgroup.procs) */
	RMON_PROC_SESSION,     /* every process whose session id is the root's pid */
	RMON_PROC_DESCENDANTS, /* the root and its descendants (by ppid), once seen kept */
};

struct rmon_proc_totals {
	int64_t rss, vm, swap;           /* bytes, sums over live processes */
	double cpu_s;                    /* user+system seconds, including vanished processes */
	int64_t read_bytes, write_bytes; /* storage I/O, including vanished processes */
	int64_t ctx_switches;            /* voluntary + involuntary, including vanished */
	int nprocs;                      /* live processes in the last sample */
	int nthreads;                    /* their threads */
	int64_t total_processes;         /* distinct processes ever seen (sampling + connector) */
	int max_concurrent;              /* highest number alive at once */
};

struct rmon_proc;

/* Tracker for the tree of ROOT. REPORT_FILES: collect names of opened files. */
struct rmon_proc *rmon_proc_create(pid_t root, enum rmon_proc_mode mode, int report_files);
void rmon_proc_delete(struct rmon_proc *p);

/* Takes a sample. In RMON_PROC_CGROUP mode PIDS/N are the members; otherwise they are found
 * in /proc. LIGHT: read only /proc/PID/stat (memory, CPU, membership), for frequent limit
 * checks. OUT receives the running totals. Returns 0 or -errno. */
int rmon_proc_sample(struct rmon_proc *p, const pid_t *pids, size_t n, int light,
                     struct rmon_proc_totals *out);
/* COMPLETE: a proc connector that was listening before the root started feeds this tracker,
 * so every fork of the tree is known and samples read only the known processes instead of
 * the whole of /proc (RMON_PROC_SESSION and _DESCENDANTS). Cleared by itself when the
 * connector loses events. Default 0. */
void rmon_proc_set_complete(struct rmon_proc *p, int complete);
/* The running totals without sampling. */
void rmon_proc_totals(const struct rmon_proc *p, struct rmon_proc_totals *out);
/* Adds PID (child of PPID) to the tree, e.g. the root right after it was started. */
void rmon_proc_add(struct rmon_proc *p, pid_t pid, pid_t ppid);
/* Reads the final figures (CPU, I/O, context switches) of PID, a zombie not reaped yet, into
 * its entry: for a process a sample cannot list (a cgroup lists no zombie). Not needed for a
 * root that was alone (rmon_proc_alone): its wait4 figures are the same. */
void rmon_proc_final(struct rmon_proc *p, pid_t pid);
/* 1 when no process of the tree other than the root was ever seen. */
int rmon_proc_alone(const struct rmon_proc *p);
/* The root was reaped by us with RU (wait4: its own figures and its waited-for children's):
 * it leaves the tree with that exact CPU time. When it was alone (rmon_proc_alone), its
 * storage I/O and context switches are taken from RU too (the same kernel counters as
 * /proc/PID/io; no child seen, so none is counted twice). */
struct rusage;
void rmon_proc_root_exited(struct rmon_proc *p, const struct rusage *ru);
/* Live processes known to belong to the tree (refreshed by the last sample and by connector
 * events). *PIDS allocated, caller frees. */
size_t rmon_proc_live(struct rmon_proc *p, pid_t **pids);
/* Names of opened files collected so far, NULL-terminated; valid until the next sample. */
const char *const *rmon_proc_files(struct rmon_proc *p);
size_t rmon_proc_nfiles(const struct rmon_proc *p);

/* Start time of PID in clock ticks since boot (/proc/PID/stat), 0 when it is gone. With the pid,
 * it names one process: a pid used again by a later process has another start time. */
unsigned long long rmon_proc_start_ticks(pid_t pid);

/* Kernel proc connector (NETLINK_CONNECTOR / CN_IDX_PROC). Needs CAP_NET_ADMIN.
 * rmon_proc_connector_open returns a nonblocking socket listening for fork/exit events, or
 * -errno (the caller then relies on sampling). rmon_proc_connector_read drains it and
 * feeds every tracker in PS (N of them): a fork whose parent is in a tree adds the child.
 * Returns 0, or -ENOBUFS when events were lost. */
int rmon_proc_connector_open(void);
int rmon_proc_connector_read(int fd, struct rmon_proc *const *ps, size_t n);

/* Bytes used (st_blocks * 512) by everything under each of DIRS (NULL-terminated), without
 * following symbolic links or leaving a file system. -errno when none could be read. */
int64_t rmon_disk_usage(const char *const *dirs);

/* Machine: online CPUs (read at most every 5 s); 1-minute load average (-1 unknown; read at
 * most every second, the kernel updates it every 5 s); memory total and available in bytes
 * (-1 unknown). Thread-safe. */
int rmon_machine_cpus(void);
double rmon_machine_load(void);
void rmon_machine_memory(int64_t *total, int64_t *available);

#endif
