/* engine_alloc.c: measurement and per-category sizing in the engine. Each workflow category
 * gets a resource_monitor category (its mode, its maximum, the machine as the largest
 * worker); every try of a rule is given the allocation of its level, optionally wrapped with
 * the resource_monitor program (--monitor), and its measurement feeds the category. A try that
 * exhausts an allocation below the maximum runs again at the maximum; the end of the run
 * prints what each category saw. The model is in doc/allocation.md. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uthash.h>

#include "category.h"
#include "debug.h"
#include "engine_internal.h"
#include "path.h"
#include "rmonitor.h"
#include "rmsummary.h"
#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

/* One workflow category and its sizing state. */
struct sized_category {
	const struct dag_category *dc; /* key */
	struct category *cat;
	/* The waste and allocation (unit*s) of tries that ran with a computed first allocation,
	 * apart from the measuring phase, per sized field (cores, memory, disk, gpus). */
	double sized_waste[4], sized_alloc[4];
	UT_hash_handle hh;
};

struct engine_sizing {
	struct sized_category *cats; /* uthash by dag_category pointer */
	int any_sizing;              /* some category is not FIXED */
	int driver_measures;         /* the batch type reports measured resources */
	int monitor_limits;          /* pass the allocation to the wrapped monitor as limits */
	char *monitor_exe;           /* absolute path, when monitoring */
	char *monitor_dir;           /* when monitoring */
	int64_t exhaustions, sizing_retries;
	char errbuf[768]; /* behind a result's error text during one completion */
};

/* The batch_resources fields and the summary fields they correspond to. */
static const struct {
	int field;
	int exhausted_bit;
} res_map[] = {
    {RM_CORES, BATCH_EXHAUSTED_CORES},         {RM_MEMORY, BATCH_EXHAUSTED_MEMORY},
    {RM_DISK, BATCH_EXHAUSTED_DISK},           {RM_GPUS, BATCH_EXHAUSTED_GPUS},
    {RM_WALL_TIME, BATCH_EXHAUSTED_WALL_TIME},
};
#define N_RES (sizeof res_map / sizeof res_map[0])

static int64_t *batch_res_field(struct batch_resources *r, size_t k)
{
	int64_t *f[] = {&r->cores, &r->memory_mb, &r->disk_mb, &r->gpus, &r->wall_time_s};
	return f[k];
}

static struct category *category_of(struct engine *e, const struct dag_category *dc)
{
	struct sized_category *sc;
	HASH_FIND_PTR(e->sizing->cats, &dc, sc);
	return sc ? sc->cat : NULL;
}

/* The category's explicit maximum: its own value, else the default category's. */
static void dag_max(const struct dag *d, const struct dag_category *dc, struct rmsummary *max)
{
	struct dag_resources own = dc->max, def = d->default_category->max;
	for (size_t k = 0; k < 4; k++) {
		int64_t v = *dag_resources_field(&own, (int)k);
		if (v < 0)
			v = *dag_resources_field(&def, (int)k);
		max->v[res_map[k].field] = v >= 0 ? (double)v : -1;
	}
}

static char *find_monitor(struct engine *e)
{
	if (e->opt->monitor_exe)
		return access(e->opt->monitor_exe, X_OK) == 0 ? xstrdup(e->opt->monitor_exe) : NULL;
	return path_find_program(e->opt->self_exe, "resource_monitor");
}

struct seed_ctx {
	struct engine *e;
	int64_t used, skipped;
};

static int seed_one(const struct rmsummary *s, void *arg)
{
	struct seed_ctx *sc = arg;
	const struct dag_category *dc =
	    dag_category_lookup(sc->e->dag, s->category ? s->category : DAG_DEFAULT_CATEGORY);
	struct category *c = dc ? category_of(sc->e, dc) : NULL;
	/* Only successful tries say what a task of the category needs. */
	if (!c || s->exit_type != RM_EXIT_NORMAL || s->exit_status != 0) {
		sc->skipped++;
		return 0;
	}
	category_accumulate(c, s);
	sc->used++;
	return 0;
}

