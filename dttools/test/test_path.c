/* test_path.c: unit tests for path helpers (path.h): POSIX basename and
 * dirname cases, joining, lexical normalization and the sandbox escape
 * check, and the filesystem helpers run inside a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

static void check_base(const char *in, const char *want)
{
	char *s = path_basename(in);
	if (strcmp(s, want))
		fail_msg("basename(\"%s\") = \"%s\", want \"%s\"", in, s, want);
	free(s);
}

static void check_dir(const char *in, const char *want)
{
	char *s = path_dirname(in);
	if (strcmp(s, want))
		fail_msg("dirname(\"%s\") = \"%s\", want \"%s\"", in, s, want);
	free(s);
}

static void test_basename(void **state)
{
	(void)state;
	check_base("/", "/");
	check_base("//", "/");
	check_base("a", "a");
	check_base("a/", "a");
	check_base("/a/b/", "b");
	check_base("/a/b", "b");
	check_base("/a//b//", "b");
	check_base("", ".");
	check_base(".", ".");
	check_base("..", "..");
	check_base("dir/file.txt", "file.txt");
}

static void test_dirname(void **state)
{
	(void)state;
	check_dir("/", "/");
	check_dir("//", "/");
	check_dir("a", ".");
	check_dir("a/", ".");
	check_dir("/a", "/");
	check_dir("/a/", "/");
	check_dir("/a/b/", "/a");
	check_dir("/a/b", "/a");
	check_dir("/a//b//", "/a");
	check_dir("a/b/c", "a/b");
	check_dir("", ".");
	check_dir(".", ".");
	check_dir("../x", "..");
}

static void test_join(void **state)
{
	(void)state;
	struct {
		const char *a, *b, *want;
	} cases[] = {
	    {"a", "b", "a/b"},
	    {"a/", "b", "a/b"},
	    {"a//", "/b", "a/b"},
	    {"/", "b", "/b"},
	    {"/", "/b", "/b"},
	    {"", "b", "b"},
	    {"a", "", "a"},
	    {"/x/y", "z/w", "/x/y/z/w"},
	    {"sandbox", "/etc/passwd", "sandbox/etc/passwd"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = path_join(cases[i].a, cases[i].b);
		assert_string_equal(s, cases[i].want);
		free(s);
	}
}

static void check_norm(const char *in, const char *want, bool want_escape)
{
	bool esc = !want_escape;
	char *s = path_normalize(in, &esc);
	if (strcmp(s, want) || esc != want_escape)
		fail_msg("normalize(\"%s\") = \"%s\" escape %d, want \"%s\" %d", in, s, esc, want,
		         want_escape);
	free(s);
}

static void test_normalize(void **state)
{
	(void)state;
	check_norm("a//b", "a/b", false);
	check_norm("./a/./b/.", "a/b", false);
	check_norm("a/b/../c", "a/c", false);
	check_norm("a/../b", "b", false);
	check_norm("a/..", ".", false);
	check_norm("", ".", false);
	check_norm(".", ".", false);
	check_norm("a/b/", "a/b", false);
	check_norm("..", "..", true);
	check_norm("../a", "../a", true);
	check_norm("a/../../b", "../b", true);
	check_norm("../../a/..", "../..", true);
	check_norm("/", "/", false);
	check_norm("//a//b/", "/a/b", false);
	check_norm("/a/../b", "/b", false);
	check_norm("/..", "/", true);
	check_norm("/../a", "/a", true);
	check_norm("a/.../b", "a/.../b", false);
	check_norm("..a/b", "..a/b", false);
	char *s = path_normalize("x/./y", NULL);
	assert_string_equal(s, "x/y");
	free(s);
}

static void test_escapes_root(void **state)
{
	(void)state;
	assert_true(path_escapes_root("/etc/passwd"));
	assert_true(path_escapes_root("/"));
	assert_true(path_escapes_root(".."));
	assert_true(path_escapes_root("../x"));
	assert_true(path_escapes_root("a/../../x"));
	assert_true(path_escapes_root("a/b/../../.."));
	assert_true(path_escapes_root("./../x"));
	assert_false(path_escapes_root("a/../b"));
	assert_false(path_escapes_root("a/b/c"));
	assert_false(path_escapes_root("a/b/../.."));
	assert_false(path_escapes_root("..."));
	assert_false(path_escapes_root("..foo"));
	assert_false(path_escapes_root(""));
	assert_false(path_escapes_root("."));
	assert_true(path_is_absolute("/a"));
	assert_false(path_is_absolute("a/b"));
	assert_false(path_is_absolute(""));
}

static void test_mkdir_p(void **state)
{
	(void)state;
	char *root = ts_tmpdir_create("test_path");
	char *deep = xasprintf("%s/a/b//c/", root);
	assert_int_equal(path_mkdir_p(deep, 0755), 0);
	char *c = xasprintf("%s/a/b/c", root);
	struct stat st;
	assert_int_equal(stat(c, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* existing is fine */
	assert_int_equal(path_mkdir_p(c, 0755), 0);
	/* a file in the way */
	char *file = xasprintf("%s/a/file", root);
	ts_write_file(file, "x");
	char *under = xasprintf("%s/sub", file);
	assert_int_equal(path_mkdir_p(under, 0755), -ENOTDIR);
	assert_int_equal(path_mkdir_p(file, 0755), -EEXIST);
	assert_int_equal(path_mkdir_p("", 0755), -ENOENT);
	assert_int_equal(path_rm_rf(root), 0);
	assert_false(path_exists(root));
	free(under);
	free(file);
	free(c);
	free(deep);
	free(root);
}

