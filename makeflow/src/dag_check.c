/* dag_check.c: dag_finalize and friends: turns the file-level description of
 * a workflow into rule edges, fills inherited resources, marks source and
 * final-output files, and finds cycles and depths with Kahn's algorithm.
 * Everything is iterative so a million-rule chain cannot overflow the stack. */
#include "dag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "xalloc.h"
#include "banned.h"

static void build_edges(struct dag *d)
{
	int n = d->nnodes;
	int *mark = xmalloc(sizeof *mark * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++) {
		mark[i] = -1;
		struct dag_node *node = d->nodes[i];
		free(node->parents);
		free(node->children);
		node->parents = node->children = NULL;
		node->nparents = node->nchildren = 0;
	}
	/* parents: distinct producers of the inputs, in input order */
	for (int i = 0; i < n; i++) {
		struct dag_node *node = d->nodes[i];
		int count = 0;
		for (int j = 0; j < node->ninputs; j++) {
			struct dag_node *p = node->inputs[j].file->producer;
			if (p && mark[p->id] != i) {
				mark[p->id] = i;
				count++;
			}
		}
		if (!count)
			continue;
		node->parents = xmalloc(sizeof *node->parents * (size_t)count);
		for (int j = 0; j < node->ninputs; j++) {
			struct dag_node *p = node->inputs[j].file->producer;
			if (p && mark[p->id] == i) {
				mark[p->id] = -2 - i; /* taken */
				node->parents[node->nparents++] = p;
				p->nchildren++;
			}
		}
	}
	/* children: allocate exactly, then fill in child id order */
	for (int i = 0; i < n; i++) {
		struct dag_node *node = d->nodes[i];
		if (node->nchildren)
			node->children = xmalloc(sizeof *node->children * (size_t)node->nchildren);
		mark[i] = 0;
	}
	for (int i = 0; i < n; i++) {
		struct dag_node *node = d->nodes[i];
		for (int j = 0; j < node->nparents; j++) {
			struct dag_node *p = node->parents[j];
			p->children[mark[p->id]++] = node;
		}
	}
	free(mark);
}

static void fill_resources(struct dag *d)
{
	const struct dag_resources *def = &d->default_category->max;
	for (int i = 0; i < d->nnodes; i++) {
		struct dag_node *node = d->nodes[i];
		const struct dag_resources *c = &node->category->max;
		struct dag_resources *r = &node->resources;
#define FILL(field)                                                                                \
	if (r->field < 0)                                                                          \
		r->field = c->field >= 0 ? c->field : def->field;
		FILL(cores);
		FILL(memory);
		FILL(disk);
		FILL(gpus);
		FILL(wall_time);
#undef FILL
	}
}

static void mark_files(struct dag *d)
{
	int count = 0;
	for (struct dag_file *f = d->files; f; f = f->hh.next) {
		f->is_source = f->producer == NULL;
		f->ref_count = f->nconsumers;
		if (!d->outputs_declared) {
			f->is_final_output = f->producer && f->nconsumers == 0;
			count += f->is_final_output;
		}
	}
	if (d->outputs_declared)
		return;
	free(d->outputs);
	d->outputs = count ? xmalloc(sizeof *d->outputs * (size_t)count) : NULL;
	d->noutputs = 0;
	for (struct dag_file *f = d->files; f; f = f->hh.next)
		if (f->is_final_output)
			d->outputs[d->noutputs++] = f;
}

/* A file that FROM produces and TO reads. */
static struct dag_file *edge_file(const struct dag_node *from, const struct dag_node *to)
{
	for (int i = 0; i < to->ninputs; i++)
		if (to->inputs[i].file->producer == from)
			return to->inputs[i].file;
	return NULL;
}

/* Called with indeg[i] > 0 for exactly the nodes Kahn's algorithm could not
 * schedule: every such node has an unscheduled parent, so walking parents
 * from any of them must revisit a node. */
