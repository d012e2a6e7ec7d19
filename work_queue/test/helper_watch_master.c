/* helper_watch_master.c: a small Work Queue master for test/e2e/37-wq-watch.sh, using only the
 * public API: it submits one task that appends a line to log.txt every 0.2 s for 2 s, with
 * log.txt a WORK_QUEUE_WATCH output, and while work_queue_wait has not returned the task it
 * records the sizes the output file takes at its final path, then prints them and the result.
 *
 * Usage: helper_watch_master PORTFILE OUTPUT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "work_queue.h"
#include "banned.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: helper_watch_master PORTFILE OUTPUT\n");
		return 2;
	}
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.port_file = argv[1];
	struct work_queue *q = work_queue_create_opts(&o);
	if (!q) {
		fprintf(stderr, "helper_watch_master: cannot create the queue\n");
		return 1;
	}
	struct work_queue_task *t = work_queue_task_create(
	    "for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i >> log.txt; sleep 0.2; done");
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_memory(t, 100);
	work_queue_task_specify_disk(t, 100);
	if (work_queue_task_specify_output_file(t, argv[2], "log.txt", WORK_QUEUE_WATCH) < 0 ||
	    work_queue_submit(q, t) < 0) {
		fprintf(stderr, "helper_watch_master: %s\n", work_queue_task_last_error(t));
		return 1;
	}
	long long last = -1;
	int seen = 0, polls = 0;
	struct work_queue_task *done = NULL;
	while (!done && polls++ < 600) { /* 60 s */
		done = work_queue_wait(q, 0.1);
		struct stat st;
		if (!done && stat(argv[2], &st) == 0 && st.st_size > 0 && st.st_size != last) {
			last = (long long)st.st_size;
			seen++;
			printf("size before done %lld\n", last);
		}
	}
	if (!done) {
		fprintf(stderr, "helper_watch_master: the task did not come back\n");
		return 1;
	}
	printf("sizes seen before done %d\n", seen);
	printf("result %s status %d\n", work_queue_result_str(done->result), done->return_status);
	fflush(stdout);
	int rc = done->result == WORK_QUEUE_RESULT_SUCCESS ? 0 : 1;
	work_queue_task_delete(done);
	work_queue_delete(q);
	return rc;
}
