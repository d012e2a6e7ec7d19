/* makeflow_viz_main.c: the makeflow_viz command: writes a workflow's DAG as
 * Graphviz DOT (-D dot, rules as boxes and files as ellipses), as JSON (-D json: rules with
 * their inputs and outputs, files with their roles), or drawn as SVG or PNG by Graphviz's dot
 * (-D svg, -D png). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "debug.h"
#include "htc_error.h"
#include "makeflow_viz_opts.h"
#include "path.h"
#include "report_dot.h"
#include "workflow_load.h"

#include "banned.h"

/* -D svg / -D png: the DOT text drawn by Graphviz's dot, copied to standard output. Returns 0,
 * or -1 with a message in ERR. */
static int write_drawn(struct dag *d, const char *format, char *err, size_t errlen)
{
	char *dot = report_dot_find();
	if (!dot) {
		snprintf(err, errlen,
		         "-D %s: Graphviz's dot is not on the PATH (Debian: apt-get install "
		         "graphviz); -D dot writes the graph for it",
		         format);
		return -1;
	}
	free(dot);
	char dir[] = "/tmp/makeflow_viz-XXXXXX";
	if (!mkdtemp(dir)) {
		snprintf(err, errlen, "cannot make a temporary directory: %s", strerror(errno));
		return -1;
	}
	char *in = path_join(dir, "dag.dot"), *out = path_join(dir, "dag.out");
	int r = -1;
	FILE *f = fopen(in, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
		goto done;
	}
	report_dot_write(f, d);
	if (fclose(f) != 0) {
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
		goto done;
	}
	if (report_dot_render(in, format, out, err, errlen) < 0)
		goto done;
	FILE *o = fopen(out, "rb");
	if (!o) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		goto done;
	}
	char buf[65536];
	size_t n;
	r = 0;
	while ((n = fread(buf, 1, sizeof buf, o)) > 0)
		if (fwrite(buf, 1, n, stdout) != n) {
			snprintf(err, errlen, "cannot write the drawing: %s", strerror(errno));
			r = -1;
			break;
		}
	fclose(o);
	if (r == 0 && fflush(stdout) != 0) {
		snprintf(err, errlen, "cannot write the drawing: %s", strerror(errno));
		r = -1;
	}
done:
	unlink(in);
	unlink(out);
	rmdir(dir);
	free(in);
	free(out);
	return r;
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
	int status = 0;
	if (!strcmp(o.display, "dot")) {
		report_dot_write(stdout, d);
	} else if (!strcmp(o.display, "json")) {
		write_json(d);
	} else if (write_drawn(d, o.display, err, sizeof err) < 0) {
		fprintf(stderr, "makeflow_viz: %s\n", err);
		status = 1;
	}
	dag_delete(d);
	makeflow_viz_opts_clear(&o);
	return status;
}
