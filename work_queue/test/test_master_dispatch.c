/* test_master_dispatch.c: the master's data path against a rogue or unlucky worker (the fake
 * worker of support/wq_fake_worker.h, whose messages the tests write by hand): a task_done naming a
 * transfer never opened, an output announced larger than the master's disk, an exhaustion of a
 * size the master chose, and the temporary files of dead masters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>
#include "category.h"
#include "rmsummary.h"
#include "ts_tmpdir.h"
#include "work_queue.h"
#include "wq_conn.h"
#include "wq_fake_worker.h"
#include "wq_sim.h"
#include "wq_xfer.h"
#include "master_internal.h"
#include "path.h"
#include "rmon_proc.h"
#include "xalloc.h"
#include "banned.h"

/* Runs the loop until the fake worker's task ID is RUNNING on the master. */
static int until_running(struct work_queue *q, int n)
{
	struct work_queue_stats s;
	for (int i = 0; i < 250; i++) {
		assert_null(work_queue_wait(q, 0.02));
		work_queue_get_stats(q, &s);
		if (s.tasks_running >= n)
			return 1;
	}
	return 0;
}

/* Entries of DIR whose name contains PART. */
static int count_entries(const char *dir, const char *part)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += strstr(e->d_name, part) != NULL;
	closedir(d);
	return n;
}

static struct work_queue_task *out_task(const char *out)
{
	struct work_queue_task *t = work_queue_task_create("echo x > out.txt");
	assert_int_equal(work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE),
	                 0);
	work_queue_task_specify_cores(t, 1);
	return t;
}

/* Defect: a worker naming, in task_done, a transfer it never opened made the task fail for good
 * (OUTPUT_MISSING). It is a violation: the worker is dropped and the task runs again elsewhere
 * with the same try. */
static void test_done_names_unopened_transfer(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char out[128];
	snprintf(out, sizeof out, "%s/d9.txt", e->dir);
	struct fake *f1 = fake_start(e, q, FAKE_HOLD, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = out_task(out);
	int id = work_queue_submit(q, t);
	assert_true(id >= 1);
	assert_true(until_running(q, 1));
	fake_send(f1, json_pack("{s:s,s:i,s:i,s:s,s:i,s:[{s:i,s:i}]}", "m", "task_done", "id", id,
	                        "try", 1, "outcome", "exited", "exit_status", 0, "outputs", "index",
	                        0, "xfer", 77));
	assert_true(fake_wait_flag(q, &f1->closed, 5));
	assert_true(fake_log_has(e, "names transfer 77 for output 0, which was never opened"));
	struct work_queue_stats s;
	for (int i = 0; i < 100; i++) {
		work_queue_get_stats(q, &s);
		if (s.workers_connected == 0)
			break;
		assert_null(work_queue_wait(q, 0.02));
	}
	assert_int_equal(s.workers_connected, 0);
	assert_int_equal(s.tasks_waiting, 1);
	assert_int_equal(s.tasks_failed, 0);
	/* another worker runs it, same try */
	struct fake *f2 = fake_start(e, q, FAKE_RUN, NULL);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_ptr_equal(done, t);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->try_count, 1);
	assert_int_equal(json_integer_value(json_object_get(f2->task_msgs[0], "try")), 1);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f1);
	fake_free(f2);
	unlink(out);
}

/* Defect: the master did not check an output's announced size against its own disk. A transfer
 * announcing 10 TiB is refused (disk_full) before anything is written, and the task's result
 * says why. */
static void test_output_larger_than_master_disk(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char dir[128], out[160];
	snprintf(dir, sizeof dir, "%s/d4", e->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(out, sizeof out, "%s/big.txt", dir);
	struct fake *f = fake_start(e, q, FAKE_HOLD, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = out_task(out);
	int id = work_queue_submit(q, t);
	assert_true(until_running(q, 1));
	int64_t huge = INT64_C(10) << 40;
	fake_send(f,
	          json_pack("{s:s,s:i,s:{s:i,s:i},s:I,s:s}", "m", "xfer_begin", "xfer", 1, "target",
	                    "task", id, "output", 0, "size", (json_int_t)huge, "enc", "none"));
	fake_send(f, json_pack("{s:s,s:i,s:s}", "m", "xfer_abort", "xfer", 1, "reason",
	                       "refused by the master"));
	fake_send(f, json_pack("{s:s,s:i,s:i,s:s,s:i,s:[{s:i,s:i}]}", "m", "task_done", "id", id,
	                       "try", 1, "outcome", "exited", "exit_status", 0, "outputs", "index",
	                       0, "xfer", 1));
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_OUTPUT_MISSING);
	assert_non_null(strstr(work_queue_task_last_error(done), "10995116277760 bytes announced"));
	assert_non_null(strstr(work_queue_task_last_error(done), "the master's disk"));
	assert_true(fake_log_has(e, "transfer 1 refused"));
	assert_int_equal(count_entries(dir, "big.txt"), 0); /* nothing was written */
	assert_false(f->closed);                            /* a refusal, not a violation */
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f);
}

