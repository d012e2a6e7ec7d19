/* makeflow_opts.c: parses the command line of makeflow (getopt_long, with the options every
 * program shares through cli.h) into struct makeflow_opts. Work Queue's options become options
 * of the wq batch driver. See makeflow_opts.h. */
#include "makeflow_opts.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch_queue.h"
#include "category.h"
#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "makeflow_opts_compat.h"
#include "rmon_seccomp.h"
#include "stringtools.h"
#include "units.h"
#include "docker_name.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

enum {
	OPT_GC_SIZE = 1000,
	OPT_SKIP_FILE_CHECK,
	OPT_BATCH_OPTION,
	OPT_K8S_IMAGE,
	OPT_K8S_NAMESPACE,
	OPT_MESOS_MASTER,
	OPT_PROGRESS,
	OPT_CLEAN,
	OPT_MONITOR,
	OPT_MONITOR_INTERVAL,
	OPT_MONITOR_SERIES,
	OPT_MONITOR_EXE,
	OPT_ALLOCATION,
	OPT_ALLOCATION_SEED,
	OPT_PASSWORD,
	OPT_SSL_CERT,
	OPT_SSL_KEY,
	OPT_SHARED_FS,
	OPT_SECCOMP,
	/* wrappers, archive, mounts */
	OPT_WRAPPER,
	OPT_WRAPPER_INPUT,
	OPT_WRAPPER_OUTPUT,
	OPT_ARCHIVE,
	OPT_ARCHIVE_READ,
	OPT_ARCHIVE_WRITE,
	OPT_ARCHIVE_DIR,
	OPT_MOUNTS,
	OPT_CACHE_DIR,
	OPT_DOCKER,
	OPT_DOCKER_TAR,
	OPT_REPORT,
	OPT_REPORT_INTERVAL,
};

static const struct option longopts[] = {
    {"batch-type", required_argument, 0, 'T'},
    {"max-local", required_argument, 0, 'j'},
    {"max-remote", required_argument, 0, 'J'},
    {"batch-options", required_argument, 0, 'B'},
    {"batch-option", required_argument, 0, OPT_BATCH_OPTION},
    {"k8s-image", required_argument, 0, OPT_K8S_IMAGE},
    {"k8s-namespace", required_argument, 0, OPT_K8S_NAMESPACE},
    {"mesos-master", required_argument, 0, OPT_MESOS_MASTER},
    {"port", required_argument, 0, 'p'},
    {"port-file", required_argument, 0, 'Z'},
    {"project-name", required_argument, 0, 'N'},
    {"catalog-server", required_argument, 0, 'C'},
    {"password", required_argument, 0, OPT_PASSWORD},
    {"ssl-cert", required_argument, 0, OPT_SSL_CERT},
    {"ssl-key", required_argument, 0, OPT_SSL_KEY},
    {"shared-fs", required_argument, 0, OPT_SHARED_FS},
    {"seccomp", required_argument, 0, OPT_SECCOMP},
    {"retry-count", required_argument, 0, 'r'},
    {"retry", no_argument, 0, 'R'},
    {"zero-length-error", no_argument, 0, 'z'},
    {"makeflow-log", required_argument, 0, 'l'},
    {"batch-log", required_argument, 0, 'L'},
    {"clean", optional_argument, 0, OPT_CLEAN},
    {"gc", required_argument, 0, 'g'},
    {"gc-count", required_argument, 0, 'G'},
    {"gc-size", required_argument, 0, OPT_GC_SIZE},
    {"skip-file-check", no_argument, 0, OPT_SKIP_FILE_CHECK},
    {"summary-log", required_argument, 0, 'f'},
    {"progress", required_argument, 0, OPT_PROGRESS},
    {"monitor", required_argument, 0, OPT_MONITOR},
    {"report", required_argument, 0, OPT_REPORT},
    {"report-interval", required_argument, 0, OPT_REPORT_INTERVAL},
    {"monitor-interval", required_argument, 0, OPT_MONITOR_INTERVAL},
    {"monitor-with-time-series", no_argument, 0, OPT_MONITOR_SERIES},
    {"monitor-exe", required_argument, 0, OPT_MONITOR_EXE},
    {"allocation", required_argument, 0, OPT_ALLOCATION},
    {"allocation-seed", required_argument, 0, OPT_ALLOCATION_SEED},
    /* wrappers, archive, mounts */
    {"wrapper", required_argument, 0, OPT_WRAPPER},
    {"wrapper-input", required_argument, 0, OPT_WRAPPER_INPUT},
    {"wrapper-output", required_argument, 0, OPT_WRAPPER_OUTPUT},
    {"archive", optional_argument, 0, OPT_ARCHIVE},
    {"archive-read", optional_argument, 0, OPT_ARCHIVE_READ},
    {"archive-write", optional_argument, 0, OPT_ARCHIVE_WRITE},
    {"archive-dir", required_argument, 0, OPT_ARCHIVE_DIR},
    {"mounts", required_argument, 0, OPT_MOUNTS},
    {"cache-dir", required_argument, 0, OPT_CACHE_DIR},
    {"cache", required_argument, 0, OPT_CACHE_DIR},
    {"docker", required_argument, 0, OPT_DOCKER},
    {"docker-tar", required_argument, 0, OPT_DOCKER_TAR},
    CLI_LONG_OPTIONS,
    WORKFLOW_LONG_OPTIONS,
    {0, 0, 0, 0},
};

