/* rmon_machine.c: the machine-level part of the resource monitor library (see rmonitor.h):
 * the resources of the machine as the monitor sees them, the process's pool of reusable
 * cgroups, and the removal of cgroups left by monitors that were killed. Kept apart from
 * rmonitor.c, which follows one task. */
#include "rmonitor.h"

#include <dirent.h>
#include <math.h>
#include <sched.h>
#include <string.h>
#include <sys/statvfs.h>

#include "rmon_cgroup.h"
#include "rmon_proc.h"
#include "banned.h"

#define MB (1024.0 * 1024.0)

int rmonitor_pool_drain(void)
{
	return rmon_cgroup_pool_drain();
}

int rmonitor_pool_size(void)
{
	return rmon_cgroup_pool_size();
}

int rmonitor_cleanup_stale(const char *cgroup_root)
{
	struct rmon_cgroup_opts o = {.root = cgroup_root};
	return rmon_cgroup_cleanup_stale(&o);
}

static int count_gpus(void)
{
	DIR *d = opendir("/dev");
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *p = de->d_name;
		if (strncmp(p, "nvidia", 6) != 0 || !p[6])
			continue;
		int digits = 1;
		for (const char *c = p + 6; *c; c++)
			if (*c < '0' || *c > '9')
				digits = 0;
		n += digits;
	}
	closedir(d);
	return n;
}

void rmonitor_machine_resources(const char *dir, struct rmsummary *out)
{
	cpu_set_t set;
	int cpus = rmon_machine_cpus();
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		cpus = CPU_COUNT(&set);
	out->v[RM_CORES] = cpus;
	int64_t total, avail;
	rmon_machine_memory(&total, &avail);
	out->v[RM_MEMORY] = total >= 0 ? floor((double)total / MB) : -1;
	struct statvfs vfs;
	if (statvfs(dir ? dir : ".", &vfs) == 0)
		out->v[RM_DISK] = floor((double)vfs.f_bavail * (double)vfs.f_frsize / MB);
	else
		out->v[RM_DISK] = -1;
	out->v[RM_GPUS] = count_gpus();
}
