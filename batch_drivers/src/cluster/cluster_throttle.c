/* cluster_throttle.c: the submission rate and unfinished-job limits of cluster drivers
 * (cluster_throttle.h). */
#include "cluster_throttle.h"

#include <errno.h>
#include <string.h>

#include "stringtools.h"
#include "banned.h"

static double burst(const struct cluster_throttle *t)
{
	return t->rate < 1 ? 1 : t->rate;
}

void cluster_throttle_init(struct cluster_throttle *t, double rate, int64_t max_jobs)
{
	memset(t, 0, sizeof *t);
	t->rate = rate > 0 ? rate : 1;
	t->max_jobs = max_jobs < 0 ? 0 : max_jobs;
	t->tokens = burst(t);
}

int cluster_throttle_set_option(struct cluster_throttle *t, const char *key, const char *value)
{
	if (strcmp(key, "submit-rate") == 0) {
		double v;
		if (str_to_double(value, &v) < 0 || v <= 0 || v > 1e6)
			return -EINVAL;
		t->rate = v;
		t->tokens = burst(t);
		return 0;
	}
	if (strcmp(key, "max-jobs") == 0) {
		int64_t v;
		if (str_to_int64(value, &v) < 0 || v < 0)
			return -EINVAL;
		t->max_jobs = v;
		return 0;
	}
	return 1;
}

static void refill(struct cluster_throttle *t, int64_t now_us)
{
	if (t->last_us > 0 && now_us > t->last_us) {
		t->tokens += (double)(now_us - t->last_us) * t->rate / 1e6;
		if (t->tokens > burst(t))
			t->tokens = burst(t);
	}
	if (t->last_us == 0 || now_us > t->last_us)
		t->last_us = now_us;
}

int cluster_throttle_may(struct cluster_throttle *t, int64_t now_us, int64_t unfinished,
                         int64_t *wait_ms)
{
	if (t->max_jobs > 0 && unfinished >= t->max_jobs) {
		if (wait_ms)
			*wait_ms = -1;
		return 0;
	}
	refill(t, now_us);
	if (t->tokens >= 1)
		return 1;
	if (wait_ms) {
		double ms = (1 - t->tokens) * 1000 / t->rate;
		*wait_ms = (int64_t)ms + 1;
	}
	return 0;
}

void cluster_throttle_take(struct cluster_throttle *t, int64_t now_us)
{
	refill(t, now_us);
	t->tokens -= 1;
}