void makeflow_opts_usage(FILE *f, const char *prog)
{
	fprintf(
	    f,
	    "Usage: %s [options] [WORKFLOW]   (default WORKFLOW: ./Makeflow)\n"
	    "\n"
	    "Runs every rule of a workflow whose inputs are ready; continues an interrupted run.\n"
	    "\n"
	    "  -T, --batch-type=TYPE     batch system: %s (default local;\n"
	    "                            env MAKEFLOW_BATCH_QUEUE_TYPE)\n"
	    "  -j, --max-local=N         at most N jobs at once on this machine (default: cores)\n"
	    "  -J, --max-remote=N        at most N remote jobs at once\n"
	    "  -B, --batch-options=TEXT  options passed to the batch system for every job\n"
	    "      --batch-option=K=V    a driver option (e.g. script=FILE for dryrun); "
	    "repeatable\n"
	    "      --seccomp=PROFILE     -T local and cgroups: run each job under PROFILE "
	    "(default,\n"
	    "                            strict, nonet; default off; doc/seccomp.md)\n"
	    "Kubernetes (-T k8s; doc/kubernetes.md):\n"
	    "      --k8s-image=IMAGE     the container image of the rules' pods (required)\n"
	    "      --k8s-namespace=NS    the namespace of the pods (default: the kubeconfig's)\n"
	    "Mesos (-T mesos; doc/batch-mesos.md):\n"
	    "      --mesos-master=H:P    the Mesos master (v1 Scheduler HTTP API; required)\n"
	    "Work Queue (-T wq):\n"
	    "  -p, --port=PORT           port of the master (default 9123; 0 = any)\n"
	    "  -Z, --port-file=FILE      write the port the master listens on to FILE\n"
	    "  -N, -M, --project-name=P  advertise the master to the catalog as project P\n"
	    "  -C, --catalog-server=H:P  catalog servers (default $CATALOG_HOST, localhost:9097)\n"
	    "      --password=FILE       workers must prove this password (HMAC, both ways)\n"
	    "      --ssl-cert=FILE --ssl-key=FILE  TLS for worker connections\n"
	    "      --shared-fs=DIR       files under DIR are on a file system workers share:\n"
	    "                            they are not transferred (local types: all are)\n"
	    "  -r, --retry-count=N       retry a failed rule up to N times\n"
	    "  -R, --retry               retry failed rules (5 times)\n"
	    "  -z, --zero-length-error   an empty output counts as missing\n"
	    "  -l, --makeflow-log=FILE   transaction log (default WORKFLOW.makeflowlog)\n"
	    "  -L, --batch-log=FILE      -T wq: the master's transactions log; the local types\n"
	    "                            keep none\n"
	    "  -c, --clean[=MODE]        remove created files: all (default), outputs, "
	    "intermediates\n"
	    "  -g, --gc=MODE             garbage collection: none, ref_cnt, on_demand, all\n"
	    "  -G, --gc-count=N          collect once N files are collectable\n"
	    "      --gc-size=SIZE        on_demand: collect while free disk is below SIZE (1G)\n"
	    "      --skip-file-check     do not check input files, nor on restart the files of\n"
	    "                            complete rules\n"
	    "  -f, --summary-log=FILE    write the CCTools text summary of the run to FILE\n"
	    "      --summary-json=FILE   write a JSON summary of the run to FILE\n"
	    "      --report=FILE.html    write the HTML run report to FILE.html at the end, and\n"
	    "                            while the run goes\n"
	    "      --report-interval=S   rewrite it every S seconds (default 30; 0: at the end\n"
	    "                            only)\n"
	    "      --json                the workflow is JSON\n"
	    "      --jx                  the workflow is JX\n"
	    "      --jx-args=FILE        JX: symbols from FILE\n"
	    "      --jx-define=VAR=EXPR  JX: define VAR\n"
	    "      --parse-memory=SIZE   memory budget of reading the workflow (default 1G;\n"
	    "                            env MAKEFLOW_PARSE_MEMORY)\n"
	    "      --progress=MODE       auto (default), plain, quiet\n"
	    "      --monitor=DIR         measure every rule with resource_monitor; one summary\n"
	    "                            per rule in DIR (also seeds the categories next run)\n"
	    "      --monitor-interval=S  sampling interval of the monitor in seconds (0.01 to\n"
	    "                            3600; 0 = the monitor's default, 1 s)\n"
	    "      --monitor-with-time-series  also keep a time series per rule\n"
	    "      --monitor-with-opened-files  also list the files each rule opened\n"
	    "      --monitor-log-fmt=FMT the monitor's files of a rule are FMT.summary, ...;\n"
	    "                            %%%% in FMT is the rule's id (default "
	    "resource-rule-%%%%)\n"
	    "      --monitor-exe=PATH    the resource_monitor to use (default: beside makeflow)\n"
	    "      --allocation=MODE     size categories: fixed, max, waste (min_waste),\n"
	    "                            throughput (max_throughput), warmup (not in\n"
	    "                            CCTools: measure one rule, then pack); .MAKEFLOW\n"
	    "                            MODE wins\n"
	    "      --allocation-seed=PATH  seed categories from summaries (file or directory)\n"
	    "Wrappers, archive, mounts (doc/makeflow-archive.md):\n"
	    "      --wrapper=CMD         run every rule inside CMD ({} or [] marks the\n"
	    "                            command, %%%% the rule's number); repeatable\n"
	    "      --wrapper-input=FILE  FILE is an input of every rule (%%%%: rule number)\n"
	    "      --wrapper-output=FILE FILE is an output of every rule (%%%%: rule number)\n"
	    "      --archive[=DIR]       restore rules found in the archive DIR and store\n"
	    "                            completed ones (default /tmp/makeflow.archive.UID)\n"
	    "      --archive-read[=DIR]  only restore from the archive\n"
	    "      --archive-write[=DIR] only store into the archive\n"
	    "      --archive-dir=DIR     the archive directory\n"
	    "      --mounts=FILE         make each TARGET of FILE's 'TARGET SOURCE' lines a\n"
	    "                            link to a cached copy of SOURCE (path or URL)\n"
	    "      --cache-dir=DIR       where --mounts keeps its copies (also --cache;\n"
	    "                            default makeflow.cache.HASH)\n"
	    "CCTools compatibility (doc/compatibility.md):\n"
	    "      --argv=FILE           options from FILE, a JSON object of option names and\n"
	    "                            values (MAKEFLOW: the workflow)\n"
	    "      --local-cores=N       cores of this machine for local jobs (default: all)\n"
	    "      --local-memory=MB     memory of this machine for local jobs (default: all)\n"
	    "      --local-disk=MB       disk of this machine for local jobs (default: free)\n"
	    "      --wait-for-files-upto=S  wait up to S seconds for a rule's outputs to\n"
	    "                            appear after it exits 0 (shared file systems)\n"
	    "      --storage-limit=SIZE  hold new rules while the workflow's files use SIZE\n"
	    "      --storage-type=T      what the limit counts: 0 max (every file created and\n"
	    "                            still needed; default), 2 output (final outputs),\n"
	    "                            3 off; 1 min is refused\n"
	    "      --ignore-memory-spec, --safe-submit-mode, --tmp=SIZE  Slurm only (not\n"
	    "                            in this build yet: a warning with another -T)\n"
	    "      --disable-cache       -T wq: workers do not cache files (cache=no)\n"
	    "  -X, --change-directory=DIR  read the workflow here, then run it in DIR\n"
	    "      --do-not-save-failed-output  delete a failed rule's outputs instead of\n"
	    "                            moving them to makeflow.failed.N/\n"
	    "  -A, --disable-afs-check   accepted: there is no AFS check here\n"
	    "  -t, --wq-keepalive-timeout=S, -u, --wq-keepalive-interval=S,\n"
	    "  -W, --wq-schedule=MODE    Work Queue keepalives and scheduling (-T wq)\n"
	    "  -a, --advertise           send the workflow's progress to the catalog (-C) as\n"
	    "                            project -N (any batch type)\n"
	    "      --file-status=FILE    keep an HTML status page in FILE, rewritten every\n"
	    "      --file-status-interval=S  S seconds (default 5) and at the end\n"
	    "  -F, --wq-fast-abort=M     -T wq: a task running M times its category's mean\n"
	    "                            wall time is cancelled and runs again elsewhere\n"
	    "      --docker=IMAGE        rules run in containers of IMAGE unless they name theirs\n"
	    "                            (CONTAINER=, CONTAINER_IMAGE_TAR=, CONTAINER_MODE=)\n"
	    "      --docker-tar=FILE     the same, the image coming from a docker save archive\n"
	    "      --send-environment    remote jobs get makeflow's environment (local jobs\n"
	    "                            inherit it)\n"
	    "  -P, --priority=N          -T wq: the master's priority in the catalog; workers\n"
	    "                            given -M try masters of higher priority first\n"
	    "      --work-queue-preferred-connection=HOW  -T wq: the address workers use:\n"
	    "                            by_ip (default), by_hostname, by_apparent_ip\n"
	    "      --wq-wait-queue-size=N  -T wq: dispatch nothing before N workers connect\n"
	    "      --debug-rotate-max=BYTES  rotate the -o file to FILE.old at this size\n"
	    "      --monitor-log-name=FMT  --monitor-log-fmt\n"
	    "      --monitor-measure-dir  the monitor's disk is the rule's directory size\n"
	    "  Other CCTools options are refused with the reason.\n"
	    "  -d, --debug=SUBSYS        debug output: %s\n"
	    "  -o, --debug-file=FILE     write debug output to FILE\n"
	    "  -v, --version             show the version\n"
	    "  -h, --help                show this help\n",
	    prog, batch_queue_types(), debug_flags_help());
}

