/* rmsummary.c: the resource summary record: its table of fields and units, JSON writing and
 * reading (jansson), the limits syntax users type ("memory: 2G, cores: 2"), and loading of
 * files of concatenated summaries or directories of *.summary files. Number printing: fields
 * that count things print as integers, the others with at most three decimals. */
#include "rmsummary.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buffer.h"
#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "stringtools.h"
#include "units.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

/* Largest file rmsummary_load reads, and most -V extras kept per summary. */
#define RMSUMMARY_MAX_FILE   (64 * 1024 * 1024)
#define RMSUMMARY_MAX_EXTRAS 256

enum field_kind {
	KIND_REAL,  /* printed with up to three decimals */
	KIND_COUNT, /* printed as an integer */
};

struct field_info {
	const char *name;
	const char *unit;
	enum field_kind kind;
};

static const struct field_info fields[RM_N_FIELDS] = {
    [RM_START] = {"start", "us", KIND_COUNT},
    [RM_END] = {"end", "us", KIND_COUNT},
    [RM_WALL_TIME] = {"wall_time", "s", KIND_REAL},
    [RM_CPU_TIME] = {"cpu_time", "s", KIND_REAL},
    [RM_CORES] = {"cores", "cores", KIND_REAL},
    [RM_CORES_AVG] = {"cores_avg", "cores", KIND_REAL},
    [RM_GPUS] = {"gpus", "gpus", KIND_COUNT},
    [RM_MEMORY] = {"memory", "MB", KIND_REAL},
    [RM_VIRTUAL_MEMORY] = {"virtual_memory", "MB", KIND_REAL},
    [RM_SWAP_MEMORY] = {"swap_memory", "MB", KIND_REAL},
    [RM_DISK] = {"disk", "MB", KIND_REAL},
    [RM_BYTES_READ] = {"bytes_read", "MB", KIND_REAL},
    [RM_BYTES_WRITTEN] = {"bytes_written", "MB", KIND_REAL},
    [RM_BYTES_RECEIVED] = {"bytes_received", "MB", KIND_REAL},
    [RM_BYTES_SENT] = {"bytes_sent", "MB", KIND_REAL},
    [RM_BANDWIDTH] = {"bandwidth", "Mbps", KIND_REAL},
    [RM_MACHINE_CPUS] = {"machine_cpus", "cores", KIND_COUNT},
    [RM_MACHINE_LOAD] = {"machine_load", "procs", KIND_REAL},
    [RM_CONTEXT_SWITCHES] = {"context_switches", "switches", KIND_COUNT},
    [RM_MAX_CONCURRENT_PROCESSES] = {"max_concurrent_processes", "procs", KIND_COUNT},
    [RM_TOTAL_PROCESSES] = {"total_processes", "procs", KIND_COUNT},
    [RM_TOTAL_FILES] = {"total_files", "files", KIND_COUNT},
};

