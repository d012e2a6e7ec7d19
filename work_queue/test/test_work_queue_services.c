/* test_work_queue_services.c: integration tests of the Work Queue master library's services
 * over real loopback TCP, against the scripted fake worker of support/wq_fake_worker.h: TLS with a
 * fingerprint-checked certificate, the port file and catalog updates, status queries, and fast
 * abort with host blocking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "master_internal.h"
#include "status_client.h"
#include "ts_tmpdir.h"
#include "work_queue.h"
#include "wq_conn.h"
#include "wq_fake_worker.h"
#include "banned.h"

/* A self-signed certificate and its key in PEM files. */
static void make_cert(const char *cert, const char *key)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	assert_non_null(k);
	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 42);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"127.0.0.1", -1,
	                           -1, 0);
	X509_set_issuer_name(x, n);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	FILE *f = fopen(cert, "w");
	PEM_write_X509(f, x);
	fclose(f);
	f = fopen(key, "w");
	PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	chmod(key, 0600);
	X509_free(x);
	EVP_PKEY_free(k);
}

static void test_tls(void **state)
{
	struct fake_env *e = *state;
	char cert[160], key[160], in[128], out[128];
	snprintf(cert, sizeof cert, "%s/cert.pem", e->dir);
	snprintf(key, sizeof key, "%s/key.pem", e->dir);
	snprintf(in, sizeof in, "%s/tls.in", e->dir);
	snprintf(out, sizeof out, "%s/tls.out", e->dir);
	make_cert(cert, key);
	ts_write_file(in, "TLS\n");
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	o.port = 0;
	o.loop = &e->loop;
	o.ssl_cert = cert;
	o.ssl_key = key;
	struct work_queue *q = work_queue_create_opts(&o);
	assert_non_null(q);
	/* a plain worker is refused */
	struct fake *plain = fake_start(e, q, FAKE_RUN, NULL);
	assert_true(fake_wait_flag(q, &plain->hs_done, 5));
	assert_int_equal(plain->outcome, WQ_HS_PERMANENT);
	assert_string_equal(plain->hs_code, "tls_required");
	/* a TLS worker runs a task */
	struct fake *f = fake_start_tls(e, q, FAKE_RUN, NULL, true);
	struct work_queue_task *t = fake_make_task(in, out);
	assert_true(work_queue_submit(q, t) >= 1);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_non_null(done);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	char *content = ts_read_file(out, NULL);
	assert_string_equal(content, "TLS\nBUF\n");
	free(content);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(plain);
	fake_free(f);
	/* a file that is not a certificate fails the creation with ENOENT-like errno and a message
	 */
	o.ssl_cert = in; /* not a certificate */
	assert_null(work_queue_create_opts(&o));
	unlink(cert);
	unlink(key);
	unlink(in);
	unlink(out);
}

static void test_catalog_and_port_file(void **state)
{
	struct fake_env *e = *state;
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	char port_file[160];
	snprintf(port_file, sizeof port_file, "%s/port", e->dir);
	o.port = 0;
	o.loop = &e->loop;
	o.project = "unit-test";
	o.catalog_hosts = "127.0.0.1:9";
	o.port_file = port_file;
	struct work_queue *q = work_queue_create_opts(&o);
	assert_non_null(q);
	char *text = ts_read_file(port_file, NULL);
	assert_non_null(text);
	assert_int_equal(atoi(text), work_queue_port(q));
	free(text);
	assert_null(work_queue_wait(q, 0.1));
	assert_int_equal(work_queue_specify_name(q, "renamed"), 0);
	assert_int_equal(work_queue_specify_catalog_servers(q, "127.0.0.1:9,localhost:9"), 0);
	assert_int_equal(work_queue_specify_name(q, ""), -EINVAL);
	assert_ptr_equal(work_queue_loop(q), &e->loop);
	json_t *m = work_queue_status(q, "master");
	json_t *rec = json_array_get(m, 0);
	assert_string_equal(json_string_value(json_object_get(rec, "project")), "renamed");
	/* the defaults of the catalog record: priority 0, workers connect by_ip */
	assert_int_equal(json_integer_value(json_object_get(rec, "priority")), 0);
	assert_string_equal(json_string_value(json_object_get(rec, "manager_preferred_connection")),
	                    "by_ip");
	assert_true(json_is_array(json_object_get(rec, "network_interfaces")));
	json_decref(m);
	assert_int_equal(work_queue_specify_priority(q, 7), 0);
	assert_int_equal(work_queue_master_preferred_connection(q, "by_hostname"), 0);
	assert_int_equal(work_queue_master_preferred_connection(q, "by_ipx"), -EINVAL);
	m = work_queue_status(q, "master");
	rec = json_array_get(m, 0);
	assert_int_equal(json_integer_value(json_object_get(rec, "priority")), 7);
	assert_string_equal(json_string_value(json_object_get(rec, "manager_preferred_connection")),
	                    "by_hostname");
	json_decref(m);
	assert_null(work_queue_wait(q, 0.1));
	/* the same port again is refused with EADDRINUSE */
	o.port = work_queue_port(q);
	o.project = NULL;
	o.port_file = NULL;
	errno = 0;
	assert_null(work_queue_create_opts(&o));
	assert_int_equal(errno, EADDRINUSE);
	fake_queue_delete(q);
	unlink(port_file);
}