static void init(struct makeflow_opts *o)
{
	memset(o, 0, sizeof *o);
	engine_options_init(&o->engine);
	const char *env_type = getenv("MAKEFLOW_BATCH_QUEUE_TYPE");
	if (env_type && *env_type)
		o->engine.batch_type = env_type;
}

void makeflow_opts_clear(struct makeflow_opts *o)
{
	for (size_t i = 0; i < o->n_batch_opts; i++)
		free(o->batch_opts[i]);
	free(o->batch_opts);
	free(o->log_path);
	free(o->wq_only);
	for (int i = 0; i < 3; i++)
		free(o->wrap[i]);
	free(o->archive_dir);
	free(o->nc_only);
	for (int i = 0; i < o->n_words; i++)
		free(o->words[i]);
	free(o->words);
	free(o->argv_workflow);
	workflow_source_free(&o->src);
	init(o);
}

/* An integer >= MIN into *OUT. */
static int parse_int(const char *opt, const char *s, int min, int *out, char *err, size_t errlen)
{
	int64_t v;
	if (str_to_int64(s, &v) < 0 || v < min || v > INT_MAX)
		return cli_error(err, errlen, "option %s: '%s' is not an integer >= %d", opt, s,
		                 min);
	*out = (int)v;
	return 0;
}

