/* test_wq_factory_cmd.c: unit tests of work_queue_factory's worker command: the master as HOST
 * PORT or -M PROJECT -C CATALOG, the password made absolute, -E put before the master (the
 * worker takes no option after it), and --wrapper prefixes nested with the last outermost and
 * no exec. The commands built are run by the shell to check that they say what they mean. */
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

#include "wq_factory_cmd.h"

#include "banned.h"

static char err[256];

static void test_plain(void **state)
{
	(void)state;
	struct wq_factory_cmd c = {.binary = "/opt/w q/work_queue_worker",
	                           .host = "m.example",
	                           .port = 9123,
	                           .size = " --cores 2",
	                           .timeout = 300};
	char *cmd = wq_factory_worker_command(&c, err, sizeof err);
	assert_string_equal(cmd,
	                    "exec '/opt/w q/work_queue_worker' --cores 2 -t 300 'm.example' 9123");
	free(cmd);
	/* each worker job carries its token as a feature, so its status row names it */
	c.token = "wqf-0123456789abcdef-7";
	cmd = wq_factory_worker_command(&c, err, sizeof err);
	assert_string_equal(cmd, "exec '/opt/w q/work_queue_worker' --cores 2 --feature "
	                         "'wqf-0123456789abcdef-7' -t 300 'm.example' 9123");
	free(cmd);
	c.token = NULL;
	c.host = NULL;
	c.project = "proj";
	c.catalog = "c:9097";
	c.password = "/etc/pw";
	c.size = "";
	cmd = wq_factory_worker_command(&c, err, sizeof err);
	assert_string_equal(cmd, "exec '/opt/w q/work_queue_worker' -t 300 -P '/etc/pw' -M "
	                         "'proj' -C 'c:9097'");
	free(cmd);
	/* a relative password file is found from where the factory runs */
	c.password = "pw.txt";
	cmd = wq_factory_worker_command(&c, err, sizeof err);
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof cwd));
	char want[8192];
	snprintf(want, sizeof want, " -P '%s/pw.txt' ", cwd);
	assert_non_null(strstr(cmd, want));
	free(cmd);
}

static void test_extra_and_wrappers(void **state)
{
	(void)state;
	const char *const wrappers[] = {"nice -n 3", "env Z=9"};
	struct wq_factory_cmd c = {.binary = "work_queue_worker",
	                           .host = "h",
	                           .port = 1,
	                           .size = "",
	                           .timeout = 60,
	                           .extra = "--feature gpu-a100 -d all"};
	char *cmd = wq_factory_worker_command(&c, err, sizeof err);
	assert_string_equal(cmd, "exec 'work_queue_worker' -t 60 --feature gpu-a100 -d all 'h' 1");
	free(cmd);
	c.wrappers = wrappers;
	c.n_wrappers = 2;
	cmd = wq_factory_worker_command(&c, err, sizeof err);
	assert_string_equal(
	    cmd, "env Z=9 nice -n 3 'work_queue_worker' -t 60 --feature gpu-a100 -d all 'h' 1");
	free(cmd);
	/* an empty -E adds nothing */
	c.extra = "";
	c.n_wrappers = 0;
	cmd = wq_factory_worker_command(&c, err, sizeof err);
	assert_string_equal(cmd, "exec 'work_queue_worker' -t 60 'h' 1");
	free(cmd);
}

static void test_runs(void **state)
{
	(void)state;
	/* a stand-in worker that prints its arguments and one variable of its environment */
	char dir[] = "/tmp/test_wq_factory_cmd.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char bin[128], out[128];
	snprintf(bin, sizeof bin, "%s/fake worker", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	FILE *f = fopen(bin, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\necho \"$Z|$*\" > '%s'\n", out);
	fclose(f);
	assert_int_equal(chmod(bin, 0755), 0);
	const char *const wrappers[] = {"env Z=wrapped"};
	struct wq_factory_cmd c = {.binary = bin,
	                           .host = "h",
	                           .port = 5,
	                           .size = " --cores 1",
	                           .timeout = 9,
	                           .extra = "--feature 'a b'",
	                           .wrappers = wrappers,
	                           .n_wrappers = 1};
	char *cmd = wq_factory_worker_command(&c, err, sizeof err);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	f = fopen(out, "r");
	assert_non_null(f);
	char line[256] = "";
	assert_non_null(fgets(line, sizeof line, f));
	fclose(f);
	assert_string_equal(line, "wrapped|--cores 1 -t 9 --feature a b h 5\n");
	unlink(out);
	unlink(bin);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain),
	    cmocka_unit_test(test_extra_and_wrappers),
	    cmocka_unit_test(test_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
