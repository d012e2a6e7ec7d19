/* makeflow_opts_compat.c: the CCTools makeflow options kept for command lines written for
 * CCTools: those with the same meaning here, and a table of those refused with the reason
 * (doc/compatibility.md, "The makeflow command line"). An option is never accepted and then
 * ignored. */
#include "makeflow_opts_compat.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "catalog_client.h"
#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "makeflow_opts.h"
#include "workflow_load.h"
#include "stringtools.h"
#include "units.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

/* The options kept with their CCTools meaning. */
enum {
	C_SUMMARY_JSON = COMPAT_OPT_BASE,
	C_LOCAL_CORES,
	C_LOCAL_MEMORY,
	C_LOCAL_DISK,
	C_WAIT_FOR_FILES,
	C_STORAGE_LIMIT,
	C_STORAGE_TYPE,
	C_IGNORE_MEMORY_SPEC,
	C_SAFE_SUBMIT,
	C_TMP,
	C_NO_SAVE_FAILED,
	C_DISABLE_CACHE,
	C_SEND_ENV,
	C_ARGV,
	C_MONITOR_OPENED,
	C_MONITOR_LOG_FMT,
	C_FILE_STATUS,
	C_FILE_STATUS_INTERVAL,
	C_PREFERRED_CONNECTION,
	C_DEBUG_ROTATE_MAX,
	C_MONITOR_MEASURE_DIR,
	C_WQ_WAIT_QUEUE_SIZE,
	C_MONITOR_LOG_NAME,
	C_REFUSED = COMPAT_OPT_BASE + 100, /* + index in refused[] */
};

static const struct option kept[] = {
    {"summary-json", required_argument, 0, C_SUMMARY_JSON},
    {"local-cores", required_argument, 0, C_LOCAL_CORES},
    {"local-memory", required_argument, 0, C_LOCAL_MEMORY},
    {"local-disk", required_argument, 0, C_LOCAL_DISK},
    {"wait-for-files-upto", required_argument, 0, C_WAIT_FOR_FILES},
    {"storage-limit", required_argument, 0, C_STORAGE_LIMIT},
    {"storage-type", required_argument, 0, C_STORAGE_TYPE},
    {"ignore-memory-spec", no_argument, 0, C_IGNORE_MEMORY_SPEC},
    {"safe-submit-mode", no_argument, 0, C_SAFE_SUBMIT},
    {"tmp", required_argument, 0, C_TMP},
    {"do-not-save-failed-output", no_argument, 0, C_NO_SAVE_FAILED},
    {"disable-afs-check", no_argument, 0, 'A'},
    {"disable-cache", no_argument, 0, C_DISABLE_CACHE},
    {"change-directory", required_argument, 0, 'X'},
    {"send-environment", no_argument, 0, C_SEND_ENV},
    {"advertise", no_argument, 0, 'a'},
    {"monitor-with-opened-files", no_argument, 0, C_MONITOR_OPENED},
    {"monitor-log-fmt", required_argument, 0, C_MONITOR_LOG_FMT},
    {"monitor-log-name", required_argument, 0, C_MONITOR_LOG_NAME}, /* the same */
    {"monitor-measure-dir", no_argument, 0, C_MONITOR_MEASURE_DIR},
    {"file-status", required_argument, 0, C_FILE_STATUS},
    {"file-status-interval", required_argument, 0, C_FILE_STATUS_INTERVAL},
    {"argv", required_argument, 0, C_ARGV}, /* expanded before getopt when spelled out */
    {"jx-context", required_argument, 0, WORKFLOW_OPT_JX_ARGS}, /* the older --jx-args */
    {"wq-fast-abort", required_argument, 0, 'F'},
    {"wq-keepalive-timeout", required_argument, 0, 't'},
    {"wq-keepalive-interval", required_argument, 0, 'u'},
    {"wq-schedule", required_argument, 0, 'W'},
    {"priority", required_argument, 0, 'P'},
    {"debug-rotate-max", required_argument, 0, C_DEBUG_ROTATE_MAX},
    {"wq-wait-queue-size", required_argument, 0, C_WQ_WAIT_QUEUE_SIZE},
    {"work-queue-preferred-connection", required_argument, 0, C_PREFERRED_CONNECTION},
};
#define N_KEPT (sizeof kept / sizeof kept[0])