/* Top-level keys that are not numeric fields; anything else unknown becomes an extra. */
static const char *const descriptive_keys[] = {
    "command", "category",        "task_id",    "host",      "exit_type", "exit_status",
    "signal",  "limits_exceeded", "peak_times", "snapshots", NULL,
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void rmsummary_init(struct rmsummary *s)
{
	memset(s, 0, sizeof *s);
	s->exit_type = RM_EXIT_NONE;
	for (int i = 0; i < RM_N_FIELDS; i++) {
		s->v[i] = -1;
		s->peak_times[i] = -1;
		s->limits_exceeded[i] = -1;
	}
}

void rmsummary_clear(struct rmsummary *s)
{
	if (!s)
		return;
	free(s->command);
	free(s->host);
	free(s->category);
	free(s->task_id);
	for (size_t i = 0; i < s->n_extra; i++) {
		free(s->extra_keys[i]);
		free(s->extra_values[i]);
	}
	free(s->extra_keys);
	free(s->extra_values);
	rmsummary_init(s);
}

void rmsummary_copy(struct rmsummary *dst, const struct rmsummary *src)
{
	if (dst == src)
		return;
	rmsummary_clear(dst);
	*dst = *src;
	dst->command = xstrdup(src->command);
	dst->host = xstrdup(src->host);
	dst->category = xstrdup(src->category);
	dst->task_id = xstrdup(src->task_id);
	dst->extra_keys = NULL;
	dst->extra_values = NULL;
	if (src->n_extra > 0) {
		dst->extra_keys = xcalloc(src->n_extra, sizeof(char *));
		dst->extra_values = xcalloc(src->n_extra, sizeof(char *));
		for (size_t i = 0; i < src->n_extra; i++) {
			dst->extra_keys[i] = xstrdup(src->extra_keys[i]);
			dst->extra_values[i] = xstrdup(src->extra_values[i]);
		}
	}
}

const char *rmsummary_field_name(int field)
{
	if (field < 0 || field >= RM_N_FIELDS)
		return NULL;
	return fields[field].name;
}

const char *rmsummary_field_unit(int field)
{
	if (field < 0 || field >= RM_N_FIELDS)
		return NULL;
	return fields[field].unit;
}

int rmsummary_field_lookup(const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; i < RM_N_FIELDS; i++)
		if (strcmp(fields[i].name, name) == 0)
			return i;
	return -1;
}

void rmsummary_merge_max(struct rmsummary *dst, const struct rmsummary *src)
{
	for (int i = 0; i < RM_N_FIELDS; i++) {
		if (src->v[i] < 0)
			continue;
		if (dst->v[i] < src->v[i]) {
			dst->v[i] = src->v[i];
			dst->peak_times[i] = src->peak_times[i];
		}
	}
}

int rmsummary_exceeds(const struct rmsummary *measured, const struct rmsummary *limits,
                      uint64_t *which)
{
	uint64_t bits = 0;
	for (int i = 0; i < RM_N_FIELDS; i++) {
		if (limits->v[i] < 0 || measured->v[i] < 0)
			continue;
		if (measured->v[i] > limits->v[i])
			bits |= UINT64_C(1) << i;
	}
	if (which)
		*which = bits;
	return bits != 0;
}

/* ---- writing ------------------------------------------------------------------------------ */

static const char *exit_type_name(enum rmsummary_exit_type t)
{
	switch (t) {
	case RM_EXIT_NORMAL: return "normal";
	case RM_EXIT_SIGNAL: return "signal";
	case RM_EXIT_LIMITS: return "limits";
	default: return NULL;
	}
}

/* A number as JSON: counts are rounded to integers; the rest to three decimals, and a whole
 * result is written without a fraction. */
static json_t *json_num(double v, enum field_kind kind)
{
	double r = kind == KIND_COUNT ? round(v) : round(v * 1000.0) / 1000.0;
	if (r == trunc(r) && fabs(r) < 9.0e15)
		return json_integer((json_int_t)r);
	return json_real(r);
}

static json_t *json_quantity(double v, enum field_kind kind, const char *unit, int compact)
{
	json_t *n = json_num(v, kind);
	if (compact)
		return n;
	json_t *a = json_array();
	json_array_append_new(a, n);
	json_array_append_new(a, json_string(unit));
	return a;
}

static void set_string(json_t *o, const char *key, const char *value)
{
	if (!value)
		return;
	json_t *j = json_string(value);
	if (!j) { /* not valid UTF-8: write '?' for every byte outside ASCII */
		char *copy = xstrdup(value);
		for (char *c = copy; *c; c++)
			if ((unsigned char)*c >= 0x80)
				*c = '?';
		j = json_string(copy);
		free(copy);
	}
	if (j)
		json_object_set_new(o, key, j);
}

