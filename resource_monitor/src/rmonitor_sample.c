/* rmonitor_sample.c: the sampling of a monitored task (see rmonitor_internal.h): the cgroup's
 * and /proc's figures into the summary's peaks, the sliding window of the cores used, the disk
 * walk of the measured directories, the limits only a sample can check, and killing the task's
 * tree when one is exceeded. */
#include "rmonitor_internal.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debug.h"
#include "banned.h"

/* ---- small helpers ------------------------------------------------------------------ */

double rmonitor_now_wall(const struct rmonitor *m)
{
	return (double)(htc_clock_now_us(m->clock) - m->start_mono) / 1e6;
}

void rmonitor_set_peak(struct rmonitor *m, int f, double v)
{
	if (v < 0)
		return;
	if (m->cur.v[f] < 0 || v > m->cur.v[f]) {
		m->cur.v[f] = v;
		m->cur.peak_times[f] = rmonitor_now_wall(m);
	}
}

/* ---- killing -------------------------------------------------------------------------- */

void rmonitor_signal_tracked(struct rmonitor *m, int sig)
{
	pid_t *pids = NULL;
	size_t n = m->proc ? rmon_proc_live(m->proc, &pids) : 0;
	for (size_t i = 0; i < n; i++)
		kill(pids[i], sig);
	free(pids);
	if (!m->reaped && m->pid > 0)
		kill(m->pid, sig);
	if (m->new_session && m->pid > 0)
		kill(-m->pid, sig);
}

/* Samples /proc without a cgroup: the forks the connector has reported are taken in first
 * (the tracker then reads only the known processes instead of the whole of /proc). */
void rmonitor_proc_sample(struct rmonitor *m, int light, struct rmon_proc_totals *out)
{
	if (m->cn_on)
		rmon_cn_drain(&m->cn);
	rmon_proc_sample(m->proc, NULL, 0, light, out);
}

/* Kills every process of the task, as fast as possible. */
void rmonitor_kill_tree(struct rmonitor *m)
{
	if (m->cg)
		rmon_cgroup_kill_all(m->cg, 0);
	if (!m->cg && m->proc) {
		/* Stop first so nobody forks while we go through the list, then kill. */
		rmonitor_proc_sample(m, 1, NULL);
		rmonitor_signal_tracked(m, SIGSTOP);
		rmonitor_proc_sample(m, 1, NULL);
	}
	rmonitor_signal_tracked(m, SIGKILL);
}

void rmonitor_limit_kill(struct rmonitor *m, int field, double limit)
{
	if (m->state == ST_DONE)
		return;
	if (!m->killed_for_limits)
		debug(D_RMON, "pid %ld: %s limit %g exceeded, killing the task", (long)m->pid,
		      rmsummary_field_name(field), limit);
	m->killed_for_limits = 1;
	if (m->exceeded[field] < 0)
		m->exceeded[field] = limit;
	rmonitor_kill_tree(m);
}

/* ---- sampling ------------------------------------------------------------------------- */

void rmonitor_measure_disk(struct rmonitor *m, int force)
{
	int64_t now = time_monotonic_us();
	if (!force && now < m->disk_next_mono)
		return;
	const char *cwd_only[2] = {m->cwd, NULL};
	char here[4096];
	if (!m->cwd)
		cwd_only[0] = getcwd(here, sizeof here) ? here : ".";
	const char *const *dirs = m->measure_dirs ? (const char *const *)m->measure_dirs : cwd_only;
	int64_t bytes = rmon_disk_usage(dirs);
	int64_t cost = time_monotonic_us() - now;
	m->disk_cost_us = cost;
	m->disk_at_mono = now;
	/* Never spend more than a tenth of the time walking directories. */
	m->disk_next_mono = now + 10 * cost;
	if (bytes >= 0) {
		m->disk_now = (double)bytes / MB;
		rmonitor_set_peak(m, RM_DISK, m->disk_now);
	}
}

/* 1 when a light check of the disk limit should walk the directories: never walked yet, or
 * the room left under the limit at the last walk could have been filled since (at
 * DISK_FILL_MB_S), or a full interval has passed. A task with a lot of room left is then
 * walked at the samples (and at its end), not every FAST_S. */
int rmonitor_disk_check_due(struct rmonitor *m)
{
	double lim = m->limits[RM_DISK];
	if (lim < 0)
		return 0;
	if (m->disk_at_mono == 0)
		return 1;
	double room_s = (lim - m->disk_now) / DISK_FILL_MB_S;
	if (room_s > m->interval)
		room_s = m->interval;
	return time_monotonic_us() >= m->disk_at_mono + (int64_t)(room_s * 1e6);
}

