/* resource_monitor_opts.c: parses the command line of resource_monitor (getopt_long, with the
 * options every program shares through cli.h) into struct resource_monitor_opts, and checks
 * the combination of what to run. See resource_monitor_opts.h. */
#include "resource_monitor_opts.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "rmon_seccomp.h"
#include "stringtools.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

enum {
	OPT_MEASURE_ONLY = 1000,
	OPT_WITH_TIME_SERIES,
	OPT_WITH_INOTIFY,
	OPT_MEASURE_DIR,
	OPT_NO_PPRINT,
	OPT_COMPACT,
	OPT_PID,
	OPT_CGROUPS,
	OPT_CPUSET,
	OPT_CATEGORY,
	OPT_TASK_ID,
	OPT_SH,
	OPT_SECCOMP,
};

static const struct option longopts[] = {
    {"limits", required_argument, 0, 'L'},
    {"limits-file", required_argument, 0, 'l'},
    {"measure-only", no_argument, 0, OPT_MEASURE_ONLY},
    {"interval", required_argument, 0, 'i'},
    {"output", required_argument, 0, 'O'},
    {"with-time-series", no_argument, 0, OPT_WITH_TIME_SERIES},
    {"with-inotify", no_argument, 0, OPT_WITH_INOTIFY},
    {"with-opened-files", no_argument, 0, OPT_WITH_INOTIFY},
    {"verbatim-to-summary", required_argument, 0, 'V'},
    {"measure-dir", required_argument, 0, OPT_MEASURE_DIR},
    {"no-pprint", no_argument, 0, OPT_NO_PPRINT},
    {"compact", no_argument, 0, OPT_COMPACT},
    {"pid", required_argument, 0, OPT_PID},
    {"cgroups", required_argument, 0, OPT_CGROUPS},
    {"cpuset", required_argument, 0, OPT_CPUSET},
    {"category", required_argument, 0, OPT_CATEGORY},
    {"task-id", required_argument, 0, OPT_TASK_ID},
    {"sh", required_argument, 0, OPT_SH},
    {"seccomp", required_argument, 0, OPT_SECCOMP},
    CLI_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void resource_monitor_opts_usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "Usage: %s [options] -- COMMAND [ARGS...]\n"
	        "       %s [options] --sh 'SHELL COMMAND'\n"
	        "       %s [options] --pid PID\n"
	        "Runs COMMAND, follows every process it creates, enforces limits and writes a "
	        "JSON summary.\n\n"
	        "  -L, --limits=TEXT          limits, e.g. \"memory: 1000, cores: 2, wall_time: "
	        "60\"\n"
	        "  -l, --limits-file=FILE     read limits from FILE (same syntax, or JSON)\n"
	        "      --measure-only         measure, but do not enforce limits\n"
	        "  -i, --interval=SECONDS     sampling interval (default 1)\n"
	        "  -O, --output=TEMPLATE      write TEMPLATE.summary (and .series, .files); "
	        "default resource-pid-PID\n"
	        "      --with-time-series     write one row per sample to TEMPLATE.series\n"
	        "      --with-inotify         write the files the tree opened to TEMPLATE.files\n"
	        "      --with-opened-files    same as --with-inotify\n"
	        "  -V, --verbatim-to-summary='KEY: VALUE'  add a field to the summary "
	        "(repeatable)\n"
	        "      --measure-dir=DIR      disk is the size of DIR (repeatable; default the "
	        "working directory)\n"
	        "      --no-pprint            write the summary on one line\n"
	        "      --compact              numbers without units in the summary\n"
	        "      --pid=PID              attach to a running process instead of starting one\n"
	        "      --cgroups=MODE         auto (default), off, required\n"
	        "      --cpuset=LIST          run the command on these CPUs (e.g. 0-1; cgroups "
	        "only)\n"
	        "      --seccomp=PROFILE      default, strict, nonet or off (default off; "
	        "doc/seccomp.md)\n"
	        "      --category=NAME        category written in the summary\n"
	        "      --task-id=ID           task id written in the summary\n"
	        "      --sh=COMMAND           run COMMAND with /bin/sh -c\n"
	        "  -d, --debug=SUBSYS         debug output: %s\n"
	        "  -o, --debug-file=FILE      write debug output to FILE\n"
	        "  -v, --version              show the version\n"
	        "  -h, --help                 show this help\n\n"
	        "Exit status: 0 the command succeeded; 1 it failed; 2 a limit was exceeded; 3 "
	        "the wall-time limit was exceeded; 4 monitor error.\n",
	        prog, prog, prog, debug_flags_help());
}

