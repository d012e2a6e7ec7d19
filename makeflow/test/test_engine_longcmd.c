/* test_engine_longcmd.c: unit tests of the scripts of long commands: a short command is left
 * alone, a long one is written whole to NAME.cmds/rule-ID.sh and run with /bin/sh by absolute
 * path here, or as an input file elsewhere (renamed in the sandbox when the driver can), and
 * the script and its directory go once the job is done. The script really runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_longcmd.h"
#include "ts_tmpdir.h"
#include "xalloc.h"

#include "banned.h"

static char *dir;
static char old_cwd[4096];

static int setup(void **state)
{
	(void)state;
	if (!getcwd(old_cwd, sizeof old_cwd))
		return -1;
	dir = ts_tmpdir_create("test_engine_longcmd");
	return chdir(dir);
}

static int teardown(void **state)
{
	(void)state;
	if (chdir(old_cwd) < 0)
		return -1;
	ts_tmpdir_remove(dir);
	return 0;
}

/* A command of about SIZE bytes that writes its length to OUT. */
static char *long_command(size_t size, const char *out)
{
	char *arg = xmalloc(size + 1);
	memset(arg, 'x', size);
	arg[size] = 0;
	char *cmd = xasprintf("printf %%s %s | wc -c > %s", arg, out);
	free(arg);
	return cmd;
}

static void test_short_left_alone(void **state)
{
	(void)state;
	struct engine_longcmd l;
	assert_int_equal(engine_longcmd_prepare("wf.makeflowlog", 3, "echo hi", 1, 1, &l), 0);
	assert_null(l.command);
	assert_null(l.script);
	char *cmd = long_command(ENGINE_LONGCMD_MAX - 100, "o");
	assert_true(strlen(cmd) <= ENGINE_LONGCMD_MAX);
	assert_int_equal(engine_longcmd_prepare("wf.makeflowlog", 3, cmd, 1, 1, &l), 0);
	free(cmd);
	struct stat st;
	assert_int_equal(stat("wf.makeflowlog.cmds", &st), -1);
}

static void test_runs_here(void **state)
{
	(void)state;
	char *cmd = long_command(300 * 1024, "n.txt");
	struct engine_longcmd l;
	assert_int_equal(engine_longcmd_prepare("sub/wf.makeflowlog", 7, cmd, 1, 1, &l), 1);
	/* beside makeflow, named after the log's file name */
	assert_string_equal(l.script, "wf.makeflowlog.cmds/rule-7.sh");
	assert_int_equal(l.needs_input, 0);
	char *want = xasprintf("/bin/sh '%s/wf.makeflowlog.cmds/rule-7.sh'", dir);
	assert_string_equal(l.command, want);
	free(want);
	size_t len = 0;
	char *text = ts_read_file(l.script, &len);
	assert_int_equal(len, strlen(cmd) + 1);
	assert_memory_equal(text, cmd, strlen(cmd));
	assert_int_equal(text[len - 1], '\n');
	free(text);
	/* the short command runs the whole long one */
	assert_int_equal(system(l.command), 0);
	text = ts_read_file("n.txt", NULL);
	assert_int_equal(atoi(text), 300 * 1024);
	free(text);
	engine_longcmd_clear(&l);
	engine_longcmd_done("sub/wf.makeflowlog", 7);
	struct stat st;
	assert_int_equal(stat("wf.makeflowlog.cmds", &st), -1);
	unlink("n.txt");
	free(cmd);
}

static void test_input_file(void **state)
{
	(void)state;
	char *cmd = long_command(200 * 1024, "m.txt");
	struct engine_longcmd l, k;
	/* a driver that renames: the script is makeflow-cmd-ID.sh in the sandbox */
	assert_int_equal(engine_longcmd_prepare("wf.log", 2, cmd, 0, 1, &l), 1);
	assert_int_equal(l.needs_input, 1);
	assert_string_equal(l.script, "wf.log.cmds/rule-2.sh");
	assert_string_equal(l.input_remote, "makeflow-cmd-2.sh");
	assert_string_equal(l.command, "/bin/sh makeflow-cmd-2.sh");
	/* one that keeps names: the script under its own (relative) path */
	assert_int_equal(engine_longcmd_prepare("wf.log", 5, cmd, 0, 0, &k), 1);
	assert_null(k.input_remote);
	assert_string_equal(k.command, "/bin/sh 'wf.log.cmds/rule-5.sh'");
	assert_int_equal(system(k.command), 0);
	char *text = ts_read_file("m.txt", NULL);
	assert_int_equal(atoi(text), 200 * 1024);
	free(text);
	/* the directory stays while another rule's script is in it */
	engine_longcmd_done("wf.log", 2);
	struct stat st;
	assert_int_equal(stat("wf.log.cmds/rule-2.sh", &st), -1);
	assert_int_equal(stat("wf.log.cmds", &st), 0);
	engine_longcmd_done("wf.log", 5);
	assert_int_equal(stat("wf.log.cmds", &st), -1);
	engine_longcmd_clear(&l);
	engine_longcmd_clear(&k);
	unlink("m.txt");
	free(cmd);
}

static void test_unwritable(void **state)
{
	(void)state;
	char *cmd = long_command(100 * 1024, "x");
	struct engine_longcmd l;
	ts_write_file("blocked.cmds", "a file where the directory would go\n");
	assert_true(engine_longcmd_prepare("blocked", 1, cmd, 1, 1, &l) < 0);
	assert_null(l.command);
	unlink("blocked.cmds");
	free(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_short_left_alone),
	    cmocka_unit_test(test_runs_here),
	    cmocka_unit_test(test_input_file),
	    cmocka_unit_test(test_unwritable),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
