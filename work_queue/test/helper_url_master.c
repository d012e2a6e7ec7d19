/* helper_url_master.c: a small Work Queue master for test/e2e/33-wq-url.sh, using only the
 * public API: it submits two tasks whose input is the same URL, one whose URL gives 404, and
 * then one plain task, and prints one line per returned task ("task TAG result RESULT status N")
 * so the suite can check contents, results and that master and worker stayed up.
 *
 * Usage: helper_url_master PORTFILE URL_OK URL_MISSING
 *
 * With `together` (test/e2e/48-shared-cache.sh, test/bench/shared-url.sh): N tasks (1 core
 * each) whose input is URL, each waiting until all N have started (files in STARTED_DIR), so
 * that N 1-core workers run one each; task I writes the input's size to tI.txt, and its line
 * says "task tI result ...".
 *
 * Usage: helper_url_master together PORTFILE URL STARTED_DIR N
 *
 * With `together-dir` (48-shared-cache.sh): the same, but the input is the local directory DIR
 * given as a cached directory (a D- object), named "in" in the sandbox; task I writes the
 * SHA-256 of its files' contents (in the order of their sorted paths) to tI.txt.
 *
 * Usage: helper_url_master together-dir PORTFILE DIR STARTED_DIR N
 *
 * With `nocache` (33-wq-url.sh): two tasks submitted together, n1 and n2, whose input is URL
 * given WORK_QUEUE_NOCACHE, then c1 and after it c2 with the same URL cached; each writes the
 * input to TAG.txt.
 *
 * Usage: helper_url_master nocache PORTFILE URL */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "work_queue.h"
#include "banned.h"

static int submit_flags(struct work_queue *q, const char *tag, const char *cmd, const char *url,
                        const char *remote, const char *out, int flags)
{
	struct work_queue_task *t = work_queue_task_create(cmd);
	work_queue_task_specify_tag(t, tag);
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_memory(t, 100);
	work_queue_task_specify_disk(t, 100);
	if (url && url[0] == '/' &&
	    work_queue_task_specify_directory(t, url, remote, WORK_QUEUE_INPUT, flags, 1) < 0) {
		fprintf(stderr, "helper_url_master: %s: %s\n", tag, work_queue_task_last_error(t));
		work_queue_task_delete(t);
		return -1;
	}
	if (url && url[0] != '/' && work_queue_task_specify_url(t, url, remote, flags) < 0) {
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

static int submit(struct work_queue *q, const char *tag, const char *cmd, const char *url,
                  const char *remote, const char *out)
{
	return submit_flags(q, tag, cmd, url, remote, out, WORK_QUEUE_CACHE);
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

/* A queue on a free port written to PORTFILE, or NULL (said on stderr). */
static struct work_queue *open_queue(const char *portfile)
{
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.port_file = portfile;
	struct work_queue *q = work_queue_create_opts(&o);
	if (!q)
		fprintf(stderr, "helper_url_master: cannot create the queue\n");
	return q;
}

/* The `together` mode; with DIR, `together-dir` (URL is then the directory's path). */
static int together(const char *portfile, const char *url, const char *started, int n, bool dir)
{
	struct work_queue *q = open_queue(portfile);
	if (!q)
		return 1;
	work_queue_specify_prefetch(q, 0, 0);
	int rc = 0;
	for (int i = 1; i <= n && rc == 0; i++) {
		char tag[16], cmd[1024], out[32];
		snprintf(tag, sizeof tag, "t%d", i);
		snprintf(cmd, sizeof cmd,
		         "touch %s/%s; until [ `ls %s | wc -l` -ge %d ]; do sleep 0.05; done; %s > "
		         "%s.txt",
		         started, tag, started, n,
		         dir ? "find in/ -type f | LC_ALL=C sort | xargs cat | sha256sum"
		             : "stat -c %s in.txt",
		         tag);
		snprintf(out, sizeof out, "%s.txt", tag);
		if (submit(q, tag, cmd, url, dir ? "in" : "in.txt", out) < 0)
			rc = 1;
	}
	if (rc == 0 && collect(q, n) != n)
		rc = 1;
	work_queue_delete(q);
	return rc;
}

/* The `nocache` mode. */
static int nocache(const char *portfile, const char *url)
{
	struct work_queue *q = open_queue(portfile);
	if (!q)
		return 1;
	static const char *const tags[] = {"n1", "n2", "c1", "c2"};
	int rc = 0;
	for (int i = 0; i < 4 && rc == 0; i++) {
		char cmd[64], out[16];
		snprintf(cmd, sizeof cmd, "cat in.txt > %s.txt", tags[i]);
		snprintf(out, sizeof out, "%s.txt", tags[i]);
		if (submit_flags(q, tags[i], cmd, url, "in.txt", out,
		                 i < 2 ? WORK_QUEUE_NOCACHE : WORK_QUEUE_CACHE) < 0 ||
		    (i != 0 && collect(q, i == 1 ? 2 : 1) != (i == 1 ? 2 : 1)))
			rc = 1;
	}
	work_queue_delete(q);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "nocache"))
		return nocache(argv[2], argv[3]);
	if (argc == 6 && (!strcmp(argv[1], "together") || !strcmp(argv[1], "together-dir"))) {
		int n = atoi(argv[5]);
		if (n < 1 || n > 1000) {
			fprintf(stderr, "helper_url_master: N must be 1 to 1000\n");
			return 2;
		}
		bool dir = !strcmp(argv[1], "together-dir");
		if (dir && argv[3][0] != '/') {
			fprintf(stderr, "helper_url_master: DIR must be an absolute path\n");
			return 2;
		}
		return together(argv[2], argv[3], argv[4], n, dir);
	}
	if (argc != 4) {
		fprintf(stderr, "usage: helper_url_master PORTFILE URL_OK URL_MISSING\n");
		return 2;
	}
	struct work_queue *q = open_queue(argv[1]);
	if (!q)
		return 1;
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
