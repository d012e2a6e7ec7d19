/* parser_lex.c: the character level of the Makeflow language: a streaming
 * reader that yields logical lines (comments cut, backslash-newline joined,
 * quotes checked), variable substitution with depth and size caps, and the
 * splitting of file lists into names. Statement handling is in parser.c. */
#include "parser_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "units.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

int perr(struct parser *p, int line, const char *fmt, ...)
{
	if (p->failed)
		return -1;
	p->failed = 1;
	if (!p->err || p->errlen == 0)
		return -1;
	int off = snprintf(p->err, p->errlen, "%s:%d: ", p->dag->filename, line);
	if (off < 0 || (size_t)off >= p->errlen)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err + off, p->errlen - (size_t)off, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the memory budget ---------------------------------------------- */

static int over_budget(struct parser *p, int line)
{
	char size[32];
	units_format_bytes((int64_t)p->budget, size, sizeof size);
	return perr(p, line,
	            "parsing needs more than the memory budget of %s (lines, expansions and "
	            "the rules built so far count; raise it with --parse-memory or "
	            "MAKEFLOW_PARSE_MEMORY)",
	            size);
}

int parser_budget(struct parser *p, int line, uint64_t extra)
{
	uint64_t used =
	    p->held + buffer_len(&p->phys) + buffer_len(&p->logic) + buffer_len(&p->tmp) + extra;
	if (used <= p->budget)
		return 0;
	return over_budget(p, line);
}

int parser_charge(struct parser *p, int line, uint64_t n)
{
	p->held += n;
	return parser_budget(p, line, 0);
}

/* ---- physical lines ------------------------------------------------- */

static int too_long(struct parser *p, int line)
{
	if (!p->line_capped)
		return over_budget(p, line);
	return perr(p, line, "line longer than %zu bytes", p->max_line);
}

/* Refills the block buffer from the file. Returns bytes read, 0 at end, -1
 * on error. */
static ssize_t refill(struct parser *p)
{
	if (!p->fp)
		return 0;
	if (!p->rbuf)
		p->rbuf = xmalloc(PARSER_READ_BLOCK);
	size_t n = fread(p->rbuf, 1, PARSER_READ_BLOCK, p->fp);
	if (n == 0 && ferror(p->fp))
		return perr(p, p->phys_line + 1, "read error: %s", strerror(errno));
	p->data = p->rbuf;
	p->data_len = n;
	p->data_pos = 0;
	return (ssize_t)n;
}

/* Reads one physical line into p->phys. Returns 1, 0 at end, -1 on error. */
static int read_phys(struct parser *p)
{
	buffer_clear(&p->phys);
	if (p->eof)
		return 0;
	int got = 0;
	for (;;) {
		if (p->data_pos >= p->data_len) {
			ssize_t r = refill(p);
			if (r < 0)
				return -1;
			if (r == 0) {
				p->eof = 1;
				if (!got)
					return 0;
				break;
			}
		}
		const char *s = p->data + p->data_pos;
		size_t avail = p->data_len - p->data_pos;
		const char *nl = memchr(s, '\n', avail);
		size_t n = nl ? (size_t)(nl - s) : avail;
		got = 1;
		if (memchr(s, 0, n))
			return perr(p, p->phys_line + 1, "NUL byte in the workflow");
		if (buffer_putlstring(&p->phys, s, n) != 0)
			return too_long(p, p->phys_line + 1);
		if (parser_budget(p, p->phys_line + 1, 0) < 0)
			return -1;
		p->data_pos += n + (nl ? 1 : 0);
		if (nl)
			break;
	}
	p->phys_line++;
	size_t len = buffer_len(&p->phys);
	if (len && buffer_tostring(&p->phys)[len - 1] == '\r')
		buffer_rewind(&p->phys, len - 1);
	return 1;
}

static int is_blank(const char *s)
{
	for (; *s; s++)
		if (!isspace((unsigned char)*s))
			return 0;
	return 1;
}

int parser_read_line(struct parser *p)
{
	for (;;) {
		int r = read_phys(p);
		if (r <= 0)
			return r;
		buffer_clear(&p->logic);
		p->line = p->phys_line;
		p->lead = buffer_tostring(&p->phys)[0];
		char quote = 0;
		int first = 1;
		for (;;) {
			const char *s = buffer_tostring(&p->phys);
			size_t len = buffer_len(&p->phys), start = 0, end = len;
			int cont = 0;
			if (!first) /* a continuation line: its indentation goes */
				while (start < len && isspace((unsigned char)s[start]))
					start++;
			for (size_t i = start; i < len; i++) {
				char c = s[i];
				if (c == '\\' && i + 1 == len) {
					cont = 1;
					end = i;
					break;
				}
				if (quote == '\'') {
					if (c == '\'')
						quote = 0;
				} else if (c == '\\') {
					i++;
				} else if (quote == '"') {
					if (c == '"')
						quote = 0;
				} else if (c == '\'' || c == '"') {
					quote = c;
				} else if (c == '#') {
					end = i; /* the comment ends at this newline */
					break;
				}
			}
			if (cont) /* the joint becomes one space */
				while (end > start && isspace((unsigned char)s[end - 1]))
					end--;
			if (buffer_putlstring(&p->logic, s + start, end - start) != 0 ||
			    (cont && buffer_putc(&p->logic, ' ') != 0))
				return too_long(p, p->line);
			if (parser_budget(p, p->line, 0) < 0)
				return -1;
			if (!cont)
				break;
			first = 0;
			r = read_phys(p);
			if (r < 0)
				return -1;
			if (r == 0)
				break;
		}
		if (quote)
			return perr(p, p->line, "unterminated %s quote",
			            quote == '"' ? "double" : "single");
		if (!is_blank(buffer_tostring(&p->logic)))
			return 1;
	}
}

/* ---- substitution ----------------------------------------------------- */

int parser_is_name(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	return 1;
}

static char control_char(char e)
{
	switch (e) {
	case 'n': return '\n';
	case 't': return '\t';
	case 'r': return '\r';
	case 'a': return '\a';
	case 'b': return '\b';
	case 'f': return '\f';
	case 'v': return '\v';
	default: return e;
	}
}

int parser_too_big(struct parser *p, int line)
{
	if (!p->expansion_capped)
		return over_budget(p, line);
	return perr(p, line, "expansion longer than %zu bytes", p->max_expansion);
}

/* Handles the '$' at S[*I]; advances *I past the reference. */
static int substitute(struct parser *p, const char *s, size_t n, size_t *i, struct buffer *out,
                      int line, int depth)
{
	size_t at = *i + 1;
	char open = at < n ? s[at] : 0;
	const char *name;
	size_t namelen;
	struct buffer nested;
	buffer_init(&nested, p->max_expansion);
	int rc = -1;
	if (open == '(' || open == '{') {
		char close = open == '(' ? ')' : '}';
		int level = 1;
		size_t j = at + 1;
		for (; j < n; j++) {
			if (s[j] == open)
				level++;
			else if (s[j] == close && --level == 0)
				break;
		}
		if (j >= n) {
			perr(p, line, "unterminated variable reference '$%c'", open);
			goto out;
		}
		name = s + at + 1;
		namelen = j - at - 1;
		*i = j + 1;
		if (memchr(name, '$', namelen)) {
			if (depth + 1 > p->max_depth) {
				perr(p, line, "variable substitution nested deeper than %d",
				     p->max_depth);
				goto out;
			}
			if (parser_expand(p, name, namelen, &nested, XMODE_COMMAND, line,
			                  depth + 1) < 0)
				goto out;
			name = buffer_tostring(&nested);
			namelen = buffer_len(&nested);
		}
		if (namelen == 0) {
			perr(p, line, "empty variable name in '$%c%c'", open, close);
			goto out;
		}
		if (!parser_is_name(name, namelen)) {
			int show = namelen > 60 ? 60 : (int)namelen;
			perr(p, line,
			     "bad variable name '%.*s' (use `...` for shell command "
			     "substitution)",
			     show, name);
			goto out;
		}
	} else if (isalpha((unsigned char)open) || open == '_') {
		size_t j = at;
		while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_'))
			j++;
		name = s + at;
		namelen = j - at;
		*i = j;
	} else if (open == '@' || open == '<' || open == '^') {
		/* make's automatic variables: silently empty in the shell */
		perr(p, line,
		     "'$%c' is a make automatic variable, which the Makeflow language does not "
		     "have: write the file names (\\$%c hands '$%c' to the shell)",
		     open, open, open);
		goto out;
	} else { /* a lone '$' stays */
		*i = at;
		rc = buffer_putc(out, '$') == 0 ? 0 : parser_too_big(p, line);
		goto out;
	}
	char *key = xstrndup(name, namelen);
	const char *value = parser_lookup(p, key, p->use_env);
	if (!value) {
		perr(p, line, "undefined variable '%s'", key);
		free(key);
		goto out;
	}
	free(key);
	size_t vlen = strlen(value);
	/* the text about to be copied, and a nested buffer if OUT is one */
	if (parser_budget(p, line, vlen + (out == &p->tmp ? 0 : buffer_len(out))) < 0)
		goto out;
	p->expanded_total += vlen;
	if (p->expanded_total > p->expanded_cap) {
		perr(p, line, "variable substitutions exceed %llu bytes in total",
		     (unsigned long long)p->expanded_cap);
		goto out;
	}
	if (buffer_putlstring(out, value, vlen) != 0) {
		parser_too_big(p, line);
		goto out;
	}
	rc = 0;
out:
	buffer_free(&nested);
	return rc;
}

int parser_expand(struct parser *p, const char *s, size_t n, struct buffer *out, enum xmode mode,
                  int line, int depth)
{
	char quote = 0;
	size_t i = 0;
	int bad = 0;
	while (i < n && !bad) {
		char c = s[i];
		if (quote == '\'') {
			if (c == '\'')
				quote = 0;
			bad = buffer_putc(out, c);
			i++;
		} else if (c == '\\' && i + 1 < n) {
			char e = s[i + 1];
			if (mode == XMODE_COMMAND && e == '$')
				bad = buffer_putc(out, '$'); /* the shell's '$', not ours */
			else if (mode == XMODE_COMMAND)
				bad = buffer_putc(out, '\\') || buffer_putc(out, e);
			else
				bad = buffer_putc(out, control_char(e));
			i += 2;
		} else if (c == '$') {
			if (substitute(p, s, n, &i, out, line, depth) < 0)
				return -1;
		} else {
			if (c == '"')
				quote = quote ? 0 : '"';
			else if (c == '\'' && !quote)
				quote = '\'';
			bad = buffer_putc(out, c);
			i++;
		}
	}
	return bad ? parser_too_big(p, line) : 0;
}

/* ---- file lists ----------------------------------------------------- */

void parser_words_free(struct pword *words, int count)
{
	for (int i = 0; i < count; i++) {
		free(words[i].name);
		free(words[i].remote);
	}
	free(words);
}

/* Drops leading "./" and trailing '/' so "./a" and "a/" name "a". */
static char *normalize(struct buffer *b)
{
	const char *s = buffer_tostring(b);
	size_t n = buffer_len(b);
	while (n > 2 && s[0] == '.' && s[1] == '/') {
		s += 2;
		n -= 2;
		while (n > 1 && s[0] == '/') {
			s++;
			n--;
		}
	}
	while (n > 1 && s[n - 1] == '/')
		n--;
	return xstrndup(s, n);
}

static int check_name(struct parser *p, int line, struct buffer *b, const char *what)
{
	const char *s = buffer_tostring(b);
	if (buffer_len(b) == 0)
		return perr(p, line, "empty %s", what);
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return perr(p, line, "%s '%s' contains a control character", what,
			            buffer_tostring(b));
	return 0;
}

/* Position of the first non-space at or after I. */
static size_t skip_space(const char *s, size_t n, size_t i)
{
	while (i < n && isspace((unsigned char)s[i]))
		i++;
	return i;
}

int parser_split_words(struct parser *p, const char *s, int line, int flags, struct pword **words)
{
	int rename = flags & SPLIT_RENAME;
	struct pword *w = NULL;
	int count = 0, cap = 0;
	struct buffer local, remote;
	buffer_init(&local, 0);
	buffer_init(&remote, 0);
	size_t n = strlen(s), i = 0;
	for (;;) {
		while (i < n && isspace((unsigned char)s[i]))
			i++;
		if (i >= n)
			break;
		buffer_clear(&local);
		buffer_clear(&remote);
		struct buffer *cur = &local;
		int arrow = 0;
		int after_arrow = 0; /* nothing of the remote name read yet */
		char quote = 0;
		while (i < n) {
			char c = s[i];
			if (!quote && isspace((unsigned char)c)) {
				/* spaces around "->" belong to the renaming */
				size_t j = skip_space(s, n, i);
				if (rename && j + 1 < n && s[j] == '-' && s[j + 1] == '>') {
					i = j;
					continue;
				}
				if (after_arrow && j < n) {
					i = j;
					continue;
				}
				break;
			}
			if (!(rename && c == '-' && i + 1 < n && s[i + 1] == '>'))
				after_arrow = 0;
			if (quote == '\'') {
				if (c == '\'')
					quote = 0;
				else
					buffer_putc(cur, c);
				i++;
			} else if (quote == '"') {
				if (c == '"') {
					quote = 0;
					i++;
				} else if (c == '\\' && i + 1 < n) {
					buffer_putc(cur, control_char(s[i + 1]));
					i += 2;
				} else {
					buffer_putc(cur, c);
					i++;
				}
			} else if (c == '\\' && i + 1 < n) {
				buffer_putc(cur, s[i + 1]);
				i += 2;
			} else if (c == '\'' || c == '"') {
				quote = c;
				i++;
			} else if (rename && c == '-' && i + 1 < n && s[i + 1] == '>') {
				if (arrow) {
					perr(p, line, "more than one '->' in one file name");
					goto fail;
				}
				arrow = 1;
				after_arrow = 1;
				cur = &remote;
				i += 2;
			} else if (c == ':') {
				perr(p, line, "unexpected ':' in a file list (quote the name)");
				goto fail;
			} else {
				buffer_putc(cur, c);
				i++;
			}
		}
		if (quote) {
			perr(p, line, "unterminated %s quote", quote == '"' ? "double" : "single");
			goto fail;
		}
		if ((flags & SPLIT_SKIP_EMPTY) && !arrow && buffer_len(&local) == 0)
			continue;
		if (check_name(p, line, &local, arrow ? "local name before '->'" : "file name") <
		        0 ||
		    (arrow && check_name(p, line, &remote, "remote name after '->'") < 0))
			goto fail;
		VEC_RESERVE_FIRST(w, cap, (size_t)count + 1, 4);
		w[count].name = normalize(&local);
		w[count].remote = arrow ? xstrdup(buffer_tostring(&remote)) : NULL;
		count++;
	}
	buffer_free(&local);
	buffer_free(&remote);
	*words = w;
	return count;
fail:
	buffer_free(&local);
	buffer_free(&remote);
	parser_words_free(w, count);
	*words = NULL;
	return -1;
}
