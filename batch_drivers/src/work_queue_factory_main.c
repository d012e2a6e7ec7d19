/* work_queue_factory_main.c: the work_queue_factory program. It keeps Work Queue workers running
 * on a batch system (the batch drivers of this project; -T local here) for one master (HOST PORT)
 * or for the masters of a project (-M, through the catalog): every period it reads the demand
 * (tasks waiting and running), starts the workers it lacks within --min-workers/--max-workers
 * and --workers-per-cycle, and lets idle workers leave by their own idle timeout. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "batch_queue.h"
#include "catalog_client.h"
#include "catalog_filter.h"
#include "cli.h"
#include "config.h"
#include "debug.h"
#include "htc_error.h"
#include "stringtools.h"
#include "units.h"
#include "wq_auth.h"
#include "wq_factory.h"
#include "status_client.h"
#include "xalloc.h"

#include "banned.h"

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "Usage: %s [options] HOST PORT     workers for one master\n"
	        "       %s [options] -M PROJECT    workers for the masters of a project\n"
	        "\n"
	        "  -T, --batch-type=TYPE      where workers run (default local; %s)\n"
	        "  -C, --catalog=H:P[,...]    catalog servers (default $CATALOG_HOST, "
	        "localhost:9097)\n"
	        "  -w, --min-workers=N        keep at least N workers (default 0)\n"
	        "  -W, --max-workers=N        run at most N workers (default 10)\n"
	        "      --workers-per-cycle=N  start at most N workers per period (default 5)\n"
	        "      --cores=N --memory=MB --disk=MB --gpus=N  the size of each worker\n"
	        "  -t, --timeout=T            workers leave after T idle (default 300 s)\n"
	        "  -P, --password=FILE        the master's password (given to the workers too)\n"
	        "      --worker-binary=PATH   the worker to run (default: beside this program)\n"
	        "      --period=SECONDS       how often to look at the demand (default 5)\n"
	        "      --batch-option=K=V     an option of the batch driver (repeatable)\n"
	        "  -d, --debug=SUBSYS  -o, --debug-file=FILE  -v, --version  -h, --help\n",
	        prog, prog, batch_queue_types());
}

struct factory {
	uv_loop_t *loop;
	struct batch_queue *q;
	struct wq_factory_limits limits;
	const char *host;
	int port;
	const char *project;
	const char *catalog;
	const char *password;
	struct wq_auth_key *key;
	char *worker_cmd; /* the command of every worker job */
	double period;
	uv_timer_t timer;
	uv_signal_t sigint, sigterm;
	int running; /* worker jobs submitted and not ended */
	int busy;    /* a demand query is under way */
	int stopping;
	int64_t started;  /* workers started in all */
	char *last_error; /* the last demand error logged, so a repeated one is logged once */
};

/* Logs a demand error once until it changes or a query succeeds. */
static void demand_error(struct factory *f, const char *fmt, const char *a, const char *b)
{
	char *e = xasprintf(fmt, a, b);
	if (!f->last_error || strcmp(e, f->last_error)) {
		warn("%s", e);
		free(f->last_error);
		f->last_error = e;
	} else {
		debug(D_FACTORY, "%s", e);
		free(e);
	}
}

static void demand_ok(struct factory *f)
{
	if (f->last_error)
		notice("the demand can be read again");
	free(f->last_error);
	f->last_error = NULL;
}

static void start_workers(struct factory *f, const struct wq_factory_demand *d)
{
	int n = wq_factory_to_start(&f->limits, d, f->running);
	debug(D_FACTORY,
	      "demand: %lld waiting, %lld running, %lld workers connected; %d of ours running; "
	      "starting %d",
	      (long long)d->tasks_waiting, (long long)d->tasks_running,
	      (long long)d->workers_connected, f->running, n);
	for (int i = 0; i < n; i++) {
		struct batch_job_spec spec = {0};
		spec.command = f->worker_cmd;
		spec.resources = (struct batch_resources){-1, -1, -1, -1, -1};
		spec.tag = "work_queue_worker";
		int64_t id = batch_queue_submit(f->q, &spec);
		if (id < 0) {
			warn("cannot start a worker: %s", htc_strerror((int)id));
			return;
		}
		f->running++;
		f->started++;
	}
	if (n > 0)
		notice("started %d worker%s (%d running)", n, n == 1 ? "" : "s", f->running);
}

