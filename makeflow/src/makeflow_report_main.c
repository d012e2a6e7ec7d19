/* makeflow_report_main.c: the makeflow_report command: writes the HTML report of a finished or
 * running workflow from its transaction log and --monitor directory
 * (doc/makeflow-report.md, doc/man/makeflow_report.1). */
#include <stdio.h>

#include "cli.h"
#include "debug.h"
#include "makeflow_report_opts.h"
#include "report_html.h"

#include "banned.h"

int main(int argc, char **argv)
{
	debug_config_program(argv[0]);
	struct makeflow_report_opts o;
	char err[2048] = "";
	int r = makeflow_report_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r == CLI_USAGE) {
		if (err[0])
			fprintf(stderr, "makeflow_report: %s\n", err);
		makeflow_report_opts_usage(stderr, argv[0]);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "makeflow_report: %s\n", err);
		return 1;
	}
	struct report_input in = {
	    .log = o.log,
	    .monitor_dir = o.monitor_dir,
	    .workflow = o.workflow,
	    .failed_dir = o.failed_dir,
	    .src_template = o.src_given ? &o.src : NULL,
	};
	struct report_html_opts ho = {.use_dot = !o.no_dot};
	r = report_write_file(&in, &ho, o.output, err, sizeof err);
	if (r < 0)
		fprintf(stderr, "makeflow_report: %s\n", err);
	makeflow_report_opts_clear(&o);
	debug_close();
	return r < 0 ? 1 : 0;
}