void makeflow_opts_add_batch(struct makeflow_opts *o, char *kv)
{
	VEC_RESERVE(o->batch_opts, o->cap_batch_opts, o->n_batch_opts + 2);
	o->batch_opts[o->n_batch_opts++] = kv;
	o->batch_opts[o->n_batch_opts] = NULL;
}

/* The options that choose among a few words. */
static int parse_word(struct makeflow_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	struct engine_options *e = &o->engine;
	if (c == 'g') {
		if (!strcmp(arg, "none"))
			e->gc = ENGINE_GC_NONE;
		else if (!strcmp(arg, "ref_cnt"))
			e->gc = ENGINE_GC_REF_CNT;
		else if (!strcmp(arg, "on_demand"))
			e->gc = ENGINE_GC_ON_DEMAND;
		else if (!strcmp(arg, "all"))
			e->gc = ENGINE_GC_ALL;
		else
			return cli_error(err, errlen,
			                 "-g %s: expected none, ref_cnt, on_demand or all", arg);
	} else if (c == OPT_ALLOCATION) {
		enum category_mode m;
		if (category_mode_parse(arg, &m) < 0)
			return cli_error(
			    err, errlen,
			    "--allocation %s: expected fixed, max, waste, throughput or warmup",
			    arg);
		e->allocation_mode = (int)m;
	} else {
		if (!strcmp(arg, "auto"))
			e->progress = ENGINE_PROGRESS_AUTO;
		else if (!strcmp(arg, "plain"))
			e->progress = ENGINE_PROGRESS_PLAIN;
		else if (!strcmp(arg, "quiet"))
			e->progress = ENGINE_PROGRESS_QUIET;
		else
			return cli_error(err, errlen,
			                 "--progress %s: expected auto, plain or quiet", arg);
	}
	return 0;
}

