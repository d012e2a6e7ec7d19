/* work_queue_factory_opts.c: parses the command line of work_queue_factory (getopt_long, with
 * the options every program shares through cli.h) into struct work_queue_factory_opts. See
 * work_queue_factory_opts.h. */
#include "work_queue_factory_opts.h"

#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_project.h"
#include "batch_queue.h"
#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "k8s_factory.h"
#include "stringtools.h"
#include "units.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

enum {
	OPT_PER_CYCLE = 256,
	OPT_CORES,
	OPT_MEMORY,
	OPT_DISK,
	OPT_GPUS,
	OPT_BINARY,
	OPT_PERIOD,
	OPT_BATCH_OPTION,
	OPT_CATALOG,
	OPT_ENV,
	OPT_WRAPPER,
	OPT_WRAPPER_INPUT,
	OPT_MESOS_MASTER,
	OPT_K8S_IMAGE,
	OPT_K8S_WORKER_IMAGE,
	OPT_SCALER,
	OPT_SCALER_HOOK,
	OPT_HOOK_TIMEOUT,
	OPT_POOL_RECORD,
	OPT_MODELLED_LOAD,
	OPT_NOT_HERE /* a CCTools option this factory does not have */
};

/* The short CCTools options refused (with an argument, except c). */
#define NOT_HERE_SHORT "CFSB"

