/* test_status_client.c: the status client against a scripted fake master over loopback TCP:
 * the handshake as a status client (with and without a password), a query answered in two
 * batches, a refusal, a master that never answers, a closed port, and cancelling. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <cmocka.h>

#include "wq_auth.h"
#include "wq_conn.h"
#include "wq_handshake.h"
#include "status_client.h"
#include "ts_loop.h"

#include "banned.h"

/* The fake master: accepts one connection, runs the master side of the handshake, and answers
 * `query` as the script says. */
enum script { ANSWER_TWO_BATCHES, REFUSE, SILENT };

struct fake {
	uv_loop_t *loop;
	uv_tcp_t listener;
	int port;
	enum script script;
	const struct wq_auth_key *key;
	struct wq_conn *conn;
	struct wq_handshake *hs;
	char *what; /* the `what` of the query received */
	int got_bye;
	/* the client's result */
	int called;
	json_t *items;
	char *err;
};

static void on_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                       size_t len, void *user)
{
	struct fake *f = user;
	if (f->hs && wq_handshake_message(f->hs, msg, name, raw, len))
		return;
	if (!strcmp(name, "bye")) {
		f->got_bye = 1;
		return;
	}
	if (strcmp(name, "query"))
		return;
	f->what = strdup(json_string_value(json_object_get(msg, "what")));
	if (f->script == REFUSE) {
		wq_conn_refuse(c, "blocked", "your host is blocked", "refused a status client");
		return;
	}
	if (f->script == SILENT)
		return;
	json_t *r1 = json_pack("{s:s, s:s, s:[{s:s, s:i}, {s:s, s:i}], s:b}", "m", "query_reply",
	                       "what", f->what, "items", "host", "a", "cores", 2, "host", "b",
	                       "cores", 4, "more", 1);
	json_t *r2 = json_pack("{s:s, s:s, s:[{s:s, s:i}], s:b}", "m", "query_reply", "what",
	                       f->what, "items", "host", "c", "cores", 8, "more", 0);
	assert_int_equal(wq_conn_send_msg(c, r1), 0);
	assert_int_equal(wq_conn_send_msg(c, r2), 0);
	json_decref(r1);
	json_decref(r2);
}

static void on_data(struct wq_conn *c, uint32_t xfer, const uint8_t *b, size_t len, void *user)
{
	(void)c;
	(void)xfer;
	(void)b;
	(void)len;
	(void)user;
}

static void on_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	(void)c;
	struct fake *f = user;
	if (f->hs && !wq_handshake_finished(f->hs))
		wq_handshake_closed(f->hs, why, text);
}

static void on_hs_done(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
{
	(void)h;
	(void)user;
	if (r->outcome == WQ_HS_OK)
		assert_int_equal(r->peer_role, WQ_ROLE_STATUS);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct fake *f = server->data;
	assert_int_equal(status, 0);
	uv_tcp_t *tcp = malloc(sizeof *tcp);
	uv_tcp_init(f->loop, tcp);
	assert_int_equal(uv_accept(server, (uv_stream_t *)tcp), 0);
	static const struct wq_conn_callbacks cb = {on_message, on_data, NULL, on_closed};
	f->conn = wq_conn_create(tcp, "wq: status", &cb, f);
	assert_non_null(f->conn);
	static const char id[] = "0123456789abcdef0123456789abcdef";
	struct wq_hs_config cfg = {
	    .master = true, .key = f->key, .software = "test", .id = id, .deadline_ms = 5000};
	char *err = NULL;
	f->hs = wq_handshake_start(f->loop, f->conn, &cfg, on_hs_done, f, &err);
	assert_non_null(f->hs);
}

static void fake_start(struct fake *f, uv_loop_t *loop, enum script script,
                       const struct wq_auth_key *key)
{
	memset(f, 0, sizeof *f);
	f->loop = loop;
	f->script = script;
	f->key = key;
	uv_tcp_init(loop, &f->listener);
	f->listener.data = f;
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	assert_int_equal(uv_tcp_bind(&f->listener, (struct sockaddr *)&a, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *)&f->listener, 4, on_connection), 0);
	struct sockaddr_in got;
	int len = sizeof got;
	uv_tcp_getsockname(&f->listener, (struct sockaddr *)&got, &len);
	f->port = ntohs(got.sin_port);
}

static void fake_stop(struct fake *f)
{
	wq_handshake_delete(f->hs);
	wq_conn_delete(f->conn);
	uv_close((uv_handle_t *)&f->listener, NULL);
	uv_run(f->loop, UV_RUN_DEFAULT);
	free(f->what);
	json_decref(f->items);
	free(f->err);
}