static int seed_from(struct engine *e, const char *path, int must_exist)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		if (!must_exist && errno == ENOENT)
			return 0;
		fprintf(stderr, "makeflow: --allocation-seed %s: %s\n", path, strerror(errno));
		return -1;
	}
	struct seed_ctx ctx = {e, 0, 0};
	char err[512];
	int rc = rmsummary_load(path, seed_one, &ctx, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "makeflow: cannot seed categories from %s: %s\n", path,
		        err[0] ? err : strerror(-rc));
		return -1;
	}
	if (ctx.used)
		notice("categories seeded with %lld earlier measurements from %s",
		       (long long)ctx.used, path);
	return 0;
}

int engine_alloc_init(struct engine *e)
{
	const struct engine_options *o = e->opt;
	struct engine_sizing *s = xcalloc(1, sizeof *s);
	e->sizing = s;
	unsigned features = e->features;
	s->driver_measures = (features & BATCH_FEATURE_MEASURE) != 0;

	struct rmsummary machine;
	rmsummary_init(&machine);
	if (features & BATCH_FEATURE_LOCAL_EXECUTION)
		rmonitor_machine_resources(".", &machine);

	for (struct dag_category *dc = dag_categories(e->dag); dc; dc = dag_category_next(dc)) {
		struct sized_category *sc = xcalloc(1, sizeof *sc);
		sc->dc = dc;
		sc->cat = category_create(dc->name);
		enum category_mode mode = (enum category_mode)dc->mode;
		if (!dc->mode_set && o->allocation_mode >= 0)
			mode = (enum category_mode)o->allocation_mode;
		category_set_mode(sc->cat, mode);
		if (mode != CATEGORY_MODE_FIXED)
			s->any_sizing = 1;
		struct rmsummary max;
		rmsummary_init(&max);
		dag_max(e->dag, dc, &max);
		category_set_max(sc->cat, &max);
		category_set_largest_worker(sc->cat, &machine);
		HASH_ADD_PTR(s->cats, dc, sc);
		debug(D_ALLOC, "category %s: mode %s", dc->name, category_mode_name(mode));
	}
	rmsummary_clear(&machine);

	const char *dir = o->monitor_dir;
	if (!dir && s->any_sizing && !s->driver_measures &&
	    !(features & BATCH_FEATURE_VIRTUAL_OUTPUTS)) {
		/* Sizing needs measurements, and this batch type takes none itself. */
		dir = "makeflow.monitor";
		notice("measuring every rule with resource_monitor (summaries in %s/) because a "
		       "category sizes its allocations; give --monitor DIR to choose the place",
		       dir);
	}
	/* as in CCTools, a monitor option without a monitor is an error, not a silent no-op */
	const char *sub = o->monitor_interval > 0   ? "--monitor-interval"
	                  : o->monitor_time_series  ? "--monitor-with-time-series"
	                  : o->monitor_opened_files ? "--monitor-with-opened-files"
	                  : o->monitor_log_fmt      ? "--monitor-log-fmt/--monitor-log-name"
	                  : o->monitor_measure_dir  ? "--monitor-measure-dir"
	                  : o->monitor_exe          ? "--monitor-exe"
	                                            : NULL;
	if (!dir && sub && !(features & BATCH_FEATURE_VIRTUAL_OUTPUTS)) {
		fprintf(stderr,
		        "makeflow: %s needs --monitor DIR (no rule is measured in this run)\n",
		        sub);
		return -1;
	}
	if (dir && !(features & BATCH_FEATURE_VIRTUAL_OUTPUTS)) {
		s->monitor_exe = find_monitor(e);
		if (!s->monitor_exe) {
			fprintf(stderr,
			        "makeflow: --monitor needs the resource_monitor program, which is "
			        "neither beside %s nor in PATH\n",
			        o->self_exe ? o->self_exe : "makeflow");
			return -1;
		}
		if (path_mkdir_p(dir, 0777) < 0) {
			fprintf(stderr, "makeflow: cannot create monitor directory %s: %s\n", dir,
			        strerror(errno));
			return -1;
		}
		s->monitor_dir = xstrdup(dir);
		/* The cgroups driver enforces allocations itself (and may raise them). */
		s->monitor_limits = !s->driver_measures;
		/* Summaries of an earlier run in the same directory are the best seed. */
		if (seed_from(e, dir, 0) < 0)
			return -1;
	}
	if (o->allocation_seed && seed_from(e, o->allocation_seed, 1) < 0)
		return -1;
	return 0;
}