#define NOT_HERE "not supported here"
#define NOT_YET  "not available in this build (yet)"

/* CCTools options refused, with the reason printed. */
static const struct refused {
	const char *name;
	int has_arg;
	char short_opt; /* 0 if none */
	const char *why;
} refused[] = {
    {"email", required_argument, 'm', NOT_HERE ": no mail is sent; -f FILE writes the summary"},
    {"submission-timeout", required_argument, 'S',
     NOT_HERE ": submission here never fails for a while and then succeeds"},
    {"log-verbose", no_argument, 0,
     NOT_HERE ": the transaction log has its own format (doc/makeflow-log-format.md)"},
    {"storage-print", required_argument, 0,
     NOT_HERE ": the storage limit here is measured, not estimated ahead"},
    {"disable-heartbeat", no_argument, 0, NOT_HERE ": batch jobs here have no heartbeat"},
    {"verbose-jobnames", no_argument, 0, NOT_HERE ": jobs here have no batch job names"},
    {"working-dir", required_argument, 0, NOT_HERE ": jobs run in the workflow's directory"},
    {"batch-mem-type", required_argument, 0, "applies to -T sge, which is " NOT_YET},
    {"mpi-cores", required_argument, 0, "applies to -T mpi, which is " NOT_YET},
    {"mpi-memory", required_argument, 0, "applies to -T mpi, which is " NOT_YET},
    {"mesos-path", required_argument, 0,
     NOT_HERE ": -T mesos speaks the Mesos HTTP API itself and needs no Mesos Python "
              "bindings"},
    {"mesos-preload", required_argument, 0,
     NOT_HERE ": -T mesos loads no Mesos libraries (it speaks the HTTP API)"},
    {"docker-opt", required_argument, 0,
     NOT_HERE ": containers are made through the engine's API, not the docker command"},
    {"singularity", required_argument, 0,
     "not available here: Singularity and Apptainer are not packaged in Debian 12 "
     "(use --docker or CONTAINER=)"},
    {"singularity-opt", required_argument, 0,
     "not available here: Singularity and Apptainer are not packaged in Debian 12"},
    {"sandbox", no_argument, 0, NOT_HERE},
    {"amazon-config", required_argument, 0, NOT_HERE " (Amazon EC2 is out of scope)"},
    {"amazon-batch-config", required_argument, 0, NOT_HERE " (Amazon is out of scope)"},
    {"amazon-batch-img", required_argument, 0, NOT_HERE " (Amazon is out of scope)"},
    {"lambda-config", required_argument, 0, NOT_HERE " (AWS Lambda is out of scope)"},
    {"archive-s3", required_argument, 0, NOT_HERE " (Amazon S3 is out of scope)"},
    {"archive-s3-no-check", required_argument, 0, NOT_HERE " (Amazon S3 is out of scope)"},
    {"s3-hostname", required_argument, 0, NOT_HERE " (Amazon S3 is out of scope)"},
    {"s3-keyid", required_argument, 0, NOT_HERE " (Amazon S3 is out of scope)"},
    {"s3-secretkey", required_argument, 0, NOT_HERE " (Amazon S3 is out of scope)"},
    {"umbrella-spec", required_argument, 0, NOT_HERE " (Umbrella is out of scope)"},
    {"umbrella-binary", required_argument, 0, NOT_HERE " (Umbrella is out of scope)"},
    {"umbrella-log-prefix", required_argument, 0, NOT_HERE " (Umbrella is out of scope)"},
    {"umbrella-mode", required_argument, 0, NOT_HERE " (Umbrella is out of scope)"},
    {"enforcement", no_argument, 0, NOT_HERE " (Parrot is out of scope)"},
    {"parrot-path", required_argument, 0, NOT_HERE " (Parrot is out of scope)"},
    {"env-replace-path", required_argument, 0, NOT_HERE " (Parrot is out of scope)"},
    {"vc3-builder", no_argument, 0, NOT_HERE " (VC3 is out of scope)"},
    {"vc3-exe", required_argument, 0, NOT_HERE " (VC3 is out of scope)"},
    {"vc3-log", required_argument, 0, NOT_HERE " (VC3 is out of scope)"},
    {"vc3-options", required_argument, 0, NOT_HERE " (VC3 is out of scope)"},
    {"tlq", required_argument, 0, NOT_HERE " (TLQ is out of scope)"},
    {"auth", required_argument, 0, NOT_HERE ": workers prove --password, or connect with TLS"},
    {"show-output", no_argument, 0,
     NOT_HERE ": CCTools 9.9 lists it but gives it no meaning (it prints its usage and "
              "exits 1); a rule's standard output is makeflow's unless the rule redirects it"},
    {"wq-estimate-capacity", no_argument, 0,
     NOT_HERE ": the master makes no capacity estimate (CCTools keeps the option only for old "
              "command lines: its masters always estimate)"},
    {"enable_hook_example", no_argument, 0, NOT_HERE},
};
#define N_REFUSED (sizeof refused / sizeof refused[0])