/* Work Queue options become options of the wq driver. */
static void wq_option(struct makeflow_opts *o, int c, const char *arg)
{
	if (c == 'Z') {
		o->port_file = arg;
		return;
	}
	const char *key = c == 'p'             ? "port"
	                  : c == 'Z'           ? "port-file"
	                  : c == 'C'           ? "catalog"
	                  : c == OPT_PASSWORD  ? "password"
	                  : c == OPT_SSL_CERT  ? "ssl-cert"
	                  : c == OPT_SSL_KEY   ? "ssl-key"
	                  : c == OPT_SHARED_FS ? "shared-fs"
	                  : c == 't'           ? "keepalive-timeout"
	                  : c == 'u'           ? "keepalive-interval"
	                  : c == 'W'           ? "schedule"
	                  : c == 'F'           ? "fast-abort"
	                                       : "project";
	makeflow_opts_add_batch(o, xasprintf("%s=%s", key, arg));
	/* -N and -C also name where -a advertises the workflow, with any batch type */
	if (c == 'N' || c == 'M' || c == 'C') {
		if (c == 'C')
			o->engine.catalog_hosts = arg;
		else
			o->engine.project = arg;
		if (!o->nc_only)
			o->nc_only = xasprintf("-%c %s", c, arg);
		return;
	}
	/* --shared-fs: with the local types every path is shared (nothing is transferred) */
	if (!o->wq_only && c != OPT_SHARED_FS) {
		const char *name = c == OPT_PASSWORD    ? "--password"
		                   : c == OPT_SSL_CERT  ? "--ssl-cert"
		                   : c == OPT_SSL_KEY   ? "--ssl-key"
		                   : c == OPT_SHARED_FS ? "--shared-fs"
		                                        : NULL;
		o->wq_only = name ? xasprintf("%s %s", name, arg) : xasprintf("-%c %s", c, arg);
	}
}

/* --wrapper*, --archive*, --mounts, --cache-dir. */
static int parse_wrap(struct makeflow_opts *o, int c, char *arg, char *err, size_t errlen)
{
	struct engine_options *e = &o->engine;
	if (c == OPT_WRAPPER || c == OPT_WRAPPER_INPUT || c == OPT_WRAPPER_OUTPUT) {
		int k = c - OPT_WRAPPER;
		if (!*arg)
			return cli_error(err, errlen,
			                 "--wrapper%s: expected a %s, got an empty string",
			                 k == 0   ? ""
			                 : k == 1 ? "-input"
			                          : "-output",
			                 k == 0 ? "command" : "file name");
		VEC_RESERVE(o->wrap[k], o->cap_wrap[k], o->n_wrap[k] + 2);
		o->wrap[k][o->n_wrap[k]++] = arg;
		o->wrap[k][o->n_wrap[k]] = NULL;
		return 0;
	}
	if (c == OPT_MOUNTS || c == OPT_CACHE_DIR) {
		if (!*arg)
			return cli_error(err, errlen, "%s: expected a %s",
			                 c == OPT_MOUNTS ? "--mounts" : "--cache-dir",
			                 c == OPT_MOUNTS ? "file" : "directory");
		if (c == OPT_MOUNTS)
			e->mounts_path = arg;
		else
			e->cache_dir = arg;
		return 0;
	}
	/* the archive: --archive reads and writes; -read and -write combine */
	if (c == OPT_ARCHIVE || c == OPT_ARCHIVE_READ)
		e->archive_read = 1;
	if (c == OPT_ARCHIVE || c == OPT_ARCHIVE_WRITE)
		e->archive_write = 1;
	if (!arg)
		o->archive_bare = 1;
	if (arg) {
		if (!*arg)
			return cli_error(err, errlen, "--archive-dir: expected a directory");
		if (o->archive_dir && strcmp(o->archive_dir, arg))
			return cli_error(err, errlen, "two archive directories given: %s and %s",
			                 o->archive_dir, arg);
		free(o->archive_dir);
		o->archive_dir = xstrdup(arg);
	}
	return 0;
}

