/* makeflow_viz_main.c: the makeflow_viz command: writes a workflow's DAG as
 * Graphviz DOT (-D dot, rules as boxes and files as ellipses) or as JSON
 * (-D json: rules with their inputs and outputs, files with their roles). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "makeflow_viz_opts.h"
#include "workflow_load.h"

#include "banned.h"

/* Writes S as a DOT double-quoted string. */
static void dot_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		if (*s == '\n') {
			fputs("\\n", stdout);
			continue;
		}
		putchar(*s);
	}
	putchar('"');
}

static void write_dot(struct dag *d)
{
	printf("digraph workflow {\n\trankdir=TB;\n");
	printf("\tnode [shape=ellipse, fontsize=10];\n");
	int i = 0;
	for (struct dag_file *f = d->files; f; f = f->hh.next, i++) {
		f->state = i; /* a temporary id for the DOT name */
		printf("\tF%d [label=", i);
		dot_string(f->name);
		if (f->is_source)
			printf(", style=filled, fillcolor=\"#dddddd\"");
		else if (f->is_final_output)
			printf(", style=filled, fillcolor=\"#cce5ff\"");
		printf("];\n");
	}
	for (int k = 0; k < d->nnodes; k++) {
		struct dag_node *n = d->nodes[k];
		char label[96];
		snprintf(label, sizeof label, "%.80s", n->command ? n->command : "");
		printf("\tN%d [shape=box, label=", n->id);
		dot_string(label);
		printf("];\n");
		for (int j = 0; j < n->ninputs; j++)
			printf("\tF%d -> N%d;\n", n->inputs[j].file->state, n->id);
		for (int j = 0; j < n->noutputs; j++)
			printf("\tN%d -> F%d;\n", n->id, n->outputs[j].file->state);
	}
	printf("}\n");
}

static json_t *file_list(struct dag_file_ref *refs, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		if (refs[i].remote_name) {
			json_t *o = json_object();
			json_object_set_new(o, "dag_name", json_string(refs[i].file->name));
			json_object_set_new(o, "task_name", json_string(refs[i].remote_name));
			json_array_append_new(a, o);
		} else {
			json_array_append_new(a, json_string(refs[i].file->name));
		}
	}
	return a;
}

static void write_json(struct dag *d)
{
	json_t *root = json_object();
	json_t *rules = json_array();
	for (int k = 0; k < d->nnodes; k++) {
		struct dag_node *n = d->nodes[k];
		json_t *r = json_object();
		json_object_set_new(r, "id", json_integer(n->id));
		json_object_set_new(r, "line", json_integer(n->line));
		json_object_set_new(r, "command", json_string(n->command ? n->command : ""));
		json_object_set_new(r, "category", json_string(n->category->name));
		json_object_set_new(r, "local_job", json_boolean(n->local));
		json_object_set_new(r, "depth", json_integer(n->depth));
		json_object_set_new(r, "inputs", file_list(n->inputs, n->ninputs));
		json_object_set_new(r, "outputs", file_list(n->outputs, n->noutputs));
		json_t *parents = json_array();
		for (int j = 0; j < n->nparents; j++)
			json_array_append_new(parents, json_integer(n->parents[j]->id));
		json_object_set_new(r, "parents", parents);
		json_array_append_new(rules, r);
	}
	json_object_set_new(root, "rules", rules);
	json_t *files = json_array();
	for (struct dag_file *f = d->files; f; f = f->hh.next) {
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(f->name));
		json_object_set_new(o, "role",
		                    json_string(f->is_source         ? "source"
		                                : f->is_final_output ? "output"
		                                                     : "intermediate"));
		json_object_set_new(o, "producer",
		                    f->producer ? json_integer(f->producer->id) : json_null());
		json_array_append_new(files, o);
	}
	json_object_set_new(root, "files", files);
	json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(root);
}

int main(int argc, char **argv)
{
	debug_config_program(argv[0]);
	struct makeflow_viz_opts o;
	char err[2048] = "";
	int r = makeflow_viz_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r == CLI_USAGE) {
		makeflow_viz_opts_usage(stderr, argv[0]);
		return 1;
	}
	if (r == HTC_EUNSUP) {
		fprintf(stderr, "makeflow_viz: %s\n", err);
		return 1;
	}
	if (r < 0)
		fatal("%s", err);
	struct dag *d = workflow_load(&o.src, err, sizeof err);
	if (!d) {
		fprintf(stderr, "makeflow_viz: %s\n", err);
		makeflow_viz_opts_clear(&o);
		return 1;
	}
	if (!strcmp(o.display, "dot"))
		write_dot(d);
	else
		write_json(d);
	dag_delete(d);
	makeflow_viz_opts_clear(&o);
	return 0;
}
