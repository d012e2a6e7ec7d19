/* ts_clock.c: the hand-driven clock of the tests (see ts_clock.h). Reading it is a plain load: the
 * module under test sees exactly the time the test has set. */
#include "ts_clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "banned.h"

static int64_t now_of(void *arg)
{
	return ((struct ts_clock *)arg)->now_us;
}

void ts_clock_init(struct ts_clock *c, int64_t start_us)
{
	c->clock.now_us = now_of;
	c->clock.arg = c;
	c->now_us = start_us;
}

void ts_clock_advance(struct ts_clock *c, int64_t us)
{
	assert_true(us >= 0);
	c->now_us += us;
}
