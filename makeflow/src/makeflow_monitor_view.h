/* makeflow_monitor_view.h: the text makeflow_monitor shows for one workflow: its log, status
 * (a progress bar, or how it ended), start, elapsed time and time left, rules per minute, the
 * rules in each state and the rules that failed. */
#ifndef MAKEFLOW_MONITOR_VIEW_H
#define MAKEFLOW_MONITOR_VIEW_H

#include <stdint.h>
#include <stdio.h>

#include "txlog_read.h"

/* The fraction of the latest run's rules that are complete (1 when it has none). */
double makeflow_monitor_fraction(const struct txlog_reader *rd);

/* Writes the block of the log NAME, read by RD, to OUT as of NOW_US (microseconds since the
 * epoch): a blank line, then one "Field: value" line per item. */
void makeflow_monitor_view(FILE *out, const char *name, const struct txlog_reader *rd,
                           int64_t now_us);

/* Writes SECONDS as HH:MM:SS (D:HH:MM:SS past a day; "N/A" when negative) into BUF. */
void makeflow_monitor_duration(double seconds, char *buf, size_t len);

#endif
