/* scaler_hook.c: parses and checks the answer of a --scaler-hook command (scaler_hook.h). */
#include "scaler_hook.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "banned.h"

static int bad(struct scaler_decision *d, char *err, size_t errlen, const char *why)
{
	scaler_decision_clear(d);
	snprintf(err, errlen, "%s", why);
	return -EINVAL;
}

/* An integer in 0..100000 at KEY of O into *N; 1 if present, 0 if absent, -1 if wrong. */
static int count_at(const json_t *o, const char *key, int *n)
{
	const json_t *v = json_object_get(o, key);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 100000)
		return -1;
	*n = (int)json_integer_value(v);
	return 1;
}

int scaler_hook_parse(const char *out, const struct scaler_input *in, struct scaler_decision *d,
                      char *err, size_t errlen)
{
	memset(d, 0, sizeof *d);
	if (strlen(out) > SCALER_HOOK_MAX_OUTPUT)
		return bad(d, err, errlen, "the answer is longer than 64 KiB");
	json_error_t je;
	json_t *o = json_loads(out, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(o)) {
		char why[256];
		if (o)
			snprintf(why, sizeof why, "the answer is not a JSON object");
		else
			snprintf(why, sizeof why, "the answer is not JSON: line %d: %s", je.line,
			         je.text);
		json_decref(o);
		return bad(d, err, errlen, why);
	}
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		if (strcmp(k, "workers") && strcmp(k, "start") && strcmp(k, "drain") &&
		    strcmp(k, "next_in")) {
			char why[256];
			snprintf(why, sizeof why,
			         "unknown key \"%.60s\" (expected workers, or start and drain, and "
			         "next_in)",
			         k);
			json_decref(o);
			return bad(d, err, errlen, why);
		}
	}
	int workers = 0, start = 0;
	int has_workers = count_at(o, "workers", &workers);
	int has_start = count_at(o, "start", &start);
	const json_t *drain = json_object_get(o, "drain");
	const json_t *next = json_object_get(o, "next_in");
	const char *why = NULL;
	if (has_workers < 0)
		why = "\"workers\" must be an integer in 0..100000";
	else if (has_start < 0)
		why = "\"start\" must be an integer in 0..100000";
	else if (has_workers && (has_start || drain))
		why = "give either \"workers\" or \"start\"/\"drain\", not both";
	else if (!has_workers && !has_start && !drain)
		why = "expected \"workers\" or \"start\"/\"drain\"";
	else if (drain && !json_is_array(drain))
		why = "\"drain\" must be an array of worker ids";
	else if (next && (!json_is_number(next) || json_number_value(next) < 0 ||
	                  json_number_value(next) > 86400 || !isfinite(json_number_value(next))))
		why = "\"next_in\" must be seconds in 0..86400";
	if (why) {
		json_decref(o);
		return bad(d, err, errlen, why);
	}
	size_t i;
	json_array_foreach(drain, i, v)
	{
		if (!json_is_string(v) || !*json_string_value(v)) {
			json_decref(o);
			return bad(d, err, errlen, "\"drain\" must be an array of worker ids");
		}
		scaler_decision_drain(d, json_string_value(v));
	}
	d->start = start;
	if (has_workers) {
		int live = in->pool - in->draining;
		if (workers > live)
			d->start = workers - live;
		/* fewer: our idle workers first, then the least busy */
		for (int busy = 0; busy < 2 && live - (int)d->n_drain > workers; busy++)
			for (size_t w = 0; w < in->n_workers && live - (int)d->n_drain > workers;
			     w++) {
				const struct scaler_worker *sw = &in->workers[w];
				if (sw->ours && !sw->draining &&
				    (busy ? sw->tasks > 0 : sw->tasks == 0))
					scaler_decision_drain(d, sw->id);
			}
	}
	d->next_in = next ? json_number_value(next) : 0;
	snprintf(d->reason, sizeof d->reason, "hook: start %d, drain %zu", d->start, d->n_drain);
	json_decref(o);
	return 0;
}