static int parse_one(struct makeflow_opts *o, int c, char *arg, char *argv[], const char **clean,
                     char *err, size_t errlen)
{
	struct engine_options *e = &o->engine;
	switch (c) {
	case 'T': e->batch_type = arg; break;
	case 'j': return parse_int("-j", arg, 1, &e->max_local_jobs, err, errlen);
	case 'J': return parse_int("-J", arg, 1, &e->max_remote_jobs, err, errlen);
	case 'B': e->batch_options = arg; break;
	case OPT_DOCKER:
		if (!docker_image_name_ok(arg))
			return cli_error(err, errlen, "--docker '%s': not an image name", arg);
		e->docker_image = arg;
		break;
	case OPT_DOCKER_TAR:
		if (!*arg)
			return cli_error(err, errlen, "--docker-tar: expected a file");
		e->docker_tar = arg;
		break;
	case OPT_SECCOMP: {
		enum rmon_seccomp_profile sp;
		if (rmon_seccomp_parse(arg, &sp) < 0)
			return cli_error(err, errlen,
			                 "--seccomp '%s': expected default, strict, nonet or off",
			                 arg);
		makeflow_opts_add_batch(o, xasprintf("seccomp=%s", arg));
		break;
	}
	case OPT_K8S_IMAGE:
	case OPT_K8S_NAMESPACE:
		if (!o->k8s_only)
			o->k8s_only = c == OPT_K8S_IMAGE ? "--k8s-image" : "--k8s-namespace";
		makeflow_opts_add_batch(
		    o, xasprintf("%s=%s", c == OPT_K8S_IMAGE ? "image" : "namespace", arg));
		break;
	case OPT_MESOS_MASTER:
		o->mesos_only = "--mesos-master";
		makeflow_opts_add_batch(o, xasprintf("master=%s", arg));
		break;
	case OPT_BATCH_OPTION:
		if (!strchr(arg, '='))
			return cli_error(err, errlen, "--batch-option '%s': expected KEY=VALUE",
			                 arg);
		makeflow_opts_add_batch(o, xstrdup(arg));
		break;
	case 'p':
	case 'Z':
	case 'N':
	case 'M':
	case 'C':
	case OPT_PASSWORD:
	case OPT_SSL_CERT:
	case OPT_SSL_KEY:
	case OPT_SHARED_FS:
	case 't':
	case 'u':
	case 'W':
	case 'F': wq_option(o, c, arg); break;
	case 'r': return parse_int("-r", arg, 0, &e->retries, err, errlen);
	case 'R': e->retries = 5; break;
	case 'z': e->zero_length_is_missing = 1; break;
	case 'l':
		free(o->log_path);
		o->log_path = xstrdup(arg);
		break;
	case 'L': o->batch_log = arg; break;
	case 'c': *clean = "all"; break;
	case OPT_CLEAN: *clean = arg ? arg : "all"; break;
	case 'g':
	case OPT_ALLOCATION:
	case OPT_PROGRESS: return parse_word(o, c, arg, err, errlen);
	case 'G': return parse_int("-G", arg, 1, &e->gc_count, err, errlen);
	case OPT_GC_SIZE:
		if (units_parse_bytes(arg, &e->gc_size) < 0)
			return cli_error(err, errlen,
			                 "--gc-size %s: expected a size such as 500M or 2G", arg);
		if (e->gc == ENGINE_GC_NONE)
			e->gc = ENGINE_GC_ON_DEMAND;
		break;
	case OPT_SKIP_FILE_CHECK: e->skip_file_check = 1; break;
	case OPT_MONITOR: e->monitor_dir = arg; break;
	case OPT_REPORT: o->report_path = arg; break;
	case OPT_REPORT_INTERVAL:
		return parse_int("--report-interval", arg, 0, &e->report_interval_s, err, errlen);
	case OPT_MONITOR_INTERVAL: {
		char *end = NULL;
		double v = strtod(arg, &end);
		/* 0 is the monitor's own default (1 s); resource_monitor samples at
		 * most every 0.01 s */
		if (!*arg || *end || !(v == 0 || (v >= 0.01 && v <= 3600)))
			return cli_error(
			    err, errlen,
			    "--monitor-interval %s: expected 0 (the monitor's default, 1 s) "
			    "or seconds from 0.01 to 3600",
			    arg);
		e->monitor_interval = v;
		break;
	}
	case OPT_MONITOR_SERIES: e->monitor_time_series = 1; break;
	case OPT_MONITOR_EXE: e->monitor_exe = arg; break;
	case OPT_ALLOCATION_SEED: e->allocation_seed = arg; break;
	case OPT_WRAPPER:
	case OPT_WRAPPER_INPUT:
	case OPT_WRAPPER_OUTPUT:
	case OPT_ARCHIVE:
	case OPT_ARCHIVE_READ:
	case OPT_ARCHIVE_WRITE:
	case OPT_ARCHIVE_DIR:
	case OPT_MOUNTS:
	case OPT_CACHE_DIR: return parse_wrap(o, c, arg, err, errlen);
	case 'f': e->summary_path = arg; break;
	case 'd':
	case 'o':
	case 'v':
	case 'h': {
		int r = cli_common_option(c, argv, "makeflow", makeflow_opts_usage, err, errlen);
		return r == CLI_EXIT ? CLI_EXIT : r == CLI_FAIL ? HTC_EPARSE : 0;
	}
	default: {
		if (workflow_source_getopt(&o->src, c, arg))
			break;
		int r = compat_option(o, c, arg, err, errlen);
		if (r != 0)
			return r < 0 ? r : 0;
		return CLI_USAGE;
	}
	}
	return 0;
}

