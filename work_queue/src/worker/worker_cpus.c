/* worker_cpus.c: which cpus of a pinning worker each task holds. Two masks, the cpus the worker
 * may use and those its tasks hold; a task takes the lowest free ones. */
#include "worker_cpus.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "banned.h"

struct worker_cpus {
	cpu_set_t allowed, used;
};

struct worker_cpus *worker_cpus_create(const cpu_set_t *allowed)
{
	struct worker_cpus *c = xcalloc(1, sizeof *c);
	CPU_ZERO(&c->used);
	if (allowed)
		c->allowed = *allowed;
	else if (sched_getaffinity(0, sizeof c->allowed, &c->allowed) < 0)
		CPU_ZERO(&c->allowed); /* nothing to pin to: tasks run unpinned */
	return c;
}

void worker_cpus_delete(struct worker_cpus *c)
{
	free(c);
}

int worker_cpus_free(const struct worker_cpus *c)
{
	cpu_set_t f;
	CPU_XOR(&f, &c->allowed, &c->used);
	CPU_AND(&f, &f, &c->allowed);
	return CPU_COUNT(&f);
}

int worker_cpus_take(struct worker_cpus *c, double cores, cpu_set_t *got, char *buf, size_t size)
{
	CPU_ZERO(got);
	if (size > 0)
		buf[0] = '\0';
	int want = cores > 1 ? (int)ceil(cores - 1e-6) : 1;
	if (size == 0 || worker_cpus_free(c) < want)
		return 0;
	size_t len = 0;
	int n = 0;
	for (int i = 0; i < CPU_SETSIZE && n < want; i++) {
		if (!CPU_ISSET(i, &c->allowed) || CPU_ISSET(i, &c->used))
			continue;
		int w = snprintf(buf + len, size - len, "%s%d", n ? "," : "", i);
		if (w < 0 || (size_t)w >= size - len) {
			CPU_ZERO(got);
			buf[0] = '\0';
			return 0;
		}
		len += (size_t)w;
		CPU_SET(i, got);
		n++;
	}
	CPU_OR(&c->used, &c->used, got);
	return n;
}

void worker_cpus_give(struct worker_cpus *c, cpu_set_t *got)
{
	cpu_set_t keep;
	CPU_XOR(&keep, &c->used, got);
	CPU_AND(&c->used, &c->used, &keep);
	CPU_ZERO(got);
}
