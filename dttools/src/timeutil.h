/* timeutil.h: clocks and time formatting. Wall-clock time is for stamps that
 * humans or other hosts read; monotonic time is for measuring intervals and
 * deadlines, since it never jumps when the system clock is set. Code whose
 * behaviour depends on elapsed time reads it through a replaceable clock
 * (struct htc_clock), so that its tests advance time instead of sleeping. */
#ifndef HTC_TIMEUTIL_H
#define HTC_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Buffer size that always fits time_format_iso8601 output for years 0-9999. */
#define TIME_ISO8601_SIZE 21
/* Buffer size that always fits any time_format_duration output. */
#define TIME_DURATION_SIZE 32

/* Microseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t time_now_us(void);
/* Microseconds on CLOCK_MONOTONIC: only differences are meaningful. */
int64_t time_monotonic_us(void);

/* A monotonic clock that a module reads "now" through: NOW_US(ARG) returns microseconds on a
 * scale of its own (only differences are meaningful). A module takes a `const struct htc_clock *`
 * in its options or context (borrowed: it must outlive the module); NULL means the real clock,
 * CLOCK_MONOTONIC. A test passes a clock that it advances by hand. */
struct htc_clock {
	int64_t (*now_us)(void *arg);
	void *arg;
};

/* Now on CLOCK (NULL: time_monotonic_us()). One indirect call, no extra system call. */
static inline int64_t htc_clock_now_us(const struct htc_clock *clock)
{
	return clock ? clock->now_us(clock->arg) : time_monotonic_us();
}

/* Writes the instant UNIX_US (microseconds since the epoch) as UTC ISO 8601
 * with whole seconds, "2024-03-05T07:08:09Z", into BUF (SIZE bytes). The
 * microseconds are truncated toward the earlier second. Returns 0,
 * HTC_ERANGE if the instant cannot be converted to a calendar date, or
 * HTC_ETOOBIG if BUF is too small (BUF then holds ""). */
int time_format_iso8601(int64_t unix_us, char *buf, size_t size);

/* Writes a duration of SECONDS as days, hours, minutes and seconds with the
 * leading zero units left out and the inner ones zero-padded: "45s",
 * "2m05s", "1h02m03s", "3d00h00m10s", "0s"; negative durations get a leading
 * '-'. Returns 0, or HTC_ETOOBIG if BUF (SIZE bytes) is too small (the text
 * is then truncated, still NUL-terminated when SIZE > 0). */
int time_format_duration(int64_t seconds, char *buf, size_t size);

#endif
