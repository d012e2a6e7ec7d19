/* test_parser.c: unit tests for the Makeflow-language parser (parser.h):
 * every construct of doc/makeflow-language.md, every error message with its
 * line number, the hard caps, and a random-input loop that must never crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dag.h"
#include "parser.h"
#include "banned.h"

static char err[1024];

static struct dag *parse_opts(const char *text, const struct dag_parse_options *o)
{
	struct dag *d = dag_from_string(text, "t.mf", o, err, sizeof err);
	if (!d)
		fail_msg("unexpected error: %s", err);
	return d;
}

static struct dag *parse(const char *text)
{
	struct dag_parse_options o = {.ignore_environment = 1};
	return parse_opts(text, &o);
}

static void expect_error(const char *text, const char *message)
{
	struct dag_parse_options o = {.ignore_environment = 1};
	struct dag *d = dag_from_string(text, "t.mf", &o, err, sizeof err);
	if (d) {
		dag_delete(d);
		fail_msg("expected error '%s' for:\n%s", message, text);
	}
	if (strcmp(err, message) != 0)
		fail_msg("expected '%s', got '%s'", message, err);
}

static const char *cmd(struct dag *d, int i)
{
	assert_true(i < d->nnodes);
	return d->nodes[i]->command;
}

static void test_basic_rule(void **state)
{
	(void)state;
	struct dag *d = parse("out.txt tmp.dat: in.txt prog\n\t./prog in.txt > out.txt\n");
	assert_int_equal(d->nnodes, 1);
	struct dag_node *n = d->nodes[0];
	assert_int_equal(n->line, 1);
	assert_string_equal(n->command, "./prog in.txt > out.txt");
	assert_int_equal(n->noutputs, 2);
	assert_string_equal(n->outputs[0].file->name, "out.txt");
	assert_string_equal(n->outputs[1].file->name, "tmp.dat");
	assert_int_equal(n->ninputs, 2);
	assert_string_equal(n->inputs[1].file->name, "prog");
	assert_null(n->inputs[0].remote_name);
	assert_false(n->local);
	assert_ptr_equal(n->category, d->default_category);
	assert_true(dag_file_lookup(d, "in.txt")->is_source);
	assert_true(dag_file_lookup(d, "out.txt")->is_final_output);
	assert_string_equal(dag_env_get(n->env, "CATEGORY"), "default");
	assert_string_equal(d->filename, "t.mf");
	dag_delete(d);

	/* space-indented commands, no sources, blank lines, CRLF */
	d = parse("\r\nout:\r\n\r\n    echo hi\r\n");
	assert_string_equal(cmd(d, 0), "echo hi");
	assert_int_equal(d->nodes[0]->line, 2);
	assert_int_equal(d->nodes[0]->ninputs, 0);
	dag_delete(d);
}

static void test_comments(void **state)
{
	(void)state;
	struct dag *d = parse("# head\nA=1 # comment\n  # indented comment\nout: in # c\n"
	                      "\t# a comment line is not a command\n"
	                      "\techo $(A) \"a # b\" 'c # d' \\# # tail\n");
	assert_string_equal(cmd(d, 0), "echo 1 \"a # b\" 'c # d' \\#");
	assert_int_equal(d->nodes[0]->ninputs, 1);
	dag_delete(d);
	/* Decision: a comment on a variable line ends at the newline, even after '\' */
	d = parse("A=x # note \\\nB=2\nout:\n\techo $(A)$(B)\n");
	assert_string_equal(cmd(d, 0), "echo x2");
	dag_delete(d);
	/* a comment line ending in a backslash does not swallow the next line */
	d = parse("# note \\\nout:\n\techo\n");
	assert_int_equal(d->nnodes, 1);
	dag_delete(d);
}

static void test_continuation(void **state)
{
	(void)state;
	struct dag *d = parse("A=x \\\n   y\nout: b \\\n  c\n\techo 1 \\\n\t  2 $(A)\n");
	assert_string_equal(cmd(d, 0), "echo 1 2 x y");
	assert_int_equal(d->nodes[0]->ninputs, 2);
	assert_string_equal(d->nodes[0]->inputs[1].file->name, "c");
	assert_int_equal(d->nodes[0]->line, 3);
	dag_delete(d);
	/* line numbers keep counting through continuations */
	expect_error("A=1 \\\n 2\nout:\n\techo $(NOPE)\n", "t.mf:4: undefined variable 'NOPE'");
	/* an escaped backslash at the end does not continue */
	d = parse("A=x\\\\\nB=y\nout:\n\techo $(A)$(B)\n");
	assert_string_equal(cmd(d, 0), "echo x\\y");
	dag_delete(d);
}

static void test_rule_local(void **state)
{
	(void)state;
	struct dag *d = parse("X=g\nout:\n@CORES=2\n@MEMORY=1G\n@X=local\n"
	                      "@.MAKEFLOW CATEGORY big\n@.MAKEFLOW WALL_TIME 2h\n\techo $(X)\n"
	                      "o2:\n\techo $(X)\n");
	struct dag_node *n = d->nodes[0];
	assert_string_equal(n->command, "echo local");
	assert_int_equal(n->resources.cores, 2);
	assert_int_equal(n->resources.memory, 1024);
	assert_int_equal(n->resources.wall_time, 7200);
	assert_int_equal(n->explicit_resources, DAG_RES_CORES | DAG_RES_MEMORY | DAG_RES_WALL_TIME);
	assert_string_equal(n->category->name, "big");
	assert_string_equal(dag_env_get(n->env, "CORES"), "2");
	assert_string_equal(dag_env_get(n->env, "OMP_NUM_THREADS"), "2");
	assert_string_equal(dag_env_get(n->env, "CATEGORY"), "big");
	/* rule-local values end with the rule */
	struct dag_node *m = d->nodes[1];
	assert_string_equal(m->command, "echo g");
	assert_int_equal(m->resources.cores, -1);
	assert_ptr_equal(m->category, d->default_category);
	assert_null(dag_env_get(m->env, "CORES"));
	dag_delete(d);

	expect_error("@A=1\n", "t.mf:1: '@' line outside of a rule (it goes between a rule and "
	                       "its command)");
	expect_error("o:\n\tc\n@A=1\n", "t.mf:3: '@' line outside of a rule (it goes between a "
	                                "rule and its command)");
	expect_error("o:\n@.MAKEFLOW MODE MAX\n\tc\n",
	             "t.mf:2: .MAKEFLOW MODE applies to a category, not one rule");
	expect_error("o:\n@MAKEFLOW_INPUTS=x\n\tc\n",
	             "t.mf:2: MAKEFLOW_INPUTS cannot be set for one rule");
	expect_error("o:\n@CORES=many\n\tc\n", "t.mf:2: bad CORES value 'many'");
	expect_error("o:\n@.SIZE a 1\n\tc\n", "t.mf:2: .SIZE cannot be used for one rule");
}

