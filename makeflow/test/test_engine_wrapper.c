/* test_engine_wrapper.c: unit tests of --wrapper, --wrapper-input and --wrapper-output: the
 * command inside one and several wrappers with "{}", "[]", "%%" and the default shell, run
 * through /bin/sh to see that quoting keeps the command whole; the files joined to every rule;
 * and the options that fill them. */
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

#include "cli.h"
#include "dag.h"
#include "engine_wrapper.h"
#include "htc_error.h"
#include "makeflow_opts.h"

#include "ts_argv.h"
#include "ts_tmpdir.h"
#include "banned.h"

static char *wrap(const char *cmd, int id, ...)
{
	const char *w[8];
	int n = 0;
	va_list ap;
	va_start(ap, id);
	const char *s;
	while ((s = va_arg(ap, const char *)) && n < 7)
		w[n++] = s;
	va_end(ap);
	w[n] = NULL;
	return engine_wrap_command(w, cmd, id);
}

/* The standard output of running CMD with /bin/sh. */
static char *run(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	static char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, p);
	buf[n] = 0;
	pclose(p);
	return buf;
}

static void test_forms(void **state)
{
	(void)state;
	const char *none[] = {NULL};
	assert_null(engine_wrap_command(none, "true", 0));
	assert_null(engine_wrap_command(NULL, "true", 0));

	char *c = wrap("echo a; echo b", 3, "time -p", NULL);
	assert_string_equal(c, "time -p /bin/sh -c 'echo a; echo b'");
	free(c);
	c = wrap("echo a; echo b", 3, "env -i {}", NULL);
	assert_string_equal(c, "env -i echo a; echo b");
	free(c);
	c = wrap("echo 'x'", 3, "strace -o trace.%% sh -c []", NULL);
	assert_string_equal(c, "strace -o trace.3 sh -c 'echo '\\''x'\\'''");
	free(c);
	/* "%%" in the rule's own command is left alone */
	c = wrap("printf %%", 5, "X%% {}", NULL);
	assert_string_equal(c, "X5 printf %%");
	free(c);
	char *n = engine_wrap_name("trace.%%.%%", 12);
	assert_string_equal(n, "trace.12.12");
	free(n);
}

/* Two wrappers: the first given is inside the second, and the command with quotes and
 * several parts runs whole. */
static void test_nesting_runs(void **state)
{
	(void)state;
	char *c =
	    wrap("echo \"it's\" $((1+2)); echo two", 0, "echo in; exec", "echo out; exec", NULL);
	assert_string_equal(run(c), "out\nin\nit's 3\ntwo\n");
	free(c);
	c = wrap("echo 'a  b'", 7, "echo W%%; {}", "sh -c []", NULL);
	assert_string_equal(run(c), "W7\na  b\n");
	free(c);
}

static void test_dag_files(void **state)
{
	(void)state;
	struct dag *d = dag_create("wf");
	struct dag_node *a = dag_node_add(d, 1, "make a", NULL);
	struct dag_node *b = dag_node_add(d, 3, "make b", NULL);
	char err[2048] = "";
	dag_node_add_output(d, a, dag_file_get_or_create(d, "a"), NULL, err, sizeof err);
	dag_node_add_input(d, b, dag_file_get_or_create(d, "a"), NULL);
	dag_node_add_output(d, b, dag_file_get_or_create(d, "b"), NULL, err, sizeof err);
	assert_int_equal(dag_finalize(d, err, sizeof err), 0);
	const char *in[] = {"setup.sh", "conf.%%", NULL};
	const char *out[] = {"trace.%%", NULL};
	assert_int_equal(engine_wrap_dag(d, in, out, err, sizeof err), 0);
	assert_true(d->finalized);
	assert_int_equal(a->ninputs, 2);
	assert_string_equal(a->inputs[0].file->name, "setup.sh");
	assert_string_equal(a->inputs[1].file->name, "conf.0");
	assert_int_equal(b->ninputs, 3);
	assert_string_equal(b->inputs[2].file->name, "conf.1");
	assert_string_equal(b->outputs[1].file->name, "trace.1");
	struct dag_file *s = dag_file_lookup(d, "setup.sh");
	assert_true(s->is_source);
	assert_int_equal(s->nconsumers, 2);
	assert_int_equal(b->nparents, 1);
	assert_true(dag_file_lookup(d, "trace.0")->is_final_output);

	/* one output name for every rule: two rules would make it */
	const char *same[] = {"trace", NULL};
	assert_int_equal(engine_wrap_dag(d, NULL, same, err, sizeof err), HTC_EDUP);
	assert_non_null(strstr(err, "--wrapper-output trace: "));
	assert_non_null(strstr(err, "produced by rules at lines 1 and 3"));
	dag_delete(d);
}

static int parse(struct makeflow_opts *o, char *err, size_t errlen, ...)
{
	char *argv[64];
	va_list ap;
	va_start(ap, errlen);
	int argc = ts_argv(argv, 64, "makeflow", ap);
	va_end(ap);
	err[0] = 0;
	return makeflow_opts_parse(argc, argv, o, err, errlen);
}