/* The same for a member of an output directory: refused before it is created, the directory
 * fails, its temporary tree is removed, and the result says why. */
static void test_dir_member_larger_than_master_disk(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char dir[128], out[160];
	snprintf(dir, sizeof dir, "%s/d4dir", e->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(out, sizeof out, "%s/tree", dir);
	struct fake *f = fake_start(e, q, FAKE_HOLD, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = work_queue_task_create("mkdir tree");
	assert_int_equal(work_queue_task_specify_directory(t, out, "tree", WORK_QUEUE_OUTPUT,
	                                                   WORK_QUEUE_NOCACHE, 1),
	                 0);
	work_queue_task_specify_cores(t, 1);
	int id = work_queue_submit(q, t);
	assert_true(until_running(q, 1));
	fake_send(f, json_pack("{s:s,s:i,s:{s:i,s:i}}", "m", "dir_begin", "dir", 1, "target",
	                       "task", id, "output", 0));
	fake_send(f, json_pack("{s:s,s:i,s:{s:i,s:s},s:I,s:s}", "m", "xfer_begin", "xfer", 2,
	                       "target", "dir", 1, "member", "huge", "size",
	                       (json_int_t)(INT64_C(10) << 40), "enc", "none"));
	fake_send(f, json_pack("{s:s,s:i,s:s}", "m", "xfer_abort", "xfer", 2, "reason", "refused"));
	fake_send(f, json_pack("{s:s,s:i,s:s}", "m", "dir_abort", "dir", 1, "reason", "refused"));
	fake_send(f, json_pack("{s:s,s:i,s:i,s:s,s:i,s:[{s:i,s:i}]}", "m", "task_done", "id", id,
	                       "try", 1, "outcome", "exited", "exit_status", 0, "outputs", "index",
	                       0, "dir", 1));
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_OUTPUT_MISSING);
	assert_non_null(strstr(work_queue_task_last_error(done), "10995116277760 bytes announced"));
	assert_false(f->closed);
	for (int i = 0; i < 100 && count_entries(dir, "tree") > 0; i++)
		assert_null(work_queue_wait(q, 0.02)); /* the temporary tree goes in the pool */
	assert_int_equal(count_entries(dir, "tree"), 0);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f);
}

/* A directory output whose members fit is received whole (the member check passes them). */
static void test_dir_output_that_fits(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char src[128], out[160], sub[192], a[192], b[192];
	snprintf(src, sizeof src, "%s/srcdir", e->dir);
	snprintf(sub, sizeof sub, "%s/sub", src);
	snprintf(a, sizeof a, "%s/a", src);
	snprintf(b, sizeof b, "%s/sub/b", src);
	assert_int_equal(mkdir(src, 0755), 0);
	assert_int_equal(mkdir(sub, 0755), 0);
	ts_write_file(a, "alpha\n");
	ts_write_file(b, "beta\n");
	snprintf(out, sizeof out, "%s/tree", e->dir);
	struct fake *f = fake_start(e, q, FAKE_HOLD, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = work_queue_task_create("mkdir tree");
	assert_int_equal(work_queue_task_specify_directory(t, out, "tree", WORK_QUEUE_OUTPUT,
	                                                   WORK_QUEUE_NOCACHE, 1),
	                 0);
	work_queue_task_specify_cores(t, 1);
	int id = work_queue_submit(q, t);
	assert_true(until_running(q, 1));
	f->watch = 1; /* the test sends task_done itself */
	uint32_t dir_id = 0;
	json_t *target = wq_xfer_target_output(id, 0);
	assert_int_equal(wq_xfer_send_dir(f->out, src, target, 0, (void *)(intptr_t)id, &dir_id),
	                 0);
	json_decref(target);
	for (int i = 0; i < 250 && f->watch_sent < 1; i++)
		assert_null(work_queue_wait(q, 0.02));
	assert_int_equal(f->watch_sent, 1);
	assert_int_equal(f->watch_fails, 0);
	fake_send(f, json_pack("{s:s,s:i,s:i,s:s,s:i,s:[{s:i,s:i}]}", "m", "task_done", "id", id,
	                       "try", 1, "outcome", "exited", "exit_status", 0, "outputs", "index",
	                       0, "dir", (int)wq_sim_wire_id(f->wire_ids, dir_id)));
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	char got[192];
	snprintf(got, sizeof got, "%s/sub/b", out);
	char *text = ts_read_file(got, NULL);
	assert_non_null(text);
	assert_string_equal(text, "beta\n");
	free(text);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f);
	path_rm_rf(src);
	path_rm_rf(out);
}