struct option *compat_longopts(const struct option *base)
{
	size_t n = 0;
	while (base[n].name)
		n++;
	struct option *all = xcalloc(n + N_KEPT + N_REFUSED + 1, sizeof *all);
	memcpy(all, base, n * sizeof *all);
	memcpy(all + n, kept, N_KEPT * sizeof *all);
	for (size_t i = 0; i < N_REFUSED; i++)
		all[n + N_KEPT + i] =
		    (struct option){refused[i].name, refused[i].has_arg, 0, C_REFUSED + (int)i};
	return all;
}

static int refuse(int i, char *err, size_t errlen)
{
	const struct refused *r = &refused[i];
	if (r->short_opt)
		return cli_error(err, errlen, "-%c/--%s: %s", r->short_opt, r->name, r->why);
	return cli_error(err, errlen, "--%s: %s", r->name, r->why);
}

/* A count >= MIN. */
static int count(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out, char *err,
                 size_t errlen)
{
	int64_t v;
	if (str_to_int64(s, &v) < 0 || v < min || v > max)
		return cli_error(err, errlen,
		                 "%s %s: expected an integer from %" PRId64 " to %" PRId64, opt, s,
		                 min, max);
	*out = v;
	return 0;
}

/* An option of the wq driver only: KEY=ARG for the driver, and OPT names it if -T is not wq. */
static void wq_driver_option(struct makeflow_opts *o, const char *opt, const char *key,
                             const char *arg)
{
	makeflow_opts_add_batch(o, xasprintf("%s=%s", key, arg));
	if (!o->wq_only)
		o->wq_only = xasprintf("%s %s", opt, arg);
}

static int storage_type(const char *s, int *out, char *err, size_t errlen)
{
	static const char *const names[] = {"max", "min", "output", "off"};
	for (int i = 0; i < 4; i++) {
		char num[16];
		snprintf(num, sizeof num, "%d", i);
		if (!strcmp(s, num) || !strcasecmp(s, names[i])) {
			*out = i;
			return 0;
		}
	}
	return cli_error(err, errlen,
	                 "--storage-type %s: expected 0 (max), 1 (min), 2 (output) or 3 (off)", s);
}