static json_t *summary_to_object(const struct rmsummary *s, int compact)
{
	json_t *o = json_object();
	set_string(o, "command", s->command);
	set_string(o, "category", s->category);
	set_string(o, "task_id", s->task_id);
	set_string(o, "host", s->host);
	const char *et = exit_type_name(s->exit_type);
	if (et) {
		json_object_set_new(o, "exit_type", json_string(et));
		if (s->exit_type == RM_EXIT_NORMAL)
			json_object_set_new(o, "exit_status", json_integer(s->exit_status));
		else
			json_object_set_new(o, "signal", json_integer(s->signal));
	}
	for (int i = 0; i < RM_N_FIELDS; i++)
		if (s->v[i] >= 0)
			json_object_set_new(
			    o, fields[i].name,
			    json_quantity(s->v[i], fields[i].kind, fields[i].unit, compact));
	if (s->exit_type == RM_EXIT_LIMITS) {
		json_t *le = json_object();
		for (int i = 0; i < RM_N_FIELDS; i++)
			if (s->limits_exceeded[i] >= 0)
				json_object_set_new(le, fields[i].name,
				                    json_quantity(s->limits_exceeded[i],
				                                  fields[i].kind, fields[i].unit,
				                                  compact));
		json_object_set_new(o, "limits_exceeded", le);
	}
	json_t *pt = NULL;
	for (int i = 0; i < RM_N_FIELDS; i++) {
		if (s->peak_times[i] < 0)
			continue;
		if (!pt)
			pt = json_object();
		json_object_set_new(pt, fields[i].name,
		                    json_quantity(s->peak_times[i], KIND_REAL, "s", compact));
	}
	if (pt)
		json_object_set_new(o, "peak_times", pt);
	for (size_t i = 0; i < s->n_extra; i++) {
		const char *k = s->extra_keys[i];
		if (!k || json_object_get(o, k) || rmsummary_field_lookup(k) >= 0)
			continue;
		json_t *v = NULL;
		if (s->extra_values[i])
			v = json_loads(s->extra_values[i], JSON_DECODE_ANY, NULL);
		if (!v) /* not JSON text: keep it as a string */
			v = s->extra_values[i] ? json_string(s->extra_values[i]) : json_null();
		if (v)
			json_object_set_new(o, k, v);
	}
	return o;
}

#define DUMP_FLAGS (JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY)

