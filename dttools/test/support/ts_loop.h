/* ts_loop.h: running a libuv loop in a test until a condition holds, never for a fixed time: the
 * loop is run one iteration at a time and woken at least every TS_TICK_MS, so a condition that
 * depends on other processes or on the file system is checked even on an idle loop, and a bound
 * (generous: only a failing test reaches it) stops a test that would otherwise hang. */
#ifndef HTC_TS_LOOP_H
#define HTC_TS_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#define TS_TICK_MS 10    /* the longest the loop sleeps between two checks of the condition */
#define TS_WAIT_MS 30000 /* the usual bound of a wait: reached only by a failing test */

/* Runs LOOP until DONE(ARG) returns true or TIMEOUT_MS milliseconds have passed; returns DONE(ARG)
 * (checked once more at the end). DONE is checked before the first iteration and after each. No
 * handle is added to LOOP: the loop's backend is polled for at most TS_TICK_MS between
 * iterations. Use it as assert_true(ts_run_until(loop, cond, arg, TS_WAIT_MS)). */
bool ts_run_until(uv_loop_t *loop, bool (*done)(void *arg), void *arg, uint64_t timeout_ms);

/* Runs LOOP for MS milliseconds, for the checks that something does NOT happen meanwhile. */
void ts_run_for(uv_loop_t *loop, uint64_t ms);

/* For a condition that no loop drives (another process, the kernel, a thread): checks DONE(ARG)
 * every millisecond until it is true or TIMEOUT_MS have passed; returns DONE(ARG). */
bool ts_poll_until(bool (*done)(void *arg), void *arg, uint64_t timeout_ms);

/* Milliseconds on the monotonic clock (for tests that measure how long something took). */
uint64_t ts_now_ms(void);

#endif
