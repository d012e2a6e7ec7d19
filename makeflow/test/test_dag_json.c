/* test_dag_json.c: unit tests for the JSON workflow front end (dag_from_json
 * in parser.h): rules, renamed files, nested workflows, categories,
 * resources, environments, and errors that name the rule index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "dag.h"
#include "parser.h"
#include "workflow_keys.h"
#include "banned.h"

static char err[512];

static struct dag *load(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	if (!j)
		fail_msg("bad test JSON: %s", jerr.text);
	struct dag *d = dag_from_json(j, "w.json", err, sizeof err);
	json_decref(j);
	return d;
}

static void expect_error(const char *text, const char *message)
{
	struct dag *d = load(text);
	if (d) {
		dag_delete(d);
		fail_msg("expected error '%s'", message);
	}
	if (strcmp(err, message) != 0)
		fail_msg("expected '%s', got '%s'", message, err);
}

static void test_rules(void **state)
{
	(void)state;
	struct dag *d = load(
	    "{\"define\": {\"N\": 3},"
	    " \"environment\": {\"G\": \"g\", \"OVER\": \"global\", \"NUM\": 5},"
	    " \"categories\": {\"big\": {\"resources\": {\"cores\": 4, \"memory\": 2048},"
	    "                           \"environment\": {\"OVER\": \"cat\"},"
	    "                           \"mode\": \"max_throughput\"}},"
	    " \"default_category\": \"small\","
	    " \"rules\": ["
	    "  {\"command\": \"echo 0 > out.0\", \"outputs\": [\"out.0\"], \"inputs\": [\"in\"]},"
	    "  {\"command\": \"cat out.0 > all\","
	    "   \"inputs\": [{\"dag_name\": \"out.0\", \"task_name\": \"o\"}],"
	    "   \"outputs\": [{\"dag_name\": \"all\"}], \"local_job\": true, \"category\": \"big\","
	    "   \"resources\": {\"cores\": 2, \"wall-time\": 60, \"disk\": \"1G\"},"
	    "   \"allocation\": \"max\", \"environment\": {\"R\": \"r\"}},"
	    "  {\"workflow\": \"sub.json\", \"args\": {\"x\": 1}, \"outputs\": [\"subout\"]}"
	    " ]}");
	if (!d)
		fail_msg("%s", err);
	assert_int_equal(d->nnodes, 3);
	struct dag_node *a = d->nodes[0], *b = d->nodes[1], *c = d->nodes[2];
	assert_string_equal(a->command, "echo 0 > out.0");
	assert_string_equal(a->category->name, "small");
	assert_false(a->local);
	assert_string_equal(dag_env_get(a->env, "G"), "g");
	assert_string_equal(dag_env_get(a->env, "OVER"), "global");
	assert_string_equal(dag_env_get(a->env, "NUM"), "5");
	assert_string_equal(dag_env_get(a->env, "CATEGORY"), "small");
	assert_true(b->local);
	assert_int_equal(b->allocation, DAG_ALLOCATION_MAX);
	assert_string_equal(b->inputs[0].remote_name, "o");
	assert_null(b->outputs[0].remote_name);
	assert_int_equal(b->nparents, 1);
	assert_ptr_equal(b->parents[0], a);
	assert_int_equal(b->resources.cores, 2);
	assert_int_equal(b->resources.memory, 2048);
	assert_int_equal(b->resources.disk, 1024);
	assert_int_equal(b->resources.wall_time, 60);
	assert_int_equal(b->explicit_resources, DAG_RES_CORES | DAG_RES_DISK | DAG_RES_WALL_TIME);
	assert_string_equal(b->category->name, "big");
	assert_int_equal(b->category->mode, DAG_MODE_MAX_THROUGHPUT);
	assert_string_equal(dag_env_get(b->env, "OVER"), "cat");
	assert_string_equal(dag_env_get(b->env, "R"), "r");
	assert_string_equal(dag_env_get(b->env, "CORES"), "2");
	assert_string_equal(dag_env_get(b->env, "OMP_NUM_THREADS"), "2");
	assert_string_equal(dag_env_get(b->env, "MEMORY"), "2048");
	assert_string_equal(c->workflow, "sub.json");
	assert_string_equal(c->workflow_args, "{\n \"x\": 1\n}");
	assert_string_equal(c->inputs[0].file->name, "sub.json");
	assert_true(dag_file_lookup(d, "all")->is_final_output);
	assert_true(dag_file_lookup(d, "subout")->is_final_output);
	assert_true(dag_file_lookup(d, "in")->is_source);
	dag_delete(d);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("[]", "w.json: a workflow must be a JSON object");
	expect_error("{}", "w.json: missing 'rules'");
	expect_error("{\"rules\": 3}", "w.json: 'rules' must be a list");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"]}, 4]}",
	             "w.json: rule 1: must be an object");
	expect_error("{\"rules\": [{\"command\": 3}]}",
	             "w.json: rule 0: 'command' must be a string");
	expect_error("{\"rules\": [{}]}", "w.json: rule 0: needs 'command' or 'workflow'");
	expect_error("{\"rules\": [{\"command\": \"  \"}]}", "w.json: rule 0: empty 'command'");
	expect_error("{\"rules\": [{\"command\": \"x\", \"workflow\": \"y\"}]}",
	             "w.json: rule 0: has both 'command' and 'workflow'");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": \"a\"}]}",
	             "w.json: rule 0: 'outputs' must be a list");
	expect_error("{\"rules\": [{\"command\": \"x\", \"inputs\": [1]}]}",
	             "w.json: rule 0: 'inputs' entries must be strings or objects");
	expect_error("{\"rules\": [{\"command\": \"x\", \"inputs\": [{\"task_name\": \"a\"}]}]}",
	             "w.json: rule 0: 'inputs' entry 0 needs a string 'dag_name'");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"\"]}]}",
	             "w.json: rule 0: empty file name in 'outputs'");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"], \"local_job\": 1}]}",
	             "w.json: rule 0: 'local_job' must be true or false");
	expect_error(
	    "{\"rules\": [{\"command\": \"x\", \"resources\": {\"cpus\": 1}}]}",
	    "w.json: rule 0: unknown key 'cpus' in 'resources' (known: cores, memory, disk, "
	    "gpus, wall-time, wall_time)");
	expect_error(
	    "{\"rules\": [{\"command\": \"x\", \"resources\": {\"cores\": -1}}]}",
	    "w.json: rule 0: bad value '-1' for resource 'cores' (expected a whole number)");
	expect_error(
	    "{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"], \"allocation\": \"some\"}]}",
	    "w.json: rule 0: 'allocation' must be \"auto\", \"max\" or \"error\"");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"], \"environment\": "
	             "{\"A\": []}}]}",
	             "w.json: rule 0: 'environment' value of 'A' must be a string or a number");
	expect_error("{\"rules\": [{\"command\": \"x\", \"category\": 5}]}",
	             "w.json: rule 0: 'category' must be a non-empty string");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"a\"]},"
	             "{\"command\": \"y\", \"outputs\": [\"a\"]}]}",
	             "w.json: file 'a' is produced by rules 0 and 1");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"a\"], \"inputs\": [\"b\"]},"
	             "{\"command\": \"y\", \"outputs\": [\"b\"], \"inputs\": [\"a\"]}]}",
	             "w.json: rule 0: cycle: a -> b -> a");
	expect_error("{\"rules\": [], \"categories\": {\"c\": {\"resources\": 1}}}",
	             "w.json: 'resources' must be an object");
	expect_error("{\"rules\": [], \"categories\": {\"c\": {\"mode\": \"fast\"}}}",
	             "w.json: bad 'mode' for category 'c'");
	expect_error("{\"rules\": [], \"default_category\": \"\"}",
	             "w.json: 'default_category' must be a non-empty string");
}

/* The JSON form follows the rules of the Make-like form, and every key is
 * known to the key table (workflow_keys.h). */