/* The fake worker's task_done for try TRY of task ID: exhausted RESOURCE (its monitor's
 * verdict), measured at USED MB. */
static void send_exhausted(struct fake *f, int id, int try_, const char *resource, int used)
{
	fake_send(f, json_pack("{s:s,s:i,s:i,s:s,s:i,s:[s],s:{s:s,s:i,s:f}}", "m", "task_done",
	                       "id", id, "try", try_, "outcome", "exhausted", "signal", 9,
	                       "exhausted", resource, "summary", "exit_type", "limits", resource,
	                       used, "wall_time", 0.2));
	for (int i = 0; i < f->ntasks; i++)
		if (f->tasks[i].id == id && f->tasks[i].try_ == try_)
			f->tasks[i].stage = 2;
}

static int64_t msg_resource(json_t *task, const char *name)
{
	return json_integer_value(json_object_get(json_object_get(task, "resources"), name));
}

/* Defect: a task that declares no disk got the worker's free disk of the moment (after a
 * disk_full refusal, 15 MB), exceeded it and failed for good in FIXED mode. A size the master
 * chose is no promise: the task runs again with no limit on it, and succeeds. */
static void test_chosen_size_exhausted_retried(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	char out[128];
	snprintf(out, sizeof out, "%s/d3.txt", e->dir);
	struct fake *f = fake_start(e, q, FAKE_HOLD, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = work_queue_task_create("make 20MB");
	assert_int_equal(work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE),
	                 0);
	int id = work_queue_submit(q, t);
	assert_true(until_running(q, 1));
	assert_true(msg_resource(f->task_msgs[0], "disk") > 0); /* the master's choice */
	send_exhausted(f, id, 1, "disk", 20);
	uint64_t end = uv_hrtime() + (uint64_t)5e9;
	while (f->tasks_received < 2 && uv_hrtime() < end) {
		assert_null(work_queue_wait(q, 0.05)); /* not a failure */
	}
	assert_int_equal(f->tasks_received, 2);
	assert_int_equal(json_integer_value(json_object_get(f->task_msgs[1], "try")), 2);
	assert_int_equal(msg_resource(f->task_msgs[1], "disk"), 0); /* no limit */
	assert_true(msg_resource(f->task_msgs[1], "memory") > 0);   /* only what was exceeded */
	fake_send_results(f, &f->tasks[1]);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->exhausted_attempts, 1);
	assert_int_equal(done->try_count, 2);
	assert_string_equal(work_queue_task_last_error(done), "");
	assert_true(done->resources_measured->limits_exceeded[RM_DISK] < 0);
	assert_true(fake_log_has(e, "exceeded the disk the master chose"));
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f);
	unlink(out);
}

/* A declared size stays a promise: exceeding it fails the task for good, and the result names
 * the resource (error text and limits_exceeded). */
