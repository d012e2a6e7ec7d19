/* helper_url_master.c: a small Work Queue master for test/e2e/33-wq-url.sh, using only the
 * public API: it submits two tasks whose input is the same URL, one whose URL gives 404, and
 * then one plain task, and prints one line per returned task ("task TAG result RESULT status N")
 * so the suite can check contents, results and that master and worker stayed up.
 *
 * Usage: helper_url_master PORTFILE URL_OK URL_MISSING */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "work_queue.h"
#include "banned.h"

static int submit(struct work_queue *q, const char *tag, const char *cmd, const char *url,
                  const char *remote, const char *out)
{
	struct work_queue_task *t = work_queue_task_create(cmd);
	work_queue_task_specify_tag(t, tag);
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_memory(t, 100);
	work_queue_task_specify_disk(t, 100);
	if (url && work_queue_task_specify_url(t, url, remote, WORK_QUEUE_CACHE) < 0) {
		fprintf(stderr, "helper_url_master: %s: %s\n", tag, work_queue_task_last_error(t));
		work_queue_task_delete(t);
		return -1;
	}
	if (out && work_queue_task_specify_output_file(t, out, out, WORK_QUEUE_NOCACHE) < 0) {
		fprintf(stderr, "helper_url_master: %s: %s\n", tag, work_queue_task_last_error(t));
		work_queue_task_delete(t);
		return -1;
	}
	int id = work_queue_submit(q, t);
	if (id < 0) {
		fprintf(stderr, "helper_url_master: cannot submit %s (%d)\n", tag, id);
		work_queue_task_delete(t);
	}
	return id;
}

/* Waits for N tasks; returns how many came back. */
static int collect(struct work_queue *q, int n)
{
	int got = 0;
	while (got < n) {
		struct work_queue_task *t = work_queue_wait(q, 60);
		if (!t)
			break;
		printf("task %s result %s status %d\n", t->tag ? t->tag : "?",
		       work_queue_result_str(t->result), t->return_status);
		fflush(stdout);
		work_queue_task_delete(t);
		got++;
	}
	return got;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: helper_url_master PORTFILE URL_OK URL_MISSING\n");
		return 2;
	}
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.port_file = argv[1];
	struct work_queue *q = work_queue_create_opts(&o);
	if (!q) {
		fprintf(stderr, "helper_url_master: cannot create the queue\n");
		return 1;
	}
	int rc = 0;
	if (submit(q, "first", "cat in.txt > first.txt", argv[2], "in.txt", "first.txt") < 0 ||
	    submit(q, "second", "cat data > second.txt", argv[2], "data", "second.txt") < 0 ||
	    submit(q, "missing", "cat gone.txt", argv[3], "gone.txt", NULL) < 0)
		rc = 1;
	if (rc == 0 && collect(q, 3) != 3)
		rc = 1;
	/* after the failed fetch, master and worker still work */
	if (rc == 0 && submit(q, "after", "echo still up > after.txt", NULL, NULL, "after.txt") < 0)
		rc = 1;
	if (rc == 0 && collect(q, 1) != 1)
		rc = 1;
	work_queue_delete(q);
	return rc;
}
