/* test_dag.c: unit tests for the in-memory workflow (dag.h): files, edges,
 * files produced twice, cycles named by their files, final outputs, shared
 * environments, and depth/width per level on large graphs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag.h"
#include "htc_error.h"
#include "banned.h"

static struct dag_node *rule(struct dag *d, int line, const char *outs, const char *ins)
{
	char err[256];
	struct dag_node *n = dag_node_add(d, line, "true", NULL);
	char buf[256];
	snprintf(buf, sizeof buf, "%s", outs);
	for (char *s = buf, *w; (w = strsep(&s, " "));)
		if (*w)
			assert_int_equal(dag_node_add_output(d, n, dag_file_get_or_create(d, w),
			                                     NULL, err, sizeof err),
			                 0);
	snprintf(buf, sizeof buf, "%s", ins);
	for (char *s = buf, *w; (w = strsep(&s, " "));)
		if (*w)
			dag_node_add_input(d, n, dag_file_get_or_create(d, w), NULL);
	return n;
}

static void test_files_and_edges(void **state)
{
	(void)state;
	struct dag *d = dag_create("wf");
	struct dag_node *a = rule(d, 1, "x y", "in");
	struct dag_node *b = rule(d, 4, "z", "x y in");
	struct dag_node *c = rule(d, 7, "w", "z x");
	char err[256] = "";
	assert_int_equal(dag_finalize(d, err, sizeof err), 0);
	assert_int_equal(d->nnodes, 3);
	assert_int_equal(d->nfiles, 5);
	assert_int_equal(a->id, 0);
	assert_int_equal(c->id, 2);
	/* distinct parents */
	assert_int_equal(b->nparents, 1);
	assert_ptr_equal(b->parents[0], a);
	assert_int_equal(c->nparents, 2);
	assert_ptr_equal(c->parents[0], b);
	assert_ptr_equal(c->parents[1], a);
	assert_int_equal(a->nchildren, 2);
	assert_ptr_equal(a->children[0], b);
	assert_ptr_equal(a->children[1], c);
	/* files */
	struct dag_file *in = dag_file_lookup(d, "in");
	assert_non_null(in);
	assert_true(in->is_source);
	assert_null(in->producer);
	assert_int_equal(in->nconsumers, 2);
	assert_int_equal(in->ref_count, 2);
	struct dag_file *w = dag_file_lookup(d, "w");
	assert_true(w->is_final_output);
	assert_false(dag_file_lookup(d, "x")->is_final_output);
	assert_int_equal(d->noutputs, 1);
	assert_ptr_equal(d->outputs[0], w);
	assert_null(dag_file_lookup(d, "nope"));
	/* depths */
	assert_int_equal(a->depth, 0);
	assert_int_equal(b->depth, 1);
	assert_int_equal(c->depth, 2);
	int maxd, *widths;
	assert_int_equal(dag_topological_depth(d, &maxd, &widths), 0);
	assert_int_equal(maxd, 2);
	assert_int_equal(widths[0], 1);
	assert_int_equal(widths[2], 1);
	free(widths);
	/* finalize again is harmless */
	assert_int_equal(dag_finalize(d, err, sizeof err), 0);
	dag_delete(d);
	dag_delete(NULL);
}

static void test_produced_twice(void **state)
{
	(void)state;
	struct dag *d = dag_create("flow.mf");
	rule(d, 3, "out", "");
	struct dag_node *n = dag_node_add(d, 9, "true", NULL);
	char err[256];
	struct dag_file *f = dag_file_get_or_create(d, "out");
	assert_int_equal(dag_node_add_output(d, n, f, NULL, err, sizeof err), HTC_EDUP);
	assert_string_equal(err, "flow.mf:9: file 'out' is produced by rules at lines 3 and 9");
	/* the same rule naming it twice is fine */
	struct dag_node *m = rule(d, 12, "o2", "");
	assert_int_equal(dag_node_add_output(d, m, dag_file_lookup(d, "o2"), NULL, err, sizeof err),
	                 0);
	assert_int_equal(m->noutputs, 1);
	dag_delete(d);
}

static void test_cycle_two(void **state)
{
	(void)state;
	struct dag *d = dag_create("c.mf");
	rule(d, 1, "b", "a");
	rule(d, 4, "a", "b");
	char err[256];
	assert_int_equal(dag_finalize(d, err, sizeof err), HTC_ECYCLE);
	assert_string_equal(err, "c.mf:1: cycle: b -> a -> b");
	assert_int_equal(dag_topological_depth(d, &(int){0}, NULL), -EINVAL);
	dag_delete(d);
}