/* Peak of delta-cpu / delta-wall over a window of at least max(1 s, interval). */
static void update_cores(struct rmonitor *m, double cpu, int threads)
{
	int64_t now = time_monotonic_us();
	if (m->nwin == WIN_MAX) {
		memmove(m->win, m->win + 1, (WIN_MAX - 1) * sizeof *m->win);
		m->nwin--;
	}
	m->win[m->nwin++] = (struct win_sample){now, cpu, threads};
	int64_t w = (int64_t)(fmax(1.0, m->interval) * 1e6);
	int base = -1;
	for (int i = m->nwin - 1; i >= 0; i--)
		if (m->win[i].t <= now - w) {
			base = i;
			break;
		}
	if (base < 0)
		return;
	double dt = (double)(now - m->win[base].t) / 1e6;
	double rate = dt > 0 ? (cpu - m->win[base].cpu) / dt : 0;
	int maxthreads = 1;
	for (int i = base; i < m->nwin; i++)
		if (m->win[i].threads > maxthreads)
			maxthreads = m->win[i].threads;
	if (rate > maxthreads)
		rate = maxthreads;
	if (rate > m->machine_cpus)
		rate = m->machine_cpus;
	if (rate < 0)
		rate = 0;
	m->cores_now = rate;
	if (rate > m->cores_peak) {
		m->cores_peak = rate;
		m->cur.peak_times[RM_CORES] = rmonitor_now_wall(m);
	}
	/* Keep one sample older than the window. */
	if (base > 0) {
		memmove(m->win, m->win + base, (size_t)(m->nwin - base) * sizeof *m->win);
		m->nwin -= base;
	}
}

static void check_sampled_limits(struct rmonitor *m)
{
	if (m->measure_only || m->state == ST_DONE)
		return;
	for (int f = 0; f < RM_N_FIELDS; f++) {
		double lim = m->limits[f];
		if (lim < 0 || m->cur.v[f] < 0)
			continue;
		switch (f) {
		case RM_START:
		case RM_END:
		case RM_MACHINE_CPUS:
		case RM_MACHINE_LOAD:
		case RM_CORES_AVG:
		case RM_GPUS: continue;
		case RM_MEMORY:
			if (m->cg_mem)
				continue;
			break;
		case RM_MAX_CONCURRENT_PROCESSES:
			if (m->cg_pids)
				continue;
			break;
		case RM_CORES:
			/* Sampled CPU rates are noisy: allow 10% over without a quota. */
			if (m->cg_cpu || m->cur.v[f] <= lim * 1.1 + 0.05)
				continue;
			break;
		default: break;
		}
		if (m->cur.v[f] > lim)
			rmonitor_limit_kill(m, f, lim);
	}
}

void rmonitor_time_series_row(struct rmonitor *m)
{
	if (!m->time_series)
		return;
	fprintf(m->time_series, "%lld %.3f %.3f %.3f %.3f %.3f %.3f %.3f %d %.3f\n",
	        (long long)time_now_us(), m->cur.v[RM_CPU_TIME] < 0 ? 0 : m->cur.v[RM_CPU_TIME],
	        m->cores_now, m->mem_now, m->vm_now, m->swap_now,
	        m->cur.v[RM_BYTES_READ] < 0 ? 0 : m->cur.v[RM_BYTES_READ],
	        m->cur.v[RM_BYTES_WRITTEN] < 0 ? 0 : m->cur.v[RM_BYTES_WRITTEN], m->procs_now,
	        m->disk_now);
	fflush(m->time_series);
}

/* Memory of a cgroup task: the cgroup's peak charge minus the page cache charged at the time
 * of reading (files the task wrote or read stay cached and charged, but they are not what
 * the task needs to run), never below the peak of the summed RSS from /proc. A task that only
 * allocates is measured exactly; one that writes a big file does not look big. */
double rmonitor_cgroup_memory_mb(struct rmonitor *m)
{
	int64_t cache = m->cache_now > 0 ? m->cache_now : 0;
	int64_t v = m->peak_bytes - cache;
	if (v < m->rss_peak)
		v = m->rss_peak;
	return (double)v / MB;
}