static void report_cycle(struct dag *d, const int *indeg, char *err, size_t errlen)
{
	int n = d->nnodes;
	int *pos = xmalloc(sizeof *pos * (size_t)n);
	int *path = xmalloc(sizeof *path * (size_t)n);
	for (int i = 0; i < n; i++)
		pos[i] = -1;
	int start = 0;
	while (start < n && indeg[start] == 0)
		start++;
	int len = 0, cur = start;
	for (;;) {
		pos[cur] = len;
		path[len++] = cur;
		struct dag_node *node = d->nodes[cur];
		int next = -1;
		for (int j = 0; j < node->nparents; j++) {
			if (indeg[node->parents[j]->id] > 0) {
				next = node->parents[j]->id;
				break;
			}
		}
		if (next < 0 || pos[next] >= 0) {
			cur = next;
			break;
		}
		cur = next;
	}
	if (cur < 0) { /* cannot happen; be safe */
		dag_error(d, 0, err, errlen, "cycle among the rules");
		goto out;
	}
	/* The chain in production order: path[first] -> path[len-1] -> ... ->
	 * path[first]. Name the file on each edge. */
	int first = pos[cur];
	struct dag_node *p = d->nodes[path[first]];
	if (d->json)
		dag_error(d, 0, err, errlen, "rule %d: cycle: ", p->line);
	else
		dag_error(d, p->line, err, errlen, "cycle: ");
	size_t off = err ? strlen(err) : 0;
	struct dag_node *from = p;
	const char *first_name = NULL;
	for (int k = len - 1; k >= first; k--) {
		struct dag_node *to = d->nodes[path[k]];
		struct dag_file *f = edge_file(from, to);
		const char *name = f ? f->name : "?";
		if (!first_name)
			first_name = name;
		if (err && off < errlen) {
			int w = snprintf(err + off, errlen - off, "%s -> ", name);
			off += w > 0 ? (size_t)w : 0;
		}
		from = to;
	}
	if (err && off < errlen)
		snprintf(err + off, errlen - off, "%s", first_name);
out:
	free(pos);
	free(path);
}

int dag_finalize(struct dag *d, char *err, size_t errlen)
{
	if (d->finalized)
		return 0;
	build_edges(d);
	fill_resources(d);
	mark_files(d);

	int n = d->nnodes;
	int *indeg = xmalloc(sizeof *indeg * (size_t)(n ? n : 1));
	int *queue = xmalloc(sizeof *queue * (size_t)(n ? n : 1));
	int head = 0, tail = 0;
	for (int i = 0; i < n; i++) {
		indeg[i] = d->nodes[i]->nparents;
		d->nodes[i]->depth = 0;
		if (indeg[i] == 0)
			queue[tail++] = i;
	}
	int max_depth = -1;
	while (head < tail) {
		struct dag_node *node = d->nodes[queue[head++]];
		if (node->depth > max_depth)
			max_depth = node->depth;
		for (int j = 0; j < node->nchildren; j++) {
			struct dag_node *c = node->children[j];
			if (c->depth < node->depth + 1)
				c->depth = node->depth + 1;
			if (--indeg[c->id] == 0)
				queue[tail++] = c->id;
		}
	}
	int rc = 0;
	if (tail < n) {
		report_cycle(d, indeg, err, errlen);
		rc = HTC_ECYCLE;
	} else {
		d->max_depth = max_depth;
		d->finalized = 1;
	}
	free(indeg);
	free(queue);
	return rc;
}

int dag_topological_depth(const struct dag *d, int *max_depth, int **widths)
{
	if (!d->finalized)
		return -EINVAL;
	*max_depth = d->max_depth;
	if (!widths)
		return 0;
	*widths = NULL;
	if (d->max_depth < 0)
		return 0;
	int *w = xcalloc((size_t)d->max_depth + 1, sizeof *w);
	for (int i = 0; i < d->nnodes; i++)
		w[d->nodes[i]->depth]++;
	*widths = w;
	return 0;
}