static void test_strict(void **state)
{
	(void)state;
	/* fractions of cores, as "CORES=1.5" */
	expect_error(
	    "{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"],"
	    " \"resources\": {\"cores\": 1.5}}]}",
	    "w.json: rule 0: bad value '1.5' for resource 'cores' (expected a whole number)");
	expect_error(
	    "{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"],"
	    " \"resources\": {\"gpus\": \"lots\"}}]}",
	    "w.json: rule 0: bad value 'lots' for resource 'gpus' (expected a whole number)");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"],"
	             " \"resources\": {\"memory\": true}}]}",
	             "w.json: rule 0: bad value for resource 'memory' (expected MB or a size such "
	             "as \"2G\")");
	/* no outputs, as "rule has no targets" */
	expect_error(
	    "{\"rules\": [{\"command\": \"x\", \"outputs\": []}]}",
	    "w.json: rule 0: has no outputs (a rule names at least one file in 'outputs')");
	expect_error(
	    "{\"rules\": [{\"command\": \"x\"}]}",
	    "w.json: rule 0: has no outputs (a rule names at least one file in 'outputs')");
	/* unknown keys everywhere, with a suggestion when one is close */
	expect_error("{\"rules\": [{\"comand\": \"x\", \"outputs\": [\"o\"]}]}",
	             "w.json: rule 0: unknown key 'comand' in a rule (did you mean 'command'?)");
	expect_error("{\"rules\": [], \"categoires\": {}}",
	             "w.json: unknown key 'categoires' in the workflow (did you mean "
	             "'categories'?)");
	expect_error(
	    "{\"rules\": [], \"categories\": {\"c\": {\"cores\": 2}}}",
	    "w.json: unknown key 'cores' in a category (known: resources, environment, mode)");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [{\"dag_name\": \"o\","
	             " \"remote_name\": \"r\"}]}]}",
	             "w.json: rule 0: unknown key 'remote_name' in a file object (known: dag_name, "
	             "task_name)");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"], \"zzz\": 1}]}",
	             "w.json: rule 0: unknown key 'zzz' in a rule (known: command, workflow, args, "
	             "inputs, outputs, local_job, category, resources, allocation, environment, "
	             "container)");
	/* keys CCTools knows and this makeflow does not build */
	expect_error("{\"rules\": [{\"makeflow\": {\"path\": \"s.json\"}, \"outputs\": [\"o\"]}]}",
	             "w.json: rule 0: key 'makeflow' in a rule is not supported by this makeflow "
	             "(CCTools' older form of a nested workflow; write \"workflow\": FILE and "
	             "\"args\": {...})");
	/* a rule's container */
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"],"
	             " \"container\": \"debian\"}]}",
	             "w.json: rule 0: 'container' must be an object");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"],"
	             " \"container\": {\"type\": \"singularity\", \"image\": \"x\"}}]}",
	             "w.json: rule 0: 'container.type' must be \"docker\" (Singularity is not "
	             "available here)");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"],"
	             " \"container\": {\"image\": \"x\", \"mode\": \"fast\"}}]}",
	             "w.json: rule 0: 'container.mode' must be \"none\", \"task\" or \"shared\"");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"],"
	             " \"container\": {\"image\": \"x\", \"image_tar\": \"x.tar\"}}]}",
	             "w.json: rule 0: 'container' names the image or its archive (image_tar), "
	             "not both");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"],"
	             " \"container\": {\"imgae\": \"x\"}}]}",
	             "w.json: rule 0: unknown key 'imgae' in 'container' (did you mean 'image'?)");
	{
		struct dag *d = load("{\"rules\": [{\"command\": \"x\", \"outputs\": "
		                     "[\"o\"], \"container\": {\"image_tar\": \"i.tar\", "
		                     "\"mode\": \"shared\"}}]}");
		assert_non_null(d);
		assert_string_equal(d->nodes[0]->container_archive, "i.tar");
		assert_int_equal(d->nodes[0]->container_mode, DAG_CONTAINER_SHARED);
		assert_int_equal(d->nodes[0]->ninputs, 1);
		dag_delete(d);
	}
	expect_error("{\"rules\": [], \"categories\": {\"c\": {\"allocation\": \"max\"}}}",
	             "w.json: key 'allocation' in a category is not supported by this makeflow (a "
	             "category's allocation is chosen with \"mode\" or makeflow --allocation)");
	expect_error("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"], \"args\": {}}]}",
	             "w.json: rule 0: 'args' belongs to a nested workflow: the rule needs "
	             "'workflow'");
	expect_error(
	    "{\"rules\": [{\"workflow\": \"s.jx\", \"outputs\": [\"o\"], \"args\": [1]}]}",
	    "w.json: rule 0: 'args' must be an object (the symbols of the nested workflow)");
	/* names as in the Make-like form */
	expect_error("{\"rules\": [], \"environment\": {\"A B\": 1}}",
	             "w.json: bad variable name 'A B' in 'environment'");
	expect_error("{\"rules\": [], \"categories\": {\"a b\": {}}}",
	             "w.json: bad category name 'a b'");
	/* what both forms accept */
	struct dag *d = load("{\"rules\": [{\"command\": \"x\", \"outputs\": [\"o\"],"
	                     " \"resources\": {\"cores\": 4.0, \"memory\": 1.5, \"disk\": \"1G\","
	                     " \"gpus\": \"2\", \"wall_time\": \"1h\"}}]}");
	if (!d)
		fail_msg("%s", err);
	assert_int_equal(d->nodes[0]->resources.cores, 4);
	assert_int_equal(d->nodes[0]->resources.memory, 2);
	assert_int_equal(d->nodes[0]->resources.disk, 1024);
	assert_int_equal(d->nodes[0]->resources.gpus, 2);
	assert_int_equal(d->nodes[0]->resources.wall_time, 3600);
	dag_delete(d);
}