static void on_status(json_t *items, const char *err, void *arg)
{
	struct factory *f = arg;
	f->busy = 0;
	if (f->stopping) {
		json_decref(items);
		return;
	}
	if (!items) {
		char where[300];
		snprintf(where, sizeof where, "%s:%d", f->host, f->port);
		demand_error(f, "master %s: %s", where, err);
		/* No demand is known; the minimum is still kept. */
		struct wq_factory_demand none = {0};
		start_workers(f, &none);
		return;
	}
	demand_ok(f);
	struct wq_factory_demand d = {0};
	wq_factory_add_status(&d, json_array_get(items, 0));
	json_decref(items);
	start_workers(f, &d);
}

static void on_catalog(void *arg, json_t *records, const char *err)
{
	struct factory *f = arg;
	f->busy = 0;
	if (f->stopping) {
		json_decref(records);
		return;
	}
	struct wq_factory_demand d = {0};
	if (!records) {
		demand_error(f, "catalog%s: %s", "", err ? err : "no answer");
	} else {
		demand_ok(f);
		size_t i;
		json_t *r;
		json_array_foreach(records, i, r) wq_factory_add_status(&d, r);
		json_decref(records);
	}
	start_workers(f, &d);
}

static void cycle(uv_timer_t *t)
{
	struct factory *f = t->data;
	if (f->busy || f->stopping)
		return;
	f->busy = 1;
	char *err = NULL;
	if (f->project) {
		struct catalog_filter *flt = catalog_filter_create();
		catalog_filter_add(flt, "type", "wq_master", &err);
		catalog_filter_add(flt, "project", f->project, &err);
		if (!catalog_query_start(f->loop, f->catalog, flt, f->period, on_catalog, f,
		                         &err)) {
			warn("catalog: %s", err ? err : "cannot query");
			f->busy = 0;
		}
		catalog_filter_delete(flt);
	} else {
		struct wq_status_opts o = {.key = f->key, .timeout_s = f->period};
		if (!wq_status_query_start(f->loop, f->host, f->port, "master", &o, on_status, f,
		                           &err)) {
			warn("master %s:%d: %s", f->host, f->port, err ? err : "cannot query");
			f->busy = 0;
		}
	}
	free(err);
}

static void on_job_done(struct batch_queue *q, int64_t id, const struct batch_result *r, void *arg)
{
	(void)q;
	struct factory *f = arg;
	f->running--;
	if (r->error)
		warn("worker job %lld: %s", (long long)id, r->error);
	else if (!r->removed && !(r->exited_normally && r->exit_code == 0))
		notice("worker job %lld ended with %s %d", (long long)id,
		       r->exited_normally ? "status" : "signal",
		       r->exited_normally ? r->exit_code : r->signal);
	if (f->stopping && f->running == 0)
		uv_stop(f->loop);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct factory *f = s->data;
	notice("signal %d: stopping %d worker%s", signum, f->running, f->running == 1 ? "" : "s");
	f->stopping = 1;
	uv_timer_stop(&f->timer);
	if (f->running == 0 || batch_queue_remove_all(f->q) <= 0)
		uv_stop(f->loop);
}