void engine_alloc_free(struct engine *e)
{
	struct engine_sizing *s = e->sizing;
	if (!s)
		return;
	struct sized_category *sc, *tmp;
	HASH_ITER(hh, s->cats, sc, tmp)
	{
		HASH_DEL(s->cats, sc);
		category_delete(sc->cat);
		free(sc);
	}
	free(s->monitor_exe);
	free(s->monitor_dir);
	free(s);
	e->sizing = NULL;
}

/* The rule's own declarations (not those it inherits from its category). */
static void requested_of(const struct dag_node *n, struct rmsummary *req)
{
	static const uint8_t bits[4] = {DAG_RES_CORES, DAG_RES_MEMORY, DAG_RES_DISK, DAG_RES_GPUS};
	struct dag_resources r = n->resources;
	for (size_t k = 0; k < 4; k++) {
		int64_t v = *dag_resources_field(&r, (int)k);
		req->v[res_map[k].field] =
		    (n->explicit_resources & bits[k]) && v >= 0 ? (double)v : -1;
	}
}

static char *summary_path(struct engine *e, const struct dag_node *n)
{
	/* --monitor-log-fmt: every "%%" of the format is the rule's id, as in CCTools (the
	 * options check it holds one) */
	const char *fmt = e->opt->monitor_log_fmt ? e->opt->monitor_log_fmt : "resource-rule-%%";
	char name[512];
	size_t len = 0;
	for (const char *p = fmt; *p && len + 24 < sizeof name; p++) {
		if (p[0] == '%' && p[1] == '%') {
			len += (size_t)snprintf(name + len, sizeof name - len, "%d", n->id);
			p++;
		} else {
			name[len++] = *p;
		}
	}
	name[len] = 0;
	return path_join(e->sizing->monitor_dir, name);
}

static char *wrap(struct engine *e, const struct dag_node *n, const char *command,
                  const struct batch_resources *res)
{
	struct engine_sizing *s = e->sizing;
	char *tmpl = summary_path(e, n);
	char *q_exe = str_escape_shell(s->monitor_exe);
	char *q_tmpl = str_escape_shell(tmpl);
	char *q_cat = str_escape_shell(n->category ? n->category->name : DAG_DEFAULT_CATEGORY);
	char *q_cmd = str_escape_shell(command);
	char limits[160] = "";
	if (s->monitor_limits) {
		/* Memory and disk are limits; cores are enforced only as a cgroup quota by the
		 * cgroups batch type, never by killing a task for a burst. */
		size_t len = 0;
		if (res->memory_mb >= 0)
			len += (size_t)snprintf(limits + len, sizeof limits - len, "memory: %lld",
			                        (long long)res->memory_mb);
		/* Rules that share the working directory cannot have a disk of their own. */
		if (res->disk_mb >= 0 && len < sizeof limits &&
		    !(e->features & BATCH_FEATURE_LOCAL_EXECUTION))
			snprintf(limits + len, sizeof limits - len, "%sdisk: %lld", len ? ", " : "",
			         (long long)res->disk_mb);
	}
	char interval[48] = "";
	if (e->opt->monitor_interval > 0)
		snprintf(interval, sizeof interval, " -i %g", e->opt->monitor_interval);
	char *w = xasprintf("%s -O %s --category %s --task-id %d%s%s%s%s%s%s%s --sh %s", q_exe,
	                    q_tmpl, q_cat, n->id, interval,
	                    e->opt->monitor_time_series ? " --with-time-series" : "",
	                    e->opt->monitor_opened_files ? " --with-opened-files" : "",
	                    e->opt->monitor_measure_dir ? " --measure-dir ." : "",
	                    limits[0] ? " -L '" : "", limits, limits[0] ? "'" : "", q_cmd);
	free(tmpl);
	free(q_exe);
	free(q_tmpl);
	free(q_cat);
	free(q_cmd);
	return w;
}

