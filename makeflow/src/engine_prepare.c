/* engine_prepare.c: what the command line adds around a workflow before it runs: the wrapper
 * files joined to every rule, the mounts put in place, and the archive opened; and the mounts
 * removed again by a clean (doc/makeflow-archive.md). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine_archive.h"
#include "engine_internal.h"
#include "engine_mounts.h"
#include "engine_wrapper.h"
#include "debug.h"
#include "xalloc.h"

#include "banned.h"

int engine_clean_mounts(const struct engine_options *o, const char *workflow)
{
	if (!o->mounts_path)
		return 0;
	char err[2048];
	char *def = o->cache_dir ? NULL : engine_mounts_default_cache(workflow);
	int r =
	    engine_mounts_clean(o->mounts_path, o->cache_dir ? o->cache_dir : def, err, sizeof err);
	free(def);
	if (r < 0) {
		fprintf(stderr, "makeflow: %s\n", err);
		return -1;
	}
	return 0;
}

int engine_prepare(struct engine *e)
{
	const struct engine_options *o = e->opt;
	char err[2048];
	if (engine_wrap_dag(e->dag, o->wrapper_inputs, o->wrapper_outputs, err, sizeof err) < 0) {
		fprintf(stderr, "makeflow: %s\n", err);
		return -1;
	}
	if (o->mounts_path) {
		char *def = o->cache_dir ? NULL : engine_mounts_default_cache(e->dag->filename);
		int r = engine_mounts_apply(o->mounts_path, o->cache_dir ? o->cache_dir : def,
		                            e->dag, err, sizeof err);
		free(def);
		if (r < 0) {
			fprintf(stderr, "makeflow: %s\n", err);
			return -1;
		}
	}
	if (o->archive_dir && (e->features & BATCH_FEATURE_VIRTUAL_OUTPUTS))
		notice("--archive: nothing is restored or stored with the %s batch type (it runs "
		       "no rule)",
		       o->batch_type ? o->batch_type : "local");
	else if (o->archive_dir && (o->archive_read || o->archive_write)) {
		e->archive = engine_archive_create(o->archive_dir, o->archive_read,
		                                   o->archive_write, err, sizeof err);
		if (!e->archive) {
			fprintf(stderr, "makeflow: %s\n", err);
			return -1;
		}
	}
	return 0;
}