static void test_declared_size_exhausted_named(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	struct fake *f = fake_start(e, q, FAKE_HOLD, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = work_queue_task_create("make 200MB");
	work_queue_task_specify_disk(t, 100);
	int id = work_queue_submit(q, t);
	assert_true(until_running(q, 1));
	assert_int_equal(msg_resource(f->task_msgs[0], "disk"), 100);
	send_exhausted(f, id, 1, "disk", 200);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_RESOURCE_EXHAUSTION);
	assert_int_equal(f->tasks_received, 1);
	assert_non_null(strstr(work_queue_task_last_error(done), "disk 100 MB (used 200)"));
	assert_non_null(done->resources_measured);
	assert_true(done->resources_measured->limits_exceeded[RM_DISK] >= 0);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(f);
}

/* A pid that was used and is gone. */
static pid_t dead_pid(void)
{
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0)
		_exit(0);
	assert_int_equal(waitpid(p, NULL, 0), p);
	return p;
}

static void touch(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	ts_write_file(p, "partial");
	free(p);
}

static int exists_in(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	struct stat st;
	int r = lstat(p, &st) == 0;
	free(p);
	return r;
}

/* Defect: partial outputs (.NAME.wq-PID-N.tmp) of a master killed during a transfer stayed for
 * ever. Their names now say which master on which host wrote them; those of dead masters of
 * this host are removed, and nothing else. */
