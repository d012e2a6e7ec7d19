/* timeutil.c: clock reads and time formatting (see timeutil.h). */
#include "timeutil.h"

#include <stdio.h>
#include <time.h>

#include "htc_error.h"
#include "banned.h"

static int64_t clock_us(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t time_now_us(void)
{
	return clock_us(CLOCK_REALTIME);
}

int64_t time_monotonic_us(void)
{
	return clock_us(CLOCK_MONOTONIC);
}

int time_format_iso8601(int64_t unix_us, char *buf, size_t size)
{
	if (size)
		buf[0] = 0;
	int64_t secs = unix_us / 1000000;
	if (unix_us % 1000000 < 0)
		secs--;
	time_t t = (time_t)secs;
	struct tm tm;
	if (!gmtime_r(&t, &tm))
		return HTC_ERANGE;
	if (tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
		return HTC_ERANGE;
	if (size < TIME_ISO8601_SIZE)
		return HTC_ETOOBIG;
	if (strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
		buf[0] = 0;
		return HTC_ETOOBIG;
	}
	return 0;
}

int time_format_duration(int64_t seconds, char *buf, size_t size)
{
	const char *sign = "";
	uint64_t s = (uint64_t)seconds;
	if (seconds < 0) {
		sign = "-";
		s = -(uint64_t)seconds;
	}
	unsigned long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
	int n;
	if (d)
		n = snprintf(buf, size, "%s%llud%02lluh%02llum%02llus", sign, d, h, m, sec);
	else if (h)
		n = snprintf(buf, size, "%s%lluh%02llum%02llus", sign, h, m, sec);
	else if (m)
		n = snprintf(buf, size, "%s%llum%02llus", sign, m, sec);
	else
		n = snprintf(buf, size, "%s%llus", sign, sec);
	if (n < 0 || (size_t)n >= size)
		return HTC_ETOOBIG;
	return 0;
}
