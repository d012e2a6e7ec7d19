/* makeflow_opts_compat.h: the part of makeflow's command line that exists so that CCTools
 * command lines run unchanged: the options kept with their CCTools meaning (--argv,
 * --local-*, --storage-*, --wait-for-files-upto, the Slurm-only ones, ...) and the table of
 * CCTools options refused with a reason. Used only by makeflow_opts.c. */
#ifndef MAKEFLOW_OPTS_COMPAT_H
#define MAKEFLOW_OPTS_COMPAT_H

#include <getopt.h>
#include <stddef.h>

struct makeflow_opts;

/* getopt_long codes of the compatibility options start here (see makeflow_opts_compat.c). */
#define COMPAT_OPT_BASE 3000

/* The short options of the compatibility table, for the optstring. */
#define COMPAT_SHORT_OPTS "am:S:X:P:F:t:u:W:A"

/* Returns BASE (a table ending with a zero row) followed by the compatibility rows, ending with
 * a zero row. Caller frees. */
struct option *compat_longopts(const struct option *base);

/* Handles getopt_long's result C with ARG. Returns 1 when it was a compatibility option (and
 * applied it), 0 when it is not one, HTC_EPARSE with the message in ERR for a bad value or a
 * refused option. -t, -u, -W and -F are left to the caller (Work Queue options). */
int compat_option(struct makeflow_opts *o, int c, const char *arg, char *err, size_t errlen);

/* Expands every "--argv FILE" (or --argv=FILE) of ARGV (ARGC words) into the options FILE
 * holds: a JSON object whose keys are long option names and whose values are their values
 * (true for an option without a value, a list to repeat one); the key MAKEFLOW names the
 * workflow. Sets *WORDS to the new NULL-terminated vector, every word owned (caller frees
 * each and the vector), *NWORDS to its length, and *WORKFLOW (owned, or NULL) to the MAKEFLOW
 * value. Returns 0 or HTC_EPARSE with the message in ERR. */
int compat_expand_argv(int argc, char *const argv[], char ***words, int *nwords, char **workflow,
                       char *err, size_t errlen);

/* Appends the driver option KV ("key=value", owned by O from now on); in makeflow_opts.c. */
void makeflow_opts_add_batch(struct makeflow_opts *o, char *kv);

/* After parsing: checks the options that depend on the batch type. Returns 0 or HTC_EPARSE. */
int compat_check(struct makeflow_opts *o, const char *type, char *err, size_t errlen);

/* Writes "0\n" to the -Z port file of a run without Work Queue (as CCTools does: no master
 * listens, so the port is 0). Returns 0, or a negative errno after printing why. No-op when
 * there is no such file. */
int makeflow_opts_write_local_port_file(const struct makeflow_opts *o);

#endif
