/* test_engine_archive.c: unit tests of the archive of completed rules: the key follows the
 * command, the environment and the input contents (not the input times), a stored rule is
 * restored with its outputs (files and directories), an entry appears whole (nothing is left
 * in tmp/), and reading or writing alone does only that. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dag.h"
#include "engine.h"
#include "engine_archive.h"
#include "path.h"
#include "xalloc.h"

#include "ts_tmpdir.h"
#include "banned.h"

static char *dir;
static char old[4096];

static int setup(void **state)
{
	(void)state;
	dir = ts_tmpdir_create("test_engine_archive");
	if (!getcwd(old, sizeof old) || chdir(dir) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (chdir(old) < 0)
		return -1;
	ts_tmpdir_remove(dir);
	return 0;
}

/* A rule "in [sub/] -> out [outdir]". */
static struct dag *rule(const char *cmd, int with_dirs)
{
	struct dag *d = dag_create("wf");
	struct dag_node *n = dag_node_add(d, 1, cmd, NULL);
	char err[512];
	dag_node_add_input(d, n, dag_file_get_or_create(d, "in"), NULL);
	dag_node_add_output(d, n, dag_file_get_or_create(d, "out"), NULL, err, sizeof err);
	if (with_dirs) {
		dag_node_add_input(d, n, dag_file_get_or_create(d, "sub"), NULL);
		dag_node_add_output(d, n, dag_file_get_or_create(d, "outdir"), NULL, err,
		                    sizeof err);
	}
	assert_int_equal(dag_finalize(d, err, sizeof err), 0);
	return d;
}

static void test_key(void **state)
{
	(void)state;
	ts_write_file("in", "one\n");
	char err[512];
	struct engine_archive *a = engine_archive_create("arch", 1, 1, err, sizeof err);
	assert_non_null(a);
	struct dag *d = rule("cat in > out", 0);
	struct dag_node *n = d->nodes[0];
	char k1[SHA256_HEX_SIZE], k2[SHA256_HEX_SIZE], k3[SHA256_HEX_SIZE], k4[SHA256_HEX_SIZE];
	assert_int_equal(engine_archive_key(a, n, n->command, k1), 0);
	assert_int_equal(strlen(k1), 64);
	/* the same content written again: same key */
	ts_write_file("in", "one\n");
	assert_int_equal(engine_archive_key(a, n, n->command, k2), 0);
	assert_string_equal(k1, k2);
	ts_write_file("in", "two\n");
	assert_int_equal(engine_archive_key(a, n, n->command, k3), 0);
	assert_string_not_equal(k1, k3);
	assert_int_equal(engine_archive_key(a, n, "cat in >out", k4), 0);
	assert_string_not_equal(k3, k4);
	char *vars[] = {"A=1"};
	struct dag_env *env = dag_env_create(vars, 1);
	dag_node_set_env(n, env);
	dag_env_unref(env);
	assert_int_equal(engine_archive_key(a, n, n->command, k4), 0);
	assert_string_not_equal(k3, k4);
	/* an input that cannot be read: no key */
	unlink("in");
	assert_int_equal(engine_archive_key(a, n, n->command, k4), -ENOENT);
	engine_archive_delete(a);
	dag_delete(d);
}

static void test_store_restore(void **state)
{
	(void)state;
	char err[512];
	ts_write_file("in", "data\n");
	assert_int_equal(path_mkdir_p("sub/deep", 0777), 0);
	ts_write_file("sub/deep/f", "deep\n");
	struct dag *d = rule("make it", 1);
	struct dag_node *n = d->nodes[0];
	struct engine_archive *a = engine_archive_create("arch", 1, 1, err, sizeof err);
	assert_non_null(a);
	assert_int_equal(engine_archive_lookup(a, n, n->command), 0);
	ts_write_file("out", "result\n");
	assert_int_equal(path_mkdir_p("outdir/x", 0777), 0);
	ts_write_file("outdir/x/y", "tree\n");
	assert_int_equal(engine_archive_store(a, n), 0);

	char key[SHA256_HEX_SIZE];
	assert_int_equal(engine_archive_key(a, n, n->command, key), 0);
	char *entry = engine_archive_entry(a, key);
	char *p = xasprintf("%s/job.json", entry);
	char *job = ts_read_file(p, NULL);
	assert_non_null(job);
	assert_non_null(strstr(job, "\"command\": \"make it\""));
	free(job);
	free(p);
	p = xasprintf("%s/outputs/1/x/y", entry);
	assert_true(path_exists(p));
	free(p);
	free(entry);
	/* nothing is left being built */
	assert_int_equal(rmdir("arch/tmp"), 0);
	assert_int_equal(mkdir("arch/tmp", 0777), 0);

	path_rm_rf("out");
	path_rm_rf("outdir");
	assert_int_equal(engine_archive_lookup(a, n, n->command), 1);
	char *text = ts_read_file("out", NULL);
	assert_string_equal(text, "result\n");
	free(text);
	text = ts_read_file("outdir/x/y", NULL);
	assert_string_equal(text, "tree\n");
	free(text);

	/* another input content: not archived */
	ts_write_file("sub/deep/f", "changed\n");
	assert_int_equal(engine_archive_lookup(a, n, n->command), 0);
	engine_archive_delete(a);

	/* write only: never restores; read only: never stores */
	ts_write_file("sub/deep/f", "deep\n");
	a = engine_archive_create("arch", 0, 1, err, sizeof err);
	assert_int_equal(engine_archive_lookup(a, n, n->command), 0);
	engine_archive_delete(a);
	a = engine_archive_create("arch2", 1, 0, err, sizeof err);
	assert_int_equal(engine_archive_lookup(a, n, n->command), 0);
	assert_int_equal(engine_archive_store(a, n), 0);
	assert_int_equal(engine_archive_lookup(a, n, n->command), 0);
	engine_archive_delete(a);
	dag_delete(d);
}

