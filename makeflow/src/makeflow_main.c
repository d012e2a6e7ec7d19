/* makeflow_main.c: the makeflow command: parses options, loads the workflow
 * (checking it completely before anything runs), then either cleans, or runs
 * it with the engine. Option names follow the Makeflow tradition. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch_queue.h"
#include "category.h"
#include "config.h"
#include "debug.h"
#include "engine.h"
#include "stringtools.h"
#include "units.h"
#include "workflow_load.h"
#include "xalloc.h"
#include "banned.h"

enum {
	OPT_GC_SIZE = 1000,
	OPT_SKIP_FILE_CHECK,
	OPT_BATCH_OPTION,
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
};

static void usage(FILE *f, const char *prog)
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
	    "Work Queue (-T wq):\n"
	    "  -p, --port=PORT           port of the master (default 9123; 0 = any)\n"
	    "  -Z, --port-file=FILE      write the port the master listens on to FILE\n"
	    "  -N, -M, --project-name=P  advertise the master to the catalog as project P\n"
	    "  -C, --catalog-server=H:P  catalog servers (default $CATALOG_HOST, localhost:9097)\n"
	    "      --password=FILE       workers must prove this password (HMAC, both ways)\n"
	    "      --ssl-cert=FILE --ssl-key=FILE  TLS for worker connections\n"
	    "      --shared-fs=DIR       files under DIR are on a file system workers share:\n"
	    "                            they are not transferred\n"
	    "  -r, --retry-count=N       retry a failed rule up to N times\n"
	    "  -R, --retry               retry failed rules (5 times)\n"
	    "  -z, --zero-length-error   an empty output counts as missing\n"
	    "  -l, --makeflow-log=FILE   transaction log (default WORKFLOW.makeflowlog)\n"
	    "  -L, --batch-log=FILE      accepted for compatibility; drivers here log through -d\n"
	    "  -c, --clean[=MODE]        remove created files: all (default), outputs, "
	    "intermediates\n"
	    "  -g, --gc=MODE             garbage collection: none, ref_cnt, on_demand, all\n"
	    "  -G, --gc-count=N          collect once N files are collectable\n"
	    "      --gc-size=SIZE        on_demand: collect while free disk is below SIZE (1G)\n"
	    "      --skip-file-check     do not check that input files exist before starting\n"
	    "  -f, --summary-log=FILE    write a JSON summary of the run to FILE\n"
	    "      --json                the workflow is JSON\n"
	    "      --jx                  the workflow is JX\n"
	    "      --jx-args=FILE        JX: symbols from FILE\n"
	    "      --jx-define=VAR=EXPR  JX: define VAR\n"
	    "      --progress=MODE       auto (default), plain, quiet\n"
	    "      --monitor=DIR         measure every rule with resource_monitor; one summary\n"
	    "                            per rule in DIR (also seeds the categories next run)\n"
	    "      --monitor-interval=S  sampling interval of the monitor in seconds\n"
	    "      --monitor-with-time-series  also keep a time series per rule\n"
	    "      --monitor-exe=PATH    the resource_monitor to use (default: beside makeflow)\n"
	    "      --allocation=MODE     size categories: fixed, max, waste (min_waste),\n"
	    "                            throughput (max_throughput); .MAKEFLOW MODE wins\n"
	    "      --allocation-seed=PATH  seed categories from summaries (file or directory)\n"
	    "  -d, --debug=SUBSYS        debug output: %s\n"
	    "  -o, --debug-file=FILE     write debug output to FILE\n"
	    "  -v, --version             show the version\n"
	    "  -h, --help                show this help\n",
	    prog, batch_queue_types(), debug_flags_help());
}

static int parse_int(const char *opt, const char *s, int min)
{
	int64_t v;
	if (str_to_int64(s, &v) < 0 || v < min || v > INT_MAX)
		fatal("option %s: '%s' is not an integer >= %d", opt, s, min);
	return (int)v;
}

static char *self_exe(const char *argv0)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n > 0) {
		buf[n] = 0;
		return xstrdup(buf);
	}
	return xstrdup(argv0);
}

int main(int argc, char **argv)
{
	struct engine_options o;
	engine_options_init(&o);
	struct workflow_source src = {0};
	const char *clean = NULL;
	char **batch_opts = NULL;
	size_t n_batch_opts = 0;
	char *log_path = NULL;

	debug_config_program(argv[0]);
	const char *env_type = getenv("MAKEFLOW_BATCH_QUEUE_TYPE");
	if (env_type && *env_type)
		o.batch_type = env_type;

	static const struct option longopts[] = {
	    {"batch-type", required_argument, 0, 'T'},
	    {"max-local", required_argument, 0, 'j'},
	    {"max-remote", required_argument, 0, 'J'},
	    {"batch-options", required_argument, 0, 'B'},
	    {"batch-option", required_argument, 0, OPT_BATCH_OPTION},
	    {"port", required_argument, 0, 'p'},
	    {"port-file", required_argument, 0, 'Z'},
	    {"project-name", required_argument, 0, 'N'},
	    {"catalog-server", required_argument, 0, 'C'},
	    {"password", required_argument, 0, OPT_PASSWORD},
	    {"ssl-cert", required_argument, 0, OPT_SSL_CERT},
	    {"ssl-key", required_argument, 0, OPT_SSL_KEY},
	    {"shared-fs", required_argument, 0, OPT_SHARED_FS},
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
	    {"monitor-interval", required_argument, 0, OPT_MONITOR_INTERVAL},
	    {"monitor-with-time-series", no_argument, 0, OPT_MONITOR_SERIES},
	    {"monitor-exe", required_argument, 0, OPT_MONITOR_EXE},
	    {"allocation", required_argument, 0, OPT_ALLOCATION},
	    {"allocation-seed", required_argument, 0, OPT_ALLOCATION_SEED},
	    {"debug", required_argument, 0, 'd'},
	    {"debug-file", required_argument, 0, 'o'},
	    {"version", no_argument, 0, 'v'},
	    {"help", no_argument, 0, 'h'},
	    WORKFLOW_LONG_OPTIONS,
	    {0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "T:j:J:B:r:Rzl:L:cg:G:f:d:o:vhp:Z:N:M:C:", longopts,
	                        NULL)) != -1) {
		switch (c) {
		case 'T': o.batch_type = optarg; break;
		case 'j': o.max_local_jobs = parse_int("-j", optarg, 1); break;
		case 'J': o.max_remote_jobs = parse_int("-J", optarg, 1); break;
		case 'B': o.batch_options = optarg; break;
		case OPT_BATCH_OPTION:
			if (!strchr(optarg, '='))
				fatal("--batch-option '%s': expected KEY=VALUE", optarg);
			batch_opts = xrealloc(batch_opts, (n_batch_opts + 2) * sizeof *batch_opts);
			batch_opts[n_batch_opts++] = xstrdup(optarg);
			batch_opts[n_batch_opts] = NULL;
			break;
		case 'p':
		case 'Z':
		case 'N':
		case 'M':
		case 'C':
		case OPT_PASSWORD:
		case OPT_SSL_CERT:
		case OPT_SSL_KEY:
		case OPT_SHARED_FS: {
			/* Work Queue options become options of the wq driver. */
			const char *key = c == 'p'             ? "port"
			                  : c == 'Z'           ? "port-file"
			                  : c == 'C'           ? "catalog"
			                  : c == OPT_PASSWORD  ? "password"
			                  : c == OPT_SSL_CERT  ? "ssl-cert"
			                  : c == OPT_SSL_KEY   ? "ssl-key"
			                  : c == OPT_SHARED_FS ? "shared-fs"
			                                       : "project";
			batch_opts = xrealloc(batch_opts, (n_batch_opts + 2) * sizeof *batch_opts);
			batch_opts[n_batch_opts++] = xasprintf("%s=%s", key, optarg);
			batch_opts[n_batch_opts] = NULL;
			break;
		}
		case 'r': o.retries = parse_int("-r", optarg, 0); break;
		case 'R': o.retries = 5; break;
		case 'z': o.zero_length_is_missing = 1; break;
		case 'l': log_path = xstrdup(optarg); break;
		case 'L':
			notice("-L %s: batch drivers here write their events to the debug log (-d "
			       "batch)",
			       optarg);
			break;
		case 'c': clean = "all"; break;
		case OPT_CLEAN: clean = optarg ? optarg : "all"; break;
		case 'g':
			if (!strcmp(optarg, "none"))
				o.gc = ENGINE_GC_NONE;
			else if (!strcmp(optarg, "ref_cnt"))
				o.gc = ENGINE_GC_REF_CNT;
			else if (!strcmp(optarg, "on_demand"))
				o.gc = ENGINE_GC_ON_DEMAND;
			else if (!strcmp(optarg, "all"))
				o.gc = ENGINE_GC_ALL;
			else
				fatal("-g %s: expected none, ref_cnt, on_demand or all", optarg);
			break;
		case 'G': o.gc_count = parse_int("-G", optarg, 1); break;
		case OPT_GC_SIZE:
			if (units_parse_bytes(optarg, &o.gc_size) < 0)
				fatal("--gc-size %s: expected a size such as 500M or 2G", optarg);
			if (o.gc == ENGINE_GC_NONE)
				o.gc = ENGINE_GC_ON_DEMAND;
			break;
		case OPT_SKIP_FILE_CHECK: o.skip_file_check = 1; break;
		case OPT_MONITOR: o.monitor_dir = optarg; break;
		case OPT_MONITOR_INTERVAL: {
			char *end = NULL;
			double v = strtod(optarg, &end);
			if (!*optarg || *end || !(v > 0) || v > 3600)
				fatal("--monitor-interval %s: expected seconds between 0 and 3600",
				      optarg);
			o.monitor_interval = v;
			break;
		}
		case OPT_MONITOR_SERIES: o.monitor_time_series = 1; break;
		case OPT_MONITOR_EXE: o.monitor_exe = optarg; break;
		case OPT_ALLOCATION: {
			enum category_mode m;
			if (category_mode_parse(optarg, &m) < 0)
				fatal("--allocation %s: expected fixed, max, waste or throughput",
				      optarg);
			o.allocation_mode = (int)m;
			break;
		}
		case OPT_ALLOCATION_SEED: o.allocation_seed = optarg; break;
		case 'f': o.summary_path = optarg; break;
		case OPT_PROGRESS:
			if (!strcmp(optarg, "auto"))
				o.progress = ENGINE_PROGRESS_AUTO;
			else if (!strcmp(optarg, "plain"))
				o.progress = ENGINE_PROGRESS_PLAIN;
			else if (!strcmp(optarg, "quiet"))
				o.progress = ENGINE_PROGRESS_QUIET;
			else
				fatal("--progress %s: expected auto, plain or quiet", optarg);
			break;
		case 'd':
			if (debug_flags_set(optarg) < 0)
				fatal("-d %s: unknown subsystem (valid: %s)", optarg,
				      debug_flags_help());
			break;
		case 'o':
			if (debug_config_file(optarg) < 0)
				fatal("-o %s: %s", optarg, strerror(errno));
			break;
		case 'v': printf("makeflow %s\n", HTC_VERSION); return 0;
		case 'h': usage(stdout, argv[0]); return 0;
		default:
			if (workflow_source_getopt(&src, c, optarg))
				break;
			usage(stderr, argv[0]);
			return 1;
		}
	}
	if (optind < argc - 1)
		fatal("expected one workflow file, got %d (see --help)", argc - optind);
	src.path = optind < argc ? argv[optind] : "Makeflow";
	if (access(src.path, R_OK) < 0)
		fatal("cannot read workflow %s: %s", src.path, strerror(errno));

	enum engine_clean_mode clean_mode = 0;
	if (clean) {
		if (!strcmp(clean, "all"))
			clean_mode = ENGINE_CLEAN_ALL;
		else if (!strcmp(clean, "outputs"))
			clean_mode = ENGINE_CLEAN_OUTPUTS;
		else if (!strcmp(clean, "intermediates"))
			clean_mode = ENGINE_CLEAN_INTERMEDIATES;
		else
			fatal("--clean=%s: expected all, outputs or intermediates", clean);
	}

	char err[2048];
	struct dag *d = workflow_load(&src, err, sizeof err);
	if (!d) {
		fprintf(stderr, "makeflow: %s\n", err);
		return 1;
	}
	if (!log_path)
		log_path = xasprintf("%s.makeflowlog", src.path);
	o.log_path = log_path;
	o.batch_opts = (const char *const *)batch_opts;
	char *exe = self_exe(argv[0]);
	o.self_exe = exe;

	int status;
	if (clean_mode)
		status = engine_clean(d, log_path, clean_mode);
	else
		status = engine_run(d, &o);

	dag_delete(d);
	free(exe);
	free(log_path);
	for (size_t i = 0; i < n_batch_opts; i++)
		free(batch_opts[i]);
	free(batch_opts);
	workflow_source_free(&src);
	debug_close();
	return status;
}
