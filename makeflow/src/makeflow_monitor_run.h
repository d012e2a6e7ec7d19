/* makeflow_monitor_run.h: the work of makeflow_monitor: read the transaction logs it was given
 * every interval (a libuv timer: no busy polling), and show each workflow's progress until
 * every one has ended (-H), once (--once), or until it is interrupted. */
#ifndef MAKEFLOW_MONITOR_RUN_H
#define MAKEFLOW_MONITOR_RUN_H

#include <stddef.h>
#include <stdio.h>

#include "makeflow_monitor_opts.h"

/* Watches the logs of O, writing to OUT (the screen is cleared before each view when OUT is a
 * terminal; otherwise a view is written only when a log changed). Returns 0 when done, or a
 * negative code with a one-line message in ERR (a log that cannot be read or is not ours). */
int makeflow_monitor_run(const struct makeflow_monitor_opts *o, FILE *out, char *err,
                         size_t errlen);

#endif
