/* rmon_elastic.c: the grow / throttle / release / shrink decisions of rmon_elastic.h, on
 * numbers only, so the cgroups driver and the worker follow one policy and it is tested
 * without a cgroup. */
#include "rmon_elastic.h"

#include <math.h>
#include <string.h>

#include "banned.h"

void rmon_elastic_task_init(struct rmon_elastic_task *t, int64_t limit_mb, int64_t max_mb)
{
	memset(t, 0, sizeof *t);
	t->limit_mb = limit_mb >= 0 ? limit_mb : -1;
	t->base_mb = t->limit_mb;
	t->peak_limit_mb = t->limit_mb;
	t->max_mb = max_mb >= 0 ? max_mb : -1;
	t->last_change_ms = -1;
	t->restore_mb = -1;
	t->held_mb = t->limit_mb;
	t->started_ms = t->held_since_ms = -1;
}

/* T holds MB from NOW_MS on. */
static void hold(struct rmon_elastic_task *t, uint64_t now_ms, int64_t mb)
{
	if (t->held_since_ms >= 0 && t->held_mb >= 0 && (int64_t)now_ms > t->held_since_ms) {
		t->held_mb_ms += (double)t->held_mb * (double)((int64_t)now_ms - t->held_since_ms);
		t->held_since_ms = (int64_t)now_ms;
	}
	t->held_mb = mb;
}

void rmon_elastic_start(struct rmon_elastic_task *t, uint64_t now_ms)
{
	t->started_ms = t->held_since_ms = (int64_t)now_ms;
	t->held_mb_ms = 0;
}

double rmon_elastic_mean_held(const struct rmon_elastic_task *t, uint64_t now_ms)
{
	if (t->started_ms < 0 || t->held_mb < 0)
		return -1;
	int64_t now = (int64_t)now_ms, span = now - t->started_ms;
	if (span <= 0)
		return (double)t->held_mb;
	double open = now > t->held_since_ms ? (double)(now - t->held_since_ms) : 0;
	return (t->held_mb_ms + (double)t->held_mb * open) / (double)span;
}

int64_t rmon_elastic_step_up(const struct rmon_elastic_cfg *cfg, int64_t limit_mb)
{
	if (cfg->step_up_mb > 0)
		return cfg->step_up_mb;
	int64_t step = limit_mb / 10;
	return step < 64 ? 64 : step;
}

int rmon_elastic_short(int64_t total_mb, double used_mb)
{
	return total_mb > 0 &&
	       (double)total_mb - used_mb < RMON_ELASTIC_SHORT_FRACTION * (double)total_mb;
}

double rmon_elastic_rate(const struct rmon_elastic_task *t, uint64_t now_ms, double now_mb)
{
	for (int k = 1; k <= t->n_samples; k++) {
		int i = (t->next_sample - k + RMON_ELASTIC_SAMPLES) % RMON_ELASTIC_SAMPLES;
		if (now_ms < t->sample_ms[i])
			continue;
		uint64_t dt = now_ms - t->sample_ms[i];
		if (dt >= 1000)
			return (now_mb - t->sample_mb[i]) * 1000.0 / (double)dt;
	}
	return 0;
}

/* The next limit of a throttled task on its way back to its own: a step up, at most that. */
static int64_t release_to(const struct rmon_elastic_cfg *cfg, const struct rmon_elastic_task *t,
                          int64_t limit_mb, int *done)
{
	int64_t to = limit_mb + rmon_elastic_step_up(cfg, limit_mb);
	*done = 0;
	if (to >= t->restore_mb) {
		to = t->restore_mb;
		*done = 1;
	}
	return to;
}

enum rmon_elastic_verdict rmon_elastic_at_limit(const struct rmon_elastic_cfg *cfg,
                                                struct rmon_elastic_task *t, int64_t limit_mb,
                                                const struct rmon_elastic_now *now, int64_t *to,
                                                const char **why)
{
	*to = limit_mb;
	*why = NULL;
	if (t->throttled) {
		if (now->short_mem && (!cfg->protect_neighbours || now->neighbours > 0)) {
			*why = "throttled while memory is short";
			return RMON_ELASTIC_WAIT;
		}
		int done = 0;
		int64_t next = release_to(cfg, t, limit_mb, &done);
		if (done)
			t->throttled = 0;
		if (next > limit_mb) {
			t->limit_mb = *to = next;
			return RMON_ELASTIC_RELEASE;
		}
	}
	if (!cfg->grow) {
		*why = "growth is off";
		return RMON_ELASTIC_GIVE_UP;
	}
	if (t->max_mb <= limit_mb) {
		*why = "it is at its maximum";
		return RMON_ELASTIC_GIVE_UP;
	}
	int64_t inc = rmon_elastic_step_up(cfg, limit_mb);
	if (inc > t->max_mb - limit_mb)
		inc = t->max_mb - limit_mb;
	if (inc > now->room_mb)
		inc = now->room_mb;
	if (inc < 1) {
		*why = "no memory is free to grow it";
		return RMON_ELASTIC_GIVE_UP;
	}
	t->limit_mb = *to = limit_mb + inc;
	if (t->limit_mb > t->peak_limit_mb)
		t->peak_limit_mb = t->limit_mb;
	if (t->limit_mb > t->held_mb)
		hold(t, now->ms, t->limit_mb);
	t->raises++;
	t->last_change_ms = (int64_t)now->ms;
	return RMON_ELASTIC_GROW;
}

