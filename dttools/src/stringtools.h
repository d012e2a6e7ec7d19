/* stringtools.h: small string helpers used throughout the tree: prefix and
 * suffix tests, trimming, whitespace splitting, replacement, shell quoting,
 * joining, and strict number parsing. Functions that return a new string or
 * array allocate with xalloc.h, so they never return NULL for valid input. */
#ifndef HTC_STRINGTOOLS_H
#define HTC_STRINGTOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True if S begins (ends) with PREFIX (SUFFIX). An empty affix always matches. */
bool str_has_prefix(const char *s, const char *prefix);
bool str_has_suffix(const char *s, const char *suffix);

/* Removes leading and trailing whitespace (isspace) from S in place, moving
 * the remaining text to the start of S. Returns S. */
char *str_trim(char *s);

/* Splits S on runs of whitespace into a NULL-terminated array of words;
 * leading and trailing whitespace produce no empty words. If ARGC is not NULL
 * it receives the number of words. An empty or all-blank S gives an array
 * holding only NULL. Caller frees the result with str_free_argv. */
char **str_split_ws(const char *s, int *argc);
/* Frees an array returned by str_split_ws or str_dup_argv (every element,
 * then the array). NULL is accepted. */
void str_free_argv(char **argv);
/* A copy of the NULL-terminated array V and of every string in it; NULL for
 * NULL. Caller frees with str_free_argv. */
char **str_dup_argv(const char *const *v);

/* Returns a copy of S with every non-overlapping occurrence of FROM, scanned
 * left to right, replaced by TO. An empty FROM replaces nothing. Caller
 * frees. */
char *str_replace_all(const char *s, const char *from, const char *to);

/* Quotes S as one word for /bin/sh: the result is S wrapped in single quotes,
 * with each embedded single quote written as '\'' . Safe for any byte string,
 * including the empty string (gives ''). Caller frees. */
char *str_escape_shell(const char *s);

/* Joins the NULL-terminated array PARTS with SEP between neighbours. No parts
 * gives "". Caller frees. */
char *str_join(char *const *parts, const char *sep);

/* Parses the whole of S as a decimal integer (optional leading + or -). No
 * whitespace, no other bases, no trailing characters are allowed. Returns 0
 * and sets *OUT; HTC_EPARSE for anything that is not such a number (including
 * ""); HTC_ERANGE if it does not fit in int64_t. *OUT is untouched on error. */
int str_to_int64(const char *s, int64_t *out);

/* Parses the whole of S as a finite floating-point number (the strtod syntax
 * without leading whitespace; "inf" and "nan" are refused). Returns 0 and
 * sets *OUT; HTC_EPARSE for garbage, trailing characters, "" or a non-finite
 * value; HTC_ERANGE if the magnitude overflows a double. A value too small
 * to represent is accepted as the nearest representable (possibly 0). *OUT
 * is untouched on error. */
int str_to_double(const char *s, double *out);

/* The value 0..15 of the hex digit C (either case), or -1 if C is not one. */
int str_hex_digit(int c);

/* Writes the N bytes at IN as 2N lowercase hex digits and a NUL into OUT, which must hold
 * 2N + 1 bytes. */
void str_hex_encode(const void *in, size_t n, char *out);

/* Decodes HEX, which must be exactly 2N hex digits (either case), into the N bytes at OUT.
 * Returns 0, or HTC_EPARSE for another length or a non-hex character (OUT may then be
 * partly written). */
int str_hex_decode(const char *hex, void *out, size_t n);

/* A new string holding the last MAX_LINES lines of the LEN bytes at S, and at most their last
 * MAX_BYTES bytes (cut at a line start when one is in reach), trailing newlines and NUL bytes
 * dropped. NULL when nothing but newlines is left. */
char *str_tail_lines(const char *s, size_t len, int max_lines, size_t max_bytes);

#endif