char *rmsummary_to_json(const struct rmsummary *s, int pprint, int compact)
{
	json_t *o = summary_to_object(s, compact);
	char *out = NULL;
	if (!pprint) {
		char *t = json_dumps(o, DUMP_FLAGS | JSON_COMPACT);
		out = xstrdup(t ? t : "{}");
		free(t);
		json_decref(o);
		return out;
	}
	/* One key per line; each value on one line ("memory": [1000, "MB"]). */
	struct buffer b;
	buffer_init(&b, 0);
	buffer_putstring(&b, "{");
	const char *key;
	json_t *value;
	int first = 1;
	json_object_foreach(o, key, value)
	{
		json_t *jk = json_string(key);
		char *k = jk ? json_dumps(jk, DUMP_FLAGS) : NULL;
		char *v = json_dumps(value, DUMP_FLAGS);
		buffer_printf(&b, "%s\n  %s: %s", first ? "" : ",", k ? k : "\"\"", v ? v : "null");
		free(k);
		free(v);
		json_decref(jk);
		first = 0;
	}
	buffer_putstring(&b, first ? "}" : "\n}");
	json_decref(o);
	return buffer_steal(&b, NULL);
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Multiplier turning a quantity in UNIT into the unit of FIELD, or 0 if UNIT does not fit. */
static double unit_factor(int field, const char *unit)
{
	const char *want = fields[field].unit;
	if (strcmp(unit, want) == 0)
		return 1;
	if (strcmp(want, "MB") == 0) {
		char one[32];
		int64_t bytes;
		snprintf(one, sizeof one, "1%s", unit);
		if (strlen(unit) < 8 && units_parse_bytes(one, &bytes) == 0)
			return (double)bytes / (1024.0 * 1024.0);
		return 0;
	}
	double us = 0; /* the unit in microseconds */
	if (strcmp(unit, "us") == 0)
		us = 1;
	else if (strcmp(unit, "ms") == 0)
		us = 1e3;
	else {
		char one[32];
		int64_t secs;
		snprintf(one, sizeof one, "1%s", unit);
		if (strlen(unit) < 10 && units_parse_seconds(one, &secs) == 0)
			us = (double)secs * 1e6;
	}
	if (us == 0)
		return 0;
	if (strcmp(want, "s") == 0)
		return us / 1e6;
	if (strcmp(want, "us") == 0)
		return us;
	return 0;
}

/* A quantity: a number, or [number, "unit"] in a unit convertible to the field's. UNIT_FIELD
 * is the field whose unit applies (-1: seconds, for peak_times). */
static int read_quantity(json_t *j, int unit_field, const char *what, double *out, char *err,
                         size_t errlen)
{
	if (json_is_number(j)) {
		*out = json_number_value(j);
		return 0;
	}
	if (json_is_array(j) && json_array_size(j) == 2 && json_is_number(json_array_get(j, 0)) &&
	    json_is_string(json_array_get(j, 1))) {
		const char *unit = json_string_value(json_array_get(j, 1));
		double f = unit_factor(unit_field < 0 ? RM_WALL_TIME : unit_field, unit);
		if (f == 0) {
			seterr(err, errlen, "%s: unit \"%s\" where %s was expected", what, unit,
			       unit_field < 0 ? "s" : fields[unit_field].unit);
			return HTC_EPARSE;
		}
		double v = json_number_value(json_array_get(j, 0)) * f;
		if (!isfinite(v)) {
			seterr(err, errlen, "%s: value out of range", what);
			return HTC_EPARSE;
		}
		*out = v;
		return 0;
	}
	seterr(err, errlen, "%s: expected a number or [number, \"unit\"]", what);
	return HTC_EPARSE;
}

static int read_int(json_t *j, const char *what, int *out, char *err, size_t errlen)
{
	if (json_is_integer(j)) {
		json_int_t i = json_integer_value(j);
		if (i >= -2147483647 && i <= 2147483647) {
			*out = (int)i;
			return 0;
		}
	} else if (json_is_real(j)) {
		double d = json_real_value(j);
		if (d == trunc(d) && fabs(d) < 2e9) {
			*out = (int)d;
			return 0;
		}
	}
	seterr(err, errlen, "%s: expected an integer", what);
	return HTC_EPARSE;
}

static int read_string(json_t *j, const char *what, char **out, char *err, size_t errlen)
{
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_string(j)) {
		seterr(err, errlen, "%s: expected a string", what);
		return HTC_EPARSE;
	}
	free(*out);
	*out = xstrdup(json_string_value(j));
	return 0;
}

/* An object of field: quantity (limits_exceeded, peak_times); unknown fields are ignored. */
static int read_field_object(json_t *j, const char *what, int seconds, double *dst, char *err,
                             size_t errlen)
{
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_object(j)) {
		seterr(err, errlen, "%s: expected an object", what);
		return HTC_EPARSE;
	}
	const char *key;
	json_t *value;
	json_object_foreach(j, key, value)
	{
		int f = rmsummary_field_lookup(key);
		if (f < 0)
			continue;
		char name[128];
		snprintf(name, sizeof name, "%s.%s", what, key);
		int r = read_quantity(value, seconds ? -1 : f, name, &dst[f], err, errlen);
		if (r)
			return r;
	}
	return 0;
}

