/* makeflow_analyze_main.c: the makeflow_analyze command: checks a workflow
 * without running it (-k), prints its shape (-i: rules, files, depth,
 * width), lists its source inputs (-I) and final outputs (-O), or copies it with what it
 * needs into a directory (-b, workflow_bundle.h). Options: makeflow_analyze_opts. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "debug.h"
#include "makeflow_analyze_opts.h"
#include "workflow_bundle.h"
#include "workflow_load.h"

#include "banned.h"

static void info(struct dag *d)
{
	int sources = 0, finals = 0, intermediates = 0;
	for (struct dag_file *f = d->files; f; f = f->hh.next) {
		if (f->is_source)
			sources++;
		else if (f->is_final_output)
			finals++;
		else
			intermediates++;
	}
	int maxd = -1, *widths = NULL, maxw = 0;
	dag_topological_depth(d, &maxd, &widths);
	for (int i = 0; widths && i <= maxd; i++)
		if (widths[i] > maxw)
			maxw = widths[i];
	int local = 0, ncat = 0;
	for (int i = 0; i < d->nnodes; i++)
		local += d->nodes[i]->local;
	for (struct dag_category *c = dag_categories(d); c; c = dag_category_next(c))
		ncat++;
	printf("workflow:       %s\n", d->filename);
	printf("rules:          %d (%d local)\n", d->nnodes, local);
	printf("files:          %d (%d sources, %d intermediates, %d final outputs)\n", d->nfiles,
	       sources, intermediates, finals);
	printf("depth:          %d\n", maxd + 1);
	printf("max width:      %d\n", maxw);
	printf("categories:     %d\n", ncat);
	for (struct dag_category *c = dag_categories(d); c; c = dag_category_next(c)) {
		int n = 0;
		for (int i = 0; i < d->nnodes; i++)
			n += d->nodes[i]->category == c;
		printf("  %-20s %d rules, mode %s\n", c->name, n, dag_category_mode_name(c->mode));
	}
	free(widths);
}

int main(int argc, char **argv)
{
	debug_config_program(argv[0]);
	struct makeflow_analyze_opts o;
	char err[2048] = "";
	int r = makeflow_analyze_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r == CLI_USAGE) {
		makeflow_analyze_opts_usage(stderr, argv[0]);
		return 1;
	}
	if (r < 0)
		fatal("%s", err);
	struct dag *d = workflow_load(&o.src, err, sizeof err);
	if (!d) {
		fprintf(stderr, "makeflow_analyze: %s\n", err);
		makeflow_analyze_opts_clear(&o);
		return 1;
	}
	int status = 0;
	switch (o.mode) {
	case 'b':
		for (int i = 0; i < d->nnodes; i++)
			if (d->nodes[i]->workflow)
				fprintf(stderr,
				        "makeflow_analyze: %s:%d: the nested workflow %s is "
				        "copied, not what "
				        "it needs itself: bundle it too (makeflow_analyze -b)\n",
				        d->filename, d->nodes[i]->line, d->nodes[i]->workflow);
		if (workflow_bundle(&o.src, d, o.bundle_dir, stdout, err, sizeof err) < 0) {
			fprintf(stderr, "makeflow_analyze: %s\n", err);
			status = 1;
		}
		break;
	case 'k':
		printf("%s: syntax ok (%d rules, %d files)\n", o.src.path, d->nnodes, d->nfiles);
		break;
	case 'i': info(d); break;
	case 'I':
		for (struct dag_file *f = d->files; f; f = f->hh.next)
			if (f->is_source && (f->nconsumers > 0 || f->is_extra_input))
				printf("%s\n", f->name);
		break;
	case 'O':
		for (struct dag_file *f = d->files; f; f = f->hh.next)
			if (f->is_final_output)
				printf("%s\n", f->name);
		break;
	}
	dag_delete(d);
	makeflow_analyze_opts_clear(&o);
	return status;
}