int compat_option(struct makeflow_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	struct engine_options *e = &o->engine;
	int64_t v = 0;
	int r = 0;
	if (c >= C_REFUSED && c < C_REFUSED + (int)N_REFUSED)
		return refuse(c - C_REFUSED, err, errlen);
	for (size_t i = 0; i < N_REFUSED; i++)
		if (refused[i].short_opt && c == refused[i].short_opt)
			return refuse((int)i, err, errlen);
	switch (c) {
	case C_SUMMARY_JSON: e->summary_json_path = arg; break;
	case C_LOCAL_CORES:
		r = count("--local-cores", arg, 1, INT_MAX, &e->local_cores, err, errlen);
		break;
	case C_LOCAL_MEMORY:
		if (units_parse_mb(arg, &v) < 0 || v < 1)
			return cli_error(
			    err, errlen,
			    "--local-memory %s: expected MB (a number) or a size such as 4G", arg);
		e->local_memory_mb = v;
		break;
	case C_LOCAL_DISK:
		if (units_parse_mb(arg, &v) < 0 || v < 1)
			return cli_error(
			    err, errlen,
			    "--local-disk %s: expected MB (a number) or a size such as 10G", arg);
		e->local_disk_mb = v;
		break;
	case C_WAIT_FOR_FILES:
		r = count("--wait-for-files-upto", arg, 0, 86400, &v, err, errlen);
		e->wait_for_files_s = (int)v;
		break;
	case C_STORAGE_LIMIT:
		if (units_parse_bytes(arg, &v) < 0)
			return cli_error(
			    err, errlen,
			    "--storage-limit %s: expected bytes (a number) or a size such as 50G",
			    arg);
		e->storage_limit = v;
		break;
	case C_STORAGE_TYPE: r = storage_type(arg, &e->storage_type, err, errlen); break;
	case C_IGNORE_MEMORY_SPEC:
		e->slurm_ignore_memory_spec = 1;
		if (!o->slurm_only)
			o->slurm_only = "--ignore-memory-spec";
		break;
	case C_SAFE_SUBMIT:
		e->slurm_safe_submit = 1;
		if (!o->slurm_only)
			o->slurm_only = "--safe-submit-mode";
		break;
	case C_TMP:
		e->slurm_tmp = arg;
		if (!o->slurm_only)
			o->slurm_only = "--tmp";
		break;
	case C_NO_SAVE_FAILED: e->no_save_failed_output = 1; break;
	case 'A': /* there is no AFS check here: nothing to disable */ break;
	case C_DISABLE_CACHE: o->disable_cache = 1; break;
	case 'X': o->change_dir = arg; break;
	case C_SEND_ENV: e->send_environment = 1; break;
	case 'a': e->advertise = 1; break;
	case C_MONITOR_OPENED: e->monitor_opened_files = 1; break;
	case C_MONITOR_MEASURE_DIR: e->monitor_measure_dir = 1; break;
	case C_MONITOR_LOG_FMT:
	case C_MONITOR_LOG_NAME:
		/* every rule writing the same files would be worse than an error */
		if (!strstr(arg, "%%") || strchr(arg, '/') || strlen(arg) > 200)
			return cli_error(
			    err, errlen,
			    "--%s '%s': expected a file name (no '/') with %%%% "
			    "where the rule's id goes, such as resource-rule-%%%%",
			    c == C_MONITOR_LOG_FMT ? "monitor-log-fmt" : "monitor-log-name", arg);
		e->monitor_log_fmt = arg;
		break;
	case C_FILE_STATUS: e->file_status_path = arg; break;
	case C_FILE_STATUS_INTERVAL:
		r = count("--file-status-interval", arg, 1, 86400, &v, err, errlen);
		e->file_status_interval_s = (int)v;
		break;
	case 'P':
		r = count("-P/--priority", arg, INT32_MIN, INT32_MAX, &v, err, errlen);
		if (r == 0)
			wq_driver_option(o, "-P", "priority", arg);
		break;
	case C_PREFERRED_CONNECTION:
		if (strcmp(arg, "by_ip") && strcmp(arg, "by_hostname") &&
		    strcmp(arg, "by_apparent_ip"))
			return cli_error(err, errlen,
			                 "--work-queue-preferred-connection %s: expected by_ip, "
			                 "by_hostname or by_apparent_ip",
			                 arg);
		wq_driver_option(o, "--work-queue-preferred-connection", "preferred-connection",
		                 arg);
		break;
	case C_WQ_WAIT_QUEUE_SIZE:
		r = count("--wq-wait-queue-size", arg, 0, 1000000, &v, err, errlen);
		if (r == 0)
			wq_driver_option(o, "--wq-wait-queue-size", "wait-queue-size", arg);
		break;
	case C_DEBUG_ROTATE_MAX:
		/* as -o, it takes effect at once, so that the whole run is logged the same way */
		if (units_parse_bytes(arg, &v) < 0 || v < 0)
			return cli_error(
			    err, errlen,
			    "--debug-rotate-max %s: expected bytes (a number) or a size "
			    "such as 10M; 0 never rotates",
			    arg);
		debug_config_file_size(v);
		break;
	case C_ARGV: return cli_error(err, errlen, "--argv: write the option's name in full");
	default: return 0;
	}
	return r < 0 ? r : 1;
}

