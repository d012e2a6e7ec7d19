/* test_master_prepare.c: tests of the preparation of submitted tasks (master_prepare.c): the
 * hashing of cached inputs and the HEAD requests of URL inputs run in libuv's thread pool while
 * the master's loop goes on, one job serves every task needing the same input, failures give
 * INPUT_MISSING with a text naming the input, and cancel and delete work while jobs run. A hook
 * holds jobs in their pool thread so the ordering is decided by the test, not by timing. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "path.h"
#include "sha256.h"
#include "work_queue.h"
#include "master_prepare.h"
#include "master_internal.h"
#include "ts_loop.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

static char *tmpdir;

/* ---- the hook: holds jobs whose path or URL contains `hold` until released --------------- */

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char hold[64];
	bool released;
	int sleep_ms;
	atomic_int entered;
	atomic_int concurrent;
	atomic_int max_concurrent;
} hk = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void hook(const char *what, void *arg)
{
	(void)arg;
	int c = atomic_fetch_add(&hk.concurrent, 1) + 1;
	int m = atomic_load(&hk.max_concurrent);
	while (c > m && !atomic_compare_exchange_weak(&hk.max_concurrent, &m, c))
		;
	atomic_fetch_add(&hk.entered, 1);
	pthread_mutex_lock(&hk.mu);
	if (hk.hold[0] && strstr(what, hk.hold))
		while (!hk.released)
			pthread_cond_wait(&hk.cv, &hk.mu);
	int ms = hk.sleep_ms;
	pthread_mutex_unlock(&hk.mu);
	if (ms > 0)
		usleep((useconds_t)ms * 1000);
	atomic_fetch_sub(&hk.concurrent, 1);
}

static void hold(const char *s)
{
	pthread_mutex_lock(&hk.mu);
	snprintf(hk.hold, sizeof hk.hold, "%s", s);
	hk.released = false;
	pthread_mutex_unlock(&hk.mu);
}

static void release(void)
{
	pthread_mutex_lock(&hk.mu);
	hk.released = true;
	hk.hold[0] = 0;
	pthread_cond_broadcast(&hk.cv);
	pthread_mutex_unlock(&hk.mu);
}

/* ---- a tiny HTTP server in its own thread: /missing is 404, anything else 200 with an ETag -- */

static struct {
	int fd;
	int port;
	pthread_t th;
	atomic_int stop;
	atomic_int heads;
} srv;