static void test_command_errors(void **state)
{
	(void)state;
	expect_error("a: b\nc: d\n\techo\n", "t.mf:1: rule has no command");
	/* a file both read and made by one rule is a cycle (CCTools ignores it) */
	expect_error("data: data\n\tsort -o data data\n", "t.mf:1: cycle: data -> data");
	expect_error("x=1\na: b\n", "t.mf:2: rule has no command");
	expect_error("a: b\necho hi\n\techo\n",
	             "t.mf:1: rule has no command (line 2 'echo hi' is not indented: a command "
	             "line starts with a tab)");
	/* a command that lost its tab gets the hint */
	expect_error("a: b\necho hi > a\n",
	             "t.mf:1: rule has no command (line 2 'echo hi > a' is not indented: a "
	             "command line starts with a tab)");
	expect_error("a: b\n\n# note\nprog --with-a-very-long-list-of-options-that-goes-on > a\n",
	             "t.mf:1: rule has no command (line 4 "
	             "'prog --with-a-very-long-list-of-options-...' is not indented: a command "
	             "line starts with a tab)");
	expect_error("a: b\n\xc2\xa0"
	             "echo > a\n",
	             "t.mf:1: rule has no command (line 2 '\xc2\xa0"
	             "echo > a' starts with a "
	             "no-break space: a command line starts with a tab)");
	expect_error("E=\na:\n\t$(E)\n", "t.mf:3: empty command for the rule at line 2");
	expect_error("a:\n\tLOCAL\n", "t.mf:2: empty command for the rule at line 1");
	expect_error("a:\n\techo 1\n\techo 2\n",
	             "t.mf:3: a rule has only one command line (join commands with ';' or '&&')");
	expect_error("a:\n\techo 1\n\n# c\n\techo 2\n",
	             "t.mf:5: a rule has only one command line (join commands with ';' or '&&')");
	expect_error("\techo\n", "t.mf:1: command line outside of a rule");
	expect_error("A=1\n  echo\n", "t.mf:2: command line outside of a rule");
	expect_error(": in\n\tc\n", "t.mf:1: rule has no targets");
	expect_error("\"\": in\n\tc\n", "t.mf:1: empty file name");
	expect_error("a: ''\n\tc\n", "t.mf:1: empty file name");
	expect_error("a: b: c\n\tc\n", "t.mf:1: unexpected ':' in a file list (quote the name)");
	expect_error("hello world\n", "t.mf:1: expected a rule, an assignment or a directive");
	expect_error("1A=3\n", "t.mf:1: bad variable name '1A'");
	expect_error("A B=3\n", "t.mf:1: bad variable name 'A B'");
	expect_error("a:\n\techo 'abc\n", "t.mf:2: unterminated single quote");
	expect_error("a \"b: c\n\techo\n", "t.mf:1: unterminated double quote");
	expect_error("A=\"x\ny\"\n", "t.mf:1: unterminated double quote");
	expect_error("a:\n\tc\n\na:\n\td\n",
	             "t.mf:4: file 'a' is produced by rules at lines 1 and 4");
	expect_error("a: b\n\tc\nb: a\n\tc\n", "t.mf:1: cycle: a -> b -> a");
	expect_error("x: x\n\tc\n", "t.mf:1: cycle: x -> x");
}

static void test_remote_and_quotes(void **state)
{
	(void)state;
	struct dag *d = parse("out->r_out 'my file' \"x y\"->\"r y\": in->r_in prog ./dir/\n\tc\n");
	struct dag_node *n = d->nodes[0];
	assert_int_equal(n->noutputs, 3);
	assert_string_equal(n->outputs[0].file->name, "out");
	assert_string_equal(n->outputs[0].remote_name, "r_out");
	assert_string_equal(n->outputs[1].file->name, "my file");
	assert_null(n->outputs[1].remote_name);
	assert_string_equal(n->outputs[2].file->name, "x y");
	assert_string_equal(n->outputs[2].remote_name, "r y");
	assert_string_equal(n->inputs[0].remote_name, "r_in");
	assert_string_equal(n->inputs[2].file->name, "dir");
	dag_delete(d);

	expect_error("a->: b\n\tc\n", "t.mf:1: empty remote name after '->'");
	expect_error("->a: b\n\tc\n", "t.mf:1: empty local name before '->'");
	expect_error("a->b->c: x\n\tc\n", "t.mf:1: more than one '->' in one file name");
	expect_error("a: \"x\\ny\"\n\tc\n",
	             "t.mf:1: file name 'x\ny' contains a control character");
}

/* NAME=value between a rule and its command, without '@', is local to the
 * rule (the manual's "Rule Lexical Scope"), categories and resources too. */