static void test_cycle_self_and_long(void **state)
{
	(void)state;
	struct dag *d = dag_create("s.mf");
	rule(d, 1, "a", "a");
	char err[256];
	assert_int_equal(dag_finalize(d, err, sizeof err), HTC_ECYCLE);
	assert_string_equal(err, "s.mf:1: cycle: a -> a");
	dag_delete(d);

	/* a cycle reached only through a long tail: start -> f0 .. and f1->f2->f3->f1 */
	d = dag_create("l.mf");
	rule(d, 1, "f1", "src f3");
	rule(d, 2, "f2", "f1");
	rule(d, 3, "f3", "f2");
	rule(d, 4, "tail", "f3");
	assert_int_equal(dag_finalize(d, err, sizeof err), HTC_ECYCLE);
	assert_non_null(strstr(err, "cycle: "));
	assert_non_null(strstr(err, "f1"));
	assert_non_null(strstr(err, "f2"));
	assert_non_null(strstr(err, "f3"));
	assert_null(strstr(err, "tail"));
	dag_delete(d);
}

/* A million-rule chain must not recurse; and a cycle through all of it is
 * reported with a truncated message. */
static void test_long_chain(void **state)
{
	(void)state;
	const int n = 1000000;
	struct dag *d = dag_create("chain");
	char err[256], name[32];
	struct dag_file *prev = dag_file_get_or_create(d, "f0");
	for (int i = 1; i <= n; i++) {
		struct dag_node *node = dag_node_add(d, i, "true", NULL);
		snprintf(name, sizeof name, "f%d", i);
		struct dag_file *f = dag_file_get_or_create(d, name);
		assert_int_equal(dag_node_add_output(d, node, f, NULL, err, sizeof err), 0);
		dag_node_add_input(d, node, prev, NULL);
		prev = f;
	}
	assert_int_equal(dag_finalize(d, err, sizeof err), 0);
	int maxd, *widths;
	assert_int_equal(dag_topological_depth(d, &maxd, &widths), 0);
	assert_int_equal(maxd, n - 1);
	assert_int_equal(widths[n - 1], 1);
	free(widths);
	/* close the loop */
	dag_node_add_input(d, d->nodes[0], prev, NULL);
	assert_int_equal(dag_finalize(d, err, sizeof err), HTC_ECYCLE);
	assert_true(strlen(err) < sizeof err);
	assert_non_null(strstr(err, "cycle: "));
	dag_delete(d);
}

static void test_width(void **state)
{
	(void)state;
	struct dag *d = dag_create("w");
	char buf[32];
	for (int i = 0; i < 10; i++) {
		snprintf(buf, sizeof buf, "p%d", i);
		rule(d, i + 1, buf, "in");
	}
	rule(d, 20, "all", "p0 p1 p2 p3 p4 p5 p6 p7 p8 p9");
	char err[128];
	assert_int_equal(dag_finalize(d, err, sizeof err), 0);
	int maxd, *w;
	assert_int_equal(dag_topological_depth(d, &maxd, &w), 0);
	assert_int_equal(maxd, 1);
	assert_int_equal(w[0], 10);
	assert_int_equal(w[1], 1);
	assert_int_equal(d->nodes[10]->nparents, 10);
	free(w);
	dag_delete(d);

	d = dag_create("empty");
	assert_int_equal(dag_finalize(d, err, sizeof err), 0);
	assert_int_equal(dag_topological_depth(d, &maxd, &w), 0);
	assert_int_equal(maxd, -1);
	assert_null(w);
	dag_delete(d);
}

static void test_declared_outputs_inputs(void **state)
{
	(void)state;
	struct dag *d = dag_create("o");
	rule(d, 1, "a b", "");
	rule(d, 2, "c", "a");
	dag_add_final_output(d, dag_file_lookup(d, "a"));
	dag_add_final_output(d, dag_file_lookup(d, "a"));
	dag_add_extra_input(d, dag_file_get_or_create(d, "extra"));
	char err[64];
	assert_int_equal(dag_finalize(d, err, sizeof err), 0);
	assert_int_equal(d->noutputs, 1);
	assert_true(dag_file_lookup(d, "a")->is_final_output);
	assert_false(dag_file_lookup(d, "c")->is_final_output);
	assert_false(dag_file_lookup(d, "b")->is_final_output);
	assert_int_equal(d->ninputs, 1);
	assert_true(dag_file_lookup(d, "extra")->is_extra_input);
	assert_true(dag_file_lookup(d, "extra")->is_source);
	dag_delete(d);
}