static void set_extra(struct rmsummary *s, const char *key, json_t *value)
{
	char *text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
	if (!text)
		return;
	for (size_t i = 0; i < s->n_extra; i++) {
		if (strcmp(s->extra_keys[i], key) == 0) {
			free(s->extra_values[i]);
			s->extra_values[i] = xstrdup(text);
			free(text);
			return;
		}
	}
	if (s->n_extra >= RMSUMMARY_MAX_EXTRAS) {
		debug(D_RMON, "summary: too many extra keys, dropping \"%s\"", key);
		free(text);
		return;
	}
	VEC_RESIZE(s->extra_keys, s->n_extra + 1);
	VEC_RESIZE(s->extra_values, s->n_extra + 1);
	s->extra_keys[s->n_extra] = xstrdup(key);
	s->extra_values[s->n_extra] = xstrdup(text);
	s->n_extra++;
	free(text);
}

static int is_descriptive(const char *key)
{
	for (int i = 0; descriptive_keys[i]; i++)
		if (strcmp(descriptive_keys[i], key) == 0)
			return 1;
	return 0;
}

/* Fills S from the JSON object O. On error S may be partly filled. */
static int summary_from_object(json_t *o, struct rmsummary *s, char *err, size_t errlen)
{
	int r;
	json_t *j;
	if (!json_is_object(o)) {
		seterr(err, errlen, "expected a JSON object");
		return HTC_EPARSE;
	}
	if ((r = read_string(json_object_get(o, "command"), "command", &s->command, err, errlen)) ||
	    (r = read_string(json_object_get(o, "category"), "category", &s->category, err,
	                     errlen)) ||
	    (r = read_string(json_object_get(o, "task_id"), "task_id", &s->task_id, err, errlen)) ||
	    (r = read_string(json_object_get(o, "host"), "host", &s->host, err, errlen)))
		return r;
	if ((j = json_object_get(o, "exit_type")) && !json_is_null(j)) {
		const char *t = json_string_value(j);
		if (t && strcmp(t, "normal") == 0)
			s->exit_type = RM_EXIT_NORMAL;
		else if (t && strcmp(t, "signal") == 0)
			s->exit_type = RM_EXIT_SIGNAL;
		else if (t && strcmp(t, "limits") == 0)
			s->exit_type = RM_EXIT_LIMITS;
		else {
			seterr(err, errlen,
			       "exit_type: expected \"normal\", \"signal\" or \"limits\"");
			return HTC_EPARSE;
		}
	}
	if ((j = json_object_get(o, "exit_status")) &&
	    (r = read_int(j, "exit_status", &s->exit_status, err, errlen)))
		return r;
	if ((j = json_object_get(o, "signal")) &&
	    (r = read_int(j, "signal", &s->signal, err, errlen)))
		return r;
	for (int i = 0; i < RM_N_FIELDS; i++) {
		if (!(j = json_object_get(o, fields[i].name)) || json_is_null(j))
			continue;
		if ((r = read_quantity(j, i, fields[i].name, &s->v[i], err, errlen)))
			return r;
	}
	if ((r = read_field_object(json_object_get(o, "limits_exceeded"), "limits_exceeded", 0,
	                           s->limits_exceeded, err, errlen)) ||
	    (r = read_field_object(json_object_get(o, "peak_times"), "peak_times", 1, s->peak_times,
	                           err, errlen)))
		return r;
	const char *key;
	json_t *value;
	json_object_foreach(o, key, value)
	{
		if (is_descriptive(key) || rmsummary_field_lookup(key) >= 0)
			continue;
		set_extra(s, key, value);
	}
	return 0;
}

int rmsummary_from_json(const char *text, struct rmsummary *s, char *err, size_t errlen)
{
	json_error_t je;
	if (!text) {
		seterr(err, errlen, "no text");
		return HTC_EPARSE;
	}
	json_t *o = json_loads(text, 0, &je);
	if (!o) {
		seterr(err, errlen, "line %d: %s", je.line, je.text);
		return HTC_EPARSE;
	}
	int r = summary_from_object(o, s, err, errlen);
	json_decref(o);
	return r;
}

/* ---- limits ------------------------------------------------------------------------------- */