static void result_cb(json_t *items, const char *err, void *arg)
{
	struct fake *f = arg;
	f->called++;
	f->items = items;
	f->err = err ? strdup(err) : NULL;
}

static bool called(void *arg)
{
	return ((struct fake *)arg)->called > 0;
}

static bool bye_seen(void *arg)
{
	return ((struct fake *)arg)->got_bye;
}

/* Runs the loop until the client's callback ran. */
static void run_until_called(struct fake *f)
{
	assert_true(ts_run_until(f->loop, called, f, TS_WAIT_MS));
}

static void test_two_batches(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct fake f;
	fake_start(&f, &loop, ANSWER_TWO_BATCHES, NULL);
	char *err = NULL;
	struct wq_status_opts o = {.timeout_s = 5};
	assert_non_null(
	    wq_status_query_start(&loop, "127.0.0.1", f.port, "workers", &o, result_cb, &f, &err));
	run_until_called(&f);
	assert_int_equal(f.called, 1);
	assert_null(f.err);
	assert_string_equal(f.what, "workers");
	assert_int_equal(json_array_size(f.items), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(f.items, 2), "host")),
	                    "c");
	/* the client says bye after the last batch */
	assert_true(ts_run_until(&loop, bye_seen, &f, TS_WAIT_MS));
	fake_stop(&f);
	assert_int_equal(f.called, 1);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_password(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct wq_auth_key *key = wq_auth_key_create("sesame", 6);
	struct wq_auth_key *wrong = wq_auth_key_create("sesamf", 6);
	struct fake f;
	fake_start(&f, &loop, ANSWER_TWO_BATCHES, key);
	char *err = NULL;
	struct wq_status_opts o = {.key = key, .timeout_s = 5};
	assert_non_null(
	    wq_status_query_start(&loop, "localhost", f.port, "tasks", &o, result_cb, &f, &err));
	run_until_called(&f);
	assert_null(f.err);
	assert_int_equal(json_array_size(f.items), 3);
	fake_stop(&f);

	fake_start(&f, &loop, ANSWER_TWO_BATCHES, key);
	o.key = wrong;
	assert_non_null(
	    wq_status_query_start(&loop, "127.0.0.1", f.port, "tasks", &o, result_cb, &f, &err));
	run_until_called(&f);
	assert_null(f.items);
	assert_non_null(strstr(f.err, "password"));
	fake_stop(&f);
	wq_auth_key_delete(key);
	wq_auth_key_delete(wrong);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_refusal_silence_and_no_master(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct fake f;
	char *err = NULL;
	struct wq_status_opts o = {.timeout_s = 0.5};

	fake_start(&f, &loop, REFUSE, NULL);
	assert_non_null(
	    wq_status_query_start(&loop, "127.0.0.1", f.port, "master", &o, result_cb, &f, &err));
	run_until_called(&f);
	assert_string_equal(f.err, "the master refused: your host is blocked");
	fake_stop(&f);

	fake_start(&f, &loop, SILENT, NULL);
	assert_non_null(
	    wq_status_query_start(&loop, "127.0.0.1", f.port, "master", &o, result_cb, &f, &err));
	run_until_called(&f);
	assert_string_equal(f.err, "no answer in time");
	fake_stop(&f);

	/* a port nobody listens on: the listener is closed first */
	fake_start(&f, &loop, SILENT, NULL);
	int port = f.port;
	uv_close((uv_handle_t *)&f.listener, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_non_null(
	    wq_status_query_start(&loop, "127.0.0.1", port, "master", &o, result_cb, &f, &err));
	run_until_called(&f);
	assert_non_null(strstr(f.err, "cannot connect"));
	uv_run(&loop, UV_RUN_DEFAULT);
	free(f.err);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_cancel_and_blocking_form(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct fake f;
	fake_start(&f, &loop, SILENT, NULL);
	char *err = NULL;
	struct wq_status_opts o = {.timeout_s = 5};
	struct wq_status_query *q =
	    wq_status_query_start(&loop, "127.0.0.1", f.port, "master", &o, result_cb, &f, &err);
	assert_non_null(q);
	for (int i = 0; i < 20; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	wq_status_query_cancel(q);
	fake_stop(&f);
	assert_int_equal(f.called, 0); /* a cancelled query never calls back */
	assert_int_equal(uv_loop_close(&loop), 0);

	/* the blocking form, against a port nobody listens on */
	json_t *items = wq_status_query_run("127.0.0.1", 1, "master", &o, &err);
	assert_null(items);
	assert_non_null(strstr(err, "cannot connect"));
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_batches),
	    cmocka_unit_test(test_password),
	    cmocka_unit_test(test_refusal_silence_and_no_master),
	    cmocka_unit_test(test_cancel_and_blocking_form),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