struct query_result {
	int done;
	json_t *items;
	char err[256];
};

static void on_query(json_t *items, const char *err, void *arg)
{
	struct query_result *r = arg;
	r->done = 1;
	r->items = items;
	snprintf(r->err, sizeof r->err, "%s", err ? err : "");
}

static void test_status_query(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	struct fake *f = fake_start(e, q, FAKE_HOLD, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t = work_queue_task_create("sleep 100");
	work_queue_task_specify_cores(t, 1);
	work_queue_task_specify_tag(t, "held");
	int id = work_queue_submit(q, t);
	struct work_queue_task *t2 = work_queue_task_create("sleep 100");
	work_queue_task_specify_cores(t2, 8); /* never fits the 4-core fake */
	assert_true(work_queue_submit(q, t2) >= 1);
	struct query_result r = {0};
	struct wq_status_opts so = {NULL, NULL, 5, NULL};
	char *err = NULL;
	assert_non_null(wq_status_query_start(&e->loop, "127.0.0.1", work_queue_port(q), "master",
	                                      &so, on_query, &r, &err));
	assert_true(fake_wait_flag(q, &r.done, 5));
	assert_string_equal(r.err, "");
	assert_int_equal(json_array_size(r.items), 1);
	json_t *m = json_array_get(r.items, 0);
	assert_int_equal(json_integer_value(json_object_get(m, "workers_connected")), 1);
	assert_int_equal(json_integer_value(json_object_get(m, "tasks_waiting")), 1);
	assert_int_equal(json_integer_value(json_object_get(m, "tasks_submitted")), 2);
	assert_int_equal(json_integer_value(json_object_get(m, "port")), work_queue_port(q));
	json_decref(r.items);
	/* the status client is not counted as a worker */
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	assert_int_equal(s.workers_connected, 1);
	/* tasks, through the library call */
	json_t *tasks = work_queue_status(q, "tasks");
	assert_int_equal(json_array_size(tasks), 2);
	int running = 0;
	for (size_t i = 0; i < 2; i++) {
		json_t *o = json_array_get(tasks, i);
		if (json_integer_value(json_object_get(o, "id")) == id) {
			assert_string_equal(json_string_value(json_object_get(o, "tag")), "held");
			assert_non_null(json_object_get(o, "worker"));
			running = 1;
		}
	}
	assert_true(running);
	json_decref(tasks);
	assert_null(work_queue_status(q, "nonsense"));
	fake_queue_delete(q);
	fake_free(f);
}

static void wait_workers(struct work_queue *q, int n)
{
	struct work_queue_stats s;
	for (int i = 0; i < 250; i++) {
		work_queue_get_stats(q, &s);
		if (s.workers_connected == n)
			return;
		assert_null(work_queue_wait(q, 0.02));
	}
	fail_msg("%d workers connected, %d expected", s.workers_connected, n);
}

static void test_fast_abort(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	assert_int_equal(work_queue_activate_fast_abort_category(q, "fa", 1.0), 0);
	/* ten completed tasks of 0.5 s each (the fake's reported times) */
	struct fake *a = fake_start(e, q, FAKE_RUN, NULL);
	char out[128];
	snprintf(out, sizeof out, "%s/fa.out", e->dir);
	for (int i = 0; i < 10; i++) {
		struct work_queue_task *t = work_queue_task_create("quick");
		work_queue_task_specify_category(t, "fa");
		work_queue_task_specify_output_file(t, out, "out.txt", WORK_QUEUE_NOCACHE);
		assert_true(work_queue_submit(q, t) >= 1);
	}
	for (int i = 0; i < 10; i++) {
		struct work_queue_task *t = fake_wait_task(q, 5);
		assert_non_null(t);
		assert_int_equal(t->result, WORK_QUEUE_RESULT_SUCCESS);
		work_queue_task_delete(t);
	}
	wq_conn_close_now(a->c);
	wait_workers(q, 0);
	/* a slow worker: the task is aborted twice, the worker dismissed, its host blocked; 2,000
	 * tasks no worker can run wait meanwhile, and the checks look at none of them */
	for (int i = 0; i < 2000; i++) {
		struct work_queue_task *big = work_queue_task_create("big");
		work_queue_task_specify_category(big, "waits");
		work_queue_task_specify_cores(big, 1000);
		assert_true(work_queue_submit(q, big) >= 1);
	}
	uint64_t ticks0 = q->ticks, examined0 = q->abort_examined;
	struct fake *b = fake_start(e, q, FAKE_HOLD, NULL);
	struct work_queue_task *t = work_queue_task_create("slow");
	work_queue_task_specify_category(t, "fa");
	int id = work_queue_submit(q, t);
	assert_true(fake_wait_flag(q, &b->closed, 8));
	assert_true(q->ticks > ticks0);
	/* at most the one task on a worker per check (a check runs at each tick) */
	assert_true(q->abort_examined - examined0 >= 2); /* the slow task, once per abort */
	assert_true(q->abort_examined - examined0 <= q->ticks - ticks0 + 1);
	assert_int_equal(b->cancels, 2);
	assert_int_equal(b->tasks_received, 2);
	assert_int_equal(t->fast_aborts, 2);
	assert_true(fake_log_has(e, "fast-aborted"));
	struct fake *c = fake_start(e, q, FAKE_RUN, NULL);
	assert_true(fake_wait_flag(q, &c->closed, 5));
	assert_true(fake_log_has(e, "host fakehost is blocked for"));
	assert_int_equal(c->tasks_received, 0);
	/* unblocked, a good worker finishes it; it is not aborted a third time */
	assert_int_equal(work_queue_unblock_host(q, "fakehost"), 0);
	assert_int_equal(work_queue_unblock_host(q, "fakehost"), -ENOENT);
	struct fake *d = fake_start(e, q, FAKE_RUN, NULL);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_ptr_equal(done, t);
	assert_int_equal(done->taskid, id);
	assert_int_equal(done->result, WORK_QUEUE_RESULT_SUCCESS);
	assert_int_equal(done->try_count, 1);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(a);
	fake_free(b);
	fake_free(c);
	fake_free(d);
	unlink(out);
}

/* The fast-abort check looks at the oldest running task of a category, not at every running
 * one: twelve tasks held on a worker, all under the limit, cost one look per check. Fast abort
 * is turned on while they run: it takes in the tasks running then. */
static void test_fast_abort_looks_at_oldest(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	struct fake *a = fake_start(e, q, FAKE_RUN, NULL);
	for (int i = 0; i < 10; i++) {
		struct work_queue_task *t = work_queue_task_create("quick");
		work_queue_task_specify_category(t, "fb");
		assert_true(work_queue_submit(q, t) >= 1);
	}
	for (int i = 0; i < 10; i++) {
		struct work_queue_task *t = fake_wait_task(q, 5);
		assert_non_null(t);
		work_queue_task_delete(t);
	}
	wq_conn_close_now(a->c);
	wait_workers(q, 0);
	struct fake *b = fake_start(e, q, FAKE_HOLD, NULL);
	b->cores = 12;
	for (int i = 0; i < 12; i++) {
		struct work_queue_task *t = work_queue_task_create("held");
		work_queue_task_specify_category(t, "fb");
		work_queue_task_specify_cores(t, 1);
		assert_true(work_queue_submit(q, t) >= 1);
	}
	for (int i = 0; i < 500 && q->stats.tasks_running < 12; i++)
		assert_null(work_queue_wait(q, 0.02));
	assert_int_equal(q->stats.tasks_running, 12);
	assert_int_equal(work_queue_activate_fast_abort_category(q, "fb", 100.0), 0);
	uint64_t ticks0 = q->ticks, examined0 = q->abort_examined;
	for (int i = 0; i < 1200 && q->ticks < ticks0 + 3; i++)
		assert_null(work_queue_wait(q, 0.05));
	assert_true(q->ticks >= ticks0 + 3);
	/* a walk of the running tasks would look at 12 per check */
	assert_true(q->abort_examined - examined0 >= 1);
	assert_true(q->abort_examined - examined0 <= q->ticks - ticks0 + 1);
	assert_int_equal(b->cancels, 0);
	fake_queue_delete(q);
	fake_free(a);
	fake_free(b);
}

/* A drained worker gets no new task; the next one goes to another worker. */
static void test_drain(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	assert_int_equal(work_queue_drain_worker(q, NULL), -EINVAL);
	assert_int_equal(work_queue_drain_worker(q, "fakehost"), 0);
	struct fake *a = fake_start(e, q, FAKE_HOLD, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_task *t1 = work_queue_task_create("held");
	work_queue_task_specify_cores(t1, 1);
	assert_true(work_queue_submit(q, t1) >= 1);
	for (int i = 0; i < 100 && a->tasks_received < 1; i++)
		work_queue_wait(q, 0.05);
	assert_int_equal(a->tasks_received, 1);
	assert_int_equal(work_queue_drain_worker(q, "nosuchhost"), 0);
	assert_int_equal(work_queue_drain_worker(q, FAKE_WORKER_ID), 1);
	assert_int_equal(work_queue_drain_worker(q, "fakehost"), 0); /* already draining */
	for (int i = 0; i < 100 && a->drains < 1; i++)
		work_queue_wait(q, 0.05);
	assert_int_equal(a->drains, 1);
	/* the next task must not go to the draining worker, which has a free core */
	struct work_queue_task *t2 = work_queue_task_create("after drain");
	work_queue_task_specify_cores(t2, 1);
	assert_true(work_queue_submit(q, t2) >= 1);
	for (int i = 0; i < 6; i++)
		work_queue_wait(q, 0.05);
	assert_int_equal(a->tasks_received, 1);
	assert_true(fake_log_has(e, "drain sent"));
	struct fake *b = fake_start(e, q, FAKE_RUN, NULL);
	struct work_queue_task *done = fake_wait_task(q, 5);
	assert_ptr_equal(done, t2);
	assert_int_equal(b->tasks_received, 1);
	work_queue_task_delete(done);
	fake_queue_delete(q);
	fake_free(a);
	fake_free(b);
}

/* The category of NAME in a `master` document's scaler section, or NULL. */
static json_t *scaler_cat(json_t *m, const char *name)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(json_object_get(m, "scaler"), "categories"), i, c)
	{
		if (!strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	}
	return NULL;
}

static json_int_t cat_int(json_t *m, const char *name, const char *k1, const char *k2)
{
	json_t *v = json_object_get(scaler_cat(m, name), k1);
	if (k2)
		v = json_object_get(v, k2);
	return json_integer_value(v);
}

/* The scaler section counts per category as tasks are submitted, run and cancelled; a status
 * client can ask for a worker to be drained. */
static void test_scaler_status(void **state)
{
	struct fake_env *e = *state;
	struct work_queue *q = fake_queue(e, NULL);
	int ids[5];
	for (int i = 0; i < 5; i++) {
		struct work_queue_task *t = work_queue_task_create("sleep 100");
		work_queue_task_specify_cores(t, i < 3 ? 2 : 1);
		work_queue_task_specify_category(t, i < 3 ? "align" : "merge");
		ids[i] = work_queue_submit(q, t);
		assert_true(ids[i] >= 1);
	}
	json_t *doc = work_queue_status(q, "master");
	json_t *m = json_array_get(doc, 0);
	assert_int_equal(cat_int(m, "align", "waiting", NULL), 3);
	assert_int_equal(cat_int(m, "merge", "waiting", NULL), 2);
	assert_int_equal(cat_int(m, "align", "running", "count"), 0);
	assert_true(json_real_value(json_object_get(
	                json_object_get(scaler_cat(m, "align"), "declared"), "cores")) == 2.0);
	assert_int_equal(
	    json_integer_value(json_object_get(
	        json_object_get(json_object_get(m, "scaler"), "workers_summary"), "active")),
	    0);
	json_decref(doc);
	/* a worker of 4 cores takes two align tasks (2 cores each) and holds them */
	struct fake *f = fake_start(e, q, FAKE_HOLD, NULL);
	assert_true(fake_wait_workers(q, 1, 5));
	struct work_queue_stats s;
	for (int i = 0; i < 200; i++) {
		work_queue_get_stats(q, &s);
		if (s.tasks_running == 2)
			break;
		assert_null(work_queue_wait(q, 0.02));
	}
	assert_int_equal(s.tasks_running, 2);
	doc = work_queue_status(q, "master");
	m = json_array_get(doc, 0);
	assert_int_equal(
	    cat_int(m, "align", "waiting", NULL) + cat_int(m, "merge", "waiting", NULL), 3);
	assert_int_equal(
	    cat_int(m, "align", "running", "count") + cat_int(m, "merge", "running", "count"), 2);
	json_t *rows = json_object_get(json_object_get(m, "scaler"), "worker_rows");
	assert_int_equal(json_array_size(rows), 1);
	json_t *row = json_array_get(rows, 0);
	assert_int_equal(json_integer_value(json_object_get(row, "tasks")), 2);
	assert_true(json_real_value(json_object_get(row, "idle_s")) == 0.0);
	assert_true(json_real_value(json_object_get(json_object_get(row, "free"), "cores")) < 0.01);
	char wid[128];
	snprintf(wid, sizeof wid, "%s", json_string_value(json_object_get(row, "id")));
	json_decref(doc);
	/* the catalog record has the categories, not the rows */
	json_t *rec = master_status_record(q);
	assert_non_null(json_object_get(json_object_get(rec, "scaler"), "categories"));
	assert_null(json_object_get(json_object_get(rec, "scaler"), "worker_rows"));
	json_decref(rec);
	/* cancelling a waiting merge task: one fewer waits */
	int merge_waiting_before = 0;
	doc = work_queue_status(q, "master");
	merge_waiting_before = (int)cat_int(json_array_get(doc, 0), "merge", "waiting", NULL);
	json_decref(doc);
	struct work_queue_task *c = work_queue_cancel_by_taskid(q, ids[4]);
	assert_non_null(c);
	work_queue_task_delete(c);
	doc = work_queue_status(q, "master");
	assert_int_equal(cat_int(json_array_get(doc, 0), "merge", "waiting", NULL),
	                 merge_waiting_before - (merge_waiting_before > 0 ? 1 : 0));
	json_decref(doc);
	/* a status client asks for the worker to be drained */
	struct query_result r = {0};
	struct wq_status_opts so = {NULL, NULL, 5, wid};
	char *err = NULL;
	assert_non_null(wq_status_query_start(&e->loop, "127.0.0.1", work_queue_port(q), "drain",
	                                      &so, on_query, &r, &err));
	assert_true(fake_wait_flag(q, &r.done, 5));
	assert_string_equal(r.err, "");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(r.items, 0), "drained")),
	                 1);
	json_decref(r.items);
	assert_true(fake_wait_flag(q, &f->drains, 5));
	doc = work_queue_status(q, "master");
	json_t *sum =
	    json_object_get(json_object_get(json_array_get(doc, 0), "scaler"), "workers_summary");
	assert_int_equal(json_integer_value(json_object_get(sum, "draining")), 1);
	json_decref(doc);
	fake_queue_delete(q);
	fake_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tls),
	    cmocka_unit_test(test_catalog_and_port_file),
	    cmocka_unit_test(test_status_query),
	    cmocka_unit_test(test_fast_abort),
	    cmocka_unit_test(test_fast_abort_looks_at_oldest),
	    cmocka_unit_test(test_drain),
	    cmocka_unit_test(test_scaler_status),
	};
	return cmocka_run_group_tests(tests, fake_env_setup, fake_env_teardown);
}
