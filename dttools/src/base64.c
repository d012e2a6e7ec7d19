/* base64.c: base64 decoding (base64.h). */
#include "base64.h"

#include <stdlib.h>

#include "xalloc.h"
#include "banned.h"

static int value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

char *base64_decode(const char *s, size_t n, size_t *len)
{
	char *out = xmalloc(n / 4 * 3 + 4);
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0, pad = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		int v = value(c);
		if (v < 0 || pad) { /* not base64, or data after the padding */
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	if (pad > 2 || bits >= 6) { /* too much padding, or one character left over */
		free(out);
		return NULL;
	}
	out[o] = 0;
	if (len)
		*len = o;
	return out;
}
