/* rmon_elastic.h: the policy of vertical elasticity, shared by the cgroups batch driver and the
 * Work Queue worker: whether a task at its memory limit is grown, held or given up; whether a
 * task whose memory grows abnormally fast while memory is short is throttled, and when it is
 * released; when a grown task is shrunk back. Pure functions on numbers: the callers read the
 * measurements, set the limits through the monitor and log (doc/elasticity.md). */
#ifndef HTC_RMON_ELASTIC_H
#define HTC_RMON_ELASTIC_H

#include <stdint.h>

/* Memory samples kept per task for the growth rate (one per tick). */
#define RMON_ELASTIC_SAMPLES 8
/* Below this fraction of free memory, memory is short (throttling applies). */
#define RMON_ELASTIC_SHORT_FRACTION 0.25

struct rmon_elastic_cfg {
	int grow;                   /* 1: a task at its limit is grown when it may be */
	int64_t step_up_mb;         /* > 0: the growth step; 0: a tenth of the limit, >= 64 MB */
	int64_t step_down_mb;       /* > 0: a grown task is shrunk by this step; 0: never */
	int64_t shrink_cooldown_ms; /* time since the task's last change before a shrink */
	int throttle;               /* 1: runaway tasks are throttled while memory is short */
	double throttle_rate;       /* MB/s: a growth faster than this is abnormal */
	int64_t tick_ms;            /* period of the caller's watch (the throttle's margin) */
	/* 1: a task is throttled only while it has neighbours to protect, and a throttled task
	 * left alone is released (the worker); 0: whatever runs beside it (the cgroups driver,
	 * which protects the machine). */
	int protect_neighbours;
};

/* One task's state. Initialise with rmon_elastic_task_init. */
struct rmon_elastic_task {
	int64_t limit_mb; /* current limit; -1 = none */
	int64_t base_mb;  /* its allocation: never shrunk below it */
	int64_t max_mb;   /* the ceiling of growth; -1 = none known (no growth) */
	int raises;       /* growths (a release of a throttle is not one) */
	int shrinks;
	int64_t peak_limit_mb;  /* largest limit it had */
	int64_t last_change_ms; /* time of its last growth or shrink; -1: none */
	int throttled;
	int64_t restore_mb; /* the limit a throttled task is released back to */
	uint64_t sample_ms[RMON_ELASTIC_SAMPLES];
	double sample_mb[RMON_ELASTIC_SAMPLES];
	int n_samples, next_sample;
	/* The memory it holds (its allocation, raised by each growth and lowered by each shrink;
	 * a throttle holds nothing back), integrated over time since it started (MB·ms):
	 * allocated memory-time is this integral when the limit changes while a task runs. */
	int64_t held_mb;
	double held_mb_ms;
	int64_t started_ms, held_since_ms; /* -1: not started */
};

/* T starts running at NOW_MS: the integral of the memory it holds begins. */
void rmon_elastic_start(struct rmon_elastic_task *t, uint64_t now_ms);

/* The time-average of the memory T held from its start to NOW_MS (MB), or -1 when it was
 * not started or holds no limit. */
double rmon_elastic_mean_held(const struct rmon_elastic_task *t, uint64_t now_ms);

/* What happens to a task at its limit. */
enum rmon_elastic_verdict {
	RMON_ELASTIC_GIVE_UP = 0, /* ended as memory-exhausted */
	RMON_ELASTIC_GROW,        /* raised to *TO (counted in raises) */
	RMON_ELASTIC_RELEASE,     /* a throttled task raised towards its own limit (*TO) */
	RMON_ELASTIC_WAIT,        /* held at its limit: throttled while memory is short */
};

/* What a tick proposes for one task. */
enum rmon_elastic_action {
	RMON_ELASTIC_NONE = 0,
	RMON_ELASTIC_THROTTLE,   /* hold it at *TO (its usage and a margin) */
	RMON_ELASTIC_UNTHROTTLE, /* raise a throttled task to *TO */
	RMON_ELASTIC_SHRINK,     /* lower a grown task to *TO */
};

/* The figures of one decision. */
struct rmon_elastic_now {
	uint64_t ms;          /* the caller's clock */
	double usage_mb;      /* the task's current memory */
	int short_mem;        /* memory is short (rmon_elastic_short) */
	int64_t room_mb;      /* memory free for this task to grow into */
	int64_t unlimited_mb; /* the limit a throttled task without one goes back to */
	int neighbours;       /* other tasks running beside it */
};

/* T for a task of limit LIMIT_MB (-1: none) that may grow up to MAX_MB (-1: none). */
void rmon_elastic_task_init(struct rmon_elastic_task *t, int64_t limit_mb, int64_t max_mb);

/* The growth step of CFG for a task at LIMIT_MB. */
int64_t rmon_elastic_step_up(const struct rmon_elastic_cfg *cfg, int64_t limit_mb);

/* Whether memory is short: less than RMON_ELASTIC_SHORT_FRACTION of TOTAL_MB is free when
 * USED_MB is in use (TOTAL_MB <= 0: never). */
int rmon_elastic_short(int64_t total_mb, double used_mb);

/* Growth over the last second or more before NOW_MS, in MB/s; 0 until a second of samples. */
double rmon_elastic_rate(const struct rmon_elastic_task *t, uint64_t now_ms, double now_mb);

/* Decides for task T at its limit LIMIT_MB and updates T. *TO is the new limit (GROW,
 * RELEASE); *WHY a static text of the reason (GIVE_UP, WAIT). A task still growing faster
 * than the throttle rate while memory is short is held (throttled) rather than grown. */
enum rmon_elastic_verdict rmon_elastic_at_limit(const struct rmon_elastic_cfg *cfg,
                                                struct rmon_elastic_task *t, int64_t limit_mb,
                                                const struct rmon_elastic_now *now, int64_t *to,
                                                const char **why);

/* The periodic watch: records the sample of NOW and proposes an action for T (*TO the new
 * limit). T is not changed but for the sample: call rmon_elastic_applied once the limit was
 * set. */
enum rmon_elastic_action rmon_elastic_tick(const struct rmon_elastic_cfg *cfg,
                                           struct rmon_elastic_task *t,
                                           const struct rmon_elastic_now *now, int64_t *to);

/* Records that ACTION of a tick was applied: the limit is TO now. */
void rmon_elastic_applied(struct rmon_elastic_task *t, enum rmon_elastic_action action, int64_t to,
                          const struct rmon_elastic_now *now);

/* CPU quota growth: the quota of a task of BASE cores that used USED cores over the last
 * interval with quota QUOTA, when IDLE cores of its worker are unused. Returns the new quota:
 * a task using at least 90 % of its quota grows by the whole idle cores (at least one; 0.85
 * idle counts as one, measured rates being noisy); a grown task goes back to BASE as soon as fewer
 * than half a core is idle besides what it uses above BASE itself (its neighbours need their
 * share); otherwise QUOTA. */
double rmon_elastic_cpu_quota(double base, double quota, double used, double idle);

#endif