/* The one workflow file, and what --clean says. */
static int check_workflow(struct makeflow_opts *o, int argc, char *argv[], const char *clean,
                          char *err, size_t errlen)
{
	struct stat st;
	if (optind < argc - 1 && o->archive_bare && stat(argv[optind], &st) == 0 &&
	    S_ISDIR(st.st_mode))
		return cli_error(
		    err, errlen,
		    "expected one workflow file, got %d: an archive directory is given as "
		    "--archive=%s (the value is optional, so it needs the '=')",
		    argc - optind, argv[optind]);
	if (optind < argc - 1)
		return cli_error(err, errlen, "expected one workflow file, got %d (see --help)",
		                 argc - optind);
	o->src.path = optind < argc      ? argv[optind]
	              : o->argv_workflow ? o->argv_workflow
	                                 : "Makeflow";
	if (access(o->src.path, R_OK) < 0)
		return cli_error(err, errlen, "cannot read workflow %s: %s", o->src.path,
		                 strerror(errno));
	if (clean) {
		if (!strcmp(clean, "all"))
			o->clean = ENGINE_CLEAN_ALL;
		else if (!strcmp(clean, "outputs"))
			o->clean = ENGINE_CLEAN_OUTPUTS;
		else if (!strcmp(clean, "intermediates"))
			o->clean = ENGINE_CLEAN_INTERMEDIATES;
		else if (!strcmp(clean, "cache") && o->engine.mounts_path)
			o->clean = ENGINE_CLEAN_CACHE;
		else if (!strcmp(clean, "cache"))
			return cli_error(err, errlen,
			                 "--clean=cache removes what --mounts made: give the same "
			                 "--mounts FILE (and --cache-dir) as the run");
		else
			return cli_error(err, errlen,
			                 "--clean=%s: expected all, outputs or intermediates",
			                 clean);
	}
	const char *type = o->engine.batch_type ? o->engine.batch_type : "local";
	char why[512];
	if (batch_queue_type_check(type, why, sizeof why) < 0)
		return cli_error(err, errlen, "-T %s: %s", type, why);
	/* -Z is the master's port file with -T wq; without Work Queue CCTools writes port 0
	 * there (no master listens), and so does makeflow here */
	if (o->port_file && !strcmp(type, "wq"))
		makeflow_opts_add_batch(o, xasprintf("port-file=%s", o->port_file));
	else
		o->local_port_file = o->port_file;
	int rc = compat_check(o, type, err, errlen);
	if (rc < 0)
		return rc;
	int is_wq = !strcmp(type, "wq");
	/* -L: with -T wq the master's transactions log; the local types keep none (nor does
	 * CCTools for them) */
	if (o->batch_log && is_wq)
		makeflow_opts_add_batch(o, xasprintf("txlog=%s", o->batch_log));
	int is_k8s = !strcmp(type, "k8s");
	if (o->k8s_only && !is_k8s)
		return cli_error(err, errlen, "%s: this option needs -T k8s (the batch type is %s)",
		                 o->k8s_only, type);
	if (o->mesos_only && strcmp(type, "mesos") != 0)
		return cli_error(err, errlen,
		                 "%s: this option needs -T mesos (the batch type is %s)",
		                 o->mesos_only, type);
	if (!strcmp(type, "mesos") && !o->clean) {
		int has_master = 0;
		for (size_t i = 0; i < o->n_batch_opts; i++)
			has_master |= !strncmp(o->batch_opts[i], "master=", 7);
		if (!has_master)
			return cli_error(err, errlen,
			                 "-T mesos: no master given: --mesos-master HOST:PORT");
	}
	for (size_t i = 0; !is_wq && i < o->n_batch_opts; i++) {
		const char *kv = o->batch_opts[i];
		/* the pods of -T k8s mount the shared file system */
		if ((is_k8s || strncmp(kv, "shared-fs=", 10)) && strncmp(kv, "project=", 8) &&
		    strncmp(kv, "catalog=", 8))
			continue;
		free(o->batch_opts[i]);
		memmove(o->batch_opts + i, o->batch_opts + i + 1,
		        (o->n_batch_opts - i) * sizeof *o->batch_opts);
		o->n_batch_opts--;
		i--;
	}
	if (o->n_batch_opts == 0) {
		free(o->batch_opts);
		o->batch_opts = NULL;
		o->cap_batch_opts = 0;
	}
	const char *wq_only = o->wq_only ? o->wq_only : o->engine.advertise ? NULL : o->nc_only;
	if (wq_only && !is_wq)
		return cli_error(
		    err, errlen,
		    "%s: this option is for Work Queue and needs -T wq (the batch type is %s)",
		    wq_only, type);
	if (!o->log_path)
		o->log_path = xasprintf("%s.makeflowlog", o->src.path);
	o->engine.log_path = o->log_path;
	o->engine.wrappers = o->wrap[0];
	o->engine.wrapper_inputs = o->wrap[1];
	o->engine.wrapper_outputs = o->wrap[2];
	if (o->archive_dir && !o->engine.archive_read && !o->engine.archive_write)
		return cli_error(err, errlen,
		                 "--archive-dir %s: say what to do with the archive: --archive, "
		                 "--archive-read or --archive-write",
		                 o->archive_dir);
	if ((o->engine.archive_read || o->engine.archive_write) && !o->archive_dir)
		o->archive_dir = xasprintf("/tmp/makeflow.archive.%ld", (long)getuid());
	if (o->engine.archive_read || o->engine.archive_write)
		o->engine.archive_dir = o->archive_dir;
	o->engine.batch_opts = (const char *const *)o->batch_opts;
	return 0;
}

