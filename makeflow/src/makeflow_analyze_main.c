/* makeflow_analyze_main.c: the makeflow_analyze command: checks a workflow
 * without running it (-k), prints its shape (-i: rules, files, depth,
 * width), or lists its source inputs (-I) and final outputs (-O). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "config.h"
#include "debug.h"
#include "workflow_load.h"
#include "banned.h"

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "Usage: %s [options] [WORKFLOW]   (default WORKFLOW: ./Makeflow)\n"
	        "  -k, --syntax-check   check the workflow only (exit 0 if it is valid)\n"
	        "  -i, --info           print rule, file, depth and width counts\n"
	        "  -I, --inputs         list the files the workflow needs (no rule makes them)\n"
	        "  -O, --outputs        list the workflow's final outputs\n"
	        "      --json / --jx / --jx-args=FILE / --jx-define=VAR=EXPR   workflow form\n"
	        "  -d, --debug=SUBSYS   debug output; -o, --debug-file=FILE\n"
	        "  -v, --version; -h, --help\n",
	        prog);
}

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
	struct workflow_source src = {0};
	int mode = 'k';
	debug_config_program(argv[0]);
	static const struct option longopts[] = {
	    {"syntax-check", no_argument, 0, 'k'},
	    {"info", no_argument, 0, 'i'},
	    {"inputs", no_argument, 0, 'I'},
	    {"outputs", no_argument, 0, 'O'},
	    {"debug", required_argument, 0, 'd'},
	    {"debug-file", required_argument, 0, 'o'},
	    {"version", no_argument, 0, 'v'},
	    {"help", no_argument, 0, 'h'},
	    WORKFLOW_LONG_OPTIONS,
	    {0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "kiIOd:o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
		case 'i':
		case 'I':
		case 'O': mode = c; break;
		case 'd':
			if (debug_flags_set(optarg) < 0)
				fatal("-d %s: unknown subsystem (valid: %s)", optarg,
				      debug_flags_help());
			break;
		case 'o':
			if (debug_config_file(optarg) < 0)
				fatal("-o %s: cannot open", optarg);
			break;
		case 'v': printf("makeflow_analyze %s\n", HTC_VERSION); return 0;
		case 'h': usage(stdout, argv[0]); return 0;
		default:
			if (workflow_source_getopt(&src, c, optarg))
				break;
			usage(stderr, argv[0]);
			return 1;
		}
	}
	if (optind < argc - 1)
		fatal("expected one workflow file (see --help)");
	src.path = optind < argc ? argv[optind] : "Makeflow";
	char err[2048];
	struct dag *d = workflow_load(&src, err, sizeof err);
	workflow_source_free(&src);
	if (!d) {
		fprintf(stderr, "makeflow_analyze: %s\n", err);
		return 1;
	}
	switch (mode) {
	case 'k':
		printf("%s: syntax ok (%d rules, %d files)\n", src.path, d->nnodes, d->nfiles);
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
	return 0;
}