static void test_rm_rf_no_follow(void **state)
{
	(void)state;
	char *root = ts_tmpdir_create("test_path");
	char *outside = ts_tmpdir_create("test_path");
	char *precious = xasprintf("%s/precious", outside);
	ts_write_file(precious, "keep me");

	char *tree = xasprintf("%s/tree/x/y", root);
	assert_int_equal(path_mkdir_p(tree, 0700), 0);
	for (int i = 0; i < 20; i++) {
		char *f = xasprintf("%s/f%d", tree, i);
		ts_write_file(f, "data");
		free(f);
	}
	char *link_dir = xasprintf("%s/tree/link_to_outside", root);
	assert_int_equal(symlink(outside, link_dir), 0);
	char *link_file = xasprintf("%s/tree/x/link_to_precious", root);
	assert_int_equal(symlink(precious, link_file), 0);
	char *dangling = xasprintf("%s/tree/dangling", root);
	assert_int_equal(symlink("/nonexistent/nowhere", dangling), 0);
	assert_true(path_exists(dangling));
	/* a read-only file is removed too */
	char *ro = xasprintf("%s/tree/ro", root);
	ts_write_file(ro, "r");
	chmod(ro, 0400);

	char *tree_top = xasprintf("%s/tree", root);
	assert_int_equal(path_rm_rf(tree_top), 0);
	assert_false(path_exists(tree_top));
	assert_true(path_exists(precious));
	assert_int_equal(path_file_size(precious), 7);

	/* a symlink given directly is removed itself, not its target */
	char *top_link = xasprintf("%s/toplink", root);
	assert_int_equal(symlink(outside, top_link), 0);
	assert_int_equal(path_rm_rf(top_link), 0);
	assert_false(path_exists(top_link));
	assert_true(path_exists(precious));

	/* a plain file, and a missing path */
	char *plain = xasprintf("%s/plain", root);
	ts_write_file(plain, "p");
	assert_int_equal(path_rm_rf(plain), 0);
	assert_false(path_exists(plain));
	assert_int_equal(path_rm_rf(plain), 0);

	assert_int_equal(path_rm_rf(root), 0);
	assert_int_equal(path_rm_rf(outside), 0);
	free(plain);
	free(top_link);
	free(tree_top);
	free(ro);
	free(dangling);
	free(link_file);
	free(link_dir);
	free(tree);
	free(precious);
	free(outside);
	free(root);
}

static void test_exists_size(void **state)
{
	(void)state;
	char *root = ts_tmpdir_create("test_path");
	char *f = xasprintf("%s/f", root);
	assert_false(path_exists(f));
	assert_int_equal(path_file_size(f), -ENOENT);
	ts_write_file(f, "hello, world");
	assert_true(path_exists(f));
	assert_int_equal(path_file_size(f), 12);
	ts_write_file(f, "");
	assert_int_equal(path_file_size(f), 0);
	assert_true(path_exists(root));
	assert_int_equal(path_rm_rf(root), 0);
	free(f);
	free(root);
}

/* Directory streams: over a directory fd that stays open, and the errors, with the fd of a
 * failed fdopendir closed. */
static void test_opendir(void **state)
{
	(void)state;
	char *root = ts_tmpdir_create("test_path");
	char *f = xasprintf("%s/f", root);
	ts_write_file(f, "x");
	int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	int err = 0;
	for (int round = 0; round < 2; round++) { /* DFD keeps its own offset: both see f */
		DIR *d = path_opendir_at(dfd, ".", &err);
		assert_non_null(d);
		int seen = 0;
		struct dirent *de;
		while ((de = readdir(d)))
			seen += !strcmp(de->d_name, "f");
		assert_int_equal(seen, 1);
		closedir(d);
	}
	assert_null(path_opendir_at(dfd, "missing", &err));
	assert_int_equal(err, -ENOENT);
	assert_null(path_opendir_at(dfd, "f", &err));
	assert_int_equal(err, -ENOTDIR);
	assert_null(path_opendir_at(AT_FDCWD, f, &err));
	assert_int_equal(err, -ENOTDIR);
	int ffd = open(f, O_RDONLY | O_CLOEXEC);
	assert_true(ffd >= 0);
	assert_null(path_fdopendir(ffd, &err));
	assert_int_equal(err, -ENOTDIR);
	assert_int_equal(fcntl(ffd, F_GETFD), -1); /* closed */
	DIR *d = path_fdopendir(dfd, &err);        /* owns DFD now */
	assert_non_null(d);
	closedir(d);
	assert_int_equal(path_rm_rf(root), 0);
	free(f);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basename),
	    cmocka_unit_test(test_dirname),
	    cmocka_unit_test(test_join),
	    cmocka_unit_test(test_normalize),
	    cmocka_unit_test(test_escapes_root),
	    cmocka_unit_test(test_mkdir_p),
	    cmocka_unit_test(test_rm_rf_no_follow),
	    cmocka_unit_test(test_exists_size),
	    cmocka_unit_test(test_opendir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