int engine_alloc_is_sized(struct engine *e, const struct dag_node *n)
{
	struct category *c = e->sizing ? category_of(e, n->category) : NULL;
	return c && category_get_mode(c) != CATEGORY_MODE_FIXED;
}

int engine_alloc_warming(struct engine *e, const struct dag_node *n)
{
	struct category *c = e->sizing ? category_of(e, n->category) : NULL;
	return c && category_warming(c) && !engine_alloc_by_driver(e, n);
}

int engine_alloc_by_driver(struct engine *e, const struct dag_node *n)
{
	struct category *c = e->sizing ? category_of(e, n->category) : NULL;
	if (n->local && e->local_queue)
		return 0; /* a LOCAL rule goes to the local queue, which sizes nothing */
	return c && category_get_mode(c) == CATEGORY_MODE_WARMUP &&
	       (e->features & BATCH_FEATURE_CATEGORY_SIZING) &&
	       e->extra[n->id].level == CATEGORY_LEVEL_FIRST;
}

char *engine_alloc_prepare(struct engine *e, struct dag_node *n, const char *command,
                           struct batch_job_spec *spec)
{
	struct engine_sizing *s = e->sizing;
	struct node_extra *x = &e->extra[n->id];
	struct category *c = category_of(e, n->category);
	x->monitored = 0;
	x->driver_sized = engine_alloc_by_driver(e, n);
	if (c && category_get_mode(c) != CATEGORY_MODE_FIXED) {
		struct rmsummary req, alloc, max, none;
		rmsummary_init(&req);
		rmsummary_init(&alloc);
		rmsummary_init(&max);
		rmsummary_init(&none);
		requested_of(n, &req);
		if (x->driver_sized) {
			/* The driver sizes it when it dispatches it, with the category's
			 * measurements of that moment: only the rule's own declarations go with it,
			 * and the category's ceiling (whatever this rule declared). */
			category_allocation(c, &none, CATEGORY_LEVEL_MAX, &max);
			spec->driver_sizes = 1;
		} else {
			category_allocation(c, &req, (enum category_level)x->level, &alloc);
			category_allocation(c, &req, CATEGORY_LEVEL_MAX, &max);
		}
		for (size_t k = 0; k < 4; k++) {
			if (res_map[k].field == RM_DISK &&
			    (e->features & BATCH_FEATURE_LOCAL_EXECUTION)) {
				/* Rules share the working directory: disk is not measured per
				 * rule, so only a declared value is used (for admission). */
				continue;
			}
			double v = (x->driver_sized ? &req : &alloc)->v[res_map[k].field];
			*batch_res_field(&spec->resources, k) = v >= 0 ? (int64_t)(v + 0.999) : -1;
			double m = max.v[res_map[k].field];
			/* Room to grow only where the task did not fix the value itself (for a
			 * driver that sizes, the category's ceiling); no ceiling at all (a Work
			 * Queue run: the whole worker) bounds it by the worker. */
			*batch_res_field(&spec->max_resources, k) =
			    req.v[res_map[k].field] >= 0 && !x->driver_sized ? -1
			    : m >= 0                                         ? (int64_t)(m + 0.999)
			             : BATCH_RESOURCES_UNBOUNDED;
		}
		debug(D_ALLOC, "rule %d (%s, level %d): cores %lld memory %lld disk %lld%s", n->id,
		      n->category->name, x->level, (long long)spec->resources.cores,
		      (long long)spec->resources.memory_mb, (long long)spec->resources.disk_mb,
		      x->driver_sized ? " declared, the rest sized by the batch system" : "");
	}
	x->alloc = spec->resources; /* for a driver-sized try, until its result says */
	x->alloc_cores = -1;
	x->sized = !x->driver_sized && c && category_get_mode(c) != CATEGORY_MODE_FIXED &&
	           x->level == CATEGORY_LEVEL_FIRST &&
	           category_get_stats(c)->first_alloc.v[RM_MEMORY] >= 0;
	if (!s->monitor_dir || n->workflow)
		return NULL;
	x->monitored = 1;
	char *sp = summary_path(e, n);
	char *file = xasprintf("%s.summary", sp);
	unlink(file); /* a stale summary must not be mistaken for this try's */
	free(file);
	free(sp);
	return wrap(e, n, command, &spec->resources);
}

