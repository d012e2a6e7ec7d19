/* engine.h: the makeflow execution engine. Given a finalized dag it replays
 * the transaction log, dispatches every ready rule to a batch queue, handles
 * completions (output checks, retries, failures, garbage collection) on one
 * libuv loop, reports progress, and writes the log and an optional summary. */
#ifndef MAKEFLOW_ENGINE_H
#define MAKEFLOW_ENGINE_H

#include <stdint.h>

#include "dag.h"

enum engine_gc_mode {
	ENGINE_GC_NONE = 0,
	ENGINE_GC_REF_CNT,   /* delete an intermediate as soon as no unfinished rule needs it */
	ENGINE_GC_ON_DEMAND, /* ... but only while free disk space is below gc_size */
	ENGINE_GC_ALL,       /* ref_cnt, plus every remaining intermediate at the end */
};

enum engine_clean_mode {
	ENGINE_CLEAN_ALL = 1,
	ENGINE_CLEAN_OUTPUTS,
	ENGINE_CLEAN_INTERMEDIATES,
	ENGINE_CLEAN_CACHE, /* only the links and the cache of --mounts */
};

enum engine_progress_mode {
	ENGINE_PROGRESS_AUTO = 0, /* live line on a terminal, plain lines otherwise */
	ENGINE_PROGRESS_PLAIN,
	ENGINE_PROGRESS_QUIET,
};

/* --storage-type: what --storage-limit bounds (doc/compatibility.md). */
enum engine_storage_type {
	ENGINE_STORAGE_MAX = 0,    /* every file the workflow creates and still needs */
	ENGINE_STORAGE_MIN = 1,    /* refused: needs an ordering of rules this engine does not do */
	ENGINE_STORAGE_OUTPUT = 2, /* only the final outputs (files no rule reads) */
	ENGINE_STORAGE_OFF = 3,    /* no limit */
};

struct engine_options {
	const char *batch_type;        /* "local" when NULL */
	const char *const *batch_opts; /* NULL-terminated "key=value" driver options */
	const char *batch_options;     /* -B: default per-job batch options */
	const char *docker_image;      /* --docker: the rules' default container image */
	const char *docker_tar;        /* --docker-tar: the archive of that image, loaded first */
	int max_local_jobs;            /* -j; <= 0: number of cores */
	int max_remote_jobs;           /* -J; <= 0: unlimited */
	int retries;                   /* extra attempts per rule after a failure */
	int zero_length_is_missing;    /* -z */
	int skip_file_check;           /* --skip-file-check */
	enum engine_gc_mode gc;
	int gc_count;             /* -G: collect once this many files are collectable */
	int64_t gc_size;          /* --gc-size bytes of free disk (on_demand) */
	const char *log_path;     /* transaction log; required */
	const char *summary_path; /* -f: the CCTools text summary; may be NULL */
	enum engine_progress_mode progress;
	const char *self_exe; /* path of makeflow for nested workflows */

	/* Measurement and sizing (doc/allocation.md, doc/resource-monitor.md). */
	const char *monitor_dir;     /* --monitor: wrap every rule with resource_monitor and
	                                keep one summary per rule in DIR; NULL = off */
	double monitor_interval;     /* --monitor-interval seconds; <= 0: the monitor's default */
	int monitor_time_series;     /* --monitor-with-time-series */
	const char *monitor_log_fmt; /* --monitor-log-fmt: names of the monitor's files, "%%"
	                                the rule's id; NULL: resource-rule-%% */
	int monitor_opened_files;    /* --monitor-with-opened-files: the files each rule opened,
	                                in DIR/resource-rule-N.files */
	int monitor_measure_dir;     /* --monitor-measure-dir: the monitor's disk is the size of the
	                              * rule's working directory, named to it with --measure-dir */
	const char *monitor_exe;     /* resource_monitor to use; NULL = beside self_exe or PATH */
	int allocation_mode;         /* --allocation: -1 unset, else enum category_mode, for the
	                                categories whose mode the workflow does not give */
	const char *allocation_seed; /* --allocation-seed: summaries that seed the categories */

