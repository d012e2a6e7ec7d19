/* rmsummary.h: a resource summary, the record of what a task used (or may use): the JSON
 * document resource_monitor writes when a task ends, the limits given to it, and the
 * allocations categories compute. One fixed set of numeric fields with names and units, plus
 * the descriptive fields of a finished task. The JSON form is in doc/resource-monitor.md. */
#ifndef HTC_RMSUMMARY_H
#define HTC_RMSUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "htc_error.h"

/* The numeric fields. Names (rmsummary_field_name) are the JSON keys; units are fixed:
 * seconds for wall_time and cpu_time, MB (2^20 bytes) for memory, disk and bytes_*, Mbps for
 * bandwidth, microseconds since the epoch for start and end. */
enum rmsummary_field {
	RM_START = 0,
	RM_END,
	RM_WALL_TIME,
	RM_CPU_TIME,
	RM_CORES, /* peak of delta cpu / delta wall over a sliding window */
	RM_CORES_AVG,
	RM_GPUS,
	RM_MEMORY, /* peak resident MB */
	RM_VIRTUAL_MEMORY,
	RM_SWAP_MEMORY,
	RM_DISK, /* MB in the measured directories */
	RM_BYTES_READ,
	RM_BYTES_WRITTEN,
	RM_BYTES_RECEIVED,
	RM_BYTES_SENT,
	RM_BANDWIDTH,
	RM_MACHINE_CPUS,
	RM_MACHINE_LOAD,
	RM_CONTEXT_SWITCHES,
	RM_MAX_CONCURRENT_PROCESSES,
	RM_TOTAL_PROCESSES,
	RM_TOTAL_FILES,
	RM_N_FIELDS
};

/* How the task ended. */
enum rmsummary_exit_type {
	RM_EXIT_NONE = 0, /* not finished / not a task summary (limits, allocations) */
	RM_EXIT_NORMAL,   /* exited; exit_status holds its status */
	RM_EXIT_SIGNAL,   /* killed by a signal it did not get from the monitor */
	RM_EXIT_LIMITS,   /* killed by the monitor for exceeding limits_exceeded */
};

struct rmsummary {
	/* Descriptive fields; owned strings (NULL = absent). */
	char *command;
	char *host;
	char *category;
	char *task_id;
	enum rmsummary_exit_type exit_type;
	int exit_status;       /* when RM_EXIT_NORMAL */
	int signal;            /* when RM_EXIT_SIGNAL or RM_EXIT_LIMITS (the signal used), else 0 */
	double v[RM_N_FIELDS]; /* -1 = unset/unknown */
	double peak_times[RM_N_FIELDS]; /* seconds after start when v[] peaked; -1 = unknown */
	/* For RM_EXIT_LIMITS: the limit of each field that was exceeded, -1 for the others. */
	double limits_exceeded[RM_N_FIELDS];
	/* Extra "key": value pairs from resource_monitor -V, as JSON text of the value; n_extra
	 * entries in parallel arrays, owned. */
	char **extra_keys;
	char **extra_values;
	size_t n_extra;
};

/* Sets every number to -1, strings to NULL, exit_type to RM_EXIT_NONE. */
void rmsummary_init(struct rmsummary *s);
/* Frees the owned strings and re-initialises. NULL is ok. */
void rmsummary_clear(struct rmsummary *s);
/* Deep copy into DST (which must be initialised or cleared; its old strings are freed). */
void rmsummary_copy(struct rmsummary *dst, const struct rmsummary *src);

/* Static name ("memory") and unit ("MB") of a field; NULL for an invalid field. */
const char *rmsummary_field_name(int field);
const char *rmsummary_field_unit(int field);
/* The field named NAME, or -1. */
int rmsummary_field_lookup(const char *name);

/* DST.v[f] = max(DST.v[f], SRC.v[f]) for every field SRC has set (peak_times follow). */
void rmsummary_merge_max(struct rmsummary *dst, const struct rmsummary *src);
/* 1 if any field set in LIMITS is exceeded by MEASURED (strictly greater); sets the bits
 * (1 << field) of those fields in *which when which is not NULL. */
int rmsummary_exceeds(const struct rmsummary *measured, const struct rmsummary *limits,
                      uint64_t *which);

/* JSON text of S: every set field as [value, "unit"] (or a bare number with compact = 1),
 * keys in a fixed order, one key per line with pprint = 1 or all on one line; no trailing
 * newline. Counts print as integers, other numbers with at most three decimals. Caller
 * frees. */
char *rmsummary_to_json(const struct rmsummary *s, int pprint, int compact);
/* Parses one summary (either number form; [value, "unit"] in another unit of the same kind,
 * e.g. "GB" or "ms", is converted). Unknown keys are not an error: they are kept as extras
 * ("snapshots" is skipped); a known key with a value of the wrong type is an error. Returns
 * 0, or HTC_EPARSE with a message in ERR. S must be initialised; fields absent from the text
 * are left as they were. */
int rmsummary_from_json(const char *text, struct rmsummary *s, char *err, size_t errlen);

/* Parses limits as users write them: "memory: 1000, cores: 2, wall_time: 30" (names of
 * fields; items separated by commas or newlines, "name=value" also accepted; MB fields accept
 * units as in units.h, wall_time/cpu_time durations), or a JSON object (first non-blank
 * character '{'; values numbers, [value, "unit"] or strings as in the text form). Returns 0,
 * or HTC_EPARSE naming the bad item in ERR (LIMITS is then untouched). Unknown names, negative
 * values and a name given twice are errors. */
int rmsummary_parse_limits(const char *text, struct rmsummary *limits, char *err, size_t errlen);

/* Calls FN for every summary in PATH: a file holding one or more JSON objects one after the
 * other (whitespace between), or a directory whose *.summary files are read (sorted by name).
 * FN returns 0 to go on or nonzero to stop (returned). Returns 0, -errno, or HTC_EPARSE with
 * "file:line: message" in ERR for a malformed document. */
typedef int (*rmsummary_each_fn)(const struct rmsummary *s, void *arg);
int rmsummary_load(const char *path, rmsummary_each_fn fn, void *arg, char *err, size_t errlen);

#endif
