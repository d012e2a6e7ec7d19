/* worker_opts.h: the command line of work_queue_worker, parsed into one struct that the rest
 * of the worker reads. Parsing is separate from the program so every option, default and
 * error text can be tested without a network (doc/man/work_queue_worker.1 lists them). */
#ifndef HTC_WORKER_OPTS_H
#define HTC_WORKER_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmon_seccomp.h"

/* Defaults (doc/work-queue-protocol.md section 1). */
#define WORKER_DEFAULT_PORT             9123
#define WORKER_DEFAULT_IDLE_TIMEOUT     900
#define WORKER_DEFAULT_CONNECT_TIMEOUT  900
#define WORKER_DEFAULT_DEBUG_ROTATE_MAX (10 * 1024 * 1024) /* as CCTools' worker */
#define WORKER_DEFAULT_GROW_STEP_UP     256                /* MB, ElasticDocker's step up */
#define WORKER_DEFAULT_GROW_STEP_DOWN   128                /* MB, ElasticDocker's step down */
#define WORKER_DEFAULT_SHRINK_COOLDOWN  10                 /* s */
#define WORKER_DEFAULT_THROTTLE_RATE    1024               /* MB/s, as the cgroups driver */

struct catalog_project;

struct worker_opts {
	/* Where the master is: HOST and PORT, or PROJECT through the catalog. */
	char *host;
	int port;
	/* "HOST:PORT;HOST:PORT;..." (CCTools' form): the masters to try, in this order; host is
	 * then the first of them */
	char **list_hosts;
	int *list_ports;
	int nlist;
	char *project;                      /* -M: a regular expression over whole project names */
	struct catalog_project *project_re; /* -M compiled (catalog_project.h); owned */
	char *catalog_hosts;                /* -C; NULL: CATALOG_HOST or the built-in default */

	/* Resources offered; -1 = measure. */
	double cores;
	int64_t memory_mb;
	int64_t disk_mb;
	int64_t gpus;

	int64_t idle_timeout;     /* --idle-timeout (or -t), seconds */
	int64_t connect_timeout;  /* --connect-timeout (or -t), seconds */
	bool parent_death;        /* --parent-death: drain when the parent process exits */
	int64_t wall_time;        /* --wall-time, seconds; 0 = none */
	bool single_shot;         /* --single-shot: exit when the first master connection ends */
	int64_t exit_after_tasks; /* --exit-after-tasks N: drain after N tasks; 0 = never */
	char *workdir;            /* -s; NULL = a new directory under TMPDIR */
	bool keep_cache;
	char *shared_cache;         /* --shared-cache DIR: a store shared with other workers */
	int64_t shared_cache_limit; /* --shared-cache-size MB; 0 = no limit */
	double shared_cache_leases; /* --shared-cache-leases S: lease locks; 0 = OFD (not NFS) */

	char *password_file;
	bool ssl;
	char *ssl_ca;
	char *ssl_fingerprint; /* 64 hex digits, colons removed, lower case */
	bool ssl_no_verify;

	char **features; /* --feature, repeated */
	int feature_count;

	char *docker_image;                /* --docker IMAGE or --docker-preserve IMAGE */
	bool docker_preserve;              /* one shared container rather than one per task */
	bool containers;                   /* --containers: tasks may name their images */
	bool no_containers_ahead;          /* --no-containers-ahead (worker_ahead.h) */
	bool container_cgroups_engine;     /* --container-cgroups engine: never nested */
	enum rmon_seccomp_profile seccomp; /* --seccomp; default RMON_SECCOMP_DEFAULT */
	bool pin_cores;   /* --pin-cores: each task on whole cpus of its own (worker_cpus.h) */
	bool proc_events; /* --proc-events: count every short-lived process of a task in a cgroup */
	/* Vertical elasticity (doc/elasticity.md, worker_elastic.h). */
	bool memory_grow;           /* --memory-grow on|off (default off) */
	int64_t grow_step_up_mb;    /* --grow-step-up MB (default 256) */
	int64_t grow_step_down_mb;  /* --grow-step-down MB (default 128; 0: never shrink) */
	int64_t shrink_cooldown_s;  /* --shrink-cooldown T (default 10 s) */
	bool memory_throttle;       /* --memory-throttle on|off (default off) */
	int64_t throttle_rate_mbps; /* --memory-throttle-rate MB/s (default 1024) */
	bool cpu_grow;              /* --cpu-grow on|off (default off) */

	char *debug_flags;        /* -d, comma separated, may be repeated (joined) */
	char *debug_file;         /* -o */
	int64_t debug_rotate_max; /* --debug-rotate-max: bytes of -o before rotation; 0 never */
};

/* Parses ARGV into O (which it initialises). -d and -o are only recorded (main applies them);
 * -h, -v and getopt's errors go through cli.h. Returns CLI_DONE (run the worker), CLI_EXIT
 * (help or version printed: exit 0) or HTC_EPARSE with a one-line message in ERR naming the
 * option and what is wrong with its value, e.g. "--memory: \"lots\" is not a size (e.g. 4000,
 * 4G)". Only CLI_DONE leaves anything in O to free (with worker_opts_clear). */
int worker_opts_parse(int argc, char *const argv[], struct worker_opts *o, char *err,
                      size_t errlen);

/* Frees what O owns and re-initialises it. */
void worker_opts_clear(struct worker_opts *o);

/* The usage text (static). */
const char *worker_opts_usage(void);

#endif
