/* cluster_throttle.h: how fast a cluster driver may submit. Two limits, both options of every
 * cluster driver: at most RATE submissions per second (a token bucket that holds at most one
 * second of submissions, so a burst is never larger than RATE), and at most MAX unfinished jobs
 * (submitted and not yet seen to end) at once. Pure arithmetic over times the caller passes,
 * so it is tested without clocks. */
#ifndef HTC_CLUSTER_THROTTLE_H
#define HTC_CLUSTER_THROTTLE_H

#include <stdint.h>

struct cluster_throttle {
	double rate;      /* submissions per second, > 0 */
	int64_t max_jobs; /* unfinished jobs at most; 0 = no limit */
	double tokens;    /* submissions allowed now (at most rate, at least 1 of burst) */
	int64_t last_us;  /* when tokens was last brought up to date; 0 = never */
};

/* Defaults: RATE per second, MAX unfinished jobs (0 = no limit). */
void cluster_throttle_init(struct cluster_throttle *t, double rate, int64_t max_jobs);
/* The options every cluster driver has: "submit-rate" (a number > 0, submissions per second)
 * and "max-jobs" (an integer >= 0; 0 = no limit). Returns 0, 1 when KEY is not one of them
 * (the driver tries its own keys), or -EINVAL for a bad value. */
int cluster_throttle_set_option(struct cluster_throttle *t, const char *key, const char *value);
/* 1 when a submission may go now (NOW_US monotonic; UNFINISHED jobs are out), 0 otherwise. When
 * 0 and only the rate stops it, *WAIT_MS (if not NULL) is how long until it may; -1 when the
 * count of unfinished jobs stops it (wait for a job to end). */
int cluster_throttle_may(struct cluster_throttle *t, int64_t now_us, int64_t unfinished,
                         int64_t *wait_ms);
/* Records one submission made at NOW_US (after cluster_throttle_may said yes). */
void cluster_throttle_take(struct cluster_throttle *t, int64_t now_us);

#endif