static void test_rule_local_without_at(void **state)
{
	(void)state;
	struct dag *d = parse("V=orig\nCATEGORY=top\na:\nV=local\nCATEGORY=loc\nCORES=2\n"
	                      "\techo $(V) ${CATEGORY} $CATEGORY\nb:\n\techo $(V) $(CATEGORY)\n");
	struct dag_node *n = d->nodes[0];
	assert_string_equal(n->command, "echo local loc loc");
	assert_string_equal(n->category->name, "loc");
	assert_int_equal(n->resources.cores, 2);
	assert_string_equal(dag_env_get(n->env, "CATEGORY"), "loc");
	assert_string_equal(dag_env_get(n->env, "CORES"), "2");
	struct dag_node *m = d->nodes[1];
	assert_string_equal(m->command, "echo orig top");
	assert_string_equal(m->category->name, "top");
	assert_int_equal(m->resources.cores, -1);
	assert_string_equal(dag_env_get(m->env, "CATEGORY"), "top");
	dag_delete(d);

	/* both forms mix; += appends to the visible value; file lists see them */
	d = parse("V=a\n$(OUT):\nOUT=x\n@V+=b\nW = c \n\techo $(V) $(W)\n");
	assert_string_equal(cmd(d, 0), "echo a b c");
	assert_string_equal(d->nodes[0]->outputs[0].file->name, "x");
	dag_delete(d);

	/* an exported variable carries the rule-local value into the job */
	d = parse("V=orig\nexport V\na:\nV=local\n\tc\nb:\n@V=at\n\tc\nc:\n\tc\n");
	assert_string_equal(dag_env_get(d->nodes[0]->env, "V"), "local");
	assert_string_equal(dag_env_get(d->nodes[1]->env, "V"), "at");
	assert_string_equal(dag_env_get(d->nodes[2]->env, "V"), "orig");
	dag_delete(d);

	/* an assignment that was meant as the command is named in the error */
	expect_error("a:\nX=1 ./prog > a\nb:\n\tc\n",
	             "t.mf:1: rule has no command (line 2 was read as a rule-local assignment; "
	             "a command line starts with a tab)");
	expect_error("a:\nX=1\n", "t.mf:1: rule has no command (line 2 was read as a rule-local "
	                          "assignment; a command line starts with a tab)");
	expect_error("a:\nMAKEFLOW_OUTPUTS=a\n\tc\n",
	             "t.mf:2: MAKEFLOW_OUTPUTS cannot be set for one rule");
	/* export and directives still need '@' or the top level */
	expect_error("a:\nexport X=1\n\tc\n",
	             "t.mf:1: rule has no command (line 2 'export X=1' is not indented: a "
	             "command line starts with a tab)");
}

/* $(CATEGORY), ${CATEGORY} and $CATEGORY read the category of the rule. */
static void test_category_variable(void **state)
{
	(void)state;
	struct dag *d = parse("a:\n\techo ${CATEGORY} $CATEGORY $(CATEGORY)\n"
	                      ".MAKEFLOW CATEGORY dc\nb:\n\techo ${CATEGORY}/$CATEGORY\n"
	                      "CATEGORY=sim\nc: ${CATEGORY}.in\n@CATEGORY=one\n"
	                      "\techo '${CATEGORY}' \"${CATEGORY}\" $CATEGORY.x\n");
	assert_string_equal(cmd(d, 0), "echo default default default");
	assert_string_equal(cmd(d, 1), "echo dc/dc");
	assert_string_equal(cmd(d, 2), "echo '${CATEGORY}' \"one\" one.x");
	assert_string_equal(d->nodes[2]->inputs[0].file->name, "one.in");
	dag_delete(d);
}

/* Every MAKEFLOW_INPUTS / MAKEFLOW_OUTPUTS form: empty, quoted, appended. */
static void test_workflow_list_forms(void **state)
{
	(void)state;
	static const char *const empty[] = {"MAKEFLOW_INPUTS=\"\"\n", "MAKEFLOW_INPUTS=''\n",
	                                    "MAKEFLOW_INPUTS=\n", "MAKEFLOW_INPUTS=\"\" ''\n"};
	for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
		char text[256];
		snprintf(text, sizeof text, "%sa: in\n\tc\n", empty[i]);
		struct dag *d = parse(text);
		assert_int_equal(d->ninputs, 0);
		dag_delete(d);
	}
	struct dag *d = parse("MAKEFLOW_OUTPUTS=\"\"\na: in\n\tc\nb: a\n\tc\n");
	assert_true(d->outputs_declared);
	assert_int_equal(d->noutputs, 0);
	dag_delete(d);
	d = parse("MAKEFLOW_INPUTS=\"x\" 'y' z\nMAKEFLOW_INPUTS+=w\n"
	          "MAKEFLOW_OUTPUTS=\"a\" \nMAKEFLOW_OUTPUTS+= \"\" b\na b: in\n\tc\n");
	assert_true(dag_file_lookup(d, "x")->is_extra_input);
	assert_true(dag_file_lookup(d, "y")->is_extra_input);
	assert_true(dag_file_lookup(d, "z")->is_extra_input);
	assert_true(dag_file_lookup(d, "w")->is_extra_input);
	assert_true(dag_file_lookup(d, "a")->is_final_output);
	assert_true(dag_file_lookup(d, "b")->is_final_output);
	dag_delete(d);
}

/* Remote renaming with spaces around "->", on either side. */
static void test_remote_renaming_spaces(void **state)
{
	(void)state;
	struct dag *d = parse("out.1 -> out.txt o2 ->r2 o3-> r3: input.txt -> input.1 p\n"
	                      "\tcat input.1 > out.txt\n");
	struct dag_node *n = d->nodes[0];
	assert_int_equal(n->noutputs, 3);
	assert_string_equal(n->outputs[0].file->name, "out.1");
	assert_string_equal(n->outputs[0].remote_name, "out.txt");
	assert_string_equal(n->outputs[1].file->name, "o2");
	assert_string_equal(n->outputs[1].remote_name, "r2");
	assert_string_equal(n->outputs[2].file->name, "o3");
	assert_string_equal(n->outputs[2].remote_name, "r3");
	assert_int_equal(n->ninputs, 2);
	assert_string_equal(n->inputs[0].file->name, "input.txt");
	assert_string_equal(n->inputs[0].remote_name, "input.1");
	assert_string_equal(n->inputs[1].file->name, "p");
	assert_null(n->inputs[1].remote_name);
	dag_delete(d);
	d = parse("'a b' -> 'c d' :\n\tc\n");
	assert_string_equal(d->nodes[0]->outputs[0].file->name, "a b");
	assert_string_equal(d->nodes[0]->outputs[0].remote_name, "c d");
	dag_delete(d);

	expect_error("a -> : b\n\tc\n", "t.mf:1: empty remote name after '->'");
	expect_error("a: b ->\n\tc\n", "t.mf:1: empty remote name after '->'");
	expect_error("-> a: b\n\tc\n", "t.mf:1: empty local name before '->'");
	expect_error("a -> b -> c: x\n\tc\n", "t.mf:1: more than one '->' in one file name");
}

/* The default category takes CORES, MEMORY and DISK from the environment
 * when the workflow does not set them (the manual's categories example). */