static void summary_to_result(const struct rmsummary *m, struct batch_result *eff)
{
	eff->exited_normally = m->exit_type == RM_EXIT_NORMAL;
	eff->exit_code = m->exit_type == RM_EXIT_NORMAL ? m->exit_status : 0;
	eff->signal = m->exit_type == RM_EXIT_NORMAL ? 0 : m->signal;
	if (m->exit_type == RM_EXIT_LIMITS) {
		for (size_t k = 0; k < N_RES; k++)
			if (m->limits_exceeded[res_map[k].field] >= 0)
				eff->exhausted |= res_map[k].exhausted_bit;
		if (!eff->exhausted)
			eff->exhausted = BATCH_EXHAUSTED_MEMORY; /* a limit we do not map */
	}
}

void engine_alloc_result(struct engine *e, struct dag_node *n, const struct batch_result *r,
                         struct batch_result *eff, struct rmsummary *measured)
{
	struct node_extra *x = &e->extra[n->id];
	*eff = *r;
	struct batch_resources mr = r->measured;
	for (size_t k = 0; k < N_RES; k++) {
		int64_t v = *batch_res_field(&mr, k);
		if (v >= 0)
			measured->v[res_map[k].field] = (double)v;
	}
	if (r->start_us > 0 && r->end_us >= r->start_us)
		measured->v[RM_WALL_TIME] = (double)(r->end_us - r->start_us) / 1e6;
	if (r->cpu_time_s >= 0)
		measured->v[RM_CPU_TIME] = r->cpu_time_s;
	if (x->driver_sized) {
		/* what the driver gave the last try */
		struct batch_resources got = r->allocated;
		for (size_t k = 0; k < 4; k++) {
			int64_t v = *batch_res_field(&got, k);
			if (v >= 0)
				*batch_res_field(&x->alloc, k) = v;
		}
		x->alloc_cores = (float)r->allocated_cores;
		x->sized = r->allocation_computed != 0;
	}
	if (!x->monitored || r->removed || r->error)
		return;
	char *sp = summary_path(e, n);
	char *file = xasprintf("%s.summary", sp);
	free(sp);
	char *text = NULL;
	size_t len = 0;
	FILE *f = fopen(file, "r");
	if (f) {
		text = xmalloc(1 << 20);
		len = fread(text, 1, (1 << 20) - 1, f);
		text[len] = 0;
		fclose(f);
	}
	char err[256] = "";
	struct rmsummary m;
	rmsummary_init(&m);
	if (!text && r->exhausted) {
		/* The batch system stopped the whole job, the monitor with it: its verdict
		 * (exhaustion) stands, only the summary is missing. */
		debug(D_ALLOC, "rule %d: no summary in %s after exhaustion", n->id, file);
	} else if (!text || rmsummary_from_json(text, &m, err, sizeof err) < 0) {
		/* The monitor itself failed: say so rather than report its exit status as the
		 * rule's. */
		snprintf(e->sizing->errbuf, sizeof e->sizing->errbuf,
		         "resource_monitor failed (exit code %d): %s: %s", r->exit_code, file,
		         text ? err : "no summary written");
		eff->error = e->sizing->errbuf;
	} else {
		summary_to_result(&m, eff);
		for (int k = 0; k < RM_N_FIELDS; k++)
			if (m.v[k] >= 0)
				measured->v[k] = m.v[k];
		/* In a shared working directory the monitor's disk figure is the whole
		 * directory, not what this rule wrote: do not size disk from it. */
		if (e->features & BATCH_FEATURE_LOCAL_EXECUTION)
			measured->v[RM_DISK] = -1;
	}
	rmsummary_clear(&m);
	free(text);
	free(file);
}

