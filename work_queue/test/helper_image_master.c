/* helper_image_master.c: a small Work Queue master for test/e2e/49-wq-images.sh and the image
 * benchmark, using only the public API: it submits tasks that name their container, in phases
 * (--wait waits for every task submitted so far), prints one line per returned task ("task TAG
 * result RESULT status N worker ID commit START END bytes B", the instants in microseconds, then
 * its output), and at the end the bytes the master sent and the seconds from the first
 * submission to the last completion and to the first one.
 *
 * Usage: helper_image_master PORTFILE ITEM...
 * where ITEM is --wait, --workers=N (wait until N workers are connected), or
 * TAG,KIND,IMAGE_OR_PATH,FEATURE|-,COMMAND (KIND: name or archive, in a container of the task's
 * own, or name-shared or archive-shared, in the worker's shared container of the image; COMMAND may
 * hold commas; FEATURE: a worker label the task requires, - for none). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil.h"
#include "work_queue.h"
#include "banned.h"

/* Splits the first 4 comma-separated fields of S (modified in place) into F; the rest is F[4]. */
static int fields(char *s, char *f[5])
{
	for (int i = 0; i < 4; i++) {
		f[i] = s;
		char *c = strchr(s, ',');
		if (!c)
			return -1;
		*c = 0;
		s = c + 1;
	}
	f[4] = s;
	return 0;
}

static int submit(struct work_queue *q, char *arg)
{
	char *f[5];
	if (fields(arg, f) < 0) {
		fprintf(stderr, "helper_image_master: bad task %s\n", arg);
		return -1;
	}
	struct work_queue_task *t = work_queue_task_create(f[4]);
	work_queue_task_specify_tag(t, f[0]);
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_memory(t, 200);
	work_queue_task_specify_disk(t, 10);
	/* KIND: name or archive, -shared for the worker's shared container of the image */
	int mode =
	    strstr(f[1], "-shared") ? WORK_QUEUE_CONTAINER_SHARED : WORK_QUEUE_CONTAINER_TASK;
	int r = strncmp(f[1], "archive", 7) == 0
	            ? work_queue_task_specify_container_archive(t, f[2], NULL, mode)
	            : work_queue_task_specify_container(t, f[2], mode);
	if (r == 0 && strcmp(f[3], "-") != 0)
		r = work_queue_task_specify_feature(t, f[3]);
	if (r < 0 || work_queue_submit(q, t) < 0) {
		fprintf(stderr, "helper_image_master: cannot submit %s: %s\n", f[0],
		        work_queue_task_last_error(t));
		work_queue_task_delete(t);
		return -1;
	}
	return 1;
}

static int64_t first_done; /* the earliest time_when_done seen (us since the epoch), 0 none */

/* Waits for N tasks; 0, or -1 when one did not come back within 300 s. */
static int wait_for(struct work_queue *q, int n)
{
	for (int got = 0; got < n; got++) {
		struct work_queue_task *t = work_queue_wait(q, 300);
		if (!t)
			return -1;
		printf("task %s result %s status %d worker %s commit %lld %lld bytes %lld\n%s\n",
		       t->tag ? t->tag : "?", work_queue_result_str(t->result), t->return_status,
		       t->worker_id ? t->worker_id : "-", (long long)t->time_when_commit_start,
		       (long long)t->time_when_commit_end, (long long)t->bytes_sent,
		       t->output ? t->output : "");
		if (t->time_when_done > 0 && (first_done == 0 || t->time_when_done < first_done))
			first_done = t->time_when_done;
		fflush(stdout);
		work_queue_task_delete(t);
	}
	return 0;
}

/* Waits until N workers are connected; 0, or -1 after 60 s. */
static int wait_workers(struct work_queue *q, int n)
{
	int64_t end = time_monotonic_us() + 60 * 1000000LL;
	struct work_queue_stats s;
	for (;;) {
		work_queue_get_stats(q, &s);
		if (s.workers_connected >= n)
			return 0;
		if (time_monotonic_us() > end)
			return -1;
		struct work_queue_task *t = work_queue_wait(q, 0.05);
		if (t) /* none is submitted before: not reached */
			work_queue_task_delete(t);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: helper_image_master PORTFILE ITEM...\n");
		return 2;
	}
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.port_file = argv[1];
	struct work_queue *q = work_queue_create_opts(&o);
	if (!q) {
		fprintf(stderr, "helper_image_master: cannot create the queue\n");
		return 1;
	}
	int pending = 0, st = 0;
	int64_t t0 = time_monotonic_us();
	int64_t t0_epoch = time_now_us();
	for (int i = 2; i < argc && st == 0; i++) {
		if (strncmp(argv[i], "--workers=", 10) == 0) {
			st = wait_workers(q, atoi(argv[i] + 10));
			continue;
		}
		if (strcmp(argv[i], "--wait") == 0) {
			st = wait_for(q, pending);
			pending = 0;
			continue;
		}
		int r = submit(q, argv[i]);
		if (r < 0)
			st = -1;
		else
			pending += r;
	}
	if (st == 0)
		st = wait_for(q, pending);
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	printf("bytes_sent %lld seconds %.2f first %.2f\n", (long long)s.bytes_sent,
	       (double)(time_monotonic_us() - t0) / 1e6,
	       first_done > 0 ? (double)(first_done - t0_epoch) / 1e6 : -1.0);
	work_queue_delete(q);
	return st == 0 ? 0 : 1;
}
