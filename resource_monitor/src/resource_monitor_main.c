/* resource_monitor_main.c: the resource_monitor program. It runs one command (or attaches to
 * a running process with --pid), measures its whole process tree through librmonitor, enforces
 * the limits it is given, and writes a JSON summary (and optionally a time series and the list
 * of opened files) when the command ends. See doc/resource-monitor.md. */
#include <signal.h>
#include <stdio.h>

#include "cli.h"
#include "debug.h"
#include "resource_monitor_opts.h"
#include "rmon_app.h"

#include "banned.h"

int main(int argc, char **argv)
{
	debug_config_program(argv[0]);
	signal(SIGPIPE, SIG_IGN);

	struct resource_monitor_opts o;
	char err[1024] = "";
	int r = resource_monitor_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r < 0) {
		fprintf(stderr, "resource_monitor: %s\n", err);
		return RMON_APP_EXIT_MONITOR_ERROR;
	}
	int status = rmon_app_run(&o, err, sizeof err);
	if (status < 0) {
		fprintf(stderr, "resource_monitor: %s\n", err);
		status = RMON_APP_EXIT_MONITOR_ERROR;
	}
	resource_monitor_opts_clear(&o);
	debug_close();
	return status;
}