static uint64_t exhausted_fields(int bits)
{
	uint64_t which = 0;
	for (size_t k = 0; k < N_RES; k++)
		if (bits & res_map[k].exhausted_bit)
			which |= UINT64_C(1) << res_map[k].field;
	return which;
}

static void alloc_summary(const struct batch_resources *a, struct rmsummary *s)
{
	struct batch_resources copy = *a;
	for (size_t k = 0; k < N_RES; k++) {
		int64_t v = *batch_res_field(&copy, k);
		s->v[res_map[k].field] = v >= 0 ? (double)v : -1;
	}
}

int engine_alloc_exhausted(struct engine *e, struct dag_node *n, const struct batch_result *eff,
                           const struct rmsummary *measured)
{
	struct node_extra *x = &e->extra[n->id];
	struct category *c = category_of(e, n->category);
	e->sizing->exhaustions++;
	if (!c)
		return 0;
	if (x->driver_sized) {
		/* The driver ran it at the ceiling already (or it had declared the value that
		 * was exceeded): nothing larger to give it. */
		category_accumulate(c, measured);
		engine_alloc_record(e, n, eff, measured, -1);
		return 0;
	}
	struct rmsummary req, alloc;
	rmsummary_init(&req);
	rmsummary_init(&alloc);
	requested_of(n, &req);
	alloc_summary(&x->alloc, &alloc);
	/* What it used is at least what it was stopped at. */
	category_accumulate(c, measured);
	enum category_level next = category_next_level(c, (enum category_level)x->level, &req,
	                                               &alloc, exhausted_fields(eff->exhausted));
	engine_alloc_record(e, n, eff, measured, next == CATEGORY_LEVEL_MAX ? 0 : -1);
	if (next != CATEGORY_LEVEL_MAX)
		return 0;
	x->level = CATEGORY_LEVEL_MAX;
	x->sizing_retries++;
	e->sizing->sizing_retries++;
	struct rmsummary max;
	rmsummary_init(&max);
	category_allocation(c, &req, CATEGORY_LEVEL_MAX, &max);
	notice("%s:%d: rule %d exceeded its allocation (cores %lld, memory %lld MB, disk %lld MB) "
	       "in category %s; running it again with the maximum (cores %.0f, memory %.0f MB, "
	       "disk %.0f MB)",
	       e->dag->filename, n->line, n->id, (long long)x->alloc.cores,
	       (long long)x->alloc.memory_mb, (long long)x->alloc.disk_mb, n->category->name,
	       max.v[RM_CORES], max.v[RM_MEMORY], max.v[RM_DISK]);
	return 1;
}