/* MAKEFLOW_MAX_LOCAL_JOBS and MAKEFLOW_MAX_REMOTE_JOBS give -j and -J their defaults. */
static int env_limits(struct makeflow_opts *o, char *err, size_t errlen)
{
	const char *l = getenv("MAKEFLOW_MAX_LOCAL_JOBS");
	const char *r = getenv("MAKEFLOW_MAX_REMOTE_JOBS");
	int rc = 0;
	if (l && *l)
		rc = parse_int("MAKEFLOW_MAX_LOCAL_JOBS", l, 1, &o->engine.max_local_jobs, err,
		               errlen);
	if (rc == 0 && r && *r)
		rc = parse_int("MAKEFLOW_MAX_REMOTE_JOBS", r, 1, &o->engine.max_remote_jobs, err,
		               errlen);
	return rc;
}

int makeflow_opts_parse(int argc, char *argv[], struct makeflow_opts *o, char *err, size_t errlen)
{
	init(o);
	int r =
	    compat_expand_argv(argc, argv, &o->words, &o->n_words, &o->argv_workflow, err, errlen);
	if (r < 0)
		return r;
	o->engine.argv = (const char *const *)argv;
	r = env_limits(o, err, errlen);
	if (r < 0)
		goto out;
	/* getopt itself reports an unknown option or a missing value (then the usage follows) */
	opterr = 1;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	const char *clean = NULL;
	struct option *opts = compat_longopts(longopts);
	int c;
	while ((c = getopt_long(o->n_words, o->words,
	                        "T:j:J:B:r:Rzl:L:cg:G:f:d:o:vhp:Z:N:M:C:" COMPAT_SHORT_OPTS, opts,
	                        NULL)) != -1) {
		r = parse_one(o, c, optarg, o->words, &clean, err, errlen);
		if (r != 0)
			break;
	}
	free(opts);
	if (r == 0)
		r = check_workflow(o, o->n_words, o->words, clean, err, errlen);
out:
	if (r != 0)
		makeflow_opts_clear(o);
	return r;
}

void makeflow_opts_warn(const struct makeflow_opts *o)
{
	const char *type = o->engine.batch_type ? o->engine.batch_type : "local";
	if (o->batch_log && strcmp(type, "wq") != 0)
		fprintf(stderr,
		        "makeflow: note: -L %s: the %s batch type keeps no batch log (its events "
		        "are in the debug log, -d batch)\n",
		        o->batch_log, type);
	if (o->slurm_only && strcmp(type, "slurm") != 0)
		fprintf(
		    stderr,
		    "makeflow: warning: %s applies to -T slurm only; the %s batch type does not "
		    "use it\n",
		    o->slurm_only, type);
}
