/* makeflow_main.c: the makeflow command: parses options (makeflow_opts), loads the workflow
 * (checking it completely before anything runs), then either cleans, or runs it with the
 * engine. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "debug.h"
#include "engine.h"
#include "makeflow_opts.h"
#include "makeflow_opts_compat.h"
#include "report_html.h"
#include "workflow_load.h"
#include "xalloc.h"

#include "banned.h"

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

/* --report FILE: the run report, from the log the run just wrote (doc/makeflow-report.md);
 * REFRESH_S > 0 while the run goes. */
static int write_report(const struct makeflow_opts *o, struct dag *d, int refresh_s)
{
	char err[2048];
	struct report_input in = {
	    .log = o->log_path,
	    .monitor_dir = o->engine.monitor_dir,
	    .dag = d, /* the workflow as this run read it (also after -X) */
	};
	struct report_html_opts ho = {.use_dot = 1, .refresh_s = refresh_s};
	if (report_write_file(&in, &ho, o->report_path, err, sizeof err) < 0) {
		fprintf(stderr, "makeflow: --report: %s\n", err);
		return -1;
	}
	return 0;
}

struct refresh_ctx {
	const struct makeflow_opts *o;
	struct dag *d;
	int failed; /* a failed refresh is said once */
};

/* The report rewritten while the run goes: its page reloads itself as often. */
static void refresh_report(void *arg)
{
	struct refresh_ctx *c = arg;
	char err[2048];
	struct report_input in = {
	    .log = c->o->log_path, .monitor_dir = c->o->engine.monitor_dir, .dag = c->d};
	struct report_html_opts ho = {.use_dot = 1, .refresh_s = c->o->engine.report_interval_s};
	if (report_write_file(&in, &ho, c->o->report_path, err, sizeof err) < 0 && !c->failed) {
		fprintf(stderr, "makeflow: --report: %s (tried again at the end)\n", err);
		c->failed = 1;
	}
}

int main(int argc, char **argv)
{
	debug_config_program(argv[0]);
	/* a closed pipe must not kill makeflow before it has stopped its rules: its stderr is its
	 * parent's pipe when it runs nested (the parent may be gone), and Work Queue's sockets */
	signal(SIGPIPE, SIG_IGN);
	struct makeflow_opts o;
	char err[2048] = "";
	int r = makeflow_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r == CLI_USAGE) {
		makeflow_opts_usage(stderr, argv[0]);
		return 1;
	}
	if (r < 0)
		fatal("%s", err);

	makeflow_opts_warn(&o);
	int status = 1;
	char *exe = NULL;
	struct dag *d = workflow_load(&o.src, err, sizeof err);
	if (!d) {
		fprintf(stderr, "makeflow: %s\n", err);
	} else if (o.change_dir && chdir(o.change_dir) < 0) {
		/* -X: the workflow is read from here; its log, files and rules are in DIR */
		fprintf(stderr, "makeflow: -X %s: %s\n", o.change_dir, strerror(errno));
	} else if (o.clean || makeflow_opts_write_local_port_file(&o) == 0) {
		exe = self_exe(argv[0]);
		o.engine.self_exe = exe;
		if (o.clean) {
			status = o.clean == ENGINE_CLEAN_CACHE
			             ? 0
			             : engine_clean(d, o.log_path, o.clean, o.engine.self_exe,
			                            o.engine.batch_type, o.engine.batch_opts);
			if (engine_clean_mounts(&o.engine, o.src.path) < 0)
				status = 1;
		} else {
			struct refresh_ctx rc = {.o = &o, .d = d};
			if (o.report_path) {
				o.engine.report_refresh = refresh_report;
				o.engine.report_refresh_arg = &rc;
			}
			status = engine_run(d, &o.engine);
			if (o.report_path && write_report(&o, d, 0) < 0 && status == 0)
				status = 1;
		}
	}

	dag_delete(d);
	free(exe);
	makeflow_opts_clear(&o);
	debug_close();
	return status;
}