static const struct option longopts[] = {
    {"batch-type", required_argument, 0, 'T'},
    {"master-name", required_argument, 0, 'M'},
    {"manager-name", required_argument, 0, 'M'},
    {"catalog", required_argument, 0, OPT_CATALOG},
    {"min-workers", required_argument, 0, 'w'},
    {"max-workers", required_argument, 0, 'W'},
    {"workers-per-cycle", required_argument, 0, OPT_PER_CYCLE},
    {"cores", required_argument, 0, OPT_CORES},
    {"memory", required_argument, 0, OPT_MEMORY},
    {"disk", required_argument, 0, OPT_DISK},
    {"gpus", required_argument, 0, OPT_GPUS},
    {"timeout", required_argument, 0, 't'},
    {"password", required_argument, 0, 'P'},
    {"worker-binary", required_argument, 0, OPT_BINARY},
    {"period", required_argument, 0, OPT_PERIOD},
    {"batch-option", required_argument, 0, OPT_BATCH_OPTION},
    {"scaler", required_argument, 0, OPT_SCALER},
    {"scaler-hook", required_argument, 0, OPT_SCALER_HOOK},
    {"scaler-hook-timeout", required_argument, 0, OPT_HOOK_TIMEOUT},
    {"pool-record", required_argument, 0, OPT_POOL_RECORD},
    {"modelled-load", required_argument, 0, OPT_MODELLED_LOAD},
    /* CCTools options refused by name (doc/compatibility.md) */
    {"config-file", required_argument, 0, 'C'},
    {"foremen-name", required_argument, 0, 'F'},
    {"scratch-dir", required_argument, 0, 'S'},
    {"run-factory-as-manager", no_argument, 0, OPT_NOT_HERE},
    {"parent-death", no_argument, 0, OPT_NOT_HERE},
    {"debug-file-size", required_argument, 0, 'O'},
    {"factory-timeout", required_argument, 0, OPT_NOT_HERE},
    {"tasks-per-worker", required_argument, 0, OPT_NOT_HERE},
    {"capacity", no_argument, 0, 'c'},
    {"autosize", no_argument, 0, OPT_NOT_HERE},
    {"env", required_argument, 0, OPT_ENV},
    {"extra-options", required_argument, 0, 'E'},
    {"wrapper", required_argument, 0, OPT_WRAPPER},
    {"wrapper-input", required_argument, 0, OPT_WRAPPER_INPUT},
    {"runos", required_argument, 0, OPT_NOT_HERE},
    {"python-package", required_argument, 0, OPT_NOT_HERE},
    {"batch-options", required_argument, 0, 'B'},
    {"amazon-config", required_argument, 0, OPT_NOT_HERE},
    {"condor-requirements", required_argument, 0, OPT_NOT_HERE},
    {"mesos-master", required_argument, 0, OPT_MESOS_MASTER},
    {"mesos-path", required_argument, 0, OPT_NOT_HERE},
    {"mesos-preload", required_argument, 0, OPT_NOT_HERE},
    {"k8s-image", required_argument, 0, OPT_K8S_IMAGE},
    {"k8s-worker-image", required_argument, 0, OPT_K8S_WORKER_IMAGE},
    CLI_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void work_queue_factory_opts_usage(FILE *out, const char *prog)
{
	fprintf(
	    out,
	    "Usage: %s [options] HOST PORT     workers for one master\n"
	    "       %s [options] -M PROJECT    workers for the masters of a project\n"
	    "\n"
	    "  -T, --batch-type=TYPE      where workers run (default local; %s)\n"
	    "      --catalog=H:P[,...]    catalog servers (default $CATALOG_HOST, "
	    "localhost:9097)\n"
	    "  -M, -N, --manager-name=P   serve the masters whose whole project name matches\n"
	    "                             the regular expression P (also --master-name)\n"
	    "  -w, --min-workers=N        keep at least N workers (default 0)\n"
	    "  -W, --max-workers=N        run at most N workers (default 10)\n"
	    "      --workers-per-cycle=N  start at most N workers per period (default 5)\n"
	    "      --cores=N --memory=MB --disk=MB --gpus=N  the size of each worker\n"
	    "  -t, --timeout=T            workers leave after T idle (default 300 s)\n"
	    "  -P, --password=FILE        the master's password (given to the workers too)\n"
	    "      --worker-binary=PATH   the worker to run (default: beside this program)\n"
	    "      --period=SECONDS       how often to look at the demand (default 5)\n"
	    "      --batch-option=K=V     an option of the batch driver (repeatable)\n"
	    "      --mesos-master=H:P     -T mesos: the Mesos master (doc/batch-mesos.md)\n"
	    "      --scaler=POLICY        hta (default), queue, or hpa:TARGET[:WINDOW]\n"
	    "      --scaler-hook=CMD      ask CMD each period how many workers to run\n"
	    "      --scaler-hook-timeout=SECONDS  the hook's time limit (default 10)\n"
	    "      --modelled-load=FILE   hpa: CATEGORY FRACTION lines, the CPU load of\n"
	    "                             those categories' tasks (benchmarks)\n"
	    "      --pool-record=FILE     the record of factory runs, to remove the workers of\n"
	    "                             a killed factory (default\n"
	    "                             $XDG_RUNTIME_DIR/work_queue_factory-UID.pool)\n"
	    "  -E, --extra-options=TEXT   more options of each worker (shell text)\n"
	    "      --env=NAME=VALUE       set in each worker's environment (repeatable)\n"
	    "      --wrapper=PREFIX       run each worker as PREFIX WORKER... (repeatable: the\n"
	    "                             last given is the outermost)\n"
	    "      --wrapper-input=FILE   a file each worker job needs (repeatable)\n"
	    "      --k8s-image=IMAGE      -T k8s: the pods' image; the worker is mounted in\n"
	    "      --k8s-worker-image=IMAGE  -T k8s: an image with work_queue_worker in PATH\n"
	    "                             (default " K8S_FACTORY_DEFAULT_IMAGE ")\n"
	    "  -d, --debug=SUBSYS  -o, --debug-file=FILE  -v, --version  -h, --help\n",
	    prog, prog, batch_queue_types());
}

static void init(struct work_queue_factory_opts *o)
{
	memset(o, 0, sizeof *o);
	o->type = "local";
	o->limits = (struct wq_factory_limits){
	    .min_workers = 0, .max_workers = 10, .workers_per_cycle = 5, .worker_cores = 1};
	o->timeout = 300;
	o->period = 5;
	o->scaler = "hta";
	o->memory_mb = o->disk_mb = -1;
	o->hook_timeout = 10;
}

void work_queue_factory_opts_clear(struct work_queue_factory_opts *o)
{
	free(o->size);
	free(o->batch_opts);
	free(o->env);
	free(o->wrappers);
	free(o->wrapper_inputs);
	catalog_project_delete(o->project_re);
	init(o);
}

/* An integer in MIN..MAX into *OUT. */
static int int_arg(const char *opt, const char *v, int64_t min, int64_t max, int64_t *out,
                   char *err, size_t errlen)
{
	if (str_to_int64(v, out) < 0 || *out < min || *out > max)
		return cli_error(err, errlen, "%s %s: expected an integer in %lld..%lld", opt, v,
		                 (long long)min, (long long)max);
	return 0;
}

/* Appends PIECE (freed here), one of the workers' size options. */
static void add_size(struct work_queue_factory_opts *o, char *piece)
{
	char *joined = xasprintf("%s%s", o->size ? o->size : "", piece);
	free(piece);
	free(o->size);
	o->size = joined;
}

/* --cores, --memory, --disk and --gpus: the size of each worker. */
static int parse_size(struct work_queue_factory_opts *o, int c, const char *arg, char *err,
                      size_t errlen)
{
	int64_t n;
	if (c == OPT_CORES) {
		double d;
		if (str_to_double(arg, &d) < 0 || d <= 0 || d > 1e6)
			return cli_error(err, errlen, "--cores %s: expected a number above 0", arg);
		o->limits.worker_cores = d;
		add_size(o, xasprintf(" --cores %g", d));
	} else if (c == OPT_GPUS) {
		if (int_arg("--gpus", arg, 0, 1024, &n, err, errlen) < 0)
			return HTC_EPARSE;
		add_size(o, xasprintf(" --gpus %lld", (long long)n));
	} else {
		if (units_parse_mb(arg, &n) < 0)
			return cli_error(err, errlen, "%s %s: expected a size (e.g. 4000, 4G)",
			                 c == OPT_MEMORY ? "--memory" : "--disk", arg);
		add_size(
		    o, xasprintf(" --%s %lld", c == OPT_MEMORY ? "memory" : "disk", (long long)n));
		*(c == OPT_MEMORY ? &o->memory_mb : &o->disk_mb) = (double)n;
	}
	return 0;
}

static int parse_one(struct work_queue_factory_opts *o, int c, char *arg, char *argv[], char *err,
                     size_t errlen)
{
	int64_t n = 0;
	int r = 0;
	switch (c) {
	case 'T': o->type = arg; break;
	case 'M':
	case 'N': o->project = arg; break;
	case OPT_CATALOG: o->catalog = arg; break;
	case 'w':
		r = int_arg("--min-workers", arg, 0, 100000, &n, err, errlen);
		o->limits.min_workers = (int)n;
		break;
	case 'W':
		r = int_arg("--max-workers", arg, 1, 100000, &n, err, errlen);
		o->limits.max_workers = (int)n;
		break;
	case OPT_PER_CYCLE:
		r = int_arg("--workers-per-cycle", arg, 1, 10000, &n, err, errlen);
		o->limits.workers_per_cycle = (int)n;
		break;
	case OPT_CORES:
	case OPT_MEMORY:
	case OPT_DISK:
	case OPT_GPUS: return parse_size(o, c, arg, err, errlen);
	case 't':
		if (units_parse_seconds(arg, &o->timeout) < 0 || o->timeout < 1)
			return cli_error(err, errlen,
			                 "-t %s: expected a duration above 0 (e.g. 300, 5m)", arg);
		break;
	case 'P': o->password = arg; break;
	case OPT_BINARY: o->binary = arg; break;
	case OPT_K8S_IMAGE: o->k8s_image = arg; break;
	case OPT_K8S_WORKER_IMAGE: o->k8s_worker_image = arg; break;
	case OPT_PERIOD:
		if (str_to_double(arg, &o->period) < 0 || o->period < 0.1 || o->period > 3600)
			return cli_error(err, errlen, "--period %s: expected seconds in 0.1..3600",
			                 arg);
		break;
	case 'E': o->extra = arg; break;
	case 'O': {
		/* CCTools' help says MB, but its factory rotates at this many bytes: so here */
		int64_t bytes;
		if (units_parse_bytes(arg, &bytes) < 0 || bytes < 0)
			return cli_error(
			    err, errlen,
			    "-O %s: expected bytes (a number) or a size such as 10M; 0 "
			    "never rotates",
			    arg);
		debug_config_file_size(bytes); /* as -o, at once */
		break;
	}
	case OPT_ENV: {
		size_t k = strcspn(arg, "=");
		bool name_ok = k > 0 && arg[k] == '=' && !isdigit((unsigned char)arg[0]);
		for (size_t i = 0; name_ok && i < k; i++)
			name_ok = isalnum((unsigned char)arg[i]) || arg[i] == '_';
		if (!name_ok)
			return cli_error(err, errlen,
			                 "--env %s: expected NAME=VALUE (NAME: letters, digits, _)",
			                 arg);
		VEC_RESERVE(o->env, o->cap_env, o->n_env + 2);
		o->env[o->n_env++] = arg;
		o->env[o->n_env] = NULL;
		break;
	}
	case OPT_WRAPPER:
		if (!*arg)
			return cli_error(err, errlen,
			                 "--wrapper: expected a command prefix, got an "
			                 "empty string");
		VEC_PUSH(o->wrappers, o->n_wrappers, o->cap_wrappers, arg);
		break;
	case OPT_WRAPPER_INPUT:
		if (!*arg)
			return cli_error(err, errlen,
			                 "--wrapper-input: expected a file name, got an "
			                 "empty string");
		VEC_RESERVE(o->wrapper_inputs, o->cap_wrapper_inputs, o->n_wrapper_inputs + 2);
		o->wrapper_inputs[o->n_wrapper_inputs++] = arg;
		o->wrapper_inputs[o->n_wrapper_inputs] = NULL;
		break;
	case OPT_MESOS_MASTER: o->mesos_master = arg; break;
	case OPT_SCALER: {
		struct scaler_policy p;
		if (scaler_parse(arg, &p, err, errlen) < 0)
			return HTC_EPARSE;
		o->scaler = arg;
		break;
	}
	case OPT_SCALER_HOOK:
		if (!*arg)
			return cli_error(err, errlen,
			                 "--scaler-hook: expected a command, got an "
			                 "empty string");
		o->scaler_hook = arg;
		break;
	case OPT_HOOK_TIMEOUT:
		if (str_to_double(arg, &o->hook_timeout) < 0 || o->hook_timeout < 0.1 ||
		    o->hook_timeout > 3600)
			return cli_error(err, errlen,
			                 "--scaler-hook-timeout %s: expected seconds in 0.1..3600",
			                 arg);
		break;
	case OPT_MODELLED_LOAD:
		if (!*arg)
			return cli_error(
			    err, errlen,
			    "--modelled-load: expected a file name, got an empty string");
		o->modelled_load = arg;
		break;
	case OPT_POOL_RECORD:
		if (!*arg)
			return cli_error(
			    err, errlen,
			    "--pool-record: expected a file name, got an empty string");
		o->pool_record = arg;
		break;
	case OPT_BATCH_OPTION:
		if (!strchr(arg, '='))
			return cli_error(err, errlen, "--batch-option %s: expected KEY=VALUE", arg);
		VEC_PUSH(o->batch_opts, o->n_batch_opts, o->cap_batch_opts, arg);
		break;
	default:
		r = cli_common_option(c, argv, "work_queue_factory", work_queue_factory_opts_usage,
		                      err, errlen);
		return r == CLI_EXIT ? CLI_EXIT : r == CLI_FAIL ? HTC_EPARSE : 0;
	}
	return r < 0 ? HTC_EPARSE : 0;
}

/* HOST PORT, or -M PROJECT, and limits that agree. */
static int check_master(struct work_queue_factory_opts *o, int rest, char *const *args, char *err,
                        size_t errlen)
{
	if (o->project && rest > 0)
		return cli_error(err, errlen, "give either -M PROJECT or HOST PORT, not both");
	if (o->project) {
		char *why = NULL;
		catalog_project_delete(o->project_re);
		o->project_re = catalog_project_create(o->project, &why);
		if (!o->project_re) {
			int r = cli_error(err, errlen, "-M: %s", why);
			free(why);
			return r;
		}
	}
	if (!o->project) {
		if (rest != 2)
			return cli_error(err, errlen,
			                 "expected HOST PORT or -M PROJECT (see --help)");
		int64_t port;
		if (int_arg("PORT", args[1], 1, 65535, &port, err, errlen) < 0)
			return HTC_EPARSE;
		o->host = args[0];
		o->port = (int)port;
		o->port_arg = args[1];
	}
	if (o->limits.min_workers > o->limits.max_workers)
		return cli_error(err, errlen, "--min-workers %d is above --max-workers %d",
		                 o->limits.min_workers, o->limits.max_workers);
	return 0;
}

int work_queue_factory_opts_parse(int argc, char *argv[], struct work_queue_factory_opts *o,
                                  char *err, size_t errlen)
{
	init(o);
	opterr = 0;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	int c, r = 0;
	int li = -1;
	while ((c = getopt_long(argc, argv, "+:T:M:N:C:F:S:O:E:B:cw:W:t:P:d:o:vh", longopts,
	                        &li)) != -1) {
		if (c == OPT_NOT_HERE || (c > 0 && c < 128 && strchr(NOT_HERE_SHORT "c", c))) {
			char name[64];
			if (li >= 0)
				snprintf(name, sizeof name, "--%s", longopts[li].name);
			else
				snprintf(name, sizeof name, "-%c", c);
			r = cli_error(
			    err, errlen,
			    "%s: a CCTools work_queue_factory option that is not supported here "
			    "(doc/compatibility.md)%s",
			    name, c == 'C' ? "; the catalog is --catalog" : "");
			goto out;
		}
		li = -1;
		r = parse_one(o, c, optarg, argv, err, errlen);
		if (r != 0)
			goto out;
	}
	r = check_master(o, argc - optind, argv + optind, err, errlen);
	if (r == 0 && o->mesos_master && (!o->type || strcmp(o->type, "mesos") != 0))
		r = cli_error(err, errlen, "--mesos-master: this option needs -T mesos");
	if (r == 0 && (o->k8s_image || o->k8s_worker_image) && strcmp(o->type, "k8s"))
		r = cli_error(err, errlen, "%s: this option needs -T k8s (the batch type is %s)",
		              o->k8s_image ? "--k8s-image" : "--k8s-worker-image", o->type);
	if (r == 0 && !o->size)
		o->size = xstrdup("");
out:
	if (r != 0)
		work_queue_factory_opts_clear(o);
	return r;
}
