/* install_app.c: a small Work Queue application that e2e 04-install builds against an installed
 * tree with nothing but `pkg-config` (shared and static), to show that the installed headers,
 * libraries and .pc files are enough. It runs one task through a real worker and checks its
 * output. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <category.h>
#include <htc_error.h>
#include <rmsummary.h>
#include <work_queue.h>

/* Usage: install_app PORTFILE OUTPUT. Listens on a free port (written to PORTFILE), runs one task
 * on the first worker that connects, writes the task's output file to OUTPUT and exits 0 when
 * the task succeeded. Gives up after about 60 seconds without a result. */
int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: install_app PORTFILE OUTPUT\n");
		return 2;
	}
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.port_file = argv[1];
	struct work_queue *q = work_queue_create_opts(&o);
	if (!q) {
		fprintf(stderr, "install_app: cannot listen: %s\n", strerror(errno));
		return 1;
	}
	/* Something of every library the application links: category.h's modes and the master
	 * (libwork_queue), rmsummary (librmonitor), htc_strerror (libdttools). */
	if (work_queue_specify_category_mode(q, "install", CATEGORY_MODE_FIXED) < 0) {
		fprintf(stderr, "install_app: category mode refused\n");
		return 1;
	}
	printf("install_app: %s means \"%s\"\n", "HTC_ETOOBIG", htc_strerror(HTC_ETOOBIG));

	static const char text[] = "hello from an installed libwork_queue\n";
	struct work_queue_task *t = work_queue_task_create("tr a-z A-Z <in.txt >out.txt");
	int r =
	    work_queue_task_specify_buffer(t, text, sizeof text - 1, "in.txt", WORK_QUEUE_NOCACHE);
	if (r == 0)
		r = work_queue_task_specify_output_file(t, argv[2], "out.txt", WORK_QUEUE_NOCACHE);
	if (r == 0)
		r = work_queue_task_specify_category(t, "install");
	if (r == 0)
		r = work_queue_task_specify_cores(t, 1);
	if (r < 0) {
		fprintf(stderr, "install_app: %s\n", work_queue_task_last_error(t));
		return 1;
	}
	int id = work_queue_submit(q, t);
	if (id < 0) {
		fprintf(stderr, "install_app: submit: %s\n", htc_strerror(id));
		return 1;
	}
	printf("install_app: listening on port %d, task %d submitted\n", work_queue_port(q), id);
	fflush(stdout);

	struct work_queue_task *done = NULL;
	for (int i = 0; i < 12 && !done; i++)
		done = work_queue_wait(q, 5);
	if (!done) {
		fprintf(stderr, "install_app: no result after 60 s\n");
		return 1;
	}
	char *measured =
	    done->resources_measured ? rmsummary_to_json(done->resources_measured, 0, 1) : NULL;
	printf("install_app: task %d: %s, exit %d, on %s, measured %s\n", done->taskid,
	       work_queue_result_str(done->result), done->return_status,
	       done->host ? done->host : "?", measured ? measured : "null");
	free(measured);
	int ok = done->result == WORK_QUEUE_RESULT_SUCCESS && done->return_status == 0;
	work_queue_task_delete(done);
	work_queue_delete(q);
	return ok ? 0 : 1;
}
