/* jx_lex.c: the JX tokenizer. It turns NUL-terminated text into tokens with
 * line and column, decodes JSON string escapes into validated UTF-8, and
 * skips whitespace and '#' comments. */
#include "jx_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "vec.h"
#include "banned.h"

void jx_lex_init(struct jx_lexer *lx, const char *text, const char *file, struct jx_error *err)
{
	lx->p = text;
	lx->line = 1;
	lx->column = 1;
	lx->file = file;
	lx->err = err;
}

const char *jx_tok_name(enum jx_tok type)
{
	switch (type) {
	case JXT_EOF: return "end of input";
	case JXT_INT: return "integer";
	case JXT_FLOAT: return "number";
	case JXT_STRING: return "string";
	case JXT_IDENT: return "identifier";
	case JXT_NULL: return "'null'";
	case JXT_TRUE: return "'true'";
	case JXT_FALSE: return "'false'";
	case JXT_AND: return "'and'";
	case JXT_OR: return "'or'";
	case JXT_NOT: return "'not'";
	case JXT_FOR: return "'for'";
	case JXT_IN: return "'in'";
	case JXT_IF: return "'if'";
	case JXT_LBRACKET: return "'['";
	case JXT_RBRACKET: return "']'";
	case JXT_LBRACE: return "'{'";
	case JXT_RBRACE: return "'}'";
	case JXT_LPAREN: return "'('";
	case JXT_RPAREN: return "')'";
	case JXT_COMMA: return "','";
	case JXT_COLON: return "':'";
	case JXT_QUESTION: return "'?'";
	case JXT_PLUS: return "'+'";
	case JXT_MINUS: return "'-'";
	case JXT_STAR: return "'*'";
	case JXT_SLASH: return "'/'";
	case JXT_PERCENT: return "'%'";
	case JXT_EQ: return "'=='";
	case JXT_NE: return "'!='";
	case JXT_LT: return "'<'";
	case JXT_LE: return "'<='";
	case JXT_GT: return "'>'";
	case JXT_GE: return "'>='";
	}
	return "token";
}