static void *serve(void *arg)
{
	(void)arg;
	while (!atomic_load(&srv.stop)) {
		struct pollfd p = {srv.fd, POLLIN, 0};
		if (poll(&p, 1, 50) <= 0)
			continue;
		int c = accept(srv.fd, NULL, NULL);
		if (c < 0)
			continue;
		char req[2048];
		size_t n = 0;
		req[0] = 0;
		while (n < sizeof req - 1 && !strstr(req, "\r\n\r\n")) {
			ssize_t r = read(c, req + n, sizeof req - 1 - n);
			if (r <= 0)
				break;
			n += (size_t)r;
			req[n] = 0;
		}
		req[n] = 0;
		if (!strncmp(req, "HEAD ", 5))
			atomic_fetch_add(&srv.heads, 1);
		const char *ans = strstr(req, " /missing ")
		                      ? "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
		                        "Connection: close\r\n\r\n"
		                      : "HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: 5\r\n"
		                        "Connection: close\r\n\r\n";
		if (write(c, ans, strlen(ans)) < 0)
			perror("write");
		close(c);
	}
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	tmpdir = ts_tmpdir_create("test_master_prepare");
	srv.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof a;
	if (bind(srv.fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(srv.fd, 64) < 0 ||
	    getsockname(srv.fd, (struct sockaddr *)&a, &len) < 0)
		return -1;
	srv.port = ntohs(a.sin_port);
	if (pthread_create(&srv.th, NULL, serve, NULL) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	atomic_store(&srv.stop, 1);
	pthread_join(srv.th, NULL);
	close(srv.fd);
	ts_tmpdir_remove(tmpdir);
	tmpdir = NULL;
	return 0;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static struct work_queue *queue(void)
{
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.interface = "127.0.0.1";
	struct work_queue *q = work_queue_create_opts(&o);
	assert_non_null(q);
	master_prepare_set_test_hook(q, hook, NULL);
	return q;
}

static void path_in(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void url_of(char *out, size_t size, const char *p)
{
	snprintf(out, size, "http://127.0.0.1:%d%s", srv.port, p);
}

static struct work_queue_task *task_with(const char *file, const char *url)
{
	struct work_queue_task *t = work_queue_task_create("cat in");
	if (file)
		assert_int_equal(
		    work_queue_task_specify_input_file(t, file, "in", WORK_QUEUE_CACHE), 0);
	if (url)
		assert_int_equal(work_queue_task_specify_url(t, url, "web", WORK_QUEUE_CACHE), 0);
	return t;
}

static enum mtask_state state_of(struct work_queue *q, int id)
{
	struct mtask *m = master_queue_task_lookup(q, id);
	assert_non_null(m);
	return m->state;
}

/* Runs the loop until task ID leaves MTASK_PREPARING (at most ~30 s). */
static void wait_named(struct work_queue *q, int id)
{
	for (int i = 0; i < 600 && state_of(q, id) == MTASK_PREPARING; i++)
		assert_null(work_queue_wait(q, 0.05));
	assert_int_equal(state_of(q, id), MTASK_READY);
}

static int64_t counter_finished(struct work_queue *q)
{
	struct master_prepare_counters c;
	master_prepare_get_counters(q, &c);
	return c.jobs_finished;
}

static void on_timer(uv_timer_t *h)
{
	*(int *)h->data = 1;
}

/* ---- tests -------------------------------------------------------------------------------- */

/* A 300 MB input: submit returns at once, the loop runs timers and finishes another task
 * while the hash job is in the pool, and the task is named afterwards. */
static void test_large_input_keeps_loop(void **state)
{
	(void)state;
	struct work_queue *q = queue();
	char big[200], url[200];
	path_in(big, sizeof big, "big.dat");
	int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 300L * 1024 * 1024), 0);
	assert_int_equal(pwrite(fd, "end", 3, 300L * 1024 * 1024 - 3), 3);
	close(fd);
	hold("big.dat");
	struct work_queue_task *a = task_with(big, NULL);
	int ida = work_queue_submit(q, a);
	assert_true(ida >= 1);
	assert_int_equal(state_of(q, ida), MTASK_PREPARING);
	assert_false(work_queue_empty(q));
	struct work_queue_stats st;
	work_queue_get_stats(q, &st);
	assert_int_equal(st.tasks_waiting, 1);
	assert_int_equal(st.tasks_submitted, 1);

	/* a second task whose URL gives 404, and a timer: both must happen while A hashes */
	url_of(url, sizeof url, "/missing");
	struct work_queue_task *b = task_with(NULL, url);
	int idb = work_queue_submit(q, b);
	assert_true(idb > ida);
	int fired = 0;
	uv_timer_t tm;
	uv_timer_init(work_queue_loop(q), &tm);
	tm.data = &fired;
	uv_timer_start(&tm, on_timer, 1, 0);
	struct work_queue_task *done = work_queue_wait(q, 20);
	assert_ptr_equal(done, b);
	assert_int_equal(b->result, WORK_QUEUE_RESULT_INPUT_MISSING);
	assert_non_null(strstr(work_queue_task_last_error(b), url));
	assert_non_null(strstr(work_queue_task_last_error(b), "HTTP 404"));
	assert_true(fired);
	assert_int_equal(state_of(q, ida), MTASK_PREPARING); /* still hashing */
	uv_close((uv_handle_t *)&tm, NULL);
	work_queue_task_delete(b);

	release();
	wait_named(q, ida);
	struct mtask *m = master_queue_task_lookup(q, ida);
	char hex[SHA256_HEX_SIZE], name[80];
	assert_int_equal(sha256_file(big, hex), 0);
	snprintf(name, sizeof name, "F-%s", hex);
	assert_string_equal(m->objects[0], name);
	assert_int_equal(m->obj_size[0], 300L * 1024 * 1024);
	work_queue_get_stats(q, &st);
	assert_int_equal(st.tasks_waiting, 1);
	assert_int_equal(st.tasks_failed, 1);
	work_queue_delete(q);
	unlink(big);
}

/* Three tasks with one file and one URL: two jobs, one HEAD request; the memo names the file
 * for a later task at once. */
static void test_shared_jobs(void **state)
{
	(void)state;
	struct work_queue *q = queue();
	char file[200], url[200];
	path_in(file, sizeof file, "shared.txt");
	write_file(file, "ACGT\n");
	url_of(url, sizeof url, "/data.txt");
	struct master_prepare_counters c0, c1;
	master_prepare_get_counters(q, &c0);
	int heads0 = atomic_load(&srv.heads);
	hold("shared.txt");
	int id[3];
	for (int i = 0; i < 3; i++) {
		id[i] = work_queue_submit(q, task_with(file, url));
		assert_true(id[i] >= 1);
		assert_int_equal(state_of(q, id[i]), MTASK_PREPARING);
	}
	master_prepare_get_counters(q, &c1);
	assert_int_equal(c1.jobs_joined - c0.jobs_joined, 4);
	release();
	for (int i = 0; i < 3; i++)
		wait_named(q, id[i]);
	master_prepare_get_counters(q, &c1);
	assert_int_equal(c1.jobs_started - c0.jobs_started, 2);
	assert_int_equal(atomic_load(&srv.heads) - heads0, 1);
	struct mtask *m0 = master_queue_task_lookup(q, id[0]);
	for (int i = 1; i < 3; i++) {
		struct mtask *m = master_queue_task_lookup(q, id[i]);
		assert_string_equal(m->objects[0], m0->objects[0]);
		assert_string_equal(m->objects[1], m0->objects[1]);
	}
	assert_string_equal(m0->objects[0],
	                    "F-a4b0723993d3751f3d530e3c20da4c24ccdd32e65820fba897cc5f119e85ca55");
	assert_int_equal(strncmp(m0->objects[1], "U-", 2), 0);
	/* the memo knows the file now: named at submission, no job */
	int id4 = work_queue_submit(q, task_with(file, NULL));
	assert_int_equal(state_of(q, id4), MTASK_READY);
	struct master_prepare_counters c2;
	master_prepare_get_counters(q, &c2);
	assert_int_equal(c2.jobs_started, c1.jobs_started);
	work_queue_delete(q);
}

/* Errors: at once for what stat sees; later, as INPUT_MISSING, for a file deleted before its
 * hash, a directory with a cycle, and a refused connection. */
static void test_failures(void **state)
{
	(void)state;
	struct work_queue *q = queue();
	char file[200], missing[200], dir[200], sub[250], link[300], url[200];
	path_in(missing, sizeof missing, "nothing-here");
	struct work_queue_task *t = task_with(missing, NULL);
	assert_int_equal(work_queue_submit(q, t), -ENOENT);
	work_queue_task_delete(t);
	t = task_with(tmpdir, NULL); /* a directory given as a cached file */
	assert_int_equal(work_queue_submit(q, t), -EINVAL);
	work_queue_task_delete(t);
	assert_true(work_queue_empty(q));

	path_in(file, sizeof file, "gone.txt");
	write_file(file, "soon gone\n");
	hold("gone.txt");
	int id = work_queue_submit(q, task_with(file, NULL));
	assert_true(id >= 1);
	assert_int_equal(unlink(file), 0);
	release();
	struct work_queue_task *done = work_queue_wait(q, 20);
	assert_non_null(done);
	assert_int_equal(done->taskid, id);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_INPUT_MISSING);
	assert_non_null(strstr(work_queue_task_last_error(done), file));
	assert_non_null(strstr(work_queue_task_last_error(done), "No such file"));
	work_queue_task_delete(done);

	path_in(dir, sizeof dir, "loop");
	snprintf(sub, sizeof sub, "%s/sub", dir);
	snprintf(link, sizeof link, "%s/back", sub);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(symlink(dir, link), 0);
	t = work_queue_task_create("ls d");
	assert_int_equal(
	    work_queue_task_specify_directory(t, dir, "d", WORK_QUEUE_INPUT, WORK_QUEUE_CACHE, 1),
	    0);
	id = work_queue_submit(q, t);
	assert_true(id >= 1);
	done = work_queue_wait(q, 20);
	assert_ptr_equal(done, t);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_INPUT_MISSING);
	assert_non_null(strstr(work_queue_task_last_error(done), dir));
	work_queue_task_delete(done);

	/* a port nobody listens on */
	uv_tcp_t tcp;
	uv_tcp_init(work_queue_loop(q), &tcp);
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	assert_int_equal(uv_tcp_bind(&tcp, (struct sockaddr *)&a, 0), 0);
	int len = sizeof a;
	uv_tcp_getsockname(&tcp, (struct sockaddr *)&a, &len);
	uv_close((uv_handle_t *)&tcp, NULL);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/x", ntohs(a.sin_port));
	id = work_queue_submit(q, task_with(NULL, url));
	done = work_queue_wait(q, 20);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_INPUT_MISSING);
	assert_non_null(strstr(work_queue_task_last_error(done), url));
	assert_non_null(strstr(work_queue_task_last_error(done), "HEAD request failed"));
	work_queue_task_delete(done);
	assert_true(work_queue_empty(q));
	work_queue_delete(q);
}

