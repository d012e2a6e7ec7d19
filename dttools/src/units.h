/* units.h: parsing and printing of resource quantities as users write them
 * in workflows and on command lines: memory and disk sizes ("2G", "512MiB")
 * and durations ("90", "1.5h", "2d"). Parsing is strict: any text that is not
 * exactly a number with an optional known unit is refused. */
#ifndef HTC_UNITS_H
#define HTC_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Grammar shared by the parsers: optional surrounding whitespace, a
 * non-negative decimal number (digits with an optional fraction: "2", "1.5",
 * ".5", "3."; no sign, exponent, hex, inf or nan), optional whitespace, then
 * an optional unit, case-insensitive.
 *
 * Size units are binary whatever their spelling: B = 1 byte; K, KB, KiB =
 * 1024; M, MB, MiB = 1024^2; G, GB, GiB = 1024^3; T, TB, TiB = 1024^4; P,
 * PB, PiB = 1024^5.
 *
 * Errors: HTC_EPARSE for empty text, garbage, an unknown unit or trailing
 * characters; HTC_ERANGE for a negative number or a result that does not fit
 * in int64_t. The output is untouched on error. */

/* Parses a size in MB (mebibytes); a plain number is MB. The result is
 * rounded up to a whole MB: "2G" = 2048, "1.5T" = 1572864, "1K" = 1. */
int units_parse_mb(const char *s, int64_t *mb);

/* Parses a size in bytes; a plain number is bytes. Fractions are rounded up
 * to a whole byte: "10K" = 10240, "1.5G" = 1610612736. */
int units_parse_bytes(const char *s, int64_t *bytes);

/* Parses a duration in seconds; a plain number is seconds. Units: s, sec,
 * secs, second, seconds; m, min, mins, minute, minutes; h, hr, hrs, hour,
 * hours; d, day, days; w, week, weeks. Fractions are rounded up to a whole
 * second: "1.5h" = 5400, "0.2s" = 1. */
int units_parse_seconds(const char *s, int64_t *seconds);

/* Writes BYTES in human-readable binary units into BUF (SIZE bytes, always
 * NUL-terminated when SIZE > 0): "512 B", "10 KiB", "1.5 GiB" (one decimal,
 * omitted when it is zero; rounded to the nearest tenth). 24 bytes always
 * suffice. Returns 0, HTC_ERANGE for negative BYTES, or HTC_ETOOBIG if BUF
 * is too small (the text is then truncated). */
int units_format_bytes(int64_t bytes, char *buf, size_t size);

#endif