/* A value as users write it for FIELD: sizes for MB fields, durations for second fields,
 * otherwise a plain non-negative number. */
static int parse_limit_value(int field, const char *text, double *out)
{
	double d;
	if (str_to_double(text, &d) == 0) {
		if (d < 0)
			return HTC_ERANGE;
		*out = d;
		return 0;
	}
	int64_t n;
	if (strcmp(fields[field].unit, "MB") == 0) {
		if (units_parse_mb(text, &n) == 0) {
			*out = (double)n;
			return 0;
		}
	} else if (strcmp(fields[field].unit, "s") == 0) {
		if (units_parse_seconds(text, &n) == 0) {
			*out = (double)n;
			return 0;
		}
	}
	return HTC_EPARSE;
}

static int parse_limits_json(const char *text, struct rmsummary *limits, char *err, size_t errlen)
{
	json_error_t je;
	json_t *o = json_loads(text, 0, &je);
	if (!o) {
		seterr(err, errlen, "line %d: %s", je.line, je.text);
		return HTC_EPARSE;
	}
	int r = 0;
	double v[RM_N_FIELDS];
	for (int i = 0; i < RM_N_FIELDS; i++)
		v[i] = -1;
	if (!json_is_object(o)) {
		seterr(err, errlen, "limits: expected a JSON object");
		r = HTC_EPARSE;
		goto out;
	}
	const char *key;
	json_t *value;
	json_object_foreach(o, key, value)
	{
		int f = rmsummary_field_lookup(key);
		if (f < 0) {
			seterr(err, errlen, "unknown resource \"%s\" in limits", key);
			r = HTC_EPARSE;
			goto out;
		}
		double d = -1;
		if (json_is_string(value)) {
			if (parse_limit_value(f, json_string_value(value), &d)) {
				seterr(err, errlen, "%s: bad value \"%s\"", key,
				       json_string_value(value));
				r = HTC_EPARSE;
				goto out;
			}
		} else if ((r = read_quantity(value, f, key, &d, err, errlen))) {
			goto out;
		} else if (d < 0 || !isfinite(d)) {
			seterr(err, errlen, "%s: a limit cannot be negative", key);
			r = HTC_EPARSE;
			goto out;
		}
		v[f] = d;
	}
	for (int i = 0; i < RM_N_FIELDS; i++) /* only once all items are good */
		if (v[i] >= 0)
			limits->v[i] = v[i];
out:
	json_decref(o);
	return r;
}

int rmsummary_parse_limits(const char *text, struct rmsummary *limits, char *err, size_t errlen)
{
	if (!text) {
		seterr(err, errlen, "no limits given");
		return HTC_EPARSE;
	}
	const char *p = text;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '{')
		return parse_limits_json(text, limits, err, errlen);

	/* Work on a copy so an error leaves LIMITS untouched. */
	double v[RM_N_FIELDS];
	for (int i = 0; i < RM_N_FIELDS; i++)
		v[i] = -1;
	int r = 0;
	char *copy = xstrdup(text);
	char *item = copy;
	while (item) {
		char *sep = strpbrk(item, ",\n");
		if (sep)
			*sep = '\0';
		char *next = sep ? sep + 1 : NULL;
		str_trim(item);
		if (*item == '\0') {
			item = next;
			continue;
		}
		char *colon = strpbrk(item, ":=");
		if (!colon) {
			seterr(err, errlen, "limit \"%s\": expected \"name: value\"", item);
			r = HTC_EPARSE;
			goto out;
		}
		*colon = '\0';
		char *name = str_trim(item);
		char *value = str_trim(colon + 1);
		int f = rmsummary_field_lookup(name);
		if (f < 0) {
			seterr(err, errlen, "unknown resource \"%s\" in limits", name);
			r = HTC_EPARSE;
			goto out;
		}
		if (v[f] >= 0) {
			seterr(err, errlen, "resource \"%s\" is given twice in limits", name);
			r = HTC_EPARSE;
			goto out;
		}
		if (parse_limit_value(f, value, &v[f])) {
			seterr(err, errlen, "%s: bad value \"%s\"", name, value);
			r = HTC_EPARSE;
			goto out;
		}
		item = next;
	}
	for (int i = 0; i < RM_N_FIELDS; i++)
		if (v[i] >= 0)
			limits->v[i] = v[i];