static void test_resources_from_environment(void **state)
{
	(void)state;
	const char *text = "CATEGORY=\"preprocessing\"\nDISK=500\none: src\n\tcmd\n"
	                   "CATEGORY=\"simulation\"\nCORES=1\nMEMORY=400\nDISK=400\n"
	                   "three: src\n\tcmd\nCATEGORY=\"analysis\"\nCORES=4\nDISK=600\n"
	                   "five: src\n\tcmd\n";
	setenv("MEMORY", "800", 1);
	setenv("DISK", "7", 1);
	struct dag_parse_options o = {0};
	struct dag *d = parse_opts(text, &o);
	assert_int_equal(d->default_category->max.memory, 800);
	assert_int_equal(d->default_category->max.disk, 7);
	assert_int_equal(d->default_category->max.cores, -1);
	assert_string_equal(d->nodes[0]->category->name, "\"preprocessing\"");
	assert_int_equal(d->nodes[0]->category->max.disk, 500);
	assert_int_equal(d->nodes[1]->category->max.memory, 400);
	dag_delete(d);
	/* the workflow's own value wins; ignore_environment keeps it out */
	d = parse_opts("MEMORY=100\na:\n\tc\n", &o);
	assert_int_equal(d->default_category->max.memory, 100);
	dag_delete(d);
	d = parse(text);
	assert_int_equal(d->default_category->max.memory, -1);
	dag_delete(d);
	setenv("MEMORY", "lots", 1);
	assert_null(dag_from_string("a:\n\tc\n", "t.mf", &o, err, sizeof err));
	assert_string_equal(err, "t.mf: bad MEMORY value 'lots' in the environment (it gives "
	                         "the default category's MEMORY when the workflow does not)");
	unsetenv("MEMORY");
	unsetenv("DISK");
}

static void test_local_and_nested(void **state)
{
	(void)state;
	struct dag *d = parse("a:\n\tLOCAL echo hi\nb:\n\tLOCALX\nBATCH_LOCAL=true\nc:\n\tc\n"
	                      "BATCH_LOCAL=false\nd: sub.mf\n\tMAKEFLOW sub.mf dir x\n"
	                      "e:\n\tLOCAL MAKEFLOW other.mf\n");
	assert_true(d->nodes[0]->local);
	assert_string_equal(cmd(d, 0), "echo hi");
	assert_false(d->nodes[1]->local);
	assert_string_equal(cmd(d, 1), "LOCALX");
	assert_true(d->nodes[2]->local);
	struct dag_node *n = d->nodes[3];
	assert_false(n->local);
	assert_string_equal(n->workflow, "sub.mf");
	assert_string_equal(n->workflow_args, "dir x");
	assert_int_equal(n->ninputs, 1);
	assert_string_equal(n->command, "MAKEFLOW sub.mf dir x");
	n = d->nodes[4];
	assert_true(n->local);
	assert_string_equal(n->workflow, "other.mf");
	assert_null(n->workflow_args);
	assert_string_equal(n->inputs[0].file->name, "other.mf");
	assert_null(d->nodes[0]->workflow);
	dag_delete(d);
	expect_error("a:\n\tMAKEFLOW\n", "t.mf:2: MAKEFLOW needs a workflow file");
	expect_error("BATCH_LOCAL=maybe\n", "t.mf:1: bad BATCH_LOCAL value 'maybe' (use true or "
	                                    "false)");
}

static void test_escapes_and_quotes(void **state)
{
	(void)state;
	struct dag *d = parse("A=\"a\\tb\" c\\d\nB='$(A)'\nout:\n\techo $(A) '$(A)' \"$(A)\" "
	                      "\\$(A) $(B) $$ $1 a$ \\n\n");
	assert_string_equal(cmd(d, 0), "echo \"a\tb\" cd '$(A)' \"\"a\tb\" cd\" $(A) '$(A)' $$ "
	                               "$1 a$ \\n");
	dag_delete(d);
	/* "\$" hands a '$' to the shell (which expands it on the execution
	 * host); other escapes stay for the shell */
	d = parse("out:\n\techo \\$HOME \"\\$X\" '\\$Y' \\\" \\\\$$ awk '{print $1}'\n");
	assert_string_equal(cmd(d, 0), "echo $HOME \"$X\" '\\$Y' \\\" \\\\$$ awk '{print $1}'");
	dag_delete(d);
	d = parse("A=x\\ny\\q\nout:\n\techo \"$(A)\"\n");
	assert_string_equal(cmd(d, 0), "echo \"x\nyq\"");
	dag_delete(d);
	/* make's automatic variables are refused, not handed to the shell empty */
	expect_error("o: i\n\tcp $< $@\n",
	             "t.mf:2: '$<' is a make automatic variable, which the Makeflow language does "
	             "not have: write the file names (\\$< hands '$<' to the shell)");
	expect_error("o: i\n\tcat $^ > o\n",
	             "t.mf:2: '$^' is a make automatic variable, which the Makeflow language does "
	             "not have: write the file names (\\$^ hands '$^' to the shell)");
	d = parse("o: i\n\tsh -c 'echo \"$@\"' x \\$@ $? > o\n");
	assert_string_equal(cmd(d, 0), "sh -c 'echo \"$@\"' x $@ $? > o");
	dag_delete(d);
}