/* The command line of each worker. */
static char *worker_command(const char *binary, const struct factory *f, const char *size,
                            int64_t timeout)
{
	char *bin = str_escape_shell(binary);
	char *where;
	if (f->project) {
		char *p = str_escape_shell(f->project);
		char *c = f->catalog ? str_escape_shell(f->catalog) : NULL;
		where = xasprintf("-M %s%s%s", p, c ? " -C " : "", c ? c : "");
		free(p);
		free(c);
	} else {
		char *h = str_escape_shell(f->host);
		where = xasprintf("%s %d", h, f->port);
		free(h);
	}
	char *pw = NULL;
	if (f->password) {
		char *abs = f->password[0] == '/' ? xstrdup(f->password) : NULL;
		if (!abs) {
			char cwd[4096];
			if (!getcwd(cwd, sizeof cwd))
				fatal("cannot read the current directory: %s", strerror(errno));
			abs = xasprintf("%s/%s", cwd, f->password);
		}
		char *q = str_escape_shell(abs);
		pw = xasprintf(" -P %s", q);
		free(q);
		free(abs);
	}
	char *cmd =
	    xasprintf("exec %s%s -t %lld%s %s", bin, size, (long long)timeout, pw ? pw : "", where);
	free(bin);
	free(where);
	free(pw);
	return cmd;
}

static int64_t int_arg(const char *opt, const char *v, int64_t min, int64_t max)
{
	int64_t n;
	if (str_to_int64(v, &n) < 0 || n < min || n > max)
		fatal("%s %s: expected an integer in %lld..%lld", opt, v, (long long)min,
		      (long long)max);
	return n;
}