void engine_alloc_record(struct engine *e, struct dag_node *n, const struct batch_result *eff,
                         const struct rmsummary *measured, int done)
{
	struct node_extra *x = &e->extra[n->id];
	struct category *c = category_of(e, n->category);
	if (!c)
		return;
	struct rmsummary alloc;
	rmsummary_init(&alloc);
	alloc_summary(&x->alloc, &alloc);
	if (x->driver_sized && x->alloc_cores >= 0)
		alloc.v[RM_CORES] = x->alloc_cores;
	/* a limit the driver grew or shrank while the rule ran: its allocated memory-time is the
	 * integral of that limit, the time-average held times the wall time */
	if (eff->memory_held_mb > 0 && alloc.v[RM_MEMORY] >= 0) {
		debug(D_ALLOC,
		      "rule %d (%s): its memory limit changed while it ran: %.0f MB held on "
		      "average (%.0f MB allocated at its start)",
		      n->id, n->category->name, eff->memory_held_mb, alloc.v[RM_MEMORY]);
		alloc.v[RM_MEMORY] = eff->memory_held_mb;
	}
	/* cores lent to it while it ran count as allocated too, for as long as they were lent */
	if (eff->cores_held > 0 && alloc.v[RM_CORES] >= 0) {
		debug(
		    D_ALLOC,
		    "rule %d (%s): it was lent cores while it ran: %.3g cores held on average (%g "
		    "allocated at its start)",
		    n->id, n->category->name, eff->cores_held, alloc.v[RM_CORES]);
		alloc.v[RM_CORES] = eff->cores_held;
	}
	double wall = measured->v[RM_WALL_TIME] >= 0 ? measured->v[RM_WALL_TIME] : 0;
	int driver_retries = x->driver_sized && eff->driver_retries > 0 ? eff->driver_retries : 0;
	for (int i = 0; i < driver_retries; i++) {
		/* tries the driver stopped and ran again at the ceiling: counted, their
		 * allocation·time unknown here */
		category_record(c, NULL, NULL, -1, 1, 0, 0);
		e->sizing->exhaustions++;
		e->sizing->sizing_retries++;
	}
	if (driver_retries)
		x->sizing_retries += driver_retries;
	struct sized_category *sc = NULL;
	HASH_FIND_PTR(e->sizing->cats, &n->category, sc);
	if (sc && x->sized) {
		for (size_t k = 0; k < 4; k++) {
			double a = alloc.v[res_map[k].field], u = measured->v[res_map[k].field];
			if (a < 0)
				continue;
			/* core-time used is CPU time (the peak would count bursts as held) */
			if (res_map[k].field == RM_CORES && measured->v[RM_CPU_TIME] >= 0 &&
			    wall > 0)
				u = measured->v[RM_CPU_TIME] / wall;
			sc->sized_alloc[k] += a * wall;
			sc->sized_waste[k] +=
			    (eff->exhausted || u < 0 ? a : (a > u ? a - u : 0)) * wall;
		}
	}
	if (done == 1 && !eff->exhausted)
		category_accumulate(c, measured);
	for (int i = 0; i < eff->limit_raises; i++)
		category_record_limit_raise(c);
	category_record(
	    c, &alloc, measured, wall, eff->exhausted != 0,
	    (x->level == CATEGORY_LEVEL_MAX && x->sizing_retries > 0) || driver_retries > 0, done);
}

static int worth_reporting(struct engine *e)
{
	struct engine_sizing *s = e->sizing;
	return s && (s->any_sizing || s->monitor_dir || s->driver_measures || s->exhaustions);
}

/* "2 / 1200 / 300" for the sized fields of S (cores / memory MB / disk MB), "-" for unset. */
static void triple(const struct rmsummary *s, char *buf, size_t len)
{
	char part[3][32];
	const int f[3] = {RM_CORES, RM_MEMORY, RM_DISK};
	for (int i = 0; i < 3; i++) {
		if (s->v[f[i]] < 0)
			snprintf(part[i], sizeof part[i], "-");
		else
			snprintf(part[i], sizeof part[i], "%.*f", f[i] == RM_CORES ? 2 : 0,
			         s->v[f[i]]);
	}
	snprintf(buf, len, "%s/%s/%s", part[0], part[1], part[2]);
}

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