static void test_substitution(void **state)
{
	(void)state;
	struct dag *d = parse("X=1\nY=2\nN_2=two\nF=f.$X\n$(F) out.${Y}: in.$(X)\n"
	                      "\techo $(N_$(Y)) ${N_${Y}} $X$Y\n");
	struct dag_node *n = d->nodes[0];
	assert_string_equal(n->outputs[0].file->name, "f.1");
	assert_string_equal(n->outputs[1].file->name, "out.2");
	assert_string_equal(n->inputs[0].file->name, "in.1");
	assert_string_equal(n->command, "echo two two 12");
	dag_delete(d);

	/* a value holding several names gives several files */
	d = parse("IN=a b  \"c d\"\nout: $(IN)\n\tc\n");
	assert_int_equal(d->nodes[0]->ninputs, 3);
	assert_string_equal(d->nodes[0]->inputs[2].file->name, "c d");
	dag_delete(d);

	expect_error("out:\n\techo $(NOPE)\n", "t.mf:2: undefined variable 'NOPE'");
	expect_error("out: $(NOPE)\n\techo\n", "t.mf:1: undefined variable 'NOPE'");
	expect_error("A=$(B)\n", "t.mf:1: undefined variable 'B'");
	expect_error("o:\n\techo $(ls -l)\n", "t.mf:2: bad variable name 'ls -l' (use `...` for "
	                                      "shell command substitution)");
	expect_error("o:\n\techo $(A\n", "t.mf:2: unterminated variable reference '$('");
	expect_error("o:\n\techo ${}\n", "t.mf:2: empty variable name in '${}'");

	/* nesting deeper than the limit */
	char text[4096] = "A=";
	for (int i = 0; i < 150; i++)
		strncat(text, "$(", sizeof text - strlen(text) - 1);
	strncat(text, "X", sizeof text - strlen(text) - 1);
	for (int i = 0; i < 150; i++)
		strncat(text, ")", sizeof text - strlen(text) - 1);
	strncat(text, "\n", sizeof text - strlen(text) - 1);
	expect_error(text, "t.mf:1: variable substitution nested deeper than 100");
}

static void test_environment_lookup(void **state)
{
	(void)state;
	setenv("HTC_PARSER_TEST_VAR", "fromenv", 1);
	struct dag *d = parse_opts("out:\n\techo $(HTC_PARSER_TEST_VAR)\n"
	                           "HTC_PARSER_TEST_VAR=mine\no2:\n\techo $HTC_PARSER_TEST_VAR\n",
	                           NULL);
	assert_string_equal(cmd(d, 0), "echo fromenv");
	assert_string_equal(cmd(d, 1), "echo mine");
	dag_delete(d);
	expect_error("out:\n\techo $(HTC_PARSER_TEST_VAR)\n",
	             "t.mf:2: undefined variable 'HTC_PARSER_TEST_VAR'");
	unsetenv("HTC_PARSER_TEST_VAR");

	const char *defs[] = {"N=5", "EMPTY", NULL};
	struct dag_parse_options o = {.ignore_environment = 1, .defines = defs};
	d = parse_opts("out:\n\techo $(N)[$(EMPTY)]\n", &o);
	assert_string_equal(cmd(d, 0), "echo 5[]");
	dag_delete(d);
}

static void test_positional_and_append(void **state)
{
	(void)state;
	struct dag *d = parse("A=1\no1:\n\techo $(A)\nA=2\no2:\n\techo $(A)\nA+=3\nA += 4\n"
	                      "o3:\n\techo $(A)\nB+=x\no4:\n\techo $(B)\n");
	assert_string_equal(cmd(d, 0), "echo 1");
	assert_string_equal(cmd(d, 1), "echo 2");
	assert_string_equal(cmd(d, 2), "echo 2 3 4");
	assert_string_equal(cmd(d, 3), "echo x");
	dag_delete(d);
	expect_error("C=$(C) more\n", "t.mf:1: undefined variable 'C'");
	d = parse("C=a\nC=$(C) more\no:\n\techo $(C)\n");
	assert_string_equal(cmd(d, 0), "echo a more");
	dag_delete(d);
}

static void test_export(void **state)
{
	(void)state;
	struct dag *d = parse("export A=1\nB=2\nexport B\nexport C D\nC=3\nCORES=4\no:\n\tc\n"
	                      "export OMP_NUM_THREADS=1\nA=changed\no2:\n\tc\no3:\n\tc\n");
	struct dag_env *e = d->nodes[0]->env;
	assert_string_equal(dag_env_get(e, "A"), "1");
	assert_string_equal(dag_env_get(e, "B"), "2");
	assert_string_equal(dag_env_get(e, "C"), "3");
	assert_null(dag_env_get(e, "D"));
	assert_string_equal(dag_env_get(e, "CORES"), "4");
	assert_string_equal(dag_env_get(e, "OMP_NUM_THREADS"), "4");
	assert_string_equal(dag_env_get(e, "CATEGORY"), "default");
	e = d->nodes[1]->env;
	assert_string_equal(dag_env_get(e, "A"), "changed");
	assert_string_equal(dag_env_get(e, "OMP_NUM_THREADS"), "1");
	/* unchanged environments are shared, not copied */
	assert_ptr_equal(d->nodes[1]->env, d->nodes[2]->env);
	dag_delete(d);

	expect_error("export\n", "t.mf:1: export needs a variable name");
	expect_error("export 1x\n", "t.mf:1: bad variable name '1x' in export");
	expect_error("export A=$(NOPE)\n", "t.mf:1: undefined variable 'NOPE'");
}

static void test_categories(void **state)
{
	(void)state;
	struct dag *d = parse("X=g\nCORES=1\nCATEGORY=big\nX=c\nCORES=2\nMEMORY=2G\nDISK=10\n"
	                      ".MAKEFLOW MODE MAX_THROUGHPUT\no1:\n\techo $(X) $(CATEGORY)\n"
	                      "o2:\n@X=l\n\techo $(X)\nCORES=4\n"
	                      ".MAKEFLOW CATEGORY other\no3:\n\techo $(X)\nCATEGORY=default\n"
	                      "o4:\n\techo $(X)\n");
	struct dag_category *big = dag_category_lookup(d, "big");
	assert_non_null(big);
	assert_int_equal(big->mode, DAG_MODE_MAX_THROUGHPUT);
	assert_int_equal(big->max.cores, 4); /* the last value in the file */
	assert_int_equal(big->max.memory, 2048);
	assert_int_equal(big->max.disk, 10);
	struct dag_node *n = d->nodes[0];
	assert_string_equal(n->command, "echo c big");
	assert_ptr_equal(n->category, big);
	assert_int_equal(n->resources.cores, 4);
	assert_int_equal(n->explicit_resources, 0);
	/* the exported value stays positional */
	assert_string_equal(dag_env_get(n->env, "CORES"), "2");
	assert_string_equal(dag_env_get(n->env, "MEMORY"), "2048");
	assert_string_equal(cmd(d, 1), "echo l");
	/* a category without its own value falls back to the default category */
	assert_string_equal(cmd(d, 2), "echo g");
	assert_string_equal(d->nodes[2]->category->name, "other");
	assert_int_equal(d->nodes[2]->resources.cores, 1);
	assert_string_equal(dag_env_get(d->nodes[2]->env, "CORES"), "1");
	assert_ptr_equal(d->nodes[3]->category, d->default_category);
	assert_string_equal(cmd(d, 3), "echo g");
	assert_int_equal(d->default_category->max.cores, 1);
	int count = 0;
	for (struct dag_category *c = dag_categories(d); c; c = dag_category_next(c))
		count++;
	assert_int_equal(count, 3);
	dag_delete(d);

	/* CATEGORY= (empty) goes back to the default category */
	d = parse("CATEGORY=x\nCATEGORY=\no:\n\techo $(CATEGORY)\n");
	assert_ptr_equal(d->nodes[0]->category, d->default_category);
	assert_string_equal(cmd(d, 0), "echo default");
	dag_delete(d);
	expect_error("CATEGORY=a b\n", "t.mf:1: bad category name 'a b'");
}

