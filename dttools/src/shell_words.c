/* shell_words.c: detection of shell-free commands (see shell_words.h). The
 * rule is conservative: anything the shell would treat specially sends the
 * command to /bin/sh. */
#include "shell_words.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "banned.h"

/* Words the shell gives meaning to as the first word of a command. */
static const char *const special_first[] = {
    "!",      "{",       "}",        "case",     "do",   "done",  "elif",   "else",
    "esac",   "fi",      "for",      "function", "if",   "in",    "select", "then",
    "until",  "while",   "time",     ".",        ":",    "alias", "bg",     "break",
    "cd",     "command", "continue", "eval",     "exec", "exit",  "export", "fc",
    "fg",     "getopts", "hash",     "jobs",     "kill", "local", "read",   "readonly",
    "return", "set",     "shift",    "source",   "test", "times", "trap",   "type",
    "ulimit", "umask",   "unalias",  "unset",    "wait", "[",     "echo",   "printf",
    "pwd",    "true",    "false",    NULL,
};

static int plain_char(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	return strchr("_-./,+:@%=", c) != NULL && c != 0;
}

char **shell_words_simple(const char *cmd)
{
	size_t words = 0;
	int in_word = 0;
	for (const unsigned char *p = (const unsigned char *)cmd; *p; p++) {
		if (*p == ' ' || *p == '\t') {
			in_word = 0;
			continue;
		}
		if (!plain_char(*p))
			return NULL;
		if (!in_word)
			words++;
		in_word = 1;
	}
	if (words == 0)
		return NULL;
	char **argv = xcalloc(words + 1, sizeof *argv);
	size_t n = 0;
	const char *p = cmd;
	while (*p) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		size_t len = strcspn(p, " \t");
		argv[n++] = xstrndup(p, len);
		p += len;
	}
	/* An assignment (NAME=value) as the first word, or a builtin, needs sh. */
	int needs_shell = strchr(argv[0], '=') != NULL;
	for (int i = 0; !needs_shell && special_first[i]; i++)
		needs_shell = !strcmp(argv[0], special_first[i]);
	if (needs_shell) {
		shell_words_free(argv);
		return NULL;
	}
	return argv;
}

void shell_words_free(char **argv)
{
	if (!argv)
		return;
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
}