static void init(struct resource_monitor_opts *o)
{
	memset(o, 0, sizeof *o);
	rmsummary_init(&o->limits);
	o->interval = 1;
	o->pprint = 1;
	o->cgroups = RMONITOR_CGROUPS_AUTO;
}

void resource_monitor_opts_clear(struct resource_monitor_opts *o)
{
	rmsummary_clear(&o->limits);
	for (size_t i = 0; i < o->n_extra; i++) {
		free(o->extra_keys[i]);
		free(o->extra_values[i]);
	}
	free(o->extra_keys);
	free(o->extra_values);
	free(o->measure_dirs);
	free(o->cmd);
	init(o);
}

/* Adds the limits in TEXT to O (later options override earlier ones). WHAT names the option. */
static int add_limits_text(struct resource_monitor_opts *o, const char *what, const char *text,
                           char *err, size_t errlen)
{
	struct rmsummary l;
	rmsummary_init(&l);
	char perr[512] = "";
	int r = 0;
	if (rmsummary_parse_limits(text, &l, perr, sizeof perr) < 0) {
		r = cli_error(err, errlen, "%s: invalid limits: %s", what, perr[0] ? perr : text);
	} else {
		for (int f = 0; f < RM_N_FIELDS; f++)
			if (l.v[f] >= 0)
				o->limits.v[f] = l.v[f];
		o->have_limits = 1;
	}
	rmsummary_clear(&l);
	return r;
}

static int add_limits_file(struct resource_monitor_opts *o, const char *path, char *err,
                           size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return cli_error(err, errlen, "-l %s: %s", path, strerror(errno));
	char *buf = xmalloc(RESOURCE_MONITOR_LIMITS_FILE_MAX + 1);
	size_t n = fread(buf, 1, RESOURCE_MONITOR_LIMITS_FILE_MAX + 1, f);
	int rerr = ferror(f);
	fclose(f);
	int r;
	if (rerr) {
		r = cli_error(err, errlen, "-l %s: read error", path);
	} else if (n > RESOURCE_MONITOR_LIMITS_FILE_MAX) {
		r = cli_error(err, errlen, "-l %s: larger than %d bytes", path,
		              RESOURCE_MONITOR_LIMITS_FILE_MAX);
	} else {
		buf[n] = 0;
		char *t = str_trim(buf);
		if (t[0] != '{') {
			/* One limit per line is accepted too: lines become comma-separated items.
			 */
			for (char *p = t; *p; p++)
				if (*p == '\n')
					*p = ',';
			size_t len = strlen(t);
			while (len > 0 &&
			       (t[len - 1] == ',' || t[len - 1] == ' ' || t[len - 1] == '\r'))
				t[--len] = 0;
		}
		char *what = xasprintf("-l %s", path);
		r = add_limits_text(o, what, t, err, errlen);
		free(what);
	}
	free(buf);
	return r;
}

