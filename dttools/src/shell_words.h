/* shell_words.h: recognises commands simple enough to run without a shell.
 * A command made only of plain words (no quoting, expansion, redirection,
 * operators, globbing or assignments) and not naming a shell builtin means
 * the same when exec'd directly, which saves one exec per job. */
#ifndef HTC_SHELL_WORDS_H
#define HTC_SHELL_WORDS_H

/* Returns a NULL-terminated argv for CMD (caller frees with
 * shell_words_free), or NULL when CMD needs /bin/sh. */
char **shell_words_simple(const char *cmd);
void shell_words_free(char **argv);

#endif