int main(int argc, char **argv)
{
	struct factory f = {0};
	f.limits = (struct wq_factory_limits){
	    .min_workers = 0, .max_workers = 10, .workers_per_cycle = 5, .worker_cores = 1};
	f.period = 5;
	const char *type = "local", *binary = NULL;
	int64_t timeout = 300;
	char size[256] = "";
	size_t sl = 0;
	const char **bopts = NULL;
	size_t nbopts = 0;
	debug_config_program("work_queue_factory");
	enum {
		OPT_PER_CYCLE = 256,
		OPT_CORES,
		OPT_MEMORY,
		OPT_DISK,
		OPT_GPUS,
		OPT_BINARY,
		OPT_PERIOD,
		OPT_BATCH_OPTION
	};
	static const struct option longopts[] = {
	    {"batch-type", required_argument, 0, 'T'},
	    {"master-name", required_argument, 0, 'M'},
	    {"catalog", required_argument, 0, 'C'},
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
	    {"debug", required_argument, 0, 'd'},
	    {"debug-file", required_argument, 0, 'o'},
	    {"version", no_argument, 0, 'v'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+:T:M:C:w:W:t:P:d:o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'T': type = optarg; break;
		case 'M': f.project = optarg; break;
		case 'C': f.catalog = optarg; break;
		case 'w':
			f.limits.min_workers = (int)int_arg("--min-workers", optarg, 0, 100000);
			break;
		case 'W':
			f.limits.max_workers = (int)int_arg("--max-workers", optarg, 1, 100000);
			break;
		case OPT_PER_CYCLE:
			f.limits.workers_per_cycle =
			    (int)int_arg("--workers-per-cycle", optarg, 1, 10000);
			break;
		case OPT_CORES: {
			double d;
			if (str_to_double(optarg, &d) < 0 || d <= 0 || d > 1e6)
				fatal("--cores %s: expected a number above 0", optarg);
			f.limits.worker_cores = d;
			sl += (size_t)snprintf(size + sl, sizeof size - sl, " --cores %g", d);
			break;
		}
		case OPT_MEMORY:
		case OPT_DISK: {
			int64_t mb;
			if (units_parse_mb(optarg, &mb) < 0)
				fatal("%s %s: expected a size (e.g. 4000, 4G)",
				      c == OPT_MEMORY ? "--memory" : "--disk", optarg);
			sl += (size_t)snprintf(size + sl, sizeof size - sl, " --%s %lld",
			                       c == OPT_MEMORY ? "memory" : "disk", (long long)mb);
			break;
		}
		case OPT_GPUS:
			sl += (size_t)snprintf(size + sl, sizeof size - sl, " --gpus %lld",
			                       (long long)int_arg("--gpus", optarg, 0, 1024));
			break;
		case 't':
			if (units_parse_seconds(optarg, &timeout) < 0 || timeout < 1)
				fatal("-t %s: expected a duration above 0 (e.g. 300, 5m)", optarg);
			break;
		case 'P': f.password = optarg; break;
		case OPT_BINARY: binary = optarg; break;
		case OPT_PERIOD:
			if (str_to_double(optarg, &f.period) < 0 || f.period < 0.1 ||
			    f.period > 3600)
				fatal("--period %s: expected seconds in 0.1..3600", optarg);
			break;
		case OPT_BATCH_OPTION:
			if (!strchr(optarg, '='))
				fatal("--batch-option %s: expected KEY=VALUE", optarg);
			bopts = xrealloc(bopts, (nbopts + 1) * sizeof *bopts);
			bopts[nbopts++] = optarg;
			break;
		default: {
			char err[256];
			int r = cli_common_option(c, argv, "work_queue_factory", usage, err,
			                          sizeof err);
			if (r == CLI_EXIT)
				return 0;
			if (r == CLI_FAIL)
				fatal("%s", err);
			break;
		}
		}
	}
	int rest = argc - optind;
	if (f.project && rest > 0)
		fatal("give either -M PROJECT or HOST PORT, not both");
	if (!f.project) {
		if (rest != 2)
			fatal("expected HOST PORT or -M PROJECT (see --help)");
		f.host = argv[optind];
		f.port = (int)int_arg("PORT", argv[optind + 1], 1, 65535);
	}
	if (f.limits.min_workers > f.limits.max_workers)
		fatal("--min-workers %d is above --max-workers %d", f.limits.min_workers,
		      f.limits.max_workers);
	if (f.password) {
		char *why = NULL;
		f.key = wq_auth_key_load(f.password, &why);
		if (!f.key)
			fatal("%s", why ? why : "cannot read the password file");
	}
	char *own = NULL;
	if (!binary) {
		/* work_queue_worker beside this program, else from PATH */
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		if (n > 0) {
			self[n] = 0;
			char *slash = strrchr(self, '/');
			if (slash) {
				*slash = 0;
				own = xasprintf("%s/work_queue_worker", self);
				if (access(own, X_OK) == 0)
					binary = own;
			}
		}
		if (!binary)
			binary = "work_queue_worker";
	}
	f.worker_cmd = worker_command(binary, &f, size, timeout);

	f.loop = uv_default_loop();
	f.q = batch_queue_create(f.loop, type, on_job_done, &f);
	if (!f.q)
		fatal("-T %s: unknown batch type (known: %s)", type, batch_queue_types());
	for (size_t i = 0; i < nbopts; i++) {
		char *k = xstrndup(bopts[i], (size_t)(strchr(bopts[i], '=') - bopts[i]));
		if (batch_queue_set_option(f.q, k, strchr(bopts[i], '=') + 1) < 0)
			fatal("--batch-option %s: the %s batch type does not accept it", bopts[i],
			      type);
		free(k);
	}
	notice("keeping %d..%d workers for %s%s%s%s, every %g s: %s", f.limits.min_workers,
	       f.limits.max_workers, f.project ? "project " : "", f.project ? f.project : f.host,
	       f.project ? "" : ":", f.project ? "" : argv[optind + 1], f.period, f.worker_cmd);
	uv_timer_init(f.loop, &f.timer);
	f.timer.data = &f;
	uv_timer_start(&f.timer, cycle, 0, (uint64_t)(f.period * 1000));
	uv_signal_init(f.loop, &f.sigint);
	uv_signal_init(f.loop, &f.sigterm);
	f.sigint.data = f.sigterm.data = &f;
	uv_signal_start(&f.sigint, on_signal, SIGINT);
	uv_signal_start(&f.sigterm, on_signal, SIGTERM);
	uv_run(f.loop, UV_RUN_DEFAULT);

	notice("stopped; %lld worker%s started in all", (long long)f.started,
	       f.started == 1 ? "" : "s");
	batch_queue_delete(f.q);
	uv_close((uv_handle_t *)&f.timer, NULL);
	uv_close((uv_handle_t *)&f.sigint, NULL);
	uv_close((uv_handle_t *)&f.sigterm, NULL);
	uv_run(f.loop, UV_RUN_NOWAIT);
	wq_auth_key_delete(f.key);
	free(f.worker_cmd);
	free(f.last_error);
	free(own);
	free(bopts);
	return 0;
}
