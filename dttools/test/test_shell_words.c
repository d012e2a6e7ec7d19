/* test_shell_words.c: unit tests for the shell-free command detection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "shell_words.h"
#include "banned.h"

static void test_simple(void **state)
{
	(void)state;
	char **a = shell_words_simple("  touch out.1   out-2,x ");
	assert_non_null(a);
	assert_string_equal(a[0], "touch");
	assert_string_equal(a[1], "out.1");
	assert_string_equal(a[2], "out-2,x");
	assert_null(a[3]);
	shell_words_free(a);
	a = shell_words_simple("./prog --opt=value 10%");
	assert_non_null(a);
	assert_string_equal(a[1], "--opt=value");
	shell_words_free(a);
}

static void test_needs_shell(void **state)
{
	(void)state;
	const char *cmds[] = {
	    "echo hi > out", "a | b",      "a && b",    "a; b",    "cat 'x y'",
	    "cat \"x\"",     "echo $HOME", "ls *.txt",  "ls ~",    "cd dir",
	    "X=1 prog",      "exit 3",     "a\\ b",     "(sub)",   "prog &",
	    "echo hi",       "true",       "",          "   ",     "cmd `x`",
	    "a\nb",          "test -f x",  "prog [ab]", "prog #x", "! prog",
	};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		char **a = shell_words_simple(cmds[i]);
		if (a)
			fail_msg("'%s' should need a shell", cmds[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_simple),
	    cmocka_unit_test(test_needs_shell),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