int compat_check(struct makeflow_opts *o, const char *type, char *err, size_t errlen)
{
	struct engine_options *e = &o->engine;
	if (e->storage_limit > 0 && e->storage_type == ENGINE_STORAGE_MIN)
		return cli_error(
		    err, errlen,
		    "--storage-type 1 (min): " NOT_HERE
		    ": it needs an order of rules computed from file sizes known ahead; use "
		    "0 (max) or 2 (output), which are measured as the workflow runs");
	if (e->advertise) {
		if (!e->project)
			return cli_error(
			    err, errlen,
			    "-a/--advertise: give -N PROJECT, the name the workflow is "
			    "advertised under");
		struct catalog_host hosts[8];
		int n = 0;
		char *why = NULL;
		if (catalog_hosts_parse(e->catalog_hosts, hosts, 8, &n, &why) < 0) {
			int r =
			    cli_error(err, errlen, "-C %s: %s",
			              e->catalog_hosts ? e->catalog_hosts : catalog_hosts_default(),
			              why ? why : "invalid");
			free(why);
			return r;
		}
	}
	/* as in CCTools, a storage limit deletes intermediate files once no rule needs them */
	if (e->storage_limit > 0 && e->storage_type != ENGINE_STORAGE_OFF &&
	    e->gc == ENGINE_GC_NONE)
		e->gc = ENGINE_GC_REF_CNT;
	if (o->disable_cache && !strcmp(type, "wq"))
		makeflow_opts_add_batch(o, xstrdup("cache=no"));
	return 0;
}

int makeflow_opts_write_local_port_file(const struct makeflow_opts *o)
{
	if (!o->local_port_file)
		return 0;
	int r = atomic_file_write(o->local_port_file, "0\n", 2, 0644);
	if (r < 0)
		fprintf(stderr, "makeflow: cannot write port file %s: %s\n", o->local_port_file,
		        htc_strerror(r));
	return r;
}

/* ---- --argv FILE ------------------------------------------------------------ */

static void push(char ***words, size_t *n, size_t *cap, char *w)
{
	VEC_RESERVE(*words, *cap, *n + 2);
	(*words)[(*n)++] = w;
	(*words)[*n] = NULL;
}

