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

#include <jansson.h>

#include "dag.h"
#include "parser.h"
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
	assert_string_equal(c->workflow_args, "{\"x\":1}");
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
	expect_error("{\"rules\": [{\"command\": \"x\"}, 4]}", "w.json: rule 1: must be an object");
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
	expect_error("{\"rules\": [{\"command\": \"x\", \"local_job\": 1}]}",
	             "w.json: rule 0: 'local_job' must be true or false");
	expect_error("{\"rules\": [{\"command\": \"x\", \"resources\": {\"cpus\": 1}}]}",
	             "w.json: rule 0: unknown resource 'cpus'");
	expect_error("{\"rules\": [{\"command\": \"x\", \"resources\": {\"cores\": -1}}]}",
	             "w.json: rule 0: bad value for resource 'cores'");
	expect_error("{\"rules\": [{\"command\": \"x\", \"allocation\": \"some\"}]}",
	             "w.json: rule 0: 'allocation' must be \"auto\", \"max\" or \"error\"");
	expect_error("{\"rules\": [{\"command\": \"x\", \"environment\": {\"A\": []}}]}",
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

static void test_shared_env(void **state)
{
	(void)state;
	struct dag *d = load("{\"rules\": [{\"command\": \"a\"}, {\"command\": \"b\"}]}");
	assert_non_null(d);
	assert_ptr_equal(d->nodes[0]->env, d->nodes[1]->env);
	assert_int_equal(d->nodes[0]->line, 0);
	assert_int_equal(d->nodes[1]->line, 1);
	dag_delete(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_shared_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
