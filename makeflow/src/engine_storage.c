/* engine_storage.c: --storage-limit, the bound on the disk space a workflow's own files may use
 * (CCTools' storage allocation, measured here rather than estimated ahead). The bytes of the
 * files the workflow created and still keeps are counted as rules complete and as garbage
 * collection deletes them; no new rule starts while the count is at the limit. */
#include <stdio.h>

#include "engine_internal.h"
#include "units.h"

#include "banned.h"

/* Whether F counts against the limit for the storage type. */
static int counted(const struct engine *e, const struct dag_file *f)
{
	if (!f->producer)
		return 0;
	if (e->opt->storage_type == ENGINE_STORAGE_OUTPUT)
		return f->nconsumers == 0 || f->is_final_output;
	return 1;
}

static int enabled(const struct engine *e)
{
	return e->opt->storage_limit > 0 && e->opt->storage_type != ENGINE_STORAGE_OFF;
}

void engine_storage_init(struct engine *e)
{
	if (!enabled(e))
		return;
	for (struct dag_file *f = e->dag->files; f; f = f->hh.next) {
		int64_t size = 0;
		if (counted(e, f) && file_stat(f->name, &size, NULL, NULL) == 0)
			e->storage_used += size;
	}
}

void engine_storage_created(struct engine *e, const struct dag_file *f, int64_t size)
{
	if (enabled(e) && counted(e, f))
		e->storage_used += size;
}

void engine_storage_deleted(struct engine *e, const struct dag_file *f, int64_t size)
{
	if (enabled(e) && counted(e, f))
		e->storage_used -= size;
}

int engine_storage_full(struct engine *e, struct batch_queue *q)
{
	if (!enabled(e))
		return 0;
	/* a rule's outputs are known only once it has run: with a limit, rules are submitted
	 * only as the batch system starts them, so each start sees the latest count */
	if (e->storage_used < e->opt->storage_limit)
		return batch_queue_waiting(q) > 0;
	if (e->n_running == 0 && !e->storage_stuck) {
		/* nothing running can free space: the workflow cannot go on */
		char used[32], limit[32];
		units_format_bytes(e->storage_used, used, sizeof used);
		units_format_bytes(e->opt->storage_limit, limit, sizeof limit);
		fprintf(stderr,
		        "makeflow: storage limit reached: the workflow's %s use %s of the %s of "
		        "--storage-limit and no running rule can free any; %zu ready rule%s not "
		        "started\n",
		        e->opt->storage_type == ENGINE_STORAGE_OUTPUT ? "final outputs" : "files",
		        used, limit, e->ready_len, e->ready_len == 1 ? "" : "s");
		e->storage_stuck = 1;
	}
	return 1;
}
