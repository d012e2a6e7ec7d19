/* makeflow_monitor_main.c: the makeflow_monitor command: shows the progress of one or more
 * workflows from their transaction logs, live while they run or after they ended
 * (doc/man/makeflow_monitor.1). */
#include <stdio.h>

#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "makeflow_monitor_opts.h"
#include "makeflow_monitor_run.h"

#include "banned.h"

int main(int argc, char **argv)
{
	debug_config_program(argv[0]);
	struct makeflow_monitor_opts o;
	char err[2048] = "";
	int r = makeflow_monitor_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r == CLI_USAGE) {
		if (err[0])
			fprintf(stderr, "makeflow_monitor: %s\n", err);
		makeflow_monitor_opts_usage(stderr, argv[0]);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "makeflow_monitor: %s\n", err);
		return 1;
	}
	r = makeflow_monitor_run(&o, stdout, err, sizeof err);
	if (r < 0) {
		fprintf(stderr, "makeflow_monitor: %s\n", err);
		return 1;
	}
	return 0;
}