static void test_categories_resources(void **state)
{
	(void)state;
	struct dag *d = dag_create("c");
	struct dag_category *def = d->default_category;
	assert_string_equal(def->name, DAG_DEFAULT_CATEGORY);
	struct dag_category *big = dag_category_get_or_create(d, "big");
	assert_ptr_equal(dag_category_lookup(d, "big"), big);
	assert_int_equal(big->mode, DAG_MODE_FIXED);
	big->max.memory = 4096;
	def->max.cores = 2;
	def->max.memory = 100;
	struct dag_node *n = dag_node_add(d, 1, "x", big);
	n->resources.cores = 8;
	n->explicit_resources = DAG_RES_CORES;
	struct dag_node *m = dag_node_add(d, 2, "y", NULL);
	assert_ptr_equal(m->category, def);
	char err[64];
	assert_int_equal(dag_finalize(d, err, sizeof err), 0);
	assert_int_equal(n->resources.cores, 8);
	assert_int_equal(n->resources.memory, 4096);
	assert_int_equal(n->resources.disk, -1);
	assert_int_equal(m->resources.cores, 2);
	assert_int_equal(m->resources.memory, 100);
	int count = 0;
	for (struct dag_category *c = dag_categories(d); c; c = dag_category_next(c))
		count++;
	assert_int_equal(count, 2);
	enum dag_category_mode mode;
	assert_int_equal(dag_category_mode_parse("min_waste", &mode), 0);
	assert_int_equal(mode, DAG_MODE_MIN_WASTE);
	assert_int_equal(dag_category_mode_parse("MAX_THROUGHPUT", &mode), 0);
	assert_int_equal(mode, DAG_MODE_MAX_THROUGHPUT);
	assert_int_equal(dag_category_mode_parse("bogus", &mode), HTC_EPARSE);
	assert_string_equal(dag_category_mode_name(DAG_MODE_MAX), "MAX");
	dag_delete(d);
}

static void test_env_sharing(void **state)
{
	(void)state;
	char *vars[] = {"A=1", "B=two=2"};
	struct dag_env *e = dag_env_create(vars, 2);
	assert_string_equal(dag_env_get(e, "B"), "two=2");
	assert_null(dag_env_get(e, "C"));
	assert_null(dag_env_get(NULL, "C"));
	struct dag_env *f = dag_env_create(vars, 2);
	assert_true(dag_env_equal(e, f));
	assert_false(dag_env_equal(e, NULL));
	assert_true(dag_env_equal(NULL, NULL));
	struct dag *d = dag_create("e");
	struct dag_node *n = dag_node_add(d, 1, "x", NULL);
	struct dag_node *m = dag_node_add(d, 2, "y", NULL);
	dag_node_set_env(n, e);
	dag_node_set_env(m, e);
	assert_int_equal(e->refcount, 3);
	dag_env_unref(e);
	dag_env_unref(f);
	dag_node_set_batch_options(d, n, "-q long");
	dag_node_set_batch_options(d, m, "-q long");
	assert_ptr_equal(n->batch_options, m->batch_options);
	dag_node_set_workflow(n, "sub.mf", NULL);
	assert_string_equal(n->workflow, "sub.mf");
	assert_null(n->workflow_args);
	dag_delete(d);
}

static void test_remote_names(void **state)
{
	(void)state;
	struct dag *d = dag_create("r");
	struct dag_node *n = dag_node_add(d, 1, "x", NULL);
	char err[64];
	dag_node_add_input(d, n, dag_file_get_or_create(d, "in"), "sandbox_in");
	dag_node_add_input(d, n, dag_file_get_or_create(d, "in"), "again");
	assert_int_equal(
	    dag_node_add_output(d, n, dag_file_get_or_create(d, "out"), "o", err, sizeof err), 0);
	assert_int_equal(n->ninputs, 1);
	assert_string_equal(n->inputs[0].remote_name, "sandbox_in");
	assert_string_equal(n->outputs[0].remote_name, "o");
	dag_delete(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_files_and_edges),
	    cmocka_unit_test(test_produced_twice),
	    cmocka_unit_test(test_cycle_two),
	    cmocka_unit_test(test_cycle_self_and_long),
	    cmocka_unit_test(test_long_chain),
	    cmocka_unit_test(test_width),
	    cmocka_unit_test(test_declared_outputs_inputs),
	    cmocka_unit_test(test_categories_resources),
	    cmocka_unit_test(test_env_sharing),
	    cmocka_unit_test(test_remote_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