static int lex_fail(struct jx_lexer *lx, int line, int column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int lex_fail(struct jx_lexer *lx, int line, int column, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	jx_error_vset(lx->err, lx->file, line, column, fmt, ap);
	va_end(ap);
	return -1;
}

/* Consumes one byte, keeping line and column. */
static void advance(struct jx_lexer *lx)
{
	if (*lx->p == '\n') {
		lx->line++;
		lx->column = 1;
	} else {
		lx->column++;
	}
	lx->p++;
}

static int is_ident_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_ident_char(int c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* A growing byte buffer for decoded strings. */
struct sbuf {
	char *s;
	size_t len, cap;
};

static void sbuf_put(struct sbuf *b, const char *data, size_t n)
{
	VEC_RESERVE(b->s, b->cap, b->len + n + 1);
	memcpy(b->s + b->len, data, n);
	b->len += n;
	b->s[b->len] = 0;
}

static void put_utf8(struct sbuf *b, unsigned cp)
{
	char out[4];
	size_t n;
	if (cp < 0x80) {
		out[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		out[0] = (char)(0xF0 | (cp >> 18));
		out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	sbuf_put(b, out, n);
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p)
{
	unsigned c = p[0];
	if (c < 0x80)
		return 1;
	size_t n;
	unsigned cp;
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/* Reads 4 hex digits after "\u". Returns the value or -1. */
static int read_hex4(const char *p)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		int c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static int lex_string(struct jx_lexer *lx, struct jx_token *tok)
{
	struct sbuf b = {0};
	advance(lx); /* opening quote */
	for (;;) {
		unsigned char c = (unsigned char)*lx->p;
		if (c == 0 || c == '\n') {
			free(b.s);
			return lex_fail(lx, tok->line, tok->column, "unterminated string");
		}
		if (c == '"') {
			advance(lx);
			break;
		}
		if (c < 0x20 && c != '\t') {
			free(b.s);
			return lex_fail(lx, lx->line, lx->column,
			                "control character 0x%02x in string (use an escape)", c);
		}
		if (c >= 0x80) {
			size_t n = utf8_seq((const unsigned char *)lx->p);
			if (!n) {
				free(b.s);
				return lex_fail(lx, lx->line, lx->column,
				                "invalid UTF-8 in string");
			}
			sbuf_put(&b, lx->p, n);
			lx->p += n;
			lx->column++;
			continue;
		}
		if (c != '\\') {
			sbuf_put(&b, lx->p, 1);
			advance(lx);
			continue;
		}
		int eline = lx->line, ecol = lx->column;
		advance(lx);
		char e = *lx->p;
		const char *simple = NULL;
		switch (e) {
		case '"': simple = "\""; break;
		case '\\': simple = "\\"; break;
		case '/': simple = "/"; break;
		case 'b': simple = "\b"; break;
		case 'f': simple = "\f"; break;
		case 'n': simple = "\n"; break;
		case 'r': simple = "\r"; break;
		case 't': simple = "\t"; break;
		case 'u': break;
		default:
			free(b.s);
			if (e == 0 || e == '\n')
				return lex_fail(lx, tok->line, tok->column, "unterminated string");
			return lex_fail(lx, eline, ecol, "invalid escape in string");
		}
		if (simple) {
			sbuf_put(&b, simple, 1);
			advance(lx);
			continue;
		}
		advance(lx); /* 'u' */
		int cp = read_hex4(lx->p);
		if (cp < 0) {
			free(b.s);
			return lex_fail(lx, eline, ecol, "invalid \\u escape (needs 4 hex digits)");
		}
		for (int i = 0; i < 4; i++)
			advance(lx);
		unsigned code = (unsigned)cp;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			int lo = (lx->p[0] == '\\' && lx->p[1] == 'u') ? read_hex4(lx->p + 2) : -1;
			if (lo < 0xDC00 || lo > 0xDFFF) {
				free(b.s);
				return lex_fail(lx, eline, ecol,
				                "unpaired surrogate in \\u escape");
			}
			for (int i = 0; i < 6; i++)
				advance(lx);
			code = 0x10000 + (((unsigned)cp - 0xD800) << 10) + ((unsigned)lo - 0xDC00);
		} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
			free(b.s);
			return lex_fail(lx, eline, ecol, "unpaired surrogate in \\u escape");
		} else if (cp == 0) {
			free(b.s);
			return lex_fail(lx, eline, ecol, "\\u0000 is not allowed in strings");
		}
		put_utf8(&b, code);
	}
	if (!b.s)
		b.s = xstrdup("");
	tok->type = JXT_STRING;
	tok->text = b.s;
	tok->len = b.len;
	return 0;
}

static int lex_number(struct jx_lexer *lx, struct jx_token *tok)
{
	const char *start = lx->p;
	const char *q = lx->p;
	int is_float = 0;
	if (q[0] == '0' && is_digit(q[1]))
		return lex_fail(lx, tok->line, tok->column, "leading zeros are not allowed");
	while (is_digit(*q))
		q++;
	if (*q == '.') {
		if (!is_digit(q[1]))
			return lex_fail(lx, tok->line, tok->column, "digit expected after '.'");
		is_float = 1;
		q++;
		while (is_digit(*q))
			q++;
	}
	if (*q == 'e' || *q == 'E') {
		const char *x = q + 1;
		if (*x == '+' || *x == '-')
			x++;
		if (!is_digit(*x))
			return lex_fail(lx, tok->line, tok->column, "digit expected in exponent");
		is_float = 1;
		q = x;
		while (is_digit(*q))
			q++;
	}
	if (is_ident_char(*q) || *q == '.')
		return lex_fail(lx, tok->line, tok->column, "invalid number");
	size_t n = (size_t)(q - start);
	if (is_float) {
		char *text = xstrndup(start, n);
		errno = 0;
		double d = strtod(text, NULL);
		free(text);
		if (errno == ERANGE && (d > 1.0 || d < -1.0))
			return lex_fail(lx, tok->line, tok->column, "number out of range");
		tok->type = JXT_FLOAT;
		tok->fval = d;
	} else {
		uint64_t v = 0;
		for (const char *d = start; d < q; d++) {
			uint64_t digit = (uint64_t)(*d - '0');
			if (v > (UINT64_C(1) << 63) / 10 || v * 10 + digit > (UINT64_C(1) << 63))
				return lex_fail(lx, tok->line, tok->column, "integer out of range");
			v = v * 10 + digit;
		}
		tok->type = JXT_INT;
		tok->ival = v;
	}
	for (size_t i = 0; i < n; i++)
		advance(lx);
	return 0;
}

static const struct {
	const char *word;
	enum jx_tok type;
} keywords[] = {
    {"null", JXT_NULL}, {"true", JXT_TRUE}, {"false", JXT_FALSE}, {"and", JXT_AND}, {"or", JXT_OR},
    {"not", JXT_NOT},   {"for", JXT_FOR},   {"in", JXT_IN},       {"if", JXT_IF},
};

/* Skips whitespace and comments. */
static void skip_space(struct jx_lexer *lx)
{
	for (;;) {
		char c = *lx->p;
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			advance(lx);
		} else if (c == '#') {
			while (*lx->p && *lx->p != '\n')
				lx->p++;
		} else {
			return;
		}
	}
}

int jx_lex_next(struct jx_lexer *lx, struct jx_token *tok)
{
	skip_space(lx);
	tok->text = NULL;
	tok->len = 0;
	tok->line = lx->line;
	tok->column = lx->column;
	char c = *lx->p;
	char c1 = c ? lx->p[1] : 0;
	if (c == 0) {
		tok->type = JXT_EOF;
		return 0;
	}
	if (c == '"')
		return lex_string(lx, tok);
	if (is_digit(c))
		return lex_number(lx, tok);
	if (is_ident_start(c)) {
		const char *start = lx->p;
		while (is_ident_char(*lx->p))
			advance(lx);
		size_t n = (size_t)(lx->p - start);
		for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
			if (strlen(keywords[i].word) == n && !memcmp(keywords[i].word, start, n)) {
				tok->type = keywords[i].type;
				return 0;
			}
		}
		tok->type = JXT_IDENT;
		tok->text = xstrndup(start, n);
		tok->len = n;
		return 0;
	}
	int two = 0;
	switch (c) {
	case '[': tok->type = JXT_LBRACKET; break;
	case ']': tok->type = JXT_RBRACKET; break;
	case '{': tok->type = JXT_LBRACE; break;
	case '}': tok->type = JXT_RBRACE; break;
	case '(': tok->type = JXT_LPAREN; break;
	case ')': tok->type = JXT_RPAREN; break;
	case ',': tok->type = JXT_COMMA; break;
	case ':': tok->type = JXT_COLON; break;
	case '?': tok->type = JXT_QUESTION; break;
	case '+': tok->type = JXT_PLUS; break;
	case '-': tok->type = JXT_MINUS; break;
	case '*': tok->type = JXT_STAR; break;
	case '/': tok->type = JXT_SLASH; break;
	case '%': tok->type = JXT_PERCENT; break;
	case '<':
		two = c1 == '=';
		tok->type = two ? JXT_LE : JXT_LT;
		break;
	case '>':
		two = c1 == '=';
		tok->type = two ? JXT_GE : JXT_GT;
		break;
	case '!':
		two = c1 == '=';
		tok->type = two ? JXT_NE : JXT_NOT;
		break;
	case '=':
		if (c1 != '=')
			return lex_fail(lx, tok->line, tok->column,
			                "unexpected '=' (comparison is '==')");
		two = 1;
		tok->type = JXT_EQ;
		break;
	case '&':
		if (c1 != '&')
			return lex_fail(lx, tok->line, tok->column, "unexpected '&' (use '&&')");
		two = 1;
		tok->type = JXT_AND;
		break;
	case '|':
		if (c1 != '|')
			return lex_fail(lx, tok->line, tok->column, "unexpected '|' (use '||')");
		two = 1;
		tok->type = JXT_OR;
		break;
	default:
		if (c == '\'')
			return lex_fail(lx, tok->line, tok->column,
			                "strings are written in double quotes");
		if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7F)
			return lex_fail(lx, tok->line, tok->column, "unexpected character '%c'", c);
		return lex_fail(lx, tok->line, tok->column, "unexpected byte 0x%02x",
		                (unsigned char)c);
	}
	advance(lx);
	if (two)
		advance(lx);
	return 0;
}
