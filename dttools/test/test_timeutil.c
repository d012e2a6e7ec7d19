/* test_timeutil.c: unit tests for clocks and time formatting (timeutil.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <time.h>

#include "htc_error.h"
#include "timeutil.h"
#include "ts_clock.h"
#include "banned.h"

static void test_clocks(void **state)
{
	(void)state;
	int64_t now = time_now_us();
	int64_t t = (int64_t)time(NULL);
	assert_true(now / 1000000 >= t - 1 && now / 1000000 <= t + 1);
	int64_t a = time_monotonic_us();
	struct timespec ts = {0, 20 * 1000 * 1000};
	nanosleep(&ts, NULL);
	int64_t b = time_monotonic_us();
	assert_true(b - a >= 20000);
	assert_true(b - a < 5 * 1000000);
}

/* A module reads the clock it was given, or the real monotonic one without. */
static void test_htc_clock(void **state)
{
	(void)state;
	int64_t a = htc_clock_now_us(NULL);
	int64_t b = time_monotonic_us();
	assert_true(b >= a);
	struct ts_clock c;
	ts_clock_init(&c, 5000000);
	assert_int_equal(htc_clock_now_us(&c.clock), 5000000);
	assert_int_equal(htc_clock_now_us(&c.clock), 5000000); /* stands still */
	ts_clock_advance(&c, 1500);
	assert_int_equal(htc_clock_now_us(&c.clock), 5001500);
}

static void test_iso8601(void **state)
{
	(void)state;
	char buf[TIME_ISO8601_SIZE];
	assert_int_equal(time_format_iso8601(0, buf, sizeof buf), 0);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	assert_int_equal(
	    time_format_iso8601(INT64_C(1709622489) * 1000000 + 999999, buf, sizeof buf), 0);
	assert_string_equal(buf, "2024-03-05T07:08:09Z");
	/* before the epoch: truncated toward the earlier second */
	assert_int_equal(time_format_iso8601(-1, buf, sizeof buf), 0);
	assert_string_equal(buf, "1969-12-31T23:59:59Z");
	assert_int_equal(time_format_iso8601(-1000000, buf, sizeof buf), 0);
	assert_string_equal(buf, "1969-12-31T23:59:59Z");
	assert_int_equal(time_format_iso8601(INT64_C(951782400) * 1000000, buf, sizeof buf), 0);
	assert_string_equal(buf, "2000-02-29T00:00:00Z");

	char small[20];
	assert_int_equal(time_format_iso8601(0, small, sizeof small), HTC_ETOOBIG);
	assert_string_equal(small, "");
	assert_int_equal(time_format_iso8601(INT64_C(300000000000) * 1000000, buf, sizeof buf),
	                 HTC_ERANGE);
	/* the current time formats */
	assert_int_equal(time_format_iso8601(time_now_us(), buf, sizeof buf), 0);
	assert_int_equal(strlen(buf), 20);
}

static void check_dur(int64_t s, const char *want)
{
	char buf[TIME_DURATION_SIZE];
	assert_int_equal(time_format_duration(s, buf, sizeof buf), 0);
	assert_string_equal(buf, want);
}

static void test_duration(void **state)
{
	(void)state;
	check_dur(0, "0s");
	check_dur(45, "45s");
	check_dur(60, "1m00s");
	check_dur(125, "2m05s");
	check_dur(3723, "1h02m03s");
	check_dur(3600, "1h00m00s");
	check_dur(86400 * 3 + 10, "3d00h00m10s");
	check_dur(-3723, "-1h02m03s");
	check_dur(INT64_MAX, "106751991167300d15h30m07s");
	check_dur(INT64_MIN, "-106751991167300d15h30m08s");
	char small[5];
	assert_int_equal(time_format_duration(3723, small, sizeof small), HTC_ETOOBIG);
	assert_string_equal(small, "1h02");
	assert_int_equal(time_format_duration(1, small, 0), HTC_ETOOBIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clocks),
	    cmocka_unit_test(test_htc_clock),
	    cmocka_unit_test(test_iso8601),
	    cmocka_unit_test(test_duration),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