/* A cached directory is named by a job too; named again, its files are read only when the
 * walk sees a change. */
static void test_directory(void **state)
{
	(void)state;
	struct work_queue *q = queue();
	char dir[200], f[250];
	path_in(dir, sizeof dir, "indir");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(f, sizeof f, "%s/a.txt", dir);
	write_file(f, "12345");
	struct work_queue_task *t = work_queue_task_create("ls d");
	assert_int_equal(
	    work_queue_task_specify_directory(t, dir, "d", WORK_QUEUE_INPUT, WORK_QUEUE_CACHE, 1),
	    0);
	int id = work_queue_submit(q, t);
	assert_int_equal(state_of(q, id), MTASK_PREPARING);
	wait_named(q, id);
	struct mtask *m = master_queue_task_lookup(q, id);
	assert_int_equal(strncmp(m->objects[0], "D-", 2), 0);
	assert_int_equal(m->obj_size[0], 5);
	char *first = xstrdup(m->objects[0]);
	/* named again: the walk sees what it saw, the files are not read again */
	struct master_prepare_counters c0, c1;
	master_prepare_get_counters(q, &c0);
	t = work_queue_task_create("ls d");
	work_queue_task_specify_directory(t, dir, "d", WORK_QUEUE_INPUT, WORK_QUEUE_CACHE, 1);
	id = work_queue_submit(q, t);
	wait_named(q, id);
	master_prepare_get_counters(q, &c1);
	assert_int_equal(c1.dirs_reused - c0.dirs_reused, 1);
	m = master_queue_task_lookup(q, id);
	assert_string_equal(m->objects[0], first);
	/* a file changed (same size, another mtime): hashed again, another name */
	write_file(f, "54321");
	struct timespec ts[2] = {{0, UTIME_OMIT}, {12345, 0}};
	assert_int_equal(utimensat(AT_FDCWD, f, ts, 0), 0);
	t = work_queue_task_create("ls d");
	work_queue_task_specify_directory(t, dir, "d", WORK_QUEUE_INPUT, WORK_QUEUE_CACHE, 1);
	id = work_queue_submit(q, t);
	wait_named(q, id);
	master_prepare_get_counters(q, &c0);
	assert_int_equal(c0.dirs_reused, c1.dirs_reused);
	m = master_queue_task_lookup(q, id);
	assert_int_equal(strncmp(m->objects[0], "D-", 2), 0);
	assert_string_not_equal(m->objects[0], first);
	/* a file added: another name too */
	snprintf(f, sizeof f, "%s/b.txt", dir);
	write_file(f, "more");
	t = work_queue_task_create("ls d");
	work_queue_task_specify_directory(t, dir, "d", WORK_QUEUE_INPUT, WORK_QUEUE_CACHE, 1);
	id = work_queue_submit(q, t);
	wait_named(q, id);
	m = master_queue_task_lookup(q, id);
	assert_int_equal(m->obj_size[0], 9);
	master_prepare_get_counters(q, &c1);
	assert_int_equal(c1.dirs_reused, c0.dirs_reused);
	free(first);
	work_queue_delete(q);
}