static void test_options(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_engine_wrapper");
	char old[4096];
	assert_non_null(getcwd(old, sizeof old));
	assert_int_equal(chdir(dir), 0);
	ts_write_file("Makeflow", "out:\n\ttouch out\n");
	char err[2048];
	struct makeflow_opts o;

	assert_int_equal(parse(&o, err, sizeof err, NULL), CLI_DONE);
	assert_null(o.engine.wrappers);
	assert_null(o.engine.archive_dir);
	assert_null(o.engine.mounts_path);
	makeflow_opts_clear(&o);

	assert_int_equal(parse(&o, err, sizeof err, "--wrapper", "time -p", "--wrapper=env -i {}",
	                       "--wrapper-input", "s.sh", "--wrapper-output=t.%%", "--mounts",
	                       "m.txt", "--cache=c", NULL),
	                 CLI_DONE);
	assert_string_equal(o.engine.wrappers[0], "time -p");
	assert_string_equal(o.engine.wrappers[1], "env -i {}");
	assert_null(o.engine.wrappers[2]);
	assert_string_equal(o.engine.wrapper_inputs[0], "s.sh");
	assert_null(o.engine.wrapper_inputs[1]);
	assert_string_equal(o.engine.wrapper_outputs[0], "t.%%");
	assert_string_equal(o.engine.mounts_path, "m.txt");
	assert_string_equal(o.engine.cache_dir, "c");
	assert_null(o.engine.archive_dir);
	makeflow_opts_clear(&o);

	assert_int_equal(parse(&o, err, sizeof err, "--cache-dir", "d", NULL), CLI_DONE);
	assert_string_equal(o.engine.cache_dir, "d");
	makeflow_opts_clear(&o);

	/* --archive: both ways, in /tmp/makeflow.archive.UID unless given */
	char def[64];
	snprintf(def, sizeof def, "/tmp/makeflow.archive.%ld", (long)getuid());
	assert_int_equal(parse(&o, err, sizeof err, "--archive", NULL), CLI_DONE);
	assert_string_equal(o.engine.archive_dir, def);
	assert_true(o.engine.archive_read && o.engine.archive_write);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, err, sizeof err, "--archive=/x/a", NULL), CLI_DONE);
	assert_string_equal(o.engine.archive_dir, "/x/a");
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, err, sizeof err, "--archive-read", "--archive-dir=/x/b", NULL),
	                 CLI_DONE);
	assert_string_equal(o.engine.archive_dir, "/x/b");
	assert_true(o.engine.archive_read);
	assert_false(o.engine.archive_write);
	makeflow_opts_clear(&o);
	assert_int_equal(parse(&o, err, sizeof err, "--archive-write=/x/c", NULL), CLI_DONE);
	assert_false(o.engine.archive_read);
	assert_true(o.engine.archive_write);
	makeflow_opts_clear(&o);

	assert_int_equal(parse(&o, err, sizeof err, "--archive-dir=/x/d", NULL), HTC_EPARSE);
	assert_string_equal(err, "--archive-dir /x/d: say what to do with the archive: "
	                         "--archive, --archive-read or --archive-write");
	assert_int_equal(parse(&o, err, sizeof err, "--archive=/x/a", "--archive-dir=/x/b", NULL),
	                 HTC_EPARSE);
	assert_string_equal(err, "two archive directories given: /x/a and /x/b");
	assert_int_equal(parse(&o, err, sizeof err, "--wrapper=", NULL), HTC_EPARSE);
	assert_string_equal(err, "--wrapper: expected a command, got an empty string");
	assert_int_equal(parse(&o, err, sizeof err, "--wrapper-input=", NULL), HTC_EPARSE);
	assert_string_equal(err, "--wrapper-input: expected a file name, got an empty string");
	assert_int_equal(parse(&o, err, sizeof err, "--mounts=", NULL), HTC_EPARSE);
	assert_string_equal(err, "--mounts: expected a file");

	/* "--archive DIR": the directory is taken for a second workflow */
	assert_int_equal(mkdir("adir", 0777), 0);
	assert_int_equal(parse(&o, err, sizeof err, "--archive", "adir", "Makeflow", NULL),
	                 HTC_EPARSE);
	assert_string_equal(err, "expected one workflow file, got 2: an archive directory is "
	                         "given as --archive=adir (the value is optional, so it needs "
	                         "the '=')");
	assert_int_equal(parse(&o, err, sizeof err, "--archive=adir", "Makeflow", NULL), CLI_DONE);
	makeflow_opts_clear(&o);
	rmdir("adir");
	unlink("Makeflow");
	assert_int_equal(chdir(old), 0);
	ts_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forms),
	    cmocka_unit_test(test_nesting_runs),
	    cmocka_unit_test(test_dag_files),
	    cmocka_unit_test(test_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
