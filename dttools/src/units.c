/* units.c: strict quantity parsing and byte formatting (see units.h). The
 * number is parsed by hand into an integer part and a decimal fraction and
 * scaled with 128-bit arithmetic, so "1.5T" is exact and no float rounding
 * or locale can creep in. */
#include "units.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "htc_error.h"
#include "banned.h"

typedef unsigned __int128 u128;

#define MAX_FRACTION_DIGITS 18

struct unit {
	const char *name;
	uint64_t factor;
};

#define KI (UINT64_C(1) << 10)
#define MI (UINT64_C(1) << 20)
#define GI (UINT64_C(1) << 30)
#define TI (UINT64_C(1) << 40)
#define PI (UINT64_C(1) << 50)

static const struct unit size_units[] = {
    {"b", 1},    {"k", KI}, {"kb", KI}, {"kib", KI}, {"m", MI}, {"mb", MI},
    {"mib", MI}, {"g", GI}, {"gb", GI}, {"gib", GI}, {"t", TI}, {"tb", TI},
    {"tib", TI}, {"p", PI}, {"pb", PI}, {"pib", PI}, {NULL, 0},
};

static const struct unit time_units[] = {
    {"s", 1},          {"sec", 1},     {"secs", 1},     {"second", 1},  {"seconds", 1},
    {"m", 60},         {"min", 60},    {"mins", 60},    {"minute", 60}, {"minutes", 60},
    {"h", 3600},       {"hr", 3600},   {"hrs", 3600},   {"hour", 3600}, {"hours", 3600},
    {"d", 86400},      {"day", 86400}, {"days", 86400}, {"w", 604800},  {"week", 604800},
    {"weeks", 604800}, {NULL, 0},
};

/* Parses S into *OUT = ceil(number * unit factor / DIVISOR). A missing unit
 * means DEFAULT_FACTOR. */
static int parse_quantity(const char *s, const struct unit *units, uint64_t default_factor,
                          uint64_t divisor, int64_t *out)
{
	const char *p = s;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '-')
		return (isdigit((unsigned char)p[1]) || p[1] == '.') ? HTC_ERANGE : HTC_EPARSE;

	/* integer part */
	u128 whole = 0;
	bool digits = false;
	while (isdigit((unsigned char)*p)) {
		whole = whole * 10 + (unsigned)(*p - '0');
		if (whole > UINT64_MAX)
			return HTC_ERANGE;
		digits = true;
		p++;
	}
	/* fraction: up to MAX_FRACTION_DIGITS kept, any nonzero digit beyond
	 * them bumps the last kept one so the result still rounds up */
	uint64_t frac = 0, scale = 1;
	int kept = 0;
	bool dropped = false;
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			if (kept < MAX_FRACTION_DIGITS) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
				kept++;
			} else if (*p != '0') {
				dropped = true;
			}
			digits = true;
			p++;
		}
	}
	if (!digits)
		return HTC_EPARSE;
	if (dropped)
		frac++;

	while (isspace((unsigned char)*p))
		p++;
	const char *u = p;
	while (isalpha((unsigned char)*p))
		p++;
	size_t ulen = (size_t)(p - u);
	const char *rest = p;
	while (isspace((unsigned char)*rest))
		rest++;
	if (*rest)
		return HTC_EPARSE;

	uint64_t factor = default_factor;
	if (ulen) {
		factor = 0;
		for (const struct unit *un = units; un->name; un++) {
			if (strlen(un->name) == ulen && !strncasecmp(un->name, u, ulen)) {
				factor = un->factor;
				break;
			}
		}
		if (!factor)
			return HTC_EPARSE;
	}

	/* whole < 2^64 and factor <= 2^50, so the product fits in 128 bits;
	 * frac < scale <= 10^18, so frac * factor does too. */
	u128 total = whole * factor;
	u128 fnum = (u128)frac * factor;
	total += (fnum + scale - 1) / scale;
	total = (total + divisor - 1) / divisor;
	if (total > INT64_MAX)
		return HTC_ERANGE;
	*out = (int64_t)total;
	return 0;
}

int units_parse_mb(const char *s, int64_t *mb)
{
	return parse_quantity(s, size_units, MI, MI, mb);
}

int units_parse_bytes(const char *s, int64_t *bytes)
{
	return parse_quantity(s, size_units, 1, 1, bytes);
}

int units_parse_seconds(const char *s, int64_t *seconds)
{
	return parse_quantity(s, time_units, 1, 1, seconds);
}

int units_format_bytes(int64_t bytes, char *buf, size_t size)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (bytes < 0) {
		if (size)
			buf[0] = 0;
		return HTC_ERANGE;
	}
	int n;
	if (bytes < 1024) {
		n = snprintf(buf, size, "%lld B", (long long)bytes);
	} else {
		/* tenths of the chosen unit, rounded to nearest, computed exactly */
		int i = 1;
		while (i < 6 && (uint64_t)bytes >= (UINT64_C(1) << (10 * (i + 1))))
			i++;
		u128 unit = (u128)1 << (10 * i);
		u128 tenths = ((u128)bytes * 10 + unit / 2) / unit;
		if (tenths >= 10240 && i < 6) {
			/* rounding reached the next unit (e.g. 1023.96 KiB) */
			i++;
			unit <<= 10;
			tenths = ((u128)bytes * 10 + unit / 2) / unit;
		}
		unsigned long long t = (unsigned long long)tenths;
		if (t % 10)
			n = snprintf(buf, size, "%llu.%llu %s", t / 10, t % 10, names[i]);
		else
			n = snprintf(buf, size, "%llu %s", t / 10, names[i]);
	}
	if (n < 0 || (size_t)n >= size)
		return HTC_ETOOBIG;
	return 0;
}