/* An unknown key is reported at its line when the file holds it once. */
static void test_key_line(void **state)
{
	(void)state;
	char path[] = "/tmp/test_dag_json.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *text = "{\"rules\": [\n"
	                   "  {\"command\": \"echo comand\", \"outputs\": [\"a\"]},\n"
	                   "  {\"comand\" : \"x\",\n"
	                   "   \"outputs\": [\"b\"]}\n"
	                   "]}\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	assert_non_null(j);
	assert_null(dag_from_json(j, path, err, sizeof err));
	json_decref(j);
	char expect[600];
	snprintf(expect, sizeof expect,
	         "%s:3: rule 1: unknown key 'comand' in a rule (did you mean 'command'?)", path);
	assert_string_equal(err, expect);
	assert_int_equal(workflow_key_line(path, "outputs", 1 << 20), 0); /* twice: no line */
	assert_int_equal(workflow_key_line(path, "rules", 1 << 20), 1);
	assert_int_equal(workflow_key_line("/nonexistent", "rules", 1 << 20), 0);
	unlink(path);
}

static void test_shared_env(void **state)
{
	(void)state;
	struct dag *d = load("{\"rules\": [{\"command\": \"a\", \"outputs\": [\"a\"]},"
	                     " {\"command\": \"b\", \"outputs\": [\"b\"]}]}");
	assert_non_null(d);
	assert_ptr_equal(d->nodes[0]->env, d->nodes[1]->env);
	assert_int_equal(d->nodes[0]->line, 0);
	assert_int_equal(d->nodes[1]->line, 1);
	dag_delete(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules),      cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_shared_env), cmocka_unit_test(test_strict),
	    cmocka_unit_test(test_key_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