/* Cancel while the job runs: the task comes back cancelled at once; the job, when it ends,
 * only fills the memo. */
static void test_cancel_preparing(void **state)
{
	(void)state;
	struct work_queue *q = queue();
	char file[200];
	path_in(file, sizeof file, "cancel.txt");
	write_file(file, "cancel me\n");
	hold("cancel.txt");
	struct work_queue_task *t = task_with(file, NULL);
	work_queue_task_specify_tag(t, "c1");
	int id = work_queue_submit(q, t);
	struct work_queue_task *t2 = task_with(file, NULL);
	work_queue_task_specify_tag(t2, "c2");
	int id2 = work_queue_submit(q, t2);
	assert_int_equal(state_of(q, id2), MTASK_PREPARING);
	int64_t fin = counter_finished(q);
	assert_ptr_equal(work_queue_cancel_by_taskid(q, id), t);
	assert_int_equal(t->result, WORK_QUEUE_RESULT_CANCELLED);
	assert_ptr_equal(work_queue_cancel_by_tasktag(q, "c2"), t2);
	assert_true(work_queue_empty(q));
	struct work_queue_stats st;
	work_queue_get_stats(q, &st);
	assert_int_equal(st.tasks_waiting, 0);
	assert_int_equal(st.tasks_cancelled, 2);
	release();
	for (int i = 0; i < 600 && counter_finished(q) == fin; i++)
		work_queue_wait(q, 0.05);
	assert_true(counter_finished(q) > fin);
	assert_true(work_queue_empty(q));
	/* the memo was filled: a new submission is named at once */
	int id3 = work_queue_submit(q, t);
	assert_int_equal(state_of(q, id3), MTASK_READY);
	assert_ptr_equal(work_queue_cancel_by_taskid(q, id3), t);
	work_queue_task_delete(t);
	work_queue_task_delete(t2);
	work_queue_delete(q);
}

