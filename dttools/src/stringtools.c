/* stringtools.c: string helpers (see stringtools.h). Everything is built on
 * bounded copies; new strings are assembled with the capped buffer. */
#include "stringtools.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "htc_error.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

bool str_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return m <= n && memcmp(s + n - m, suffix, m) == 0;
}

char *str_trim(char *s)
{
	size_t start = 0, end = strlen(s);
	while (start < end && isspace((unsigned char)s[start]))
		start++;
	while (end > start && isspace((unsigned char)s[end - 1]))
		end--;
	if (start)
		memmove(s, s + start, end - start);
	s[end - start] = 0;
	return s;
}

char **str_split_ws(const char *s, int *argc)
{
	size_t n = 0, alloc = 4;
	char **argv = xmalloc(alloc * sizeof *argv);
	const char *p = s;
	for (;;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		const char *start = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		VEC_RESERVE(argv, alloc, n + 2);
		argv[n++] = xstrndup(start, (size_t)(p - start));
	}
	argv[n] = NULL;
	if (argc)
		*argc = (int)n;
	return argv;
}

void str_free_argv(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

char **str_dup_argv(const char *const *v)
{
	if (!v)
		return NULL;
	size_t n = 0;
	while (v[n])
		n++;
	char **c = xcalloc(n + 1, sizeof *c);
	for (size_t i = 0; i < n; i++)
		c[i] = xstrdup(v[i]);
	return c;
}

char *str_replace_all(const char *s, const char *from, const char *to)
{
	size_t flen = strlen(from);
	if (flen == 0)
		return xstrdup(s);
	struct buffer b;
	buffer_init(&b, 0);
	const char *p = s, *hit;
	while ((hit = strstr(p, from))) {
		buffer_putlstring(&b, p, (size_t)(hit - p));
		buffer_putstring(&b, to);
		p = hit + flen;
	}
	buffer_putstring(&b, p);
	return buffer_steal(&b, NULL);
}

char *str_escape_shell(const char *s)
{
	struct buffer b;
	buffer_init(&b, 0);
	buffer_putc(&b, '\'');
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			buffer_putstring(&b, "'\\''");
		else
			buffer_putc(&b, *p);
	}
	buffer_putc(&b, '\'');
	return buffer_steal(&b, NULL);
}

char *str_join(char *const *parts, const char *sep)
{
	struct buffer b;
	buffer_init(&b, 0);
	for (size_t i = 0; parts[i]; i++) {
		if (i)
			buffer_putstring(&b, sep);
		buffer_putstring(&b, parts[i]);
	}
	return buffer_steal(&b, NULL);
}

int str_to_int64(const char *s, int64_t *out)
{
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return HTC_EPARSE;
	for (const char *q = p; *q; q++)
		if (!isdigit((unsigned char)*q))
			return HTC_EPARSE;
	errno = 0;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return HTC_ERANGE;
	if (*end)
		return HTC_EPARSE;
	*out = (int64_t)v;
	return 0;
}

int str_to_double(const char *s, double *out)
{
	if (!*s || isspace((unsigned char)*s))
		return HTC_EPARSE;
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end)
		return HTC_EPARSE;
	if (isnan(v) || (isinf(v) && errno != ERANGE))
		return HTC_EPARSE;
	if (errno == ERANGE && isinf(v))
		return HTC_ERANGE;
	*out = v;
	return 0;
}

int str_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void str_hex_encode(const void *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = in;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = 0;
}

int str_hex_decode(const char *hex, void *out, size_t n)
{
	unsigned char *p = out;
	if (!hex || strlen(hex) != 2 * n)
		return HTC_EPARSE;
	for (size_t i = 0; i < n; i++) {
		int hi = str_hex_digit((unsigned char)hex[2 * i]);
		int lo = str_hex_digit((unsigned char)hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return HTC_EPARSE;
		p[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

char *str_tail_lines(const char *s, size_t len, int max_lines, size_t max_bytes)
{
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == 0))
		len--;
	if (len == 0 || max_lines <= 0 || max_bytes == 0)
		return NULL;
	size_t start = len > max_bytes ? len - max_bytes : 0;
	int lines = 0;
	size_t cut = start;
	for (size_t p = len; p > start; p--)
		if (s[p - 1] == '\n' && ++lines == max_lines) {
			cut = p;
			break;
		}
	if (cut == start && start > 0) {
		/* the byte limit fell inside a line: begin at the next line when there is one */
		const char *nl = memchr(s + start, '\n', len - start);
		if (nl)
			cut = (size_t)(nl - s) + 1;
	}
	char *out = xmalloc(len - cut + 1);
	size_t k = 0;
	for (size_t i = cut; i < len; i++)
		if (s[i]) /* a NUL inside output would end the string early */
			out[k++] = s[i];
	out[k] = 0;
	return out;
}