/* The check of -V's KEY: a name of its own, not a field of the summary. */
static int verbatim_key_ok(const struct resource_monitor_opts *o, const char *arg, const char *key,
                           char *err, size_t errlen)
{
	if (!key[0])
		return cli_error(err, errlen, "-V '%s': empty key", arg);
	for (const char *p = key; *p; p++)
		if (!(*p == '_' || *p == '-' || *p == '.' || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			return cli_error(
			    err, errlen,
			    "-V '%s': key '%s' may hold only letters, digits, '_', '-' and '.'",
			    arg, key);
	static const char *const reserved[] = {
	    "command", "host",       "category",        "task_id",   "exit_type", "exit_status",
	    "signal",  "peak_times", "limits_exceeded", "snapshots", NULL};
	for (int i = 0; reserved[i]; i++)
		if (!strcmp(key, reserved[i]))
			return cli_error(err, errlen,
			                 "-V '%s': '%s' is a field of the summary itself", arg,
			                 key);
	if (rmsummary_field_lookup(key) >= 0)
		return cli_error(err, errlen, "-V '%s': '%s' is a measured field of the summary",
		                 arg, key);
	for (size_t i = 0; i < o->n_extra; i++)
		if (!strcmp(o->extra_keys[i], key))
			return cli_error(err, errlen, "-V '%s': key '%s' given twice", arg, key);
	return 0;
}

/* -V 'key: value': the value is kept as JSON when it parses as JSON, else as a string. */
static int add_verbatim(struct resource_monitor_opts *o, const char *arg, char *err, size_t errlen)
{
	const char *colon = strchr(arg, ':');
	if (!colon)
		return cli_error(err, errlen, "-V '%s': expected 'KEY: VALUE'", arg);
	char *key = xstrndup(arg, (size_t)(colon - arg));
	str_trim(key);
	char *value = xstrdup(colon + 1);
	str_trim(value);
	char *text = NULL;
	int r = verbatim_key_ok(o, arg, key, err, errlen);
	if (r < 0)
		goto out;
	json_error_t jerr;
	json_t *j = json_loads(value, JSON_DECODE_ANY, &jerr);
	if (!j)
		j = json_string(value);
	if (!j) {
		r = cli_error(err, errlen, "-V '%s': the value is not valid UTF-8", arg);
		goto out;
	}
	text = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
	json_decref(j);
	if (!text) {
		r = cli_error(err, errlen, "-V '%s': cannot encode the value", arg);
		goto out;
	}
	VEC_RESERVE(o->extra_keys, o->cap_extra, o->n_extra + 1);
	VEC_RESIZE(o->extra_values, o->cap_extra);
	o->extra_keys[o->n_extra] = key;
	o->extra_values[o->n_extra] = xstrdup(text);
	o->n_extra++;
	key = NULL;
out:
	free(text);
	free(key);
	free(value);
	return r;
}

static int add_measure_dir(struct resource_monitor_opts *o, const char *dir, char *err,
                           size_t errlen)
{
	struct stat st;
	if (stat(dir, &st) < 0)
		return cli_error(err, errlen, "--measure-dir %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cli_error(err, errlen, "--measure-dir %s: not a directory", dir);
	VEC_RESERVE(o->measure_dirs, o->cap_measure_dirs, o->n_measure_dirs + 2);
	o->measure_dirs[o->n_measure_dirs++] = dir;
	o->measure_dirs[o->n_measure_dirs] = NULL;
	return 0;
}

static int parse_one(struct resource_monitor_opts *o, int c, char *arg, char *argv[], char *err,
                     size_t errlen)
{
	int64_t v;
	switch (c) {
	case 'L': return add_limits_text(o, "-L", arg, err, errlen);
	case 'l': return add_limits_file(o, arg, err, errlen);
	case OPT_MEASURE_ONLY: o->measure_only = 1; break;
	case 'i':
		if (str_to_double(arg, &o->interval) < 0 || o->interval < 0.01 ||
		    o->interval > 86400)
			return cli_error(
			    err, errlen,
			    "-i %s: expected a number of seconds between 0.01 and 86400", arg);
		break;
	case 'O':
		if (!*arg)
			return cli_error(err, errlen, "-O: empty output template");
		o->template = arg;
		break;
	case OPT_WITH_TIME_SERIES: o->time_series = 1; break;
	case OPT_WITH_INOTIFY: o->report_files = 1; break;
	case 'V': return add_verbatim(o, arg, err, errlen);
	case OPT_MEASURE_DIR: return add_measure_dir(o, arg, err, errlen);
	case OPT_NO_PPRINT: o->pprint = 0; break;
	case OPT_COMPACT: o->compact = 1; break;
	case OPT_PID:
		if (str_to_int64(arg, &v) < 0 || v <= 0 || v > INT_MAX)
			return cli_error(err, errlen, "--pid %s: expected a process id", arg);
		o->attach_pid = (pid_t)v;
		break;
	case OPT_CGROUPS:
		if (!strcmp(arg, "auto"))
			o->cgroups = RMONITOR_CGROUPS_AUTO;
		else if (!strcmp(arg, "off"))
			o->cgroups = RMONITOR_CGROUPS_OFF;
		else if (!strcmp(arg, "required"))
			o->cgroups = RMONITOR_CGROUPS_REQUIRED;
		else
			return cli_error(err, errlen,
			                 "--cgroups=%s: expected auto, off or required", arg);
		break;
	case OPT_SECCOMP: {
		enum rmon_seccomp_profile sp;
		if (rmon_seccomp_parse(arg, &sp) < 0)
			return cli_error(err, errlen,
			                 "--seccomp '%s': expected default, strict, nonet or off",
			                 arg);
		o->seccomp = (int)sp;
		break;
	}
	case OPT_CPUSET:
		if (!*arg)
			return cli_error(err, errlen, "--cpuset: empty list");
		for (const char *p = arg; *p; p++)
			if (!((*p >= '0' && *p <= '9') || *p == ',' || *p == '-'))
				return cli_error(err, errlen,
				                 "--cpuset '%s': expected a list such as 0-1,3",
				                 arg);
		o->cpuset = arg;
		break;
	case OPT_CATEGORY: o->category = arg; break;
	case OPT_TASK_ID: o->task_id = arg; break;
	case OPT_SH: o->sh = arg; break;
	default: {
		int r = cli_common_option(c, argv, "resource_monitor", resource_monitor_opts_usage,
		                          err, errlen);
		if (r == CLI_EXIT)
			return CLI_EXIT;
		if (r == CLI_FAIL)
			return HTC_EPARSE;
		break;
	}
	}
	return 0;
}

/* What to run: a process to attach to, the --sh text, or the words after the options. */
static int what_to_run(struct resource_monitor_opts *o, int n_args, char *const *args, char *err,
                       size_t errlen)
{
	o->n_args = n_args;
	if (o->attach_pid) {
		if (o->sh || n_args > 0)
			return cli_error(
			    err, errlen,
			    "--pid: give either a process to attach to or a command, not both");
		if (o->cpuset)
			return cli_error(
			    err, errlen,
			    "--cpuset: cannot be used with --pid (the process already runs)");
		if (o->seccomp)
			return cli_error(
			    err, errlen,
			    "--seccomp: cannot be used with --pid (the process already runs)");
		if (o->cgroups == RMONITOR_CGROUPS_REQUIRED)
			return cli_error(
			    err, errlen,
			    "--cgroups=required: cannot be used with --pid (an attached "
			    "process is measured through /proc only)");
	} else if (o->sh) {
		if (n_args > 0)
			return cli_error(
			    err, errlen,
			    "--sh: give the command either with --sh or after --, not both");
		o->cmd = xcalloc(4, sizeof *o->cmd);
		o->cmd[0] = "/bin/sh";
		o->cmd[1] = "-c";
		o->cmd[2] = o->sh;
	} else {
		if (n_args <= 0)
			return cli_error(
			    err, errlen,
			    "no command given (usage: resource_monitor [options] -- CMD ARGS; "
			    "see --help)");
		o->cmd = xcalloc((size_t)n_args + 1, sizeof *o->cmd);
		for (int i = 0; i < n_args; i++)
			o->cmd[i] = args[i];
	}
	if (o->measure_only && o->have_limits)
		debug(D_RMON, "--measure-only: limits are reported but not enforced");
	return 0;
}

int resource_monitor_opts_parse(int argc, char *argv[], struct resource_monitor_opts *o, char *err,
                                size_t errlen)
{
	init(o);
	/* "+": stop at the first non-option, so the command's own options are left alone. */
	opterr = 0;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	int c, r = 0;
	while ((c = getopt_long(argc, argv, "+:L:l:i:O:V:d:o:vh", longopts, NULL)) != -1) {
		r = parse_one(o, c, optarg, argv, err, errlen);
		if (r != 0)
			goto out;
	}
	r = what_to_run(o, argc - optind, argv + optind, err, errlen);
out:
	if (r != 0)
		resource_monitor_opts_clear(o);
	return r;
}
