/* scaler_model.c: the modelled CPU load per category of --modelled-load (scaler_model.h). */
#include "scaler_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stringtools.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

#define MODEL_MAX_LINES 10000

struct model_entry {
	char *category;
	double fraction;
};

struct scaler_model {
	struct model_entry *e;
	size_t n, cap;
};

struct scaler_model *scaler_model_load(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "--modelled-load %s: %s", path, strerror(errno));
		return NULL;
	}
	struct scaler_model *m = xcalloc(1, sizeof *m);
	char line[1024];
	int lineno = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		char name[256], frac[64], extra[8];
		int k = sscanf(line, "%255s %63s %7s", name, frac, extra);
		if (k <= 0)
			continue;
		double v;
		if (k != 2 || str_to_double(frac, &v) < 0 || v < 0 || v > 1 ||
		    m->n >= MODEL_MAX_LINES) {
			snprintf(err, errlen,
			         "--modelled-load %s, line %d: expected CATEGORY FRACTION (0..1)",
			         path, lineno);
			fclose(f);
			scaler_model_delete(m);
			return NULL;
		}
		struct model_entry e = {xstrdup(name), v};
		VEC_PUSH(m->e, m->n, m->cap, e);
	}
	fclose(f);
	return m;
}

void scaler_model_delete(struct scaler_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].category);
	free(m->e);
	free(m);
}

void scaler_model_apply(const struct scaler_model *m, struct scaler_input *in)
{
	if (!m)
		return;
	for (size_t i = 0; i < in->n_cats; i++)
		for (size_t k = 0; k < m->n; k++)
			if (!strcmp(in->cats[i].name, m->e[k].category)) {
				double cores = in->cats[i].size.v[SC_CORES];
				in->cats[i].cores_avg = m->e[k].fraction * (cores > 0 ? cores : 1);
			}
}
