/* helper_master_bench.c: a master made with the C API alone, for the benchmarks of simulated
 * workers (test/bench/sim.sh). `rate` keeps zero-length tasks without files queued and prints,
 * every second, the tasks completed and the workers connected; `tasks` measures the RSS growth of
 * queueing N tasks; `workers` the RSS growth of N connected workers; `status` the size of the
 * status documents a scaler reads with N workers and many tasks (e2e 46-status-size). The port
 * goes to a file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "work_queue.h"
#include "banned.h"

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

static struct work_queue_task *null_task(void)
{
	struct work_queue_task *t = work_queue_task_create("true");
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_memory(t, 10);
	work_queue_task_specify_disk(t, 10);
	return t;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double now_s(void)
{
	return (double)uv_hrtime() / 1e9;
}

static int connected(struct work_queue *q)
{
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	return s.workers_connected;
}

static size_t dumped_size(const json_t *doc)
{
	char *text = json_dumps(doc, JSON_COMPACT);
	size_t n = text ? strlen(text) : 0;
	free(text);
	return n;
}

/* `status`: NTASKS tasks of four categories queued, N workers connected (within SECONDS), then
 * one JSON line: the sizes of the `master` document (with its scaler section) and of the
 * `categories` one, the scaler's worker rows and summary. */
static int status_sizes(struct work_queue *q, long n, double seconds, long ntasks)
{
	static const char *const cats[] = {"align", "sort", "merge", "plot"};
	for (long i = 0; i < ntasks; i++) {
		struct work_queue_task *t = null_task();
		work_queue_task_specify_category(t, cats[i % 4]);
		work_queue_submit(q, t);
	}
	double end = now_s() + seconds;
	while (connected(q) < n && now_s() < end)
		work_queue_wait(q, 0.1);
	for (int i = 0; i < 20; i++) /* dispatch settles */
		work_queue_wait(q, 0.1);
	json_t *mdoc = (json_t *)work_queue_status(q, "master");
	json_t *master = json_array_get(mdoc, 0);
	json_t *scaler = json_object_get(master, "scaler");
	json_t *rows = json_object_get(scaler, "worker_rows");
	json_t *summary = json_object_get(scaler, "workers_summary");
	size_t idle_rows = 0, i;
	json_t *row;
	int idle_first = 1; /* every idle row comes before every busy one */
	json_array_foreach(rows, i, row)
	{
		int idle = json_integer_value(json_object_get(row, "tasks")) == 0;
		if (idle && i != idle_rows)
			idle_first = 0;
		idle_rows += idle;
	}
	json_t *cat_doc = (json_t *)work_queue_status(q, "categories");
	printf("{\"workers\":%d,\"tasks\":%ld,\"master_bytes\":%zu,\"categories_bytes\":%zu,"
	       "\"worker_rows\":%zu,\"idle_rows\":%zu,\"idle_first\":%s,\"truncated\":%s,"
	       "\"summary_active\":%lld,\"summary_idle\":%lld,\"categories\":%zu}\n",
	       connected(q), ntasks, dumped_size(master), dumped_size(cat_doc),
	       json_array_size(rows), idle_rows, idle_first ? "true" : "false",
	       json_is_true(json_object_get(scaler, "worker_rows_truncated")) ? "true" : "false",
	       (long long)json_integer_value(json_object_get(summary, "active")),
	       (long long)json_integer_value(json_object_get(summary, "idle")),
	       json_array_size(json_object_get(scaler, "categories")));
	fflush(stdout);
	json_decref(mdoc);
	json_decref(cat_doc);
	int ok = connected(q) >= n;
	work_queue_delete(q);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr,
		        "usage: helper_master_bench rate|tasks|workers|status PORTFILE N SECONDS "
		        "[NTASKS]\n"
		        "  rate: N workers to wait for, then SECONDS of completions\n"
		        "  tasks: N tasks queued; workers: N workers connected\n"
		        "  status: NTASKS (1000000) tasks, N workers; status sizes\n");
		return 2;
	}
	const char *mode = argv[1];
	long n = atol(argv[3]);
	double seconds = atof(argv[4]);
	long before = rss_kb();
	struct work_queue *q = work_queue_create(0);
	if (!q)
		return 1;
	FILE *pf = fopen(argv[2], "w");
	if (!pf)
		return 1;
	fprintf(pf, "%d\n", work_queue_port(q));
	fclose(pf);
	if (!strcmp(mode, "tasks")) {
		long b = rss_kb();
		double t0 = now_s();
		for (long i = 0; i < n; i++)
			work_queue_submit(q, null_task());
		double t1 = now_s();
		long a = rss_kb();
		printf("{\"tasks\":%ld,\"submit_per_s\":%.0f,\"rss_kb_before\":%ld,\"rss_kb_"
		       "after\":%ld,"
		       "\"bytes_per_task\":%.0f}\n",
		       n, (double)n / (t1 - t0), b, a, (double)(a - b) * 1024 / (double)n);
		work_queue_delete(q);
		return 0;
	}
	if (!strcmp(mode, "workers")) {
		work_queue_wait(q, 0.1);
		long b = rss_kb();
		double end = now_s() + seconds;
		while (connected(q) < n && now_s() < end)
			work_queue_wait(q, 0.1);
		for (int i = 0; i < 10; i++) /* let the last handshakes settle */
			work_queue_wait(q, 0.1);
		long a = rss_kb();
		int c = connected(q);
		printf("{\"workers\":%d,\"rss_kb_empty\":%ld,\"rss_kb_before\":%ld,\"rss_kb_"
		       "after\":%ld,"
		       "\"bytes_per_worker\":%.0f}\n",
		       c, before, b, a, c ? (double)(a - b) * 1024 / c : 0.0);
		work_queue_delete(q);
		return c >= n ? 0 : 1;
	}
	if (!strcmp(mode, "status"))
		return status_sizes(q, n, seconds, argc > 5 ? atol(argv[5]) : 1000000);
	/* rate: keep enough tasks queued for every core and every queue slot */
	long outstanding = n * 4 * 3 + 1000, done = 0;
	for (long i = 0; i < outstanding; i++)
		work_queue_submit(q, null_task());
	double end_wait = now_s() + 120;
	while (connected(q) < n && now_s() < end_wait) {
		struct work_queue_task *t = work_queue_wait(q, 0.05);
		if (t) {
			work_queue_task_delete(t);
			work_queue_submit(q, null_task());
		}
	}
	double t0 = now_s(), tick = t0 + 1, end = t0 + seconds, c0 = cpu_s();
	long at_tick = 0;
	while (now_s() < end) {
		struct work_queue_task *t = work_queue_wait(q, 0.05);
		if (t) {
			done++;
			work_queue_task_delete(t);
			work_queue_submit(q, null_task());
		}
		if (now_s() >= tick) {
			fprintf(stderr, "{\"t\":%.0f,\"done\":%ld,\"workers\":%d}\n", tick - t0,
			        done - at_tick, connected(q));
			at_tick = done;
			tick += 1;
		}
	}
	double el = now_s() - t0, cpu = cpu_s() - c0;
	printf("{\"workers\":%d,\"seconds\":%.2f,\"done\":%ld,\"tasks_per_s\":%.0f,"
	       "\"cpu_us_per_task\":%.1f}\n",
	       connected(q), el, done, (double)done / el, done ? cpu * 1e6 / (double)done : 0.0);
	fflush(stdout);
	work_queue_delete(q);
	return 0;
}
