/* rmon_app.h: what the resource_monitor program does once its options are parsed: it runs the
 * command under librmonitor (or attaches to a process, rmon_attach.h), passes the signals it
 * receives on to the task, and writes the summary, the time series and the list of opened
 * files. See doc/resource-monitor.md. */
#ifndef HTC_RMON_APP_H
#define HTC_RMON_APP_H

#include <stddef.h>

#include "resource_monitor_opts.h"

/* Exit statuses of the program (doc/resource-monitor.md). */
enum {
	RMON_APP_EXIT_OK = 0,
	RMON_APP_EXIT_COMMAND_FAILED = 1,
	RMON_APP_EXIT_LIMITS = 2,
	RMON_APP_EXIT_WALL_TIME = 3,
	RMON_APP_EXIT_MONITOR_ERROR = 4,
};

/* Runs what O says on the default libuv loop until the task has ended, and writes its outputs.
 * Returns the program's exit status (128 + N when the monitor received signal N), or a
 * negative code with a message in ERR when the task could not be started (the program prints
 * it and exits with status 4). An output that cannot be written at the end is reported on
 * stderr and gives status 4. */
int rmon_app_run(const struct resource_monitor_opts *o, char *err, size_t errlen);

#endif