static void test_directives(void **state)
{
	(void)state;
	struct dag *d = parse(".MAKEFLOW CATEGORY x\n.MAKEFLOW CORES 3\n.MAKEFLOW MEMORY 512\n"
	                      ".MAKEFLOW DISK 1T\n.MAKEFLOW WALL_TIME 1h\n.MAKEFLOW GPUS 1\n"
	                      ".MAKEFLOW MODE min_waste\n.SIZE in 10K\n.SIZE \"big file\" 3\n"
	                      "out: in\n\tc\n");
	struct dag_category *x = dag_category_lookup(d, "x");
	assert_int_equal(x->max.cores, 3);
	assert_int_equal(x->max.memory, 512);
	assert_int_equal(x->max.disk, 1048576);
	assert_int_equal(x->max.wall_time, 3600);
	assert_int_equal(x->max.gpus, 1);
	assert_int_equal(x->mode, DAG_MODE_MIN_WASTE);
	assert_int_equal(dag_file_lookup(d, "in")->size_hint, 10240);
	assert_int_equal(dag_file_lookup(d, "big file")->size_hint, 3);
	assert_int_equal(dag_file_lookup(d, "out")->size_hint, -1);
	assert_int_equal(d->nodes[0]->resources.memory, 512);
	dag_delete(d);

	expect_error(".MAKEFLOW BOGUS 1\n", "t.mf:1: unknown directive '.MAKEFLOW BOGUS'");
	expect_error(".MAKEFLOW\n", "t.mf:1: .MAKEFLOW needs a directive name");
	expect_error(".FOO bar\n", "t.mf:1: unknown directive '.FOO'");
	expect_error("\n.MAKEFLOW CORES\n", "t.mf:2: .MAKEFLOW CORES needs one value");
	expect_error("MEMORY=lots\n", "t.mf:1: bad MEMORY value 'lots'");
	expect_error("CORES=1.5\n", "t.mf:1: bad CORES value '1.5'");
	expect_error("WALL_TIME=-1\n", "t.mf:1: bad WALL_TIME value '-1'");
	expect_error(".MAKEFLOW MODE FAST\n", "t.mf:1: bad .MAKEFLOW MODE 'FAST' (FIXED, MAX, "
	                                      "MIN_WASTE or MAX_THROUGHPUT)");
	/* the file form keeps CCTools' four modes; warm-up is --allocation warmup only */
	expect_error(".MAKEFLOW MODE WARMUP\n", "t.mf:1: bad .MAKEFLOW MODE 'WARMUP' (FIXED, "
	                                        "MAX, MIN_WASTE or MAX_THROUGHPUT)");
	expect_error(".SIZE f\n", "t.mf:1: .SIZE needs a file name and a size");
	expect_error(".SIZE f huge\n", "t.mf:1: bad .SIZE value 'huge'");
	expect_error(".MAKEFLOW MPI_PROCESSES 4\n",
	             "t.mf:1: .MAKEFLOW MPI_PROCESSES is not supported by this makeflow (no batch "
	             "type here starts MPI jobs; start them in the command, as with srun)");
	expect_error(".MAKEFLOW CATEGORY 1 .UMBRELLA SPEC s.umbrella\n",
	             "t.mf:1: .MAKEFLOW CATEGORY needs one value");
	expect_error(".UMBRELLA SPEC s.umbrella\n", "t.mf:1: unknown directive '.UMBRELLA'");
}

static void test_batch_and_workflow_lists(void **state)
{
	(void)state;
	struct dag *d = parse("BATCH_OPTIONS=-q long\nMAKEFLOW_INPUTS=in1 in2\n"
	                      "MAKEFLOW_OUTPUTS=a\na b: in1\n\tc\nBATCH_OPTIONS=\nc:\n\tc\n");
	assert_string_equal(d->nodes[0]->batch_options, "-q long");
	assert_null(d->nodes[1]->batch_options);
	assert_int_equal(d->ninputs, 2);
	assert_true(dag_file_lookup(d, "in2")->is_extra_input);
	assert_int_equal(d->noutputs, 1);
	assert_true(d->outputs_declared);
	assert_true(dag_file_lookup(d, "a")->is_final_output);
	assert_false(dag_file_lookup(d, "b")->is_final_output);
	assert_false(dag_file_lookup(d, "c")->is_final_output);
	dag_delete(d);
	/* without MAKEFLOW_OUTPUTS every unconsumed product is an output */
	d = parse("a b: in\n\tc\nc: a\n\tc\n");
	assert_int_equal(d->noutputs, 2);
	assert_false(dag_file_lookup(d, "a")->is_final_output);
	assert_true(dag_file_lookup(d, "b")->is_final_output);
	assert_true(dag_file_lookup(d, "c")->is_final_output);
	assert_false(dag_file_lookup(d, "in")->is_final_output);
	dag_delete(d);
}

static void test_headers_vs_assignments(void **state)
{
	(void)state;
	struct dag *d = parse("A=x:y\nexport P=/a:/b\n\"t:1\" t2: in\n\techo $(A)\n");
	assert_string_equal(cmd(d, 0), "echo x:y");
	assert_string_equal(d->nodes[0]->outputs[0].file->name, "t:1");
	assert_string_equal(dag_env_get(d->nodes[0]->env, "P"), "/a:/b");
	dag_delete(d);
}