/* An entry directory without its record (never made by the store, which renames whole
 * entries) is not used, and the next store replaces it. */
static void test_broken_entry(void **state)
{
	(void)state;
	char err[512];
	ts_write_file("in", "data\n");
	struct dag *d = rule("make it", 0);
	struct dag_node *n = d->nodes[0];
	struct engine_archive *a = engine_archive_create("arch", 1, 1, err, sizeof err);
	char key[SHA256_HEX_SIZE];
	assert_int_equal(engine_archive_key(a, n, n->command, key), 0);
	char *entry = engine_archive_entry(a, key);
	char *outs = xasprintf("%s/outputs", entry);
	assert_int_equal(path_mkdir_p(outs, 0777), 0);
	ts_write_file("out", "result\n");
	assert_int_equal(engine_archive_lookup(a, n, n->command), 0);
	assert_int_equal(engine_archive_store(a, n), 0);
	char *job = xasprintf("%s/job.json", entry);
	assert_true(path_exists(job));
	char *copy = xasprintf("%s/0", outs);
	char *text = ts_read_file(copy, NULL);
	assert_string_equal(text, "result\n");
	free(text);
	free(copy);
	free(job);
	free(outs);
	free(entry);
	engine_archive_delete(a);
	dag_delete(d);
}

/* Entries under tmp/ left by a killed process of this host are removed when an archive is
 * opened for writing; those of a live process or of another host stay. */
static void test_sweep(void **state)
{
	(void)state;
	char err[512];
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	assert_true(child > 0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	char host[256] = "localhost";
	gethostname(host, sizeof host - 1);
	const char *key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char dead[512], live[512], other[512], odd[512];
	snprintf(dead, sizeof dead, "arch/tmp/%s.%s.%ld.0", key, host, (long)child);
	snprintf(live, sizeof live, "arch/tmp/%s.%s.%ld.3", key, host, (long)getpid());
	snprintf(other, sizeof other, "arch/tmp/%s.not-%s.%ld.0", key, host, (long)child);
	snprintf(odd, sizeof odd, "arch/tmp/%s.%ld.0", key, (long)child);
	const char *all[] = {dead, live, other, odd};
	for (int i = 0; i < 4; i++) {
		char *outs = xasprintf("%s/outputs", all[i]);
		assert_int_equal(path_mkdir_p(outs, 0777), 0);
		free(outs);
	}
	struct engine_archive *a = engine_archive_create("arch", 1, 0, err, sizeof err);
	engine_archive_delete(a);
	assert_true(path_exists(dead)); /* read only: nothing is touched */
	a = engine_archive_create("arch", 0, 1, err, sizeof err);
	engine_archive_delete(a);
	assert_false(path_exists(dead));
	assert_true(path_exists(live));
	assert_true(path_exists(other));
	assert_true(path_exists(odd));
}

static void test_bad_dir(void **state)
{
	(void)state;
	char err[512];
	ts_write_file("file", "x");
	assert_null(engine_archive_create("file/arch", 1, 1, err, sizeof err));
	assert_string_equal(err, "archive file/arch: Not a directory");
}

/* A whole run by the engine, then a second one where every rule comes from the archive: the
 * loop never runs a job, and the run still ends cleanly (under ASan: nothing leaks). */
static void test_engine_run_restores(void **state)
{
	(void)state;
	ts_write_file("in", "data\n");
	struct engine_options o;
	engine_options_init(&o);
	o.log_path = "wf.makeflowlog";
	o.archive_dir = "arch";
	o.archive_read = o.archive_write = 1;
	o.progress = ENGINE_PROGRESS_QUIET;
	struct dag *d = rule("cat in in > out", 0);
	assert_int_equal(engine_run(d, &o), 0);
	dag_delete(d);
	assert_int_equal(unlink("out"), 0);
	assert_int_equal(unlink("wf.makeflowlog"), 0);
	ts_write_file("in", "data\n"); /* a new time, the same content */
	d = rule("cat in in > out", 0);
	assert_int_equal(engine_run(d, &o), 0);
	dag_delete(d);
	char *text = ts_read_file("out", NULL);
	assert_string_equal(text, "data\ndata\n");
	free(text);
	assert_non_null(text = ts_read_file("wf.makeflowlog", NULL));
	free(text);
	unlink("wf.makeflowlog.lock");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_key, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_store_restore, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_broken_entry, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_engine_run_restores, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