static void test_partials_of_dead_masters_removed(void **state)
{
	struct fake_env *e = *state;
	char dir[128];
	snprintf(dir, sizeof dir, "%s/parts", e->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	char tag[64], host[9];
	master_partial_tag(tag, sizeof tag);
	memcpy(host, tag, 8);
	host[8] = 0;
	unsigned other = (unsigned)strtoul(host, NULL, 16) ^ 1u;
	int dead = (int)dead_pid(), me = (int)getpid(), parent = (int)getppid();
	unsigned long long my_start = rmon_proc_start_ticks(me);
	unsigned long long parent_start = rmon_proc_start_ticks(parent);
	assert_true(my_start > 0 && parent_start > 0);
	char n[16][160];
	snprintf(n[0], 160, ".a.txt.wq-%s-%d-12345-3.tmp", host, dead);            /* gone */
	snprintf(n[1], 160, ".b.wq-%s-%d-%llu-4.tmp", host, me, my_start + 1);     /* pid reused */
	snprintf(n[2], 160, ".c.wq-%s-%d-%llu-5.tmp", host, parent, parent_start); /* alive */
	snprintf(n[3], 160, ".d.wq-%s-6.tmp", tag);                                /* ours */
	snprintf(n[4], 160, ".e.wq-%08x-%d-1-7.tmp", other, dead);                 /* other host */
	snprintf(n[5], 160, ".f.wq-%d-8.tmp", dead);                               /* older form */
	snprintf(n[6], 160, "g.wq-%s-%d-1-9.tmp", host, dead);                     /* no dot */
	snprintf(n[7], 160, ".h.wq-%s-%d-1-10.tmp", host, dead);                   /* a directory */
	snprintf(n[8], 160, ".i.wq-%s-%d-1-11.tmp.x", host, dead);                 /* not ours */
	snprintf(n[9], 160, ".j.wq-%s-%d-1-12.tmp", host, dead);                   /* a symlink */
	snprintf(n[10], 160, "..wq-%s-%d-1-13.tmp", host, dead);                   /* no name */
	for (int i = 0; i < 11; i++)
		if (i != 7 && i != 9)
			touch(dir, n[i]);
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", dir, n[7]);
	assert_int_equal(mkdir(p, 0755), 0);
	touch(p, "member");
	snprintf(p, sizeof p, "%s/%s", dir, n[9]);
	assert_int_equal(symlink("/", p), 0);

	assert_int_equal(work_queue_clean_partials(dir), 3);
	const int gone[] = {0, 1, 7};
	for (int i = 0; i < 11; i++) {
		bool expect_gone = i == gone[0] || i == gone[1] || i == gone[2];
		if (exists_in(dir, n[i]) == expect_gone)
			fail_msg("%s: expected %s", n[i], expect_gone ? "removed" : "kept");
	}
	assert_int_equal(work_queue_clean_partials(dir), 0);
	char missing[160];
	snprintf(missing, sizeof missing, "%s/nothere", e->dir);
	assert_int_equal(work_queue_clean_partials(missing), -ENOENT);
	path_rm_rf(dir);
}

/* A new master removes the partials a dead master left in the directories of its tasks'
 * outputs, by itself (makeflow restarts, nobody runs a cleaner). */
static void test_master_sweeps_output_dirs(void **state)
{
	struct fake_env *e = *state;
	char dir[128], out[160];
	snprintf(dir, sizeof dir, "%s/sweep", e->dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(out, sizeof out, "%s/big.dat", dir);
	char tag[64], host[9], stale[160], mine[160];
	master_partial_tag(tag, sizeof tag);
	memcpy(host, tag, 8);
	host[8] = 0;
	snprintf(stale, sizeof stale, ".big.dat.wq-%s-%d-77-5.tmp", host, (int)dead_pid());
	snprintf(mine, sizeof mine, ".big.dat.wq-%s-9.tmp", tag);
	touch(dir, stale);
	touch(dir, mine);
	struct work_queue *q = fake_queue(e, NULL);
	struct work_queue_task *t = out_task(out);
	assert_true(work_queue_submit(q, t) >= 1);
	for (int i = 0; i < 250 && exists_in(dir, stale); i++)
		assert_null(work_queue_wait(q, 0.02));
	assert_false(exists_in(dir, stale));
	assert_true(exists_in(dir, mine));
	assert_true(fake_log_has(e, "a partial output of a master that is gone"));
	fake_queue_delete(q);
	path_rm_rf(dir);
}

/* The private temporary directory of a killed master (its stdout files) is removed by the next
 * master that makes one in the same place; a live master's and unrelated ones stay. */
static void test_master_sweeps_tmpdirs(void **state)
{
	struct fake_env *e = *state;
	char base[128], in[160], out[160];
	snprintf(base, sizeof base, "%s/tmpbase", e->dir);
	assert_int_equal(mkdir(base, 0755), 0);
	char tag[64], host[9], dead[160], live[160], other[160];
	master_partial_tag(tag, sizeof tag);
	memcpy(host, tag, 8);
	host[8] = 0;
	int parent = (int)getppid();
	snprintf(dead, sizeof dead, "wq-master-%s-%d-5-abc123", host, (int)dead_pid());
	snprintf(live, sizeof live, "wq-master-%s-%d-%llu-abc123", host, parent,
	         rmon_proc_start_ticks(parent));
	snprintf(other, sizeof other, "wq-master-Xb12c4");
	char *p = xasprintf("%s/%s", base, dead);
	assert_int_equal(mkdir(p, 0700), 0);
	touch(p, "stdout.1.w.3");
	free(p);
	p = xasprintf("%s/%s", base, live);
	assert_int_equal(mkdir(p, 0700), 0);
	free(p);
	p = xasprintf("%s/%s", base, other);
	assert_int_equal(mkdir(p, 0700), 0);
	free(p);
	const char *old_tmpdir = getenv("TMPDIR");
	char *saved = old_tmpdir ? xstrdup(old_tmpdir) : NULL;
	setenv("TMPDIR", base, 1);
	struct work_queue *q = fake_queue(e, NULL);
	snprintf(in, sizeof in, "%s/ref.fa", e->dir);
	snprintf(out, sizeof out, "%s/o.txt", e->dir);
	ts_write_file(in, "A\n");
	struct fake *f = fake_start(e, q, FAKE_RUN, NULL);
	assert_true(work_queue_submit(q, fake_make_task(in, out)) >= 1);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_string_equal(done->output, "hello\n"); /* through the temporary directory */
	work_queue_task_delete(done);
	for (int i = 0; i < 250 && exists_in(base, dead); i++)
		assert_null(work_queue_wait(q, 0.02));
	assert_false(exists_in(base, dead));
	assert_true(exists_in(base, live));
	assert_true(exists_in(base, other));
	assert_int_equal(count_entries(base, tag), 1); /* its own */
	fake_queue_delete(q);
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	fake_free(f);
	assert_int_equal(count_entries(base, tag), 0); /* removed when the queue is deleted */
	path_rm_rf(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_done_names_unopened_transfer, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_output_larger_than_master_disk, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_dir_member_larger_than_master_disk, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_dir_output_that_fits, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_chosen_size_exhausted_retried, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_declared_size_exhausted_named, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_partials_of_dead_masters_removed, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_master_sweeps_output_dirs, fake_env_setup,
	                                    fake_env_teardown),
	    cmocka_unit_test_setup_teardown(test_master_sweeps_tmpdirs, fake_env_setup,
	                                    fake_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