static void test_caps(void **state)
{
	(void)state;
	struct dag_parse_options o = {.ignore_environment = 1, .max_line = 100};
	char text[512];
	memset(text, 'a', 300);
	memcpy(text + 300, ":\n\tc\n", 6);
	assert_null(dag_from_string(text, "t.mf", &o, err, sizeof err));
	assert_string_equal(err, "t.mf:1: line longer than 100 bytes");
	/* continuations count too */
	char cont[1024] = "A=";
	for (int i = 0; i < 20; i++)
		strncat(cont, "xxxxxxxxx \\\n", sizeof cont - strlen(cont) - 1);
	strncat(cont, "\n", sizeof cont - strlen(cont) - 1);
	assert_null(dag_from_string(cont, "t.mf", &o, err, sizeof err));
	assert_string_equal(err, "t.mf:1: line longer than 100 bytes");

	/* doubling a value cannot run away */
	struct dag_parse_options small = {.ignore_environment = 1, .max_expansion = 4096};
	char dbl[4096] = "A=xxxxxxxxxxxxxxxx\n";
	for (int i = 0; i < 40; i++)
		strncat(dbl, "A=$(A)$(A)\n", sizeof dbl - strlen(dbl) - 1);
	assert_null(dag_from_string(dbl, "t.mf", &small, err, sizeof err));
	assert_string_equal(err, "t.mf:10: expansion longer than 4096 bytes");
	/* and neither can many lines each below the per-line cap */
	char many[65536] =
	    "A=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n";
	for (int i = 0; i < 2000; i++)
		strncat(many, "B=$(A)$(A)$(A)$(A)$(A)$(A)\n", sizeof many - strlen(many) - 1);
	small.max_expansion = 1024;
	assert_null(dag_from_string(many, "t.mf", &small, err, sizeof err));
	assert_non_null(strstr(err, "variable substitutions exceed 262144 bytes in total"));

	/* NUL bytes */
	assert_null(dag_from_buffer("a:\n\tc\0x\n", 8, "t.mf", NULL, err, sizeof err));
	assert_string_equal(err, "t.mf:2: NUL byte in the workflow");
}

/* The workflow of the report: a 1 MB variable referenced 8 times by each of
 * 300 rules (2.4 GB of commands from a 1 MB file). */
static char *amplifier(size_t value, int rules, size_t *len)
{
	size_t cap = value + 64 + (size_t)rules * 128;
	char *text = malloc(cap);
	size_t n = (size_t)snprintf(text, cap, "BIG=");
	memset(text + n, 'x', value);
	n += value;
	text[n++] = '\n';
	for (int i = 0; i < rules; i++)
		n += (size_t)snprintf(
		    text + n, cap - n,
		    "o%d:\n\techo $(BIG)$(BIG)$(BIG)$(BIG)$(BIG)$(BIG)$(BIG)$(BIG) "
		    "> o%d\n",
		    i, i);
	*len = n;
	return text;
}

static void test_memory_budget(void **state)
{
	(void)state;
	/* expansions count: stopped with the file and the line of the rule */
	size_t len;
	char *text = amplifier(1 << 20, 300, &len);
	struct dag_parse_options o = {.ignore_environment = 1, .max_memory = 64 << 20};
	assert_null(dag_from_buffer(text, len, "big.mf", &o, err, sizeof err));
	assert_non_null(strstr(err, "parsing needs more than the memory budget of 64 MiB"));
	assert_non_null(strstr(err, "--parse-memory"));
	int line = 0;
	assert_int_equal(sscanf(err, "big.mf:%d:", &line), 1);
	assert_true(line > 2 && line % 2 == 0); /* a rule's header */
	free(text);
	/* the same shape that fits is parsed */
	text = amplifier(1 << 10, 300, &len);
	struct dag *d = dag_from_buffer(text, len, "big.mf", &o, err, sizeof err);
	if (!d)
		fail_msg("%s", err);
	assert_int_equal(d->nnodes, 300);
	dag_delete(d);
	free(text);

	/* a line of any length is fine within the budget, and counts against it */
	size_t big = 3 << 20;
	text = malloc(big + 64);
	len = (size_t)snprintf(text, 64, "out:\n\techo ");
	memset(text + len, 'y', big);
	len += big;
	len += (size_t)snprintf(text + len, 64, " > out\n");
	d = dag_from_buffer(text, len, "long.mf", NULL, err, sizeof err);
	if (!d)
		fail_msg("%s", err);
	assert_int_equal(strlen(d->nodes[0]->command), big + 11);
	dag_delete(d);
	o.max_memory = 1 << 20;
	assert_null(dag_from_buffer(text, len, "long.mf", &o, err, sizeof err));
	assert_non_null(
	    strstr(err, "long.mf:2: parsing needs more than the memory budget of 1 MiB"));
	free(text);

	/* values held in variables count */
	size_t cap = 200 * 12000;
	text = malloc(cap);
	len = 0;
	for (int i = 0; i < 200; i++) {
		len += (size_t)snprintf(text + len, cap - len, "V%d=", i);
		memset(text + len, 'z', 10000);
		len += 10000;
		text[len++] = '\n';
	}
	assert_null(dag_from_buffer(text, len, "vars.mf", &o, err, sizeof err));
	assert_non_null(strstr(err, "parsing needs more than the memory budget"));
	assert_int_equal(sscanf(err, "vars.mf:%d:", &line), 1);
	assert_true(line > 90 && line < 110);
	free(text);
}

