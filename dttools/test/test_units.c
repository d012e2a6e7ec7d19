/* test_units.c: unit tests for quantity parsing and formatting (units.h),
 * with every unit spelling, rounding, overflow, and a list of garbage that
 * must be refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "htc_error.h"
#include "units.h"
#include "banned.h"

static void check_mb(const char *s, int64_t want)
{
	int64_t v = -1;
	int r = units_parse_mb(s, &v);
	if (r != 0 || v != want)
		fail_msg("units_parse_mb(\"%s\") = %d, %lld; want %lld", s, r, (long long)v,
		         (long long)want);
}

static void check_bytes(const char *s, int64_t want)
{
	int64_t v = -1;
	int r = units_parse_bytes(s, &v);
	if (r != 0 || v != want)
		fail_msg("units_parse_bytes(\"%s\") = %d, %lld; want %lld", s, r, (long long)v,
		         (long long)want);
}

static void check_secs(const char *s, int64_t want)
{
	int64_t v = -1;
	int r = units_parse_seconds(s, &v);
	if (r != 0 || v != want)
		fail_msg("units_parse_seconds(\"%s\") = %d, %lld; want %lld", s, r, (long long)v,
		         (long long)want);
}

static void test_parse_mb(void **state)
{
	(void)state;
	check_mb("2G", 2048);
	check_mb("512M", 512);
	check_mb("1.5T", 1572864);
	check_mb("100", 100);
	check_mb("0", 0);
	check_mb("2g", 2048);
	check_mb("2GB", 2048);
	check_mb("2gib", 2048);
	check_mb("2GiB", 2048);
	check_mb("512MB", 512);
	check_mb("512mib", 512);
	check_mb("1TB", 1048576);
	check_mb("1tib", 1048576);
	check_mb("1P", 1073741824);
	check_mb("1024K", 1);
	check_mb("1025K", 2);
	check_mb("1K", 1);
	check_mb("1kb", 1);
	check_mb("1KiB", 1);
	check_mb("1B", 1);
	check_mb("0.5", 1);
	check_mb("0.5G", 512);
	check_mb("1.0001M", 2);
	check_mb(" 4 G ", 4096);
	check_mb("3.", 3);
	check_mb(".5G", 512);
	check_mb("000012", 12);
	check_mb("9223372036854775807", INT64_MAX);
}

static void test_parse_bytes(void **state)
{
	(void)state;
	check_bytes("10K", 10240);
	check_bytes("1.5G", 1610612736);
	check_bytes("100", 100);
	check_bytes("100B", 100);
	check_bytes("1M", 1048576);
	check_bytes("1mb", 1048576);
	check_bytes("1T", INT64_C(1099511627776));
	check_bytes("0.5", 1);
	check_bytes("0.1K", 103);
	check_bytes("1.000000000000000000001", 2);
	check_bytes("8191P", INT64_C(8191) << 50);
	check_bytes("9223372036854775807", INT64_MAX);
}

static void test_parse_seconds(void **state)
{
	(void)state;
	check_secs("90", 90);
	check_secs("1h", 3600);
	check_secs("30m", 1800);
	check_secs("2d", 172800);
	check_secs("1.5h", 5400);
	check_secs("45s", 45);
	check_secs("1w", 604800);
	check_secs("2 minutes", 120);
	check_secs("1 HOUR", 3600);
	check_secs("3 days", 259200);
	check_secs("10sec", 10);
	check_secs("0.2s", 1);
	check_secs("0", 0);
}

static void check_error(int (*fn)(const char *, int64_t *), const char *s, int want)
{
	int64_t v = 12345;
	int r = fn(s, &v);
	if (r != want)
		fail_msg("parse(\"%s\") = %d, want %d", s, r, want);
	assert_int_equal(v, 12345);
}

static void test_garbage(void **state)
{
	(void)state;
	const char *garbage[] = {
	    "",     "   ",   "G",       "abc",    "12X", "12 GB extra", "1.2.3", "1e3",
	    "0x10", "inf",   "nan",     ".",      "+5",  "5GG",         "5 G B", "1,5G",
	    "G5",   "5\x01", "2G\n\t!", "5 mega", "--5", "-",           "- 5",   "1..5",
	};
	for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
		check_error(units_parse_mb, garbage[i], HTC_EPARSE);
		check_error(units_parse_bytes, garbage[i], HTC_EPARSE);
		check_error(units_parse_seconds, garbage[i], HTC_EPARSE);
	}
	/* units of the wrong kind */
	check_error(units_parse_mb, "5h", HTC_EPARSE);
	check_error(units_parse_mb, "5min", HTC_EPARSE);
	check_error(units_parse_seconds, "5G", HTC_EPARSE);
	check_error(units_parse_seconds, "5ms", HTC_EPARSE);
	check_error(units_parse_bytes, "5 bits", HTC_EPARSE);
}

static void test_range(void **state)
{
	(void)state;
	check_error(units_parse_mb, "-1", HTC_ERANGE);
	check_error(units_parse_mb, "-1G", HTC_ERANGE);
	check_error(units_parse_bytes, "-0.5", HTC_ERANGE);
	check_error(units_parse_seconds, "-5s", HTC_ERANGE);
	check_error(units_parse_bytes, "9223372036854775808", HTC_ERANGE);
	check_error(units_parse_bytes, "8192P", HTC_ERANGE);
	check_error(units_parse_bytes, "9000000000000000000000000000", HTC_ERANGE);
	check_error(units_parse_mb, "9223372036854775808", HTC_ERANGE);
	check_error(units_parse_mb, "18446744073709551615P", HTC_ERANGE);
	check_error(units_parse_seconds, "18446744073709551615w", HTC_ERANGE);
	check_error(units_parse_seconds, "99999999999999999999", HTC_ERANGE);
}

static void check_fmt(int64_t bytes, const char *want)
{
	char buf[32];
	assert_int_equal(units_format_bytes(bytes, buf, sizeof buf), 0);
	assert_string_equal(buf, want);
}

static void test_format(void **state)
{
	(void)state;
	check_fmt(0, "0 B");
	check_fmt(512, "512 B");
	check_fmt(1023, "1023 B");
	check_fmt(1024, "1 KiB");
	check_fmt(10240, "10 KiB");
	check_fmt(1536, "1.5 KiB");
	check_fmt(1048576, "1 MiB");
	check_fmt(1048535, "1 MiB");
	check_fmt(1610612736, "1.5 GiB");
	check_fmt(INT64_C(1099511627776), "1 TiB");
	check_fmt(INT64_C(1) << 50, "1 PiB");
	check_fmt(INT64_MAX, "8 EiB");

	char buf[24];
	assert_int_equal(units_format_bytes(INT64_MAX - 1, buf, sizeof buf), 0);
	assert_int_equal(units_format_bytes(-1, buf, sizeof buf), HTC_ERANGE);
	char small[4];
	assert_int_equal(units_format_bytes(1610612736, small, sizeof small), HTC_ETOOBIG);
	assert_int_equal(strlen(small), 3);
	assert_int_equal(units_format_bytes(5, small, 0), HTC_ETOOBIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_mb),      cmocka_unit_test(test_parse_bytes),
	    cmocka_unit_test(test_parse_seconds), cmocka_unit_test(test_garbage),
	    cmocka_unit_test(test_range),         cmocka_unit_test(test_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
