/* test_engine_mounts.c: unit tests of the mount file: each kind of bad line named by file and
 * line, the checks that keep targets and the cache inside the working directory, a local file
 * and a directory linked through the cache, a second run that finds its own links, and a
 * bad line that leaves everything unchanged. URLs are tested end to end (18-makeflow-wrap-
 * archive.sh) against a loopback server. */
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
#include <unistd.h>

#include "engine_mounts.h"
#include "htc_error.h"
#include "path.h"

#include "ts_tmpdir.h"
#include "banned.h"

static char *dir;
static char old[4096];
static char err[2048];

static int setup(void **state)
{
	(void)state;
	dir = ts_tmpdir_create("test_engine_mounts");
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

/* Applies the mount file holding TEXT with the cache "cache". */
static int apply(const char *text)
{
	ts_write_file("mf", text);
	err[0] = 0;
	return engine_mounts_apply("mf", "cache", NULL, err, sizeof err);
}

static void test_parse(void **state)
{
	(void)state;
	ts_write_file("mf", "# comment\n\n  a   /src/a  \nb\thttp://h/b\n");
	struct engine_mount *m;
	size_t n;
	assert_int_equal(engine_mounts_parse("mf", &m, &n, err, sizeof err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(m[0].target, "a");
	assert_string_equal(m[0].source, "/src/a");
	assert_int_equal(m[0].line, 3);
	assert_false(m[0].is_url);
	assert_true(m[1].is_url);
	engine_mounts_free(m, n);

	assert_int_equal(engine_mounts_parse("nothere", &m, &n, err, sizeof err), -ENOENT);
	assert_string_equal(err, "--mounts nothere: No such file or directory");
}

static void test_bad_lines(void **state)
{
	(void)state;
	assert_int_equal(apply("ok x\nlonely\n"), HTC_EPARSE);
	assert_string_equal(err, "mf:2: expected 'TARGET SOURCE' (two words), got 1 word");
	assert_int_equal(apply("a b c\n"), HTC_EPARSE);
	assert_string_equal(err, "mf:1: expected 'TARGET SOURCE' (two words), got 3 words");
	assert_int_equal(apply("/etc/x y\n"), HTC_EPARSE);
	assert_string_equal(
	    err,
	    "mf:1: target '/etc/x' is absolute (it must be relative to the working directory)");
	assert_int_equal(apply("a/../b y\n"), HTC_EPARSE);
	assert_string_equal(
	    err, "mf:1: target 'a/../b' contains '..' (it must stay inside the working directory)");
	assert_int_equal(apply("./ y\n"), HTC_EPARSE);
	assert_string_equal(err, "mf:1: target './' names the working directory itself");
	assert_int_equal(apply("a y\n\na z\n"), HTC_EPARSE);
	assert_string_equal(err, "mf:3: target 'a' is already mounted at line 1");
	/* a name with ".." inside a component is fine; its source is missing */
	assert_int_equal(apply("a/b..c/d missing\n"), -ENOENT);
	assert_string_equal(err, "mf:1: source 'missing': No such file or directory");
	ts_write_file("here", "x");
	assert_int_equal(apply("here src\n"), HTC_EPARSE);
	assert_string_equal(err, "mf:1: target 'here' already exists (a mount target must not "
	                         "exist; only a link made by an earlier --mounts run is replaced)");
	assert_int_equal(symlink("/tmp", "ln"), 0);
	assert_int_equal(apply("ln/x here\n"), HTC_EPARSE);
	assert_string_equal(err, "mf:1: target 'ln/x': 'ln' is a symbolic link");
	assert_int_equal(mkdir("top", 0777), 0);
	assert_int_equal(apply("top/sub/x top\n"), HTC_EPARSE);
	assert_string_equal(err, "mf:1: source 'top' contains the target 'top/sub/x'");
	assert_int_equal(apply("x .\n"), HTC_EPARSE);
	assert_string_equal(err, "mf:1: source '.' contains the target 'x'");
	/* nothing was made by the failed runs */
	assert_false(path_exists("cache"));
	assert_false(path_exists("a"));

	ts_write_file("mf", "t here\n");
	assert_int_equal(engine_mounts_apply("mf", "../c", NULL, err, sizeof err), HTC_EPARSE);
	assert_string_equal(err, "--cache-dir ../c: the cache directory contains '..' (it must "
	                         "stay inside the working directory)");
	assert_int_equal(engine_mounts_apply("mf", "/tmp/c", NULL, err, sizeof err), HTC_EPARSE);
	assert_string_equal(err, "--cache-dir /tmp/c: the cache directory is absolute (it must be "
	                         "relative to the working directory)");
	assert_int_equal(engine_mounts_apply("mf", "ln/c", NULL, err, sizeof err), HTC_EPARSE);
	assert_string_equal(err, "--cache-dir ln/c: 'ln' is a symbolic link");
	assert_false(path_exists("t"));
}

static void test_apply(void **state)
{
	(void)state;
	ts_write_file("src.txt", "reference\n");
	assert_int_equal(path_mkdir_p("srcdir/inner", 0777), 0);
	ts_write_file("srcdir/inner/f", "tree\n");
	char abs[4200];
	snprintf(abs, sizeof abs, "data/deep/ref.txt %s/src.txt\ntools srcdir\n", dir);
	assert_int_equal(apply(abs), 0);
	char *t = ts_read_file("data/deep/ref.txt", NULL);
	assert_string_equal(t, "reference\n");
	free(t);
	t = ts_read_file("tools/inner/f", NULL);
	assert_string_equal(t, "tree\n");
	free(t);
	struct stat st;
	assert_int_equal(lstat("data/deep/ref.txt", &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	char link[4096];
	ssize_t k = readlink("data/deep/ref.txt", link, sizeof link - 1);
	assert_true(k > 0);
	link[k] = 0;
	assert_true(strncmp(link, "../../cache/", 12) == 0);
	/* a copy: changing the source does not change the target until the next run */
	ts_write_file("src.txt", "newer\n");
	t = ts_read_file("data/deep/ref.txt", NULL);
	assert_string_equal(t, "reference\n");
	free(t);
	assert_int_equal(apply(abs), 0);
	t = ts_read_file("data/deep/ref.txt", NULL);
	assert_string_equal(t, "newer\n");
	free(t);

	/* clean: the links and the cache go, a file the user made at a target stays */
	assert_int_equal(unlink("tools"), 0);
	ts_write_file("tools", "mine");
	assert_int_equal(engine_mounts_clean("mf", "cache", err, sizeof err), 0);
	assert_false(path_exists("data/deep/ref.txt"));
	assert_false(path_exists("cache"));
	assert_true(path_exists("src.txt"));
	t = ts_read_file("tools", NULL);
	assert_string_equal(t, "mine");
	free(t);
}

static void test_produced_target(void **state)
{
	(void)state;
	struct dag *d = dag_create("wf");
	struct dag_node *n = dag_node_add(d, 4, "make", NULL);
	dag_node_add_output(d, n, dag_file_get_or_create(d, "made/x"), NULL, err, sizeof err);
	assert_int_equal(dag_finalize(d, err, sizeof err), 0);
	ts_write_file("src", "s");
	ts_write_file("mf", "ok src\n./made/x src\n");
	assert_int_equal(engine_mounts_apply("mf", "cache", d, err, sizeof err), HTC_EPARSE);
	assert_string_equal(err, "mf:2: target './made/x' is created by the rule at line 4 of wf "
	                         "(a mount target is an input)");
	assert_false(path_exists("ok"));
	dag_delete(d);
}

static void test_default_cache(void **state)
{
	(void)state;
	ts_write_file("wf", "");
	char *c = engine_mounts_default_cache("wf");
	assert_true(strncmp(c, "makeflow.cache.", 15) == 0);
	assert_int_equal(strlen(c), 15 + 12);
	char *c2 = engine_mounts_default_cache("./wf");
	assert_string_equal(c, c2);
	free(c);
	free(c2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_parse, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_lines, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_apply, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_produced_target, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_default_cache, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
