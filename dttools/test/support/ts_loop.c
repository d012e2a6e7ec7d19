/* ts_loop.c: the loop runner of the tests (see ts_loop.h). Between two non-blocking iterations it
 * waits on the loop's backend descriptor (epoll), so that it sleeps until an event, the loop's
 * next timer or TS_TICK_MS, whichever comes first, without adding a handle of its own. */
#include "ts_loop.h"

#include <poll.h>
#include <time.h>

#include "banned.h"

uint64_t ts_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One iteration: sleeps until the loop has something to do (or TS_TICK_MS), then runs it. */
static void step(uv_loop_t *loop, uint64_t left_ms)
{
	int timeout = uv_backend_timeout(loop);
	if (timeout < 0 || timeout > TS_TICK_MS)
		timeout = TS_TICK_MS;
	if ((uint64_t)timeout > left_ms)
		timeout = (int)left_ms;
	struct pollfd p = {.fd = uv_backend_fd(loop), .events = POLLIN};
	if (timeout > 0)
		poll(&p, 1, timeout);
	uv_run(loop, UV_RUN_NOWAIT);
}

bool ts_run_until(uv_loop_t *loop, bool (*done)(void *arg), void *arg, uint64_t timeout_ms)
{
	uint64_t deadline = ts_now_ms() + timeout_ms;
	while (!done(arg)) {
		uint64_t now = ts_now_ms();
		if (now >= deadline)
			break;
		step(loop, deadline - now);
	}
	return done(arg);
}

bool ts_poll_until(bool (*done)(void *arg), void *arg, uint64_t timeout_ms)
{
	uint64_t deadline = ts_now_ms() + timeout_ms;
	while (!done(arg) && ts_now_ms() < deadline) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return done(arg);
}

void ts_run_for(uv_loop_t *loop, uint64_t ms)
{
	uint64_t deadline = ts_now_ms() + ms;
	for (uint64_t now = ts_now_ms(); now < deadline; now = ts_now_ms())
		step(loop, deadline - now);
}