/* At most MASTER_PREPARE_MAX_JOBS jobs at once; delete while jobs run and wait (no crash, no
 * leak under ASan). */
/* The hook was entered since it counted *ARG entries. */
static bool hook_entered_again(void *arg)
{
	return atomic_load(&hk.entered) > *(int *)arg;
}

static void test_bounded_and_delete(void **state)
{
	(void)state;
	struct work_queue *q = queue();
	atomic_store(&hk.max_concurrent, 0);
	pthread_mutex_lock(&hk.mu);
	hk.sleep_ms = 30;
	pthread_mutex_unlock(&hk.mu);
	int ids[8];
	for (int i = 0; i < 8; i++) {
		char f[200], n[32];
		snprintf(n, sizeof n, "many%d.txt", i);
		path_in(f, sizeof f, n);
		write_file(f, n);
		ids[i] = work_queue_submit(q, task_with(f, NULL));
		assert_true(ids[i] >= 1);
	}
	for (int i = 0; i < 8; i++)
		wait_named(q, ids[i]);
	assert_true(atomic_load(&hk.max_concurrent) >= 1);
	assert_true(atomic_load(&hk.max_concurrent) <= MASTER_PREPARE_MAX_JOBS);
	struct master_prepare_counters c;
	master_prepare_get_counters(q, &c);
	assert_true(c.max_in_flight <= MASTER_PREPARE_MAX_JOBS);
	work_queue_delete(q);

	/* delete with a big file being hashed and more jobs queued behind it */
	q = queue();
	char big[200];
	path_in(big, sizeof big, "big2.dat");
	int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 300L * 1024 * 1024), 0);
	close(fd);
	int entered = atomic_load(&hk.entered);
	assert_true(work_queue_submit(q, task_with(big, NULL)) >= 1);
	for (int i = 0; i < 8; i++) {
		char f[200], n[32], url[200];
		snprintf(n, sizeof n, "late%d.txt", i);
		path_in(f, sizeof f, n);
		write_file(f, n);
		snprintf(n, sizeof n, "/late%d", i);
		url_of(url, sizeof url, n);
		assert_true(work_queue_submit(q, task_with(f, url)) >= 1);
	}
	master_prepare_get_counters(q, &c);
	assert_true(c.queued > 0);
	assert_true(ts_poll_until(hook_entered_again, &entered, TS_WAIT_MS));
	/* The queued jobs are dropped, the running one stops, and the queue's preparation state
	 * is freed with it (the sanitizer run's leak check sees it). */
	work_queue_delete(q);
	pthread_mutex_lock(&hk.mu);
	hk.sleep_ms = 0;
	pthread_mutex_unlock(&hk.mu);
	unlink(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_large_input_keeps_loop),
	    cmocka_unit_test(test_shared_jobs),
	    cmocka_unit_test(test_failures),
	    cmocka_unit_test(test_directory),
	    cmocka_unit_test(test_cancel_preparing),
	    cmocka_unit_test(test_bounded_and_delete),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