/* The default budget is 1 GiB, or half of a lower address-space limit. */
static void test_default_budget(void **state)
{
	(void)state;
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_AS, &rl), 0);
	if (rl.rlim_cur == RLIM_INFINITY)
		assert_true(dag_parse_default_memory() <= DAG_PARSE_MEMORY);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		rl.rlim_cur = (rlim_t)512 << 20;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < rl.rlim_cur)
			rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_AS, &rl) != 0)
			_exit(2);
		_exit(dag_parse_default_memory() == rl.rlim_cur / 2 ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_from_file(void **state)
{
	(void)state;
	char path[] = "/tmp/test_parser.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *text = "out: in\n\techo hi > out\nbad line\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct dag *d = dag_from_file(path, NULL, err, sizeof err);
	assert_null(d);
	char expect[256];
	snprintf(expect, sizeof expect, "%s:3: expected a rule, an assignment or a directive",
	         path);
	assert_string_equal(err, expect);
	FILE *f = fopen(path, "w");
	fputs("out: in\n\techo hi > out", f); /* no final newline */
	fclose(f);
	d = dag_from_file(path, NULL, err, sizeof err);
	assert_non_null(d);
	assert_string_equal(cmd(d, 0), "echo hi > out");
	dag_delete(d);
	unlink(path);
	assert_null(dag_from_file("/nonexistent/Makeflow", NULL, err, sizeof err));
	assert_non_null(strstr(err, "/nonexistent/Makeflow: cannot open"));
}

static void test_many_rules(void **state)
{
	(void)state;
	size_t cap = 100000 * 40;
	char *text = malloc(cap);
	size_t len = 0;
	for (int i = 0; i < 100000; i++)
		len += (size_t)snprintf(text + len, cap - len, "out.%d: in\n\techo %d > out.%d\n",
		                        i, i, i);
	struct dag *d = parse(text);
	assert_int_equal(d->nnodes, 100000);
	assert_int_equal(d->nfiles, 100001);
	assert_ptr_equal(d->nodes[0]->env, d->nodes[99999]->env);
	assert_int_equal(dag_file_lookup(d, "in")->nconsumers, 100000);
	dag_delete(d);
	free(text);
}

/* Random bytes and random mixes of language fragments never crash. */
static void test_garbage(void **state)
{
	(void)state;
	static const char *const frags[] = {
	    "a",       "b:",         ":",        "=",          "+=",        "$(",     "${",
	    "$",       ")",          "}",        "\"",         "'",         "\\",     "\n",
	    "\t",      " ",          "#",        "@",          "->",        "LOCAL ", "MAKEFLOW ",
	    "export ", ".MAKEFLOW ", "CATEGORY", "CORES",      "MEMORY=",   "2G",     ".SIZE ",
	    "X",       "$(X)",       "\r",       "@CORES=1\n", "out: in\n",
	};
	struct dag_parse_options o = {.ignore_environment = 1, .max_expansion = 1 << 16};
	srand(12345);
	char buf[512];
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = 0;
		if (iter % 2) {
			len = (size_t)(rand() % (int)sizeof buf);
			for (size_t i = 0; i < len; i++)
				buf[i] = (char)(rand() % 256);
		} else {
			while (len < sizeof buf - 32) {
				const char *f = frags[rand() % (int)(sizeof frags / sizeof *frags)];
				size_t n = strlen(f);
				memcpy(buf + len, f, n);
				len += n;
				if (rand() % 40 == 0)
					break;
			}
		}
		struct dag *d = dag_from_buffer(buf, len, "g.mf", &o, err, sizeof err);
		if (d)
			dag_delete(d);
		else
			assert_true(strncmp(err, "g.mf:", 5) == 0);
	}
}

/* CONTAINER, CONTAINER_IMAGE_TAR and CONTAINER_MODE: from the rule's scope (rule, category,
 * workflow); the archive is an input of the rule; bad values name the line. */
static void test_containers(void **state)
{
	(void)state;
	struct dag *d = parse("CONTAINER=busybox:1\n"
	                      "a:\n\tc\n"
	                      "CATEGORY=t\nCONTAINER=\nCONTAINER_IMAGE_TAR=img.tar\n"
	                      "CONTAINER_MODE=shared\n"
	                      "b:\n\tc\n"
	                      "c:\n@CONTAINER_MODE=none\n\tc\n");
	assert_int_equal(d->nnodes, 3);
	assert_string_equal(d->nodes[0]->container_image, "busybox:1");
	assert_null(d->nodes[0]->container_archive);
	assert_int_equal(d->nodes[0]->container_mode, DAG_CONTAINER_UNSET);
	assert_null(d->nodes[1]->container_image);
	assert_string_equal(d->nodes[1]->container_archive, "img.tar");
	assert_int_equal(d->nodes[1]->container_mode, DAG_CONTAINER_SHARED);
	assert_int_equal(d->nodes[1]->ninputs, 1);
	assert_string_equal(d->nodes[1]->inputs[0].file->name, "img.tar");
	assert_int_equal(d->nodes[2]->container_mode, DAG_CONTAINER_NONE);
	dag_delete(d);
	expect_error("a:\n@CONTAINER_MODE=fast\n\tc\n",
	             "t.mf:1: CONTAINER_MODE='fast': expected none, task or shared");
	expect_error("CONTAINER=no way\na:\n\tc\n",
	             "t.mf:2: CONTAINER='no way': not an image name (1-255 letters, digits and . "
	             "_ - / : @, starting with a letter or digit)");
	expect_error("CONTAINER=x\nCONTAINER_IMAGE_TAR=x.tar\na:\n\tc\n",
	             "t.mf:3: CONTAINER='x' and CONTAINER_IMAGE_TAR='x.tar' both apply: name the "
	             "image or its archive, not both");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basic_rule),
	    cmocka_unit_test(test_comments),
	    cmocka_unit_test(test_continuation),
	    cmocka_unit_test(test_rule_local),
	    cmocka_unit_test(test_command_errors),
	    cmocka_unit_test(test_remote_and_quotes),
	    cmocka_unit_test(test_rule_local_without_at),
	    cmocka_unit_test(test_category_variable),
	    cmocka_unit_test(test_workflow_list_forms),
	    cmocka_unit_test(test_remote_renaming_spaces),
	    cmocka_unit_test(test_resources_from_environment),
	    cmocka_unit_test(test_local_and_nested),
	    cmocka_unit_test(test_escapes_and_quotes),
	    cmocka_unit_test(test_substitution),
	    cmocka_unit_test(test_environment_lookup),
	    cmocka_unit_test(test_positional_and_append),
	    cmocka_unit_test(test_export),
	    cmocka_unit_test(test_categories),
	    cmocka_unit_test(test_directives),
	    cmocka_unit_test(test_batch_and_workflow_lists),
	    cmocka_unit_test(test_headers_vs_assignments),
	    cmocka_unit_test(test_caps),
	    cmocka_unit_test(test_memory_budget),
	    cmocka_unit_test(test_default_budget),
	    cmocka_unit_test(test_from_file),
	    cmocka_unit_test(test_many_rules),
	    cmocka_unit_test(test_garbage),
	    cmocka_unit_test(test_containers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
