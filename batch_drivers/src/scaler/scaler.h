/* scaler.h: the policies that decide how many workers work_queue_factory runs (--scaler):
 * `queue` (one core per waiting or running task, as CCTools' factory), `hpa:TARGET` (the
 * Kubernetes Horizontal Pod Autoscaler's rule on the workers' measured CPU load) and `hta`
 * (Algorithm 1 of the HTA work: simulate dispatch over one resource-preparing latency, start what
 * still waits, drain idle capacity when nothing waits). Each policy is a pure function of a
 * struct scaler_input, so each rule is unit-tested without a master (doc/work-queue-factory.md). */
#ifndef HTC_SCALER_H
#define HTC_SCALER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A resource vector: cores, memory MB, disk MB; -1 where unknown. */
enum { SC_CORES, SC_MEMORY, SC_DISK, SC_NRES };
struct scaler_vec {
	double v[SC_NRES];
};

struct scaler_category {
	char *name;
	int64_t waiting, running;
	struct scaler_vec size;  /* what one task is given: declared, else first allocation, else
	                            measured peak; -1 fields unknown */
	bool declared;           /* the tasks declared their cores: no warm-up needed for size */
	double cores_avg;        /* measured average cores of one task (CPU load), -1 unknown */
	int64_t done;            /* tasks whose run time was measured */
	double rt_mean, rt_sd;   /* seconds, -1 unknown */
	double running_mean_age; /* seconds its running tasks have run, on average */
};

struct scaler_worker {
	char *id;
	struct scaler_vec total, free;
	int tasks;
	double idle_s;
	bool draining;
	bool ours;   /* started by this factory (its token is among the labels) */
	char *token; /* ours: the token, else NULL */
};

/* What a policy sees each cycle. */
struct scaler_input {
	double now;                   /* seconds, the factory's clock */
	struct scaler_category *cats; /* owned */
	size_t n_cats;
	struct scaler_worker *workers; /* owned: the rows the master sent */
	size_t n_workers;
	int64_t workers_active; /* connected, active or draining (all, not only rows) */
	int64_t tasks_waiting, tasks_running;
	/* the factory's own state */
	int pool;     /* workers started and not ended (pending + connected) */
	int pending;  /* requested, not connected yet */
	int draining; /* ours told to drain, not ended */
	int min_workers, max_workers, per_cycle;
	struct scaler_vec worker_size; /* what one new worker offers (-1: unknown) */
	double latency;                /* resource-preparing latency estimate, seconds (> 0) */
	double last_action;            /* now of the last start or drain, or -1 */
	double last_start;             /* now of the last start, or -1 */
	double period;                 /* the factory's cycle */
};

/* What a policy decides. */
struct scaler_decision {
	int start;    /* workers to start */
	char **drain; /* worker ids to drain (owned) */
	size_t n_drain, cap_drain;
	double next_in;   /* seconds until the next decision is worth making; <= 0: next cycle */
	char reason[160]; /* one line for the log */
};

enum scaler_kind { SCALER_HTA = 0, SCALER_QUEUE, SCALER_HPA };

struct scaler_policy {
	enum scaler_kind kind;
	double hpa_target;     /* hpa: target CPU load, 0 < t <= 1 */
	double hpa_window;     /* hpa: scale-down stabilisation window, seconds */
	double hpa_recent[64]; /* hpa: (time, desired) pairs of the window, a ring */
	size_t hpa_n, hpa_head;
};

/* Parses "queue", "hta", "hpa:TARGET" (percent, 1..100) or "hpa:TARGET:WINDOW" (seconds of the
 * scale-down window, default 300) into P. 0, or -EINVAL with ERR set. */
int scaler_parse(const char *spec, struct scaler_policy *p, char *err, size_t errlen);

/* Fills IN from the master's status object (doc/work-queue-api.md section 5) and the worker
 * rows of its scaler section; TOKEN_PREFIX marks the labels of the factory's own workers.
 * Adds to IN (several masters are summed). Returns 0, or -EINVAL if STATUS is not an object. */
int scaler_input_add_status(struct scaler_input *in, const json_t *status,
                            const char *token_prefix);
/* Frees what IN owns (not IN). */
void scaler_input_clear(struct scaler_input *in);
/* Frees what D owns. */
void scaler_decision_clear(struct scaler_decision *d);
/* Adds worker ID to D's drain list. */
void scaler_decision_drain(struct scaler_decision *d, const char *id);

/* The decision of P on IN (limits applied: the pool stays within min..max, at most per_cycle
 * starts; only workers of this factory are drained, idle ones first). */
void scaler_decide(struct scaler_policy *p, const struct scaler_input *in,
                   struct scaler_decision *d);

/* The limits scaler_decide applies, for a decision made elsewhere (the hook). */
void scaler_apply_limits(const struct scaler_input *in, struct scaler_decision *d);

/* The policies, called by scaler_decide. */
void scaler_queue_decide(const struct scaler_input *in, struct scaler_decision *d);
void scaler_hpa_decide(struct scaler_policy *p, const struct scaler_input *in,
                       struct scaler_decision *d);
void scaler_hta_decide(const struct scaler_input *in, struct scaler_decision *d);

/* The measured CPU load of the connected workers (0..): the running tasks' measured average
 * cores summed over categories, over the workers' cores; -1 when no worker is connected. */
double scaler_cpu_load(const struct scaler_input *in);

/* The input as JSON (for the hook; caller decrefs). */
json_t *scaler_input_json(const struct scaler_input *in);

#endif