void engine_alloc_report(struct engine *e)
{
	if (!worth_reporting(e) || e->opt->progress == ENGINE_PROGRESS_QUIET)
		return;
	fprintf(stderr, "makeflow: categories (cores/memory MB/disk MB; waste is allocated minus "
	                "used, integrated over run time):\n");
	fprintf(stderr, "  %-16s %-14s %6s %6s %5s %6s %-20s %-20s %16s %16s\n", "category", "mode",
	        "done", "failed", "exh", "retry", "max seen", "first allocation", "waste core-h",
	        "waste GB-h");
	for (struct sized_category *sc = e->sizing->cats; sc; sc = sc->hh.next) {
		const struct category_stats *st = category_get_stats(sc->cat);
		if (st->tasks_done == 0 && st->tasks_failed == 0 && st->exhaustions == 0)
			continue;
		char seen[100], first[100], wc[48], wm[48];
		triple(&st->max_seen, seen, sizeof seen);
		triple(&st->first_alloc, first, sizeof first);
		snprintf(wc, sizeof wc, "%.2f (%.0f%%)", st->waste[RM_CORES] / 3600,
		         pct(st->waste[RM_CORES], st->allocated[RM_CORES]));
		snprintf(wm, sizeof wm, "%.2f (%.0f%%)", st->waste[RM_MEMORY] / 3600 / 1024,
		         pct(st->waste[RM_MEMORY], st->allocated[RM_MEMORY]));
		fprintf(stderr, "  %-16s %-14s %6lld %6lld %5lld %6lld %-20s %-20s %16s %16s\n",
		        category_name(sc->cat), category_mode_name(category_get_mode(sc->cat)),
		        (long long)st->tasks_done, (long long)st->tasks_failed,
		        (long long)st->exhaustions, (long long)st->retries, seen, first, wc, wm);
		if (st->limit_raises)
			fprintf(stderr,
			        "  %-16s memory limit raised %lld times instead of a re-run\n", "",
			        (long long)st->limit_raises);
	}
}

static json_t *summary_object(const struct rmsummary *s)
{
	json_t *o = json_object();
	for (size_t k = 0; k < 4; k++) {
		int f = res_map[k].field;
		if (s->v[f] >= 0)
			json_object_set_new(o, rmsummary_field_name(f), json_real(s->v[f]));
	}
	return o;
}

void *engine_alloc_json(struct engine *e)
{
	if (!worth_reporting(e))
		return NULL;
	json_t *a = json_array();
	for (struct sized_category *sc = e->sizing->cats; sc; sc = sc->hh.next) {
		const struct category_stats *st = category_get_stats(sc->cat);
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(category_name(sc->cat)));
		json_object_set_new(o, "mode",
		                    json_string(category_mode_name(category_get_mode(sc->cat))));
		json_object_set_new(o, "done", json_integer(st->tasks_done));
		json_object_set_new(o, "failed", json_integer(st->tasks_failed));
		json_object_set_new(o, "exhaustions", json_integer(st->exhaustions));
		json_object_set_new(o, "retries", json_integer(st->retries));
		json_object_set_new(o, "limit_raises", json_integer(st->limit_raises));
		json_object_set_new(o, "max_seen", summary_object(&st->max_seen));
		json_object_set_new(o, "first_allocation", summary_object(&st->first_alloc));
		json_t *w = json_object();
		json_t *al = json_object();
		for (size_t k = 0; k < 4; k++) {
			int f = res_map[k].field;
			json_object_set_new(w, rmsummary_field_name(f), json_real(st->waste[f]));
			json_object_set_new(al, rmsummary_field_name(f),
			                    json_real(st->allocated[f]));
		}
		json_object_set_new(o, "waste", w);
		json_object_set_new(o, "allocated", al);
		json_t *sw = json_object();
		json_t *sa = json_object();
		for (size_t k = 0; k < 4; k++) {
			const char *name = rmsummary_field_name(res_map[k].field);
			json_object_set_new(sw, name, json_real(sc->sized_waste[k]));
			json_object_set_new(sa, name, json_real(sc->sized_alloc[k]));
		}
		/* the same, for the tries that ran with a computed first allocation only */
		json_object_set_new(o, "waste_sized", sw);
		json_object_set_new(o, "allocated_sized", sa);
		json_array_append_new(a, o);
	}
	return a;
}