/* Takes one sample. LIGHT: only what the limit checks need. */
void rmonitor_sample(struct rmonitor *m, int light)
{
	struct rmon_cg_stats st;
	pid_t *pids = NULL;
	size_t n = 0;
	if (m->cg) {
		/* What the samples use: the OOM figures only with a memory limit (finish()
		 * looks at them), no block I/O (the /proc figures are used for it). */
		unsigned what = RMON_CGS_MEMORY | RMON_CGS_CPU | RMON_CGS_PIDS;
		if (m->mem_limit_mb >= 0)
			what |= RMON_CGS_OOM;
		rmon_cgroup_stats_some(m->cg, &st, what);
		m->st = st;
		/* The forks the connector holds first, as without a cgroup: a process this sample
		 * finds is then already known, not counted again when its fork is read later. */
		if (m->cn_on)
			rmon_cn_drain(&m->cn);
		rmon_cgroup_pids(m->cg, &pids, &n);
		rmon_proc_sample(m->proc, pids, n, light, &m->tot);
	} else {
		rmonitor_proc_sample(m, light, &m->tot);
	}
	free(pids);
	struct rmon_proc_totals *t = &m->tot;

	if (t->rss > m->rss_peak)
		m->rss_peak = t->rss;
	double cpu = t->cpu_s;
	if (m->cg) {
		if (st.mem_peak > m->peak_bytes)
			m->peak_bytes = st.mem_peak;
		if (st.mem_current > m->peak_bytes)
			m->peak_bytes = st.mem_current;
		m->cache_now = st.mem_cache;
		int64_t cur = st.mem_current - (st.mem_cache > 0 ? st.mem_cache : 0);
		m->mem_now = (double)(cur > t->rss ? cur : t->rss) / MB;
		rmonitor_set_peak(m, RM_MEMORY, rmonitor_cgroup_memory_mb(m));
		if (st.cpu_ns >= 0)
			cpu = (double)st.cpu_ns / 1e9;
		if (st.pids_current > 0)
			rmonitor_set_peak(m, RM_MAX_CONCURRENT_PROCESSES, (double)st.pids_current);
		if (st.io_read >= 0 && st.io_read > t->read_bytes)
			t->read_bytes = st.io_read;
		if (st.io_write >= 0 && st.io_write > t->write_bytes)
			t->write_bytes = st.io_write;
	} else {
		m->mem_now = (double)t->rss / MB;
		rmonitor_set_peak(m, RM_MEMORY, (double)m->rss_peak / MB);
	}
	if (m->cur.v[RM_CPU_TIME] < 0 || cpu > m->cur.v[RM_CPU_TIME])
		m->cur.v[RM_CPU_TIME] = cpu;
	double wall = rmonitor_now_wall(m);
	m->cur.v[RM_WALL_TIME] = wall;
	if (wall > 0)
		m->cur.v[RM_CORES_AVG] = m->cur.v[RM_CPU_TIME] / wall;
	m->vm_now = (double)t->vm / MB;
	m->swap_now = (double)t->swap / MB;
	m->procs_now = t->nprocs;
	rmonitor_set_peak(m, RM_VIRTUAL_MEMORY, m->vm_now);
	rmonitor_set_peak(m, RM_SWAP_MEMORY, m->swap_now);
	rmonitor_set_peak(m, RM_MAX_CONCURRENT_PROCESSES, (double)t->max_concurrent);
	rmonitor_set_peak(m, RM_TOTAL_PROCESSES, (double)t->total_processes);
	update_cores(m, m->cur.v[RM_CPU_TIME], t->nthreads);
	if (m->cores_peak >= 0)
		m->cur.v[RM_CORES] = m->cores_peak;
	else if (wall > 0)
		m->cur.v[RM_CORES] = fmin(m->cur.v[RM_CORES_AVG], m->machine_cpus);
	if (!light || rmonitor_disk_check_due(m))
		rmonitor_measure_disk(m, 0);
	if (!light) {
		rmonitor_set_peak(m, RM_BYTES_READ, (double)t->read_bytes / MB);
		rmonitor_set_peak(m, RM_BYTES_WRITTEN, (double)t->write_bytes / MB);
		rmonitor_set_peak(m, RM_CONTEXT_SWITCHES, (double)t->ctx_switches);
		rmonitor_set_peak(m, RM_MACHINE_LOAD, rmon_machine_load());
		if (m->report_files)
			rmonitor_set_peak(m, RM_TOTAL_FILES, (double)rmon_proc_nfiles(m->proc));
	}
	check_sampled_limits(m);
}