/* Appends the option KEY with value V (one word "--KEY=V", or "--KEY" for true). */
static int push_value(char ***words, size_t *n, size_t *cap, const char *file, const char *key,
                      json_t *v, char *err, size_t errlen)
{
	const char *dash = strlen(key) == 1 ? "-" : "--";
	if (json_is_true(v) || json_is_null(v)) {
		/* null: the key alone, as CCTools' own --argv files write a flag ("jx": null) */
		push(words, n, cap, xasprintf("%s%s", dash, key));
	} else if (json_is_false(v)) {
		/* an option turned off: not given */
	} else if (json_is_string(v)) {
		if (dash[1])
			push(words, n, cap, xasprintf("--%s=%s", key, json_string_value(v)));
		else {
			push(words, n, cap, xasprintf("-%s", key));
			push(words, n, cap, xstrdup(json_string_value(v)));
		}
	} else if (json_is_integer(v) || json_is_real(v)) {
		char num[64];
		if (json_is_integer(v))
			snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		else
			snprintf(num, sizeof num, "%g", json_real_value(v));
		/* "-j3" is one word getopt reads as -j 3 */
		push(words, n, cap, xasprintf("%s%s%s%s", dash, key, dash[1] ? "=" : "", num));
	} else if (json_is_array(v)) {
		size_t i;
		json_t *item;
		json_array_foreach(v, i, item)
		{
			if (json_is_array(item) || json_is_object(item))
				return cli_error(err, errlen,
				                 "--argv %s: key %s: a list of lists or objects",
				                 file, key);
			int r = push_value(words, n, cap, file, key, item, err, errlen);
			if (r < 0)
				return r;
		}
	} else {
		return cli_error(
		    err, errlen,
		    "--argv %s: key %s: expected a string, a number, true, null or a list", file,
		    key);
	}
	return 0;
}

static int expand_file(char ***words, size_t *n, size_t *cap, const char *file, char **workflow,
                       char *err, size_t errlen)
{
	json_error_t je;
	json_t *j = json_load_file(file, JSON_REJECT_DUPLICATES, &je);
	if (!j && je.line < 1)
		return cli_error(err, errlen, "--argv %s: %s", file, je.text);
	if (!j)
		return cli_error(err, errlen, "--argv %s:%d: %s", file, je.line, je.text);
	int r = 0;
	if (!json_is_object(j)) {
		r = cli_error(err, errlen,
		              "--argv %s: expected a JSON object of option names and values", file);
		goto out;
	}
	const char *key;
	json_t *v;
	json_object_foreach(j, key, v)
	{
		if (!strcmp(key, "MAKEFLOW")) {
			if (!json_is_string(v)) {
				r = cli_error(err, errlen,
				              "--argv %s: MAKEFLOW: expected the workflow's name",
				              file);
				goto out;
			}
			free(*workflow);
			*workflow = xstrdup(json_string_value(v));
			continue;
		}
		if (!strcmp(key, "argv") || !*key || key[0] == '-') {
			r = cli_error(err, errlen, "--argv %s: key '%s' is not an option name",
			              file, key);
			goto out;
		}
		r = push_value(words, n, cap, file, key, v, err, errlen);
		if (r < 0)
			goto out;
	}
out:
	json_decref(j);
	return r;
}

int compat_expand_argv(int argc, char *const argv[], char ***words_out, int *nwords,
                       char **workflow, char *err, size_t errlen)
{
	char **words = NULL;
	size_t n = 0, cap = 0;
	*workflow = NULL;
	int r = 0, after_dashes = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *file = NULL;
		if (i > 0 && !after_dashes && !strcmp(a, "--argv")) {
			if (i + 1 >= argc) {
				r = cli_error(err, errlen,
				              "option --argv needs a value (see --help)");
				break;
			}
			file = argv[++i];
		} else if (i > 0 && !after_dashes && !strncmp(a, "--argv=", 7)) {
			file = a + 7;
		}
		if (!file) {
			if (!strcmp(a, "--"))
				after_dashes = 1;
			push(&words, &n, &cap, xstrdup(a));
			continue;
		}
		r = expand_file(&words, &n, &cap, file, workflow, err, errlen);
		if (r < 0)
			break;
	}
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(words[i]);
		free(words);
		free(*workflow);
		*workflow = NULL;
		return r;
	}
	*words_out = words;
	*nwords = (int)n;
	return 0;
}