	/* Wrappers, archive, mounts (doc/makeflow-archive.md). */
	const char *const *wrappers;        /* --wrapper, NULL-terminated, first innermost */
	const char *const *wrapper_inputs;  /* --wrapper-input: inputs of every rule ("%%") */
	const char *const *wrapper_outputs; /* --wrapper-output: outputs of every rule ("%%") */
	const char *archive_dir;            /* --archive*: NULL = no archive */
	int archive_read, archive_write;    /* restore archived rules; store completed ones */
	const char *mounts_path;            /* --mounts: the mount file, NULL = none */
	const char *cache_dir;              /* --cache-dir; NULL = one per workflow */
	/* CCTools command-line compatibility (doc/compatibility.md, "The makeflow command
	 * line"). */
	const char *summary_json_path; /* --summary-json: the JSON summary; may be NULL */
	const char *const *argv;       /* the command line as given, NULL-terminated, for the
	                                  first line of the -f summary; may be NULL */
	int64_t local_cores;           /* --local-cores: cores of this machine for local jobs;
	                                  <= 0: all */
	int64_t local_memory_mb;       /* --local-memory MB; <= 0: all */
	int64_t local_disk_mb;         /* --local-disk MB; <= 0: all free */
	int wait_for_files_s;          /* --wait-for-files-upto: seconds a rule's outputs may
	                                  take to appear after it exits 0; 0: none */
	int advertise;                 /* -a: send the workflow's progress to the catalog */
	const char *project;           /* -N: the project it is advertised under */
	const char *catalog_hosts;     /* -C; NULL: the default catalog servers */
	const char *file_status_path;  /* --file-status: the HTML status page; NULL: none */
	int file_status_interval_s;    /* --file-status-interval; <= 0: 5 s */
	/* --report: called while the run goes, every report_interval_s seconds or ten times as
	 * long as the last call took, whichever is longer (the run report rewritten from the
	 * log); NULL or report_interval_s <= 0: never. */
	void (*report_refresh)(void *arg);
	void *report_refresh_arg;
	int report_interval_s;
	int send_environment;      /* --send-environment: remote jobs get makeflow's
	                              environment (the local types inherit it) */
	int no_save_failed_output; /* --do-not-save-failed-output: a failed rule's outputs
	                              are deleted, not moved to makeflow.failed.N */
	int64_t storage_limit;     /* --storage-limit bytes; 0: off */
	int storage_type;          /* --storage-type (enum engine_storage_type) */
	/* Slurm-only options (kept for the slurm driver; other types do not use them). */
	int slurm_ignore_memory_spec; /* --ignore-memory-spec */
	int slurm_safe_submit;        /* --safe-submit-mode */
	const char *slurm_tmp;        /* --tmp */
};

/* Fills O with defaults. */
void engine_options_init(struct engine_options *o);

/* Runs the workflow to completion (or until stopped by SIGINT/SIGTERM).
 * Returns the process exit status: 0 when every rule is complete, 1 otherwise
 * (failures, an abort, or an error before anything ran, which is printed). */
int engine_run(struct dag *d, const struct engine_options *o);

/* Removes the files the workflow created according to the log (see
 * doc/makeflow-log-format.md "Cleaning"), and, with a BATCH_TYPE whose jobs carry the run id
 * (-T slurm, -T k8s; the driver options BATCH_OPTS say where), the jobs that runs which never
 * ended left in the cluster; nested workflows are cleaned by running SELF_EXE (makeflow) on
 * them. Returns the exit status. */
int engine_clean(struct dag *d, const char *log_path, enum engine_clean_mode mode,
                 const char *self_exe, const char *batch_type, const char *const *batch_opts);

/* With --mounts in O: removes the links the mount file made and the cache of the workflow
 * WORKFLOW (what any clean mode also removes). Returns 0, or -1 after printing the error. */
int engine_clean_mounts(const struct engine_options *o, const char *workflow);

#endif
