/* engine_start.c: what the engine checks before the first rule runs: that the sources the
 * rules read exist, that the batch driver can do what the workflow asks of it, and the driver's
 * options given on the command line (engine_internal.h). */
#include "engine_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "path.h"
#include "xalloc.h"
#include "banned.h"

int engine_check_sources(struct engine *e)
{
	if (e->opt->skip_file_check)
		return 0;
	int missing = 0;
	for (struct dag_file *f = e->dag->files; f; f = f->hh.next) {
		if (!f->is_source || (f->nconsumers == 0 && !f->is_extra_input))
			continue;
		if (path_exists(f->name))
			continue;
		if (f->nconsumers == 0) { /* only in MAKEFLOW_INPUTS: CCTools runs on */
			fprintf(stderr,
			        "makeflow: %s: warning: '%s' in MAKEFLOW_INPUTS does not exist (no "
			        "rule reads it, so the run goes on)\n",
			        e->dag->filename, f->name);
			continue;
		}
		if (missing < 10) {
			int line = f->consumers[0]->line;
			fprintf(stderr,
			        "makeflow: %s:%d: input file '%s' does not exist and no rule "
			        "creates it\n",
			        e->dag->filename, line, f->name);
		}
		missing++;
	}
	if (missing > 10)
		fprintf(stderr, "makeflow: ... and %d more missing input files\n", missing - 10);
	return missing ? -1 : 0;
}

int engine_check_features(struct engine *e)
{
	if (e->features & BATCH_FEATURE_REMOTE_RENAME)
		return 0;
	for (int i = 0; i < e->dag->nnodes; i++) {
		struct dag_node *n = e->dag->nodes[i];
		if (n->local && e->local_queue)
			continue;
		for (int k = 0; k < n->ninputs + n->noutputs; k++) {
			struct dag_file_ref *ref =
			    k < n->ninputs ? &n->inputs[k] : &n->outputs[k - n->ninputs];
			if (ref->remote_name && strcmp(ref->remote_name, ref->file->name)) {
				fprintf(
				    stderr,
				    "makeflow: %s:%d: remote renaming '%s->%s' is not supported "
				    "by the %s batch type (it runs jobs in place); use a batch "
				    "type that transfers files, such as wq\n",
				    e->dag->filename, n->line, ref->file->name, ref->remote_name,
				    batch_queue_type(e->queue));
				return -1;
			}
		}
	}
	return 0;
}

int engine_apply_options(struct engine *e, struct batch_queue *q, int is_local_queue)
{
	char buf[32];
	int local = is_local_queue || (batch_queue_features(q) & BATCH_FEATURE_LOCAL_EXECUTION);
	if (local && e->opt->max_local_jobs > 0) {
		snprintf(buf, sizeof buf, "%d", e->opt->max_local_jobs);
		if (batch_queue_set_option(q, "max-jobs", buf) < 0)
			return -1;
	}
	/* --local-cores, --local-memory, --local-disk: this machine's share for local jobs */
	const struct {
		const char *key;
		int64_t v;
	} res[] = {{"cores", e->opt->local_cores},
	           {"memory", e->opt->local_memory_mb},
	           {"disk", e->opt->local_disk_mb}};
	for (size_t i = 0; local && i < sizeof res / sizeof res[0]; i++) {
		if (res[i].v <= 0)
			continue;
		snprintf(buf, sizeof buf, "%lld", (long long)res[i].v);
		if (batch_queue_set_option(q, res[i].key, buf) < 0) {
			fprintf(stderr, "makeflow: --local-%s %s: refused by the %s batch type\n",
			        res[i].key, buf, batch_queue_type(q));
			return -1;
		}
	}
	if (is_local_queue)
		return 0;
	/* -T dryrun writes WORKFLOW.sh beside the workflow, as CCTools does, unless script= */
	char *script = engine_dryrun_script(e);
	int rs = !strcmp(batch_queue_type(q), "dryrun")
	             ? batch_queue_set_option(q, "script", script)
	             : 0;
	free(script);
	if (rs < 0)
		return -1;
	/* the Slurm-only options of CCTools (--ignore-memory-spec, --safe-submit-mode, --tmp) */
	if (strcmp(batch_queue_type(q), "slurm") == 0 &&
	    ((e->opt->slurm_ignore_memory_spec &&
	      batch_queue_set_option(q, "ignore-memory-spec", "yes") < 0) ||
	     (e->opt->slurm_safe_submit && batch_queue_set_option(q, "safe-submit", "yes") < 0) ||
	     (e->opt->slurm_tmp && batch_queue_set_option(q, "tmp", e->opt->slurm_tmp) < 0))) {
		fprintf(stderr, "makeflow: --tmp '%s': refused by the slurm batch type\n",
		        e->opt->slurm_tmp ? e->opt->slurm_tmp : "");
		return -1;
	}
	for (const char *const *kv = e->opt->batch_opts; kv && *kv; kv++) {
		const char *eq = strchr(*kv, '=');
		if (!eq) {
			fprintf(stderr, "makeflow: batch option '%s' must be KEY=VALUE\n", *kv);
			return -1;
		}
		char *k = xstrndup(*kv, (size_t)(eq - *kv));
		int r = batch_queue_set_option(q, k, eq + 1);
		if (r < 0) {
			fprintf(stderr,
			        "makeflow: batch option %s: the %s batch type has no option %s or "
			        "refuses that value (see doc/batch-driver-interface.md)\n",
			        *kv, batch_queue_type(q), k);
			free(k);
			return -1;
		}
		free(k);
	}
	return 0;
}