enum rmon_elastic_action rmon_elastic_tick(const struct rmon_elastic_cfg *cfg,
                                           struct rmon_elastic_task *t,
                                           const struct rmon_elastic_now *now, int64_t *to)
{
	enum rmon_elastic_action a = RMON_ELASTIC_NONE;
	double mb = now->usage_mb > 0 ? now->usage_mb : 0;
	*to = t->limit_mb;
	int alone = cfg->protect_neighbours && now->neighbours <= 0;
	if (t->throttled && (!now->short_mem || alone)) {
		int done = 0;
		*to = release_to(cfg, t, t->limit_mb, &done);
		a = RMON_ELASTIC_UNTHROTTLE;
	} else if (!t->throttled && cfg->throttle && now->short_mem && !alone) {
		double rate = rmon_elastic_rate(t, now->ms, mb);
		/* the reading may be a tick old and the task grows on meanwhile: leave room for
		 * two ticks of growth, or the kernel refuses a limit below its usage */
		int64_t pin = (int64_t)ceil(mb + rate * 2 * (double)cfg->tick_ms / 1000.0) + 16;
		if (rate > cfg->throttle_rate && (t->limit_mb < 0 || pin < t->limit_mb)) {
			*to = pin;
			a = RMON_ELASTIC_THROTTLE;
		}
	} else if (!t->throttled && cfg->step_down_mb > 0 && t->base_mb > 0 &&
	           t->limit_mb > t->base_mb && t->last_change_ms >= 0 &&
	           (int64_t)now->ms - t->last_change_ms >= cfg->shrink_cooldown_ms) {
		int64_t down = t->limit_mb - cfg->step_down_mb;
		if (down < t->base_mb)
			down = t->base_mb;
		/* well below: the lower limit still leaves a whole step free above the usage */
		if (mb + (double)cfg->step_down_mb <= (double)down) {
			*to = down;
			a = RMON_ELASTIC_SHRINK;
		}
	}
	t->sample_ms[t->next_sample] = now->ms;
	t->sample_mb[t->next_sample] = mb;
	t->next_sample = (t->next_sample + 1) % RMON_ELASTIC_SAMPLES;
	if (t->n_samples < RMON_ELASTIC_SAMPLES)
		t->n_samples++;
	return a;
}

double rmon_elastic_cpu_quota(double base, double quota, double used, double idle)
{
	if (base <= 0)
		return quota;
	/* what it borrowed itself is no neighbour's need: count it as idle, or a grown task
	 * that uses its loan would be put back by its own use at once */
	double borrowed = used > base ? used - base : 0;
	if (quota > base && idle + borrowed < 0.5)
		return base;
	double whole = floor(idle + 0.15); /* measured rates are noisy: 0.9 idle is a core */
	if (used >= 0.9 * quota && whole >= 1)
		return quota + whole;
	return quota;
}

void rmon_elastic_applied(struct rmon_elastic_task *t, enum rmon_elastic_action action, int64_t to,
                          const struct rmon_elastic_now *now)
{
	switch (action) {
	case RMON_ELASTIC_THROTTLE:
		t->restore_mb = t->limit_mb < 0 ? now->unlimited_mb : t->limit_mb;
		t->limit_mb = to;
		t->throttled = 1;
		break;
	case RMON_ELASTIC_UNTHROTTLE:
		t->limit_mb = to;
		if (to >= t->restore_mb)
			t->throttled = 0;
		break;
	case RMON_ELASTIC_SHRINK:
		t->limit_mb = to;
		hold(t, now->ms, to > t->base_mb ? to : t->base_mb);
		t->shrinks++;
		t->last_change_ms = (int64_t)now->ms;
		break;
	case RMON_ELASTIC_NONE:
	default: break;
	}
}
