/* ts_clock.h: a clock that a test advances by hand, for the modules that read "now" through a
 * struct htc_clock (timeutil.h): time passes only when the test says so, so a test of a rate
 * limit, a freshness window or a time limit runs at once and never depends on the machine's load.
 */
#ifndef HTC_TS_CLOCK_H
#define HTC_TS_CLOCK_H

#include <stdint.h>

#include "timeutil.h"

struct ts_clock {
	struct htc_clock clock; /* give &c->clock to the module under test */
	int64_t now_us;
};

/* Starts C at START_US microseconds. */
void ts_clock_init(struct ts_clock *c, int64_t start_us);
/* Moves C forward by US microseconds (>= 0). */
void ts_clock_advance(struct ts_clock *c, int64_t us);

#endif
