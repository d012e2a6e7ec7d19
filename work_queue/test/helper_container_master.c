/* helper_container_master.c: a small Work Queue master for test/e2e/36-wq-docker.sh, using only
 * the public API: it submits one task per argument, each naming its container, and prints one
 * line per returned task ("task TAG result RESULT status N") followed by the task's output, so
 * the suite can check where each task ran.
 *
 * Usage: helper_container_master PORTFILE TASK...
 * where TASK is TAG,name|archive,IMAGE_OR_PATH,task|shared,COMMAND (COMMAND may hold commas). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		fprintf(stderr, "helper_container_master: bad task %s\n", arg);
		return -1;
	}
	struct work_queue_task *t = work_queue_task_create(f[4]);
	work_queue_task_specify_tag(t, f[0]);
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_memory(t, 200);
	work_queue_task_specify_disk(t, 100);
	int mode =
	    strcmp(f[3], "shared") == 0 ? WORK_QUEUE_CONTAINER_SHARED : WORK_QUEUE_CONTAINER_TASK;
	int r = strcmp(f[1], "archive") == 0
	            ? work_queue_task_specify_container_archive(t, f[2], NULL, mode)
	            : work_queue_task_specify_container(t, f[2], mode);
	if (r < 0) {
		printf("task %s refused: %s\n", f[0], work_queue_task_last_error(t));
		work_queue_task_delete(t);
		return 0;
	}
	if (work_queue_submit(q, t) < 0) {
		fprintf(stderr, "helper_container_master: cannot submit %s\n", f[0]);
		work_queue_task_delete(t);
		return -1;
	}
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: helper_container_master PORTFILE TASK...\n");
		return 2;
	}
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.port_file = argv[1];
	struct work_queue *q = work_queue_create_opts(&o);
	if (!q) {
		fprintf(stderr, "helper_container_master: cannot create the queue\n");
		return 1;
	}
	int n = 0;
	for (int i = 2; i < argc; i++) {
		int r = submit(q, argv[i]);
		if (r < 0) {
			work_queue_delete(q);
			return 1;
		}
		n += r;
	}
	fflush(stdout);
	int got = 0;
	while (got < n) {
		struct work_queue_task *t = work_queue_wait(q, 120);
		if (!t)
			break;
		printf("task %s result %s status %d\n", t->tag ? t->tag : "?",
		       work_queue_result_str(t->result), t->return_status);
		printf("container costs: load %.3f create %.3f run %.3f delete %.3f\n%s\n",
		       t->container_load_time, t->container_create_time, t->container_run_time,
		       t->container_delete_time, t->output ? t->output : "");
		fflush(stdout);
		work_queue_task_delete(t);
		got++;
	}
	work_queue_delete(q);
	return got == n ? 0 : 1;
}
