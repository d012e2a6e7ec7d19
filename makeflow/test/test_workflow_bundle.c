/* test_workflow_bundle.c: unit tests of makeflow_analyze -b (workflow_bundle.h): whole-word
 * replacement of moved names; a bundle of a workflow with relative, nested-directory and
 * absolute inputs (copied, renamed on a clash, named in the copied workflow), and the refusals
 * (a missing input, a directory that is not empty). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path.h"
#include "workflow_bundle.h"
#include "workflow_load.h"
#include "xalloc.h"

#include "ts_tmpdir.h"
#include "banned.h"

static void test_replace_word(void **state)
{
	(void)state;
	char *s = workflow_bundle_replace_word("a: /x/in /x/in.2 /x/inner\n\tcat /x/in>o; f=/x/in",
	                                       "/x/in", "in");
	assert_string_equal(s, "a: in /x/in.2 /x/inner\n\tcat in>o; f=in");
	free(s);
	s = workflow_bundle_replace_word("\"/a/b\", \"x/a/b\"", "/a/b", "b");
	assert_string_equal(s, "\"b\", \"x/a/b\"");
	free(s);
	s = workflow_bundle_replace_word("nothing", "", "x");
	assert_string_equal(s, "nothing");
	free(s);
}

/* Writes TEXT to PATH, making its directory. */
static void put(const char *path, const char *text)
{
	char *dir = path_dirname(path);
	path_mkdir_p(dir, 0777);
	free(dir);
	ts_write_file(path, text);
}

static char *get(const char *path)
{
	return ts_read_file(path, NULL);
}

static void test_bundle(void **state)
{
	(void)state;
	char old[PATH_MAX];
	char *dir = ts_tmpdir_create("test_workflow_bundle");
	assert_non_null(getcwd(old, sizeof old));
	assert_int_equal(chdir(dir), 0);
	char abs1[PATH_MAX + 32], abs2[PATH_MAX + 32];
	snprintf(abs1, sizeof abs1, "%s/elsewhere/ref.txt", dir);
	snprintf(abs2, sizeof abs2, "%s/other/ref.txt", dir);
	put(abs1, "ref one\n");
	put(abs2, "ref two\n");
	put("in.txt", "in\n");
	put("sub/deep/in2.txt", "in2\n");
	char wf[6 * PATH_MAX];
	snprintf(wf, sizeof wf,
	         "out.txt: in.txt sub/deep/in2.txt %s %s\n\tcat in.txt %s %s > out.txt\n"
	         "final.txt: out.txt\n\tcat out.txt > final.txt\n",
	         abs1, abs2, abs1, abs2);
	put("Makeflow", wf);
	struct workflow_source src = {.path = "Makeflow", .format = WORKFLOW_MAKE};
	char err[1024] = "";
	struct dag *d = workflow_load(&src, err, sizeof err);
	assert_non_null(d);
	FILE *out = tmpfile();
	assert_int_equal(workflow_bundle(&src, d, "B", out, err, sizeof err), 0);
	char *t = get("B/in.txt");
	assert_string_equal(t, "in\n");
	free(t);
	t = get("B/sub/deep/in2.txt");
	assert_string_equal(t, "in2\n");
	free(t);
	/* the two absolute inputs share a base name: the second is ref.txt.1 */
	char *r0 = get("B/ref.txt"), *r1 = get("B/ref.txt.1");
	assert_non_null(r0);
	assert_non_null(r1);
	assert_true(strcmp(r0, r1) != 0);
	free(r0);
	free(r1);
	t = get("B/Makeflow");
	assert_non_null(strstr(t, "cat in.txt ref.txt"));
	assert_null(strstr(t, dir)); /* no absolute path is left */
	free(t);
	/* the mapping, one line per file */
	rewind(out);
	char line[PATH_MAX + 64];
	int lines = 0;
	while (fgets(line, sizeof line, out))
		lines++;
	assert_int_equal(lines, 5);
	fclose(out);
	/* a second bundle into the same directory is refused */
	assert_int_equal(workflow_bundle(&src, d, "B", stderr, err, sizeof err), -1);
	assert_non_null(strstr(err, "B is not empty"));
	dag_delete(d);
	/* a missing input is named, and nothing is written */
	put("Makeflow", "o: missing.txt\n\tcat missing.txt > o\n");
	d = workflow_load(&src, err, sizeof err);
	assert_non_null(d);
	assert_int_equal(workflow_bundle(&src, d, "C", stderr, err, sizeof err), -1);
	assert_non_null(strstr(err, "input missing.txt does not exist"));
	assert_false(path_exists("C"));
	dag_delete(d);
	assert_int_equal(chdir(old), 0);
	ts_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replace_word),
	    cmocka_unit_test(test_bundle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