out:
	free(copy);
	return r;
}

/* ---- loading ------------------------------------------------------------------------------ */

static int read_whole_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		seterr(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	struct buffer b;
	buffer_init(&b, RMSUMMARY_MAX_FILE);
	char chunk[65536];
	int r = 0;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			seterr(err, errlen, "%s: %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (buffer_putlstring(&b, chunk, (size_t)n)) {
			seterr(err, errlen, "%s: larger than the %d MB allowed for summaries", path,
			       RMSUMMARY_MAX_FILE / (1024 * 1024));
			r = HTC_ETOOBIG;
			break;
		}
	}
	close(fd);
	if (r) {
		buffer_free(&b);
		return r;
	}
	*data = buffer_steal(&b, len);
	return 0;
}

static int count_lines(const char *data, size_t from, size_t to)
{
	int n = 0;
	for (size_t i = from; i < to; i++)
		if (data[i] == '\n')
			n++;
	return n;
}

static int load_file(const char *path, rmsummary_each_fn fn, void *arg, char *err, size_t errlen)
{
	char *data = NULL;
	size_t len = 0;
	int r = read_whole_file(path, &data, &len, err, errlen);
	if (r)
		return r;
	size_t pos = 0;
	int line = 1; /* line of data[pos] */
	for (;;) {
		size_t start = pos;
		while (pos < len && isspace((unsigned char)data[pos]))
			pos++;
		line += count_lines(data, start, pos);
		if (pos >= len)
			break;
		json_error_t je;
		json_t *o = json_loadb(data + pos, len - pos, JSON_DISABLE_EOF_CHECK, &je);
		if (!o) {
			seterr(err, errlen, "%s:%d: %s", path,
			       line + (je.line > 0 ? je.line - 1 : 0), je.text);
			r = HTC_EPARSE;
			break;
		}
		size_t used = je.position > 0 ? (size_t)je.position : 1;
		struct rmsummary s;
		rmsummary_init(&s);
		char msg[256];
		r = summary_from_object(o, &s, msg, sizeof msg);
		json_decref(o);
		if (r) {
			seterr(err, errlen, "%s:%d: %s", path, line, msg);
			rmsummary_clear(&s);
			break;
		}
		r = fn(&s, arg);
		rmsummary_clear(&s);
		if (r)
			break;
		if (used > len - pos)
			used = len - pos;
		line += count_lines(data, pos, pos + used);
		pos += used;
	}
	free(data);
	return r;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_dir(const char *path, rmsummary_each_fn fn, void *arg, char *err, size_t errlen)
{
	DIR *d = opendir(path);
	if (!d) {
		int e = errno;
		seterr(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!str_has_suffix(de->d_name, ".summary") || de->d_name[0] == '.')
			continue;
		VEC_PUSH(names, n, cap, xstrdup(de->d_name));
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(char *), cmp_names);
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		if (r == 0) {
			char *file = path_join(path, names[i]);
			r = load_file(file, fn, arg, err, errlen);
			free(file);
		}
		free(names[i]);
	}
	free(names);
	return r;
}

int rmsummary_load(const char *path, rmsummary_each_fn fn, void *arg, char *err, size_t errlen)
{
	struct stat st;
	if (!path || !fn)
		return -EINVAL;
	if (stat(path, &st) < 0) {
		int e = errno;
		seterr(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	if (S_ISDIR(st.st_mode))
		return load_dir(path, fn, arg, err, errlen);
	return load_file(path, fn, arg, err, errlen);
}
