/* ts_argv.c: argument vectors for the option parsers' tests (see ts_argv.h). */
#include "ts_argv.h"

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "banned.h"

int ts_argv(char **argv, int cap, const char *prog, va_list ap)
{
	int argc = 0;
	argv[argc++] = (char *)prog;
	char *w;
	while ((w = va_arg(ap, char *)) != NULL) {
		assert_true(argc < cap - 1);
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	return argc;
}
