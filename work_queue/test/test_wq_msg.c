/* test_wq_msg.c: unit tests for the control messages (wq_msg.h): the hello
 * payloads of section 8 rebuilt byte for byte, the version refusal texts of
 * both sides, `error` truncation, the message/direction/state table, the
 * accessor texts, and every limit of the task validator at its boundary
 * (accepted at the limit, a violation one past it), using the section 8 frames
 * as the valid base messages. The transfer, task_done and other worker
 * messages are in test_wq_msg_worker.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htc_error.h"
#include "wq_msg.h"
#include "test_wq_msg_common.h"
#include "banned.h"

static const char hello_w[] =
    "{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"worker\",\"software\":\"htc 0.1.0\","
    "\"worker_id\":\"6b0d4e5f9a1c2b3d4e5f60718293a4b5\",\"host\":\"node12\","
    "\"caps\":[\"zlib\",\"fetch\",\"watch\"],\"auth\":[\"hmac-sha256\"],"
    "\"nonce\":\"0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\"}";
static const char hello_m[] =
    "{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"master\",\"software\":\"htc 0.1.0\","
    "\"master_id\":\"c0ffee00112233445566778899aabbcc\",\"project\":\"demo\","
    "\"caps\":[\"zlib\",\"fetch\",\"watch\"],\"auth\":\"hmac-sha256\","
    "\"nonce\":\"4142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60\","
    "\"keepalive\":{\"interval\":30,\"timeout\":120}}";
static const char task8[] =
    "{\"m\":\"task\",\"id\":1,\"try\":1,\"command\":\"wc -c < ref.fa; tr ACGT TGCA < ref.fa > "
    "out.txt\",\"category\":\"default\",\"tag\":\"ex\",\"env\":{},\"resources\":{\"cores\":1,"
    "\"memory\":1000,\"disk\":1000,\"gpus\":0},\"wall_time\":600,\"stdout_max\":1048576,"
    "\"inputs\":[{\"name\":\"ref.fa\",\"from\":\"cache\",\"object\":\"" OBJ "\"}],"
    "\"outputs\":[{\"name\":\"out.txt\",\"when\":\"always\"}]}";
/* ---- hello ---------------------------------------------------------------- */

static void test_hello_bytes(void **state)
{
	(void)state;
	struct wq_hello w = {.role = WQ_ROLE_WORKER,
	                     .software = "htc 0.1.0",
	                     .id = "6b0d4e5f9a1c2b3d4e5f60718293a4b5",
	                     .host = "node12",
	                     .caps = WQ_CAPS_ALL,
	                     .auth = true,
	                     .nonce = "0102030405060708090a0b0c0d0e0f10"
	                              "1112131415161718191a1b1c1d1e1f20"};
	json_t *j = wq_msg_hello_build(&w);
	size_t len = 0;
	char *buf = wq_msg_encode(j, &len);
	assert_int_equal(len, 259);
	assert_memory_equal(buf, hello_w, len);
	free(buf);
	json_decref(j);

	struct wq_hello m = {.role = WQ_ROLE_MASTER,
	                     .software = "htc 0.1.0",
	                     .id = "c0ffee00112233445566778899aabbcc",
	                     .project = "demo",
	                     .caps = wq_msg_caps_negotiate(WQ_CAPS_ALL, WQ_CAPS_ALL),
	                     .auth = true,
	                     .nonce = "4142434445464748494a4b4c4d4e4f50"
	                              "5152535455565758595a5b5c5d5e5f60",
	                     .keepalive_interval = 30,
	                     .keepalive_timeout = 120};
	j = wq_msg_hello_build(&m);
	buf = wq_msg_encode(j, &len);
	assert_int_equal(len, 300);
	assert_memory_equal(buf, hello_m, len);
	free(buf);
	json_decref(j);

	/* no password: empty auth list, no nonce; master: "none", project null */
	w.auth = false;
	w.caps = WQ_CAP_ZLIB;
	w.project = "p";
	j = wq_msg_hello_build(&w);
	buf = wq_msg_encode(j, &len);
	const char *expect =
	    "{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"worker\",\"software\":\"htc 0.1.0\","
	    "\"worker_id\":\"6b0d4e5f9a1c2b3d4e5f60718293a4b5\",\"host\":\"node12\","
	    "\"caps\":[\"zlib\"],\"auth\":[],\"project\":\"p\"}";
	assert_int_equal(len, strlen(expect));
	assert_memory_equal(buf, expect, len);
	free(buf);
	json_decref(j);
	m.auth = false;
	m.project = NULL;
	j = wq_msg_hello_build(&m);
	assert_true(json_is_null(json_object_get(j, "project")));
	assert_string_equal(json_string_value(json_object_get(j, "auth")), "none");
	assert_null(json_object_get(j, "nonce"));
	json_decref(j);
	/* missing fields, invalid UTF-8 */
	m.id = NULL;
	assert_null(wq_msg_hello_build(&m));
	m.id = "c0ffee00112233445566778899aabbcc";
	m.software = "bad \xff";
	assert_null(wq_msg_hello_build(&m));
}

static void test_hello_parse(void **state)
{
	(void)state;
	struct wq_hello h;
	char *why = NULL;
	json_t *j = load(hello_w);
	assert_int_equal(wq_msg_hello_parse(j, false, &h, &why), 0);
	assert_null(why);
	assert_int_equal(h.role, WQ_ROLE_WORKER);
	assert_string_equal(h.host, "node12");
	assert_int_equal(h.caps, WQ_CAPS_ALL);
	assert_true(h.auth);
	assert_string_equal(h.nonce,
	                    "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20");
	assert_null(h.project);
	json_decref(j); /* the hello keeps its own reference */
	assert_string_equal(h.id, "6b0d4e5f9a1c2b3d4e5f60718293a4b5");
	wq_msg_hello_free(&h);
	/* the same hello is refused as a master's */
	j = load(hello_w);
	assert_int_equal(wq_msg_hello_parse(j, true, &h, &why), HTC_EPROTO);
	expect_why(why, "message \"hello\": key \"role\": expected \"master\"");
	json_decref(j);

	j = load(hello_m);
	assert_int_equal(wq_msg_hello_parse(j, true, &h, &why), 0);
	assert_string_equal(h.project, "demo");
	assert_int_equal(h.keepalive_interval, 30);
	assert_int_equal(h.keepalive_timeout, 120);
	assert_true(h.auth);
	wq_msg_hello_free(&h);
	json_decref(j);

	/* unknown caps are ignored; unknown keys too */
	j = load("{\"m\":\"hello\",\"proto\":[1,7],\"role\":\"status\",\"software\":\"x\","
	         "\"worker_id\":\"6b0d4e5f9a1c2b3d4e5f60718293a4b5\",\"host\":\"h\","
	         "\"caps\":[\"teleport\",\"watch\"],\"auth\":[],\"future\":1}");
	assert_int_equal(wq_msg_hello_parse(j, false, &h, &why), 0);
	assert_int_equal(h.caps, WQ_CAP_WATCH);
	assert_int_equal(h.role, WQ_ROLE_STATUS);
	assert_int_equal(h.proto_minor, 7);
	assert_false(h.auth);
	assert_int_equal(wq_msg_caps_negotiate(h.caps, WQ_CAP_ZLIB | WQ_CAP_WATCH), WQ_CAP_WATCH);
	wq_msg_hello_free(&h);
	json_decref(j);

	/* violations */
	struct {
		const char *json, *text;
	} bad[] = {
	    {"{\"m\":\"hello\"}", "message \"hello\": key \"proto\": expected [major, minor], two "
	                          "integers >= 0"},
	    {"{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"worker\",\"software\":\"x\","
	     "\"worker_id\":\"6B0D4E5F9A1C2B3D4E5F60718293A4B5\",\"host\":\"h\",\"caps\":[],"
	     "\"auth\":[]}",
	     "message \"hello\": key \"worker_id\": expected 32 lowercase hex digits"},
	    {"{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"worker\",\"software\":\"x\","
	     "\"worker_id\":\"6b0d4e5f9a1c2b3d4e5f60718293a4b5\",\"host\":\"h\",\"caps\":[],"
	     "\"auth\":[\"hmac-sha256\"]}",
	     "message \"hello\": missing key \"nonce\""},
	    {"{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"worker\",\"software\":\"x\","
	     "\"worker_id\":\"6b0d4e5f9a1c2b3d4e5f60718293a4b5\",\"host\":\"h\",\"caps\":[]}",
	     "message \"hello\": missing key \"auth\""},
	    {"{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"master\",\"software\":\"x\","
	     "\"master_id\":\"c0ffee00112233445566778899aabbcc\",\"project\":null,\"caps\":[],"
	     "\"auth\":\"none\",\"keepalive\":{\"interval\":30,\"timeout\":59}}",
	     "message \"hello\": key \"keepalive.timeout\": must be at least twice the interval "
	     "(60)"},
	    {"{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"master\",\"software\":\"x\","
	     "\"master_id\":\"c0ffee00112233445566778899aabbcc\",\"project\":null,\"caps\":[],"
	     "\"auth\":\"none\",\"keepalive\":{\"interval\":4,\"timeout\":120}}",
	     "message \"hello\": key \"keepalive.interval\": expected an integer in 5..3600"},
	    {"{\"m\":\"hello\",\"proto\":[1,0],\"role\":\"master\",\"software\":\"x\","
	     "\"master_id\":\"c0ffee00112233445566778899aabbcc\",\"project\":null,\"caps\":[],"
	     "\"auth\":\"md5\",\"keepalive\":{\"interval\":30,\"timeout\":120}}",
	     "message \"hello\": key \"auth\": expected one of \"none\", \"hmac-sha256\""},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		j = load(bad[i].json);
		bool from_master = strstr(bad[i].json, "\"master\"") != NULL;
		assert_int_equal(wq_msg_hello_parse(j, from_master, &h, &why), HTC_EPROTO);
		expect_why(why, bad[i].text);
		assert_null(h.msg);
		json_decref(j);
	}
	/* 33 caps */
	json_t *caps = json_array();
	for (int i = 0; i < 33; i++)
		json_array_append_new(caps, json_string("x"));
	j = load(hello_w);
	json_object_set_new(j, "caps", caps);
	assert_int_equal(wq_msg_hello_parse(j, false, &h, &why), HTC_EPROTO);
	expect_why(why,
	           "message \"hello\": key \"caps\": expected an array of at most 32 elements");
	json_array_remove(caps, 0);
	assert_int_equal(wq_msg_hello_parse(j, false, &h, &why), 0);
	wq_msg_hello_free(&h);
	json_decref(j);
}

static void test_version(void **state)
{
	(void)state;
	struct wq_hello h;
	char *why = NULL;
	/* master receiving a worker hello of 2.0; the rest need not be valid */
	json_t *j = load("{\"m\":\"hello\",\"proto\":[2,0],\"role\":\"robot\"}");
	assert_int_equal(wq_msg_hello_parse(j, false, &h, &why), HTC_EVERSION);
	expect_why(why, "protocol version 2.0 is not supported: this master speaks 1.x; use a "
	                "worker of the same release as the master");
	assert_int_equal(h.proto_major, 2);
	char *log = wq_msg_version_log(h.proto_major, h.proto_minor, true);
	assert_string_equal(log, "refused: worker speaks protocol 2.0, this master speaks 1.x");
	free(log);
	/* worker receiving a master hello of 2.0 */
	assert_int_equal(wq_msg_hello_parse(j, true, &h, &why), HTC_EVERSION);
	expect_why(why, "protocol version 2.0 is not supported: this worker speaks 1.x");
	log = wq_msg_version_log(2, 0, false);
	assert_string_equal(log, "speaks protocol 2.0, this worker speaks 1.x");
	free(log);
	json_decref(j);
	j = load("{\"m\":\"hello\",\"proto\":[0,9]}");
	assert_int_equal(wq_msg_hello_parse(j, false, &h, &why), HTC_EVERSION);
	expect_why(why, "protocol version 0.9 is not supported: this master speaks 1.x; use a "
	                "worker of the same release as the master");
	json_decref(j);
}

/* ---- error ------------------------------------------------------------------ */

static void test_error(void **state)
{
	(void)state;
	json_t *j = wq_msg_error_build("version", "no", true, -1);
	size_t len;
	char *buf = wq_msg_encode(j, &len);
	const char *expect =
	    "{\"m\":\"error\",\"code\":\"version\",\"text\":\"no\",\"fatal\":true}";
	assert_int_equal(len, strlen(expect));
	assert_memory_equal(buf, expect, len);
	free(buf);
	struct wq_error e;
	char *why = NULL;
	assert_int_equal(wq_msg_error_parse(j, &e, &why), 0);
	assert_string_equal(e.code, "version");
	assert_true(e.fatal);
	assert_int_equal(e.retry_after, -1);
	wq_msg_error_free(&e);
	json_decref(j);

	/* 1,023 ASCII bytes then a 2-byte character: cut before it */
	char text[5000];
	memset(text, 'a', sizeof text);
	text[1023] = (char)0xc3;
	text[1024] = (char)0xa9;
	text[1025] = 0;
	j = wq_msg_error_build("blocked", text, true, 300);
	assert_int_equal(json_string_length(json_object_get(j, "text")), 1023);
	assert_int_equal(json_integer_value(json_object_get(j, "retry_after")), 300);
	json_decref(j);
	text[1022] = (char)0xc3;
	text[1023] = (char)0xa9;
	text[1024] = 'b';
	j = wq_msg_error_build("notice", text, false, -1);
	assert_int_equal(json_string_length(json_object_get(j, "text")), 1024);
	json_decref(j);

	/* receiver: 4,096 bytes fine, 4,097 a violation */
	memset(text, 'a', sizeof text);
	text[4096] = 0;
	j = json_pack("{s:s,s:s,s:s,s:b}", "m", "error", "code", "proto", "text", text, "fatal", 1);
	assert_int_equal(wq_msg_error_parse(j, &e, &why), 0);
	wq_msg_error_free(&e);
	json_decref(j);
	text[4096] = 'a';
	text[4097] = 0;
	j = json_pack("{s:s,s:s,s:s,s:b}", "m", "error", "code", "proto", "text", text, "fatal", 1);
	assert_int_equal(wq_msg_error_parse(j, &e, &why), HTC_EPROTO);
	expect_why(why, "message \"error\": key \"text\": expected a string of at most 4096 bytes");
	json_decref(j);
	j = load("{\"m\":\"error\",\"code\":\"x\",\"text\":\"t\"}");
	assert_int_equal(wq_msg_error_parse(j, &e, &why), HTC_EPROTO);
	expect_why(why, "message \"error\": missing key \"fatal\"");
	json_decref(j);
}

static void test_escape(void **state)
{
	(void)state;
	char *s = wq_msg_escape("a\nb\x1b[0m\x7f", 8, 100, false);
	assert_string_equal(s, "a\\x0ab\\x1b[0m\\x7f");
	free(s);
	s = wq_msg_escape("say \"hi\" \\ ok", 13, 100, false);
	assert_string_equal(s, "say \"hi\" \\ ok");
	free(s);
	s = wq_msg_escape("say \"hi\" \\", 10, 100, true);
	assert_string_equal(s, "say \\\"hi\\\" \\\\");
	free(s);
	/* invalid UTF-8 and overlong forms are escaped, valid kept */
	s = wq_msg_escape("\xff\xc0\xaf caf\xc3\xa9 \xe2\x82", 12, 100, false);
	assert_string_equal(s, "\\xff\\xc0\\xaf caf\xc3\xa9 \\xe2\\x82");
	free(s);
	/* shortening at a character boundary */
	s = wq_msg_escape("ab\xc3\xa9", 4, 3, false);
	assert_string_equal(s, "ab…");
	free(s);
	s = wq_msg_escape("abc", 3, 3, false);
	assert_string_equal(s, "abc");
	free(s);
	/* NUL inside the given length */
	s = wq_msg_escape("a\0b", 3, 10, false);
	assert_string_equal(s, "a\\x00b");
	free(s);
	assert_int_equal(wq_msg_utf8_cut("ab\xc3\xa9", 4, 3), 2);
	assert_int_equal(wq_msg_utf8_cut("ab\xc3\xa9", 4, 4), 4);
	assert_int_equal(wq_msg_utf8_cut("abcd", 4, 2), 2);
}

/* ---- table ------------------------------------------------------------------ */

/* The ids: the table is in the order of the names (the lookup searches it by halves), every
 * name maps back to its id, and anything else is unknown. */
static void check_ids(void)
{
	for (int i = 0; i < WQ_MSG_COUNT; i++) {
		const char *m = wq_msg_name((enum wq_msg_id)i);
		assert_non_null(m);
		if (i > 0 && strcmp(wq_msg_name((enum wq_msg_id)(i - 1)), m) >= 0)
			fail_msg("message %s is not after %s", m,
			         wq_msg_name((enum wq_msg_id)(i - 1)));
		assert_int_equal(wq_msg_lookup(m), i);
		assert_true(wq_msg_known(m));
	}
	assert_int_equal(wq_msg_lookup("task_done"), WQ_MSG_TASK_DONE);
	assert_int_equal(wq_msg_lookup("xfer_error"), WQ_MSG_XFER_ERROR);
	assert_int_equal(wq_msg_lookup("auth_ok"), WQ_MSG_AUTH_OK);
	const char *unknown[] = {"", "a", "task_", "Task", "tasks", "zzz", "xfer_errors", "auth"};
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
		assert_int_equal(wq_msg_lookup(unknown[i]), WQ_MSG_UNKNOWN);
	assert_int_equal(wq_msg_lookup(NULL), WQ_MSG_UNKNOWN);
	assert_null(wq_msg_name(WQ_MSG_UNKNOWN));
	/* wq_msg_check with a looked-up id gives the texts of wq_msg_allowed */
	char *why = NULL;
	assert_int_equal(wq_msg_check(WQ_MSG_TASK, "task", WQ_DIR_W2M, WQ_STATE_ACTIVE, &why),
	                 HTC_EPROTO);
	expect_why(why, "message \"task\" not allowed from a worker");
	assert_int_equal(
	    wq_msg_check(WQ_MSG_UNKNOWN, "frobnicate", WQ_DIR_M2W, WQ_STATE_ACTIVE, &why),
	    HTC_EPROTO);
	expect_why(why, "unknown message \"frobnicate\"");
	assert_int_equal(wq_msg_check(WQ_MSG_TASK, "task", WQ_DIR_M2W, WQ_STATE_ACTIVE, &why), 0);
	assert_null(why);
}

static void test_table(void **state)
{
	(void)state;
	char *why = NULL;
	assert_int_equal(wq_msg_allowed("frobnicate", WQ_DIR_W2M, WQ_STATE_ACTIVE, &why),
	                 HTC_EPROTO);
	expect_why(why, "unknown message \"frobnicate\"");
	assert_int_equal(wq_msg_allowed("task", WQ_DIR_W2M, WQ_STATE_ACTIVE, &why), HTC_EPROTO);
	expect_why(why, "message \"task\" not allowed from a worker");
	assert_int_equal(wq_msg_allowed("task_done", WQ_DIR_M2W, WQ_STATE_ACTIVE, &why),
	                 HTC_EPROTO);
	expect_why(why, "message \"task_done\" not allowed from the master");
	assert_int_equal(wq_msg_allowed("task", WQ_DIR_S2M, WQ_STATE_ACTIVE, &why), HTC_EPROTO);
	expect_why(why, "message \"task\" not allowed from a status client");
	assert_int_equal(wq_msg_allowed("hello", WQ_DIR_W2M, WQ_STATE_ACTIVE, &why), HTC_EPROTO);
	expect_why(why, "message \"hello\" not expected in state ACTIVE");
	assert_int_equal(wq_msg_allowed("auth_proof", WQ_DIR_W2M, WQ_STATE_INIT, &why), HTC_EPROTO);
	expect_why(why, "message \"auth_proof\" not expected in state INIT");
	assert_int_equal(wq_msg_allowed("identity", WQ_DIR_W2M, WQ_STATE_DRAINING, &why),
	                 HTC_EPROTO);
	expect_why(why, "message \"identity\" not expected in state DRAINING");
	assert_int_equal(wq_msg_allowed("task", WQ_DIR_M2W, WQ_STATE_DRAINING, &why), HTC_EPROTO);
	expect_why(why, "message \"task\" not expected in state DRAINING");
	assert_int_equal(wq_msg_allowed("xfer_begin", WQ_DIR_W2M, WQ_STATE_INIT, &why), HTC_EPROTO);
	expect_why(why, "message \"xfer_begin\" not expected in state INIT");
	assert_int_equal(wq_msg_allowed("ping", WQ_DIR_W2M, WQ_STATE_HELLO, &why), HTC_EPROTO);
	free(why);
	/* an unknown name is escaped */
	assert_int_equal(wq_msg_allowed("a\"\n", WQ_DIR_W2M, WQ_STATE_ACTIVE, &why), HTC_EPROTO);
	expect_why(why, "unknown message \"a\\\"\\x0a\"");

	struct {
		const char *m;
		enum wq_dir d;
		enum wq_state s;
	} ok[] = {
	    {"hello", WQ_DIR_W2M, WQ_STATE_HELLO},
	    {"hello", WQ_DIR_M2W, WQ_STATE_HELLO},
	    {"hello", WQ_DIR_S2M, WQ_STATE_HELLO},
	    {"auth_proof", WQ_DIR_W2M, WQ_STATE_AUTH},
	    {"auth_ok", WQ_DIR_M2W, WQ_STATE_AUTH},
	    {"identity", WQ_DIR_W2M, WQ_STATE_INIT},
	    {"capacity", WQ_DIR_W2M, WQ_STATE_INIT},
	    {"capacity", WQ_DIR_W2M, WQ_STATE_ACTIVE},
	    {"cache_have", WQ_DIR_W2M, WQ_STATE_INIT},
	    {"xfer_begin", WQ_DIR_M2W, WQ_STATE_ACTIVE},
	    {"xfer_end", WQ_DIR_W2M, WQ_STATE_DRAINING},
	    {"dir_mkdir", WQ_DIR_W2M, WQ_STATE_ACTIVE},
	    {"cache_drop", WQ_DIR_M2W, WQ_STATE_ACTIVE},
	    {"task", WQ_DIR_M2W, WQ_STATE_ACTIVE},
	    {"task_done", WQ_DIR_W2M, WQ_STATE_DRAINING},
	    {"task_cancel", WQ_DIR_M2W, WQ_STATE_ACTIVE},
	    {"ping", WQ_DIR_W2M, WQ_STATE_INIT},
	    {"pong", WQ_DIR_M2W, WQ_STATE_ACTIVE},
	    {"drain", WQ_DIR_M2W, WQ_STATE_ACTIVE},
	    {"draining", WQ_DIR_W2M, WQ_STATE_ACTIVE},
	    {"dismiss", WQ_DIR_M2W, WQ_STATE_DRAINING},
	    {"bye", WQ_DIR_W2M, WQ_STATE_INIT},
	    {"error", WQ_DIR_W2M, WQ_STATE_HELLO},
	    {"error", WQ_DIR_M2W, WQ_STATE_AUTH},
	    {"query", WQ_DIR_S2M, WQ_STATE_ACTIVE},
	    {"query_reply", WQ_DIR_M2S, WQ_STATE_ACTIVE},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		if (wq_msg_allowed(ok[i].m, ok[i].d, ok[i].s, &why) != 0)
			fail_msg("%s refused: %s", ok[i].m, why);
	}
	assert_true(wq_msg_known("task_cancelled"));
	assert_false(wq_msg_known("Task"));
	assert_string_equal(wq_state_name(WQ_STATE_AUTH), "AUTH");
	check_ids();
}

/* ---- accessors ---------------------------------------------------------------- */

static void test_accessors(void **state)
{
	(void)state;
	json_t *o =
	    load("{\"i\":5,\"r\":1.5,\"s\":\"abc\",\"b\":true,\"a\":[1,2],\"o\":{},\"n\":null}");
	struct wq_msg_v v = {.m = "x"};
	int64_t i = 0;
	assert_int_equal(wq_msg_int(&v, o, "i", WQ_REQ, 5, 5, &i), 0);
	assert_int_equal(i, 5);
	assert_int_equal(wq_msg_int(&v, o, "missing", 0, 0, 1, &i), 1);
	assert_int_equal(wq_msg_int(&v, o, "n", WQ_NULL, 0, 1, &i), 1);
	assert_null(v.why);
	assert_int_equal(wq_msg_int(&v, o, "i", WQ_REQ, 6, 9007199254740991, &i), HTC_EPROTO);
	/* only the first violation is kept */
	assert_int_equal(wq_msg_int(&v, o, "r", WQ_REQ, 0, 9, &i), HTC_EPROTO);
	expect_why(v.why, "message \"x\": key \"i\": expected an integer in 6..9007199254740991");
	v.why = NULL;
	v.where = "outer";
	assert_int_equal(wq_msg_int(&v, o, "r", WQ_REQ, 0, 9, &i), HTC_EPROTO);
	expect_why(v.why, "message \"x\": key \"outer.r\": expected an integer in 0..9");
	v.why = NULL;
	v.where = NULL;
	double d;
	assert_int_equal(wq_msg_num(&v, o, "r", WQ_REQ, 0, 2, &d), 0);
	assert_int_equal(wq_msg_num(&v, o, "i", WQ_REQ, 0, 2, &d), HTC_EPROTO);
	expect_why(v.why, "message \"x\": key \"i\": expected a number in 0..2");
	v.why = NULL;
	const char *s;
	size_t len;
	assert_int_equal(wq_msg_str(&v, o, "s", WQ_REQ, 3, &s, &len), 0);
	assert_int_equal(len, 3);
	assert_int_equal(wq_msg_str(&v, o, "s", WQ_REQ, 2, &s, NULL), HTC_EPROTO);
	expect_why(v.why, "message \"x\": key \"s\": expected a string of at most 2 bytes");
	v.why = NULL;
	bool b;
	assert_int_equal(wq_msg_bool(&v, o, "b", WQ_REQ, &b), 0);
	assert_true(b);
	assert_int_equal(wq_msg_bool(&v, o, "i", WQ_REQ, &b), HTC_EPROTO);
	expect_why(v.why, "message \"x\": key \"i\": expected true or false");
	v.why = NULL;
	json_t *x;
	assert_int_equal(wq_msg_array(&v, o, "a", WQ_REQ, 2, &x), 0);
	assert_int_equal(wq_msg_array(&v, o, "a", WQ_REQ, 1, &x), HTC_EPROTO);
	expect_why(v.why, "message \"x\": key \"a\": expected an array of at most 1 elements");
	v.why = NULL;
	assert_int_equal(wq_msg_object(&v, o, "o", WQ_REQ, &x), 0);
	assert_int_equal(wq_msg_object(&v, o, "n", WQ_REQ, &x), HTC_EPROTO);
	expect_why(v.why, "message \"x\": key \"n\": expected an object");
	v.why = NULL;
	assert_int_equal(wq_msg_object(&v, o, "zz", WQ_REQ, &x), HTC_EPROTO);
	expect_why(v.why, "message \"x\": missing key \"zz\"");
	v.why = NULL;
	json_decref(o);
}

/* ---- task --------------------------------------------------------------------- */

static int task_rc(json_t *j, unsigned caps, char **why)
{
	struct wq_task_msg *t = NULL;
	*why = NULL;
	int rc = wq_msg_task_parse(j, caps, &t, why);
	if (rc == HTC_EPROTO)
		assert_null(t);
	else
		assert_non_null(t);
	wq_task_msg_free(t);
	return rc;
}

static void expect_task_ok(json_t *j)
{
	char *why;
	int rc = task_rc(j, WQ_CAPS_ALL, &why);
	if (rc)
		fail_msg("task refused: %s", why);
}

static void expect_task_bad(json_t *j, int code, const char *text)
{
	char *why;
	assert_int_equal(task_rc(j, WQ_CAPS_ALL, &why), code);
	expect_why(why, text);
}

/* `dirout`: a file output may come back as a directory only when it was negotiated; the name
 * is offered and parsed like the others. */
static void test_task_dirout(void **state)
{
	(void)state;
	json_t *j = load(task8);
	struct wq_task_msg *t = NULL;
	char *why = NULL;
	assert_int_equal(wq_msg_task_parse(j, WQ_CAPS_ALL, &t, &why), 0);
	assert_false(t->outputs[0].dir_ok);
	wq_task_msg_free(t);
	t = NULL;
	assert_int_equal(wq_msg_task_parse(j, WQ_CAPS_ALL | WQ_CAP_DIROUT, &t, &why), 0);
	assert_false(t->outputs[0].dir);
	assert_true(t->outputs[0].dir_ok);
	wq_task_msg_free(t);
	json_decref(j);
	assert_int_equal(wq_msg_caps_negotiate(WQ_CAP_DIROUT | WQ_CAP_ZLIB, WQ_CAPS_KNOWN),
	                 WQ_CAP_DIROUT | WQ_CAP_ZLIB);
	assert_int_equal(wq_msg_caps_negotiate(WQ_CAP_DIROUT, WQ_CAPS_ALL), 0);
}

/* `grow`: max_memory is parsed only when negotiated (a violation otherwise), absent is 0, and
 * task_resized is a worker's message. */
static void test_task_grow(void **state)
{
	(void)state;
	json_t *j = load(task8);
	struct wq_task_msg *t = NULL;
	char *why = NULL;
	assert_int_equal(wq_msg_task_parse(j, WQ_CAPS_ALL | WQ_CAP_GROW, &t, &why), 0);
	assert_int_equal(t->max_memory, 0);
	wq_task_msg_free(t);
	t = NULL;
	json_object_set_new(j, "max_memory", json_integer(4000));
	assert_int_equal(wq_msg_task_parse(j, WQ_CAPS_ALL | WQ_CAP_GROW, &t, &why), 0);
	assert_int_equal(t->max_memory, 4000);
	wq_task_msg_free(t);
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"max_memory\": needs the capability \"grow\"");
	json_object_set_new(j, "max_memory", json_integer(-1));
	assert_int_equal(task_rc(j, WQ_CAPS_ALL | WQ_CAP_GROW, &why), HTC_EPROTO);
	free(why);
	json_decref(j);
	assert_int_equal(wq_msg_lookup("task_resized"), WQ_MSG_TASK_RESIZED);
	assert_int_equal(
	    wq_msg_check(WQ_MSG_TASK_RESIZED, "task_resized", WQ_DIR_M2W, WQ_STATE_ACTIVE, &why),
	    HTC_EPROTO);
	free(why);
}

static void test_task_section8(void **state)
{
	(void)state;
	json_t *j = load(task8);
	struct wq_task_msg *t = NULL;
	char *why = NULL;
	assert_int_equal(wq_msg_task_parse(j, WQ_CAPS_ALL, &t, &why), 0);
	json_decref(j);
	assert_int_equal(t->id, 1);
	assert_int_equal(t->try_, 1);
	assert_string_equal(t->command, "wc -c < ref.fa; tr ACGT TGCA < ref.fa > out.txt");
	assert_string_equal(t->tag, "ex");
	assert_true(t->resources.cores == 1.0);
	assert_int_equal(t->resources.memory, 1000);
	assert_int_equal(t->wall_time, 600);
	assert_int_equal(t->stdout_max, 1048576);
	assert_int_equal(t->ninputs, 1);
	assert_string_equal(t->inputs[0].name, "ref.fa");
	assert_int_equal(t->inputs[0].from, WQ_FROM_CACHE);
	assert_string_equal(t->inputs[0].object, OBJ);
	assert_int_equal(t->noutputs, 1);
	assert_int_equal(t->outputs[0].when, WQ_WHEN_ALWAYS);
	assert_false(t->has_container);
	wq_task_msg_free(t);
}

static void test_task_limits(void **state)
{
	(void)state;
	json_t *j = load(task8);
	char *big;
	/* command 1..131,071 */
	big = filled(131071);
	json_object_set_new(j, "command", json_string(big));
	expect_task_ok(j);
	free(big);
	big = filled(131072);
	json_object_set_new(j, "command", json_string(big));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"command\": expected a string of 1..131071 bytes");
	free(big);
	json_object_set_new(j, "command", json_string(""));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"command\": expected a string of 1..131071 bytes");
	json_object_set_new(j, "command", json_string("true"));
	/* id, try */
	json_object_set_new(j, "id", json_integer(9007199254740991));
	expect_task_ok(j);
	json_object_set_new(j, "id", json_integer(9007199254740992));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"id\": expected an integer in 1..9007199254740991");
	json_object_set_new(j, "id", json_integer(0));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"id\": expected an integer in 1..9007199254740991");
	json_object_set_new(j, "id", json_real(1.0));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"id\": expected an integer in 1..9007199254740991");
	json_object_set_new(j, "id", json_integer(1));
	json_object_del(j, "try");
	expect_task_bad(j, HTC_EPROTO, "message \"task\": missing key \"try\"");
	json_object_set_new(j, "try", json_integer(1));
	/* category 128, tag 1024 */
	big = filled(129);
	json_object_set_new(j, "category", json_stringn(big, 128));
	expect_task_ok(j);
	json_object_set_new(j, "category", json_string(big));
	expect_task_bad(
	    j, HTC_EPROTO,
	    "message \"task\": key \"category\": expected a string of at most 128 bytes");
	free(big);
	json_object_set_new(j, "category", json_string("c"));
	big = filled(1025);
	json_object_set_new(j, "tag", json_stringn(big, 1024));
	expect_task_ok(j);
	json_object_set_new(j, "tag", json_string(big));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"tag\": expected a string of at most 1024 bytes");
	free(big);
	json_object_set_new(j, "tag", json_string("t"));
	/* stdout_max clamped to 64 MiB */
	json_object_set_new(j, "stdout_max", json_integer(1LL << 40));
	struct wq_task_msg *t = NULL;
	char *why = NULL;
	assert_int_equal(wq_msg_task_parse(j, 0, &t, &why), 0);
	assert_int_equal(t->stdout_max, 64 * 1024 * 1024);
	wq_task_msg_free(t);
	json_object_set_new(j, "stdout_max", json_integer(-1));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"stdout_max\": expected an integer in "
	                "0..9007199254740991");
	json_object_del(j, "stdout_max");
	json_object_set_new(j, "wall_time", json_string("600"));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"wall_time\": expected an integer in "
	                "0..9007199254740991");
	json_object_del(j, "wall_time");
	assert_int_equal(wq_msg_task_parse(j, 0, &t, &why), 0);
	assert_int_equal(t->stdout_max, 1048576);
	assert_int_equal(t->wall_time, 0);
	wq_task_msg_free(t);
	json_decref(j);
}

static void test_task_env(void **state)
{
	(void)state;
	json_t *j = load(task8);
	json_t *env = json_object();
	json_object_set_new(j, "env", env);
	char name[32];
	for (int i = 0; i < 256; i++) {
		snprintf(name, sizeof name, "V%d", i);
		json_object_set_new(env, name, json_string("x"));
	}
	expect_task_ok(j);
	json_object_set_new(env, "V256", json_string("x"));
	expect_task_bad(j, HTC_EPROTO, "message \"task\": key \"env\": more than 256 entries");
	json_object_clear(env);
	/* names */
	char *n128 = filled(129);
	n128[0] = '_';
	n128[128] = 0;
	json_object_set_new(env, n128, json_string("x"));
	json_object_set_new(env, "a9_Z", json_string(""));
	expect_task_ok(j);
	n128[128] = 'c';
	json_object_set_new(env, n128, json_string("x"));
	char *expect = NULL;
	char *shown = NULL;
	{
		char head[65];
		memcpy(head, n128, 64);
		head[64] = 0;
		shown = head;
		assert_true(asprintf(&expect,
		                     "message \"task\": key \"env\": name \"%s…\" does not match "
		                     "^[A-Za-z_][A-Za-z0-9_]{0,127}$",
		                     shown) > 0);
	}
	expect_task_bad(j, HTC_EPROTO, expect);
	free(expect);
	free(n128);
	json_object_clear(env);
	json_object_set_new(env, "1A", json_string("x"));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"env\": name \"1A\" does not match "
	                "^[A-Za-z_][A-Za-z0-9_]{0,127}$");
	json_object_clear(env);
	json_object_set_new(env, "A-B", json_string("x"));
	assert_int_equal(task_rc(j, 0, &expect), HTC_EPROTO);
	free(expect);
	json_object_clear(env);
	/* values 4,096 */
	char *v = filled(4097);
	json_object_set_new(env, "A", json_stringn(v, 4096));
	expect_task_ok(j);
	json_object_set_new(env, "A", json_string(v));
	expect_task_bad(
	    j, HTC_EPROTO,
	    "message \"task\": key \"env.A\": expected a string of at most 4096 bytes, or null");
	json_object_set_new(env, "A", json_integer(1));
	expect_task_bad(
	    j, HTC_EPROTO,
	    "message \"task\": key \"env.A\": expected a string of at most 4096 bytes, or null");
	/* null unsets a variable */
	json_object_set_new(env, "A", json_null());
	expect_task_ok(j);
	json_object_clear(env);
	/* names + values <= 262,144: 64 entries of 4-byte names and 4,092-byte values */
	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof name, "V%03d", i);
		json_object_set_new(env, name, json_stringn(v, 4092));
	}
	expect_task_ok(j);
	json_object_set_new(env, "V000", json_stringn(v, 4093));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"env\": names and values exceed 262144 bytes");
	free(v);
	json_object_set_new(j, "env", json_array());
	expect_task_bad(j, HTC_EPROTO, "message \"task\": key \"env\": expected an object");
	json_decref(j);
}

static void test_task_resources(void **state)
{
	(void)state;
	json_t *j = load(task8);
	json_t *r = json_object_get(j, "resources");
	json_object_set_new(r, "cores", json_real(0.125));
	expect_task_ok(j);
	json_object_set_new(r, "cores", json_real(0.001));
	expect_task_ok(j);
	const char *cores_text = "message \"task\": key \"resources.cores\": expected a number > 0 "
	                         "with at most 3 decimals";
	json_object_set_new(r, "cores", json_real(0.0005));
	expect_task_bad(j, HTC_EPROTO, cores_text);
	json_object_set_new(r, "cores", json_integer(0));
	expect_task_bad(j, HTC_EPROTO, cores_text);
	json_object_set_new(r, "cores", json_string("1"));
	expect_task_bad(j, HTC_EPROTO, cores_text);
	json_object_set_new(r, "cores", json_integer(2));
	json_object_del(r, "gpus");
	expect_task_bad(j, HTC_EPROTO, "message \"task\": key \"resources\": missing key \"gpus\"");
	json_object_set_new(r, "gpus", json_integer(0));
	json_object_set_new(r, "memory", json_integer(-1));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"resources.memory\": expected an integer in "
	                "0..9007199254740991");
	json_object_del(j, "resources");
	expect_task_bad(j, HTC_EPROTO, "message \"task\": missing key \"resources\"");
	json_decref(j);
}

static json_t *inputs_of(size_t n, const char *fmt)
{
	json_t *a = json_array();
	char name[64];
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof name, fmt, i);
		json_array_append_new(a, json_pack("{s:s,s:s}", "name", name, "from", "task"));
	}
	return a;
}

static void test_task_files(void **state)
{
	(void)state;
	json_t *j = load(task8);
	json_object_set_new(j, "inputs", inputs_of(1000, "in%zu"));
	expect_task_ok(j);
	json_object_set_new(j, "inputs", inputs_of(WQ_FILES_MAX + 1, "in%zu"));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"inputs\": expected an array of at most 100000 "
	                "elements");
	json_object_set_new(j, "outputs", inputs_of(1000, "out%zu"));
	json_object_set_new(j, "inputs", json_array());
	expect_task_ok(j);
	json_object_set_new(j, "outputs", inputs_of(WQ_FILES_MAX + 1, "out%zu"));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"outputs\": expected an array of at most 100000 "
	                "elements");
	json_object_set_new(j, "outputs", json_array());

	/* bad names: refused with the section 6 text, not a violation */
	json_t *in = json_array();
	json_object_set_new(j, "inputs", in);
	json_array_append_new(in, json_pack("{s:s,s:s}", "name", "../x", "from", "task"));
	expect_task_bad(j, HTC_EPARSE, "input name \"../x\": \"..\" is not allowed");
	json_array_clear(in);
	json_array_append_new(in, json_pack("{s:s,s:s}", "name", "/etc/passwd", "from", "task"));
	expect_task_bad(j, HTC_EPARSE,
	                "input name \"/etc/passwd\": absolute names are not allowed");
	json_array_clear(in);
	json_array_append_new(in, json_pack("{s:s,s:s}", "name", "a", "from", "task"));
	json_array_append_new(in, json_pack("{s:s,s:s}", "name", "a/b", "from", "task"));
	expect_task_bad(j, HTC_EPARSE, "input name \"a\": a directory prefix of \"a/b\"");
	/* an output may have an input's name */
	json_array_remove(in, 1);
	json_object_set_new(j, "outputs", json_pack("[{s:s}]", "name", "a"));
	expect_task_ok(j);
	json_object_set_new(j, "outputs", json_pack("[{s:s},{s:s}]", "name", "o", "name", "o"));
	expect_task_bad(j, HTC_EPARSE, "output name \"o\": given twice");
	json_object_set_new(j, "outputs", json_pack("[{s:s}]", "name", "a//b"));
	expect_task_bad(j, HTC_EPARSE, "output name \"a//b\": empty or \".\" component");
	json_object_set_new(j, "outputs", json_array());
	/* the task of a bad name is returned, for task_refused */
	json_array_clear(in);
	json_array_append_new(in, json_pack("{s:s,s:s}", "name", "a/./b", "from", "task"));
	struct wq_task_msg *t = NULL;
	char *why = NULL;
	assert_int_equal(wq_msg_task_parse(j, 0, &t, &why), HTC_EPARSE);
	assert_int_equal(t->id, 1);
	free(why);
	wq_task_msg_free(t);

	/* schema of inputs */
	json_array_clear(in);
	json_array_append_new(
	    in, json_pack("{s:s,s:s,s:s}", "name", "x", "from", "cache", "object", "F-abc"));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"inputs[0].object\": expected a cache object name "
	                "(FDU- and 64 hex digits)");
	json_array_clear(in);
	json_array_append_new(in, json_pack("{s:s,s:s,s:s}", "name", "x", "from", "cache", "object",
	                                    "F-A4B0723993D3751F3D530E3C20DA4C24CCDD32E65820FBA8"
	                                    "97CC5F119E85CA55"));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"inputs[0].object\": expected a cache object name "
	                "(FDU- and 64 hex digits)");
	json_array_clear(in);
	json_array_append_new(in, json_pack("{s:s,s:s}", "name", "x", "from", "nowhere"));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"inputs[0].from\": expected one of \"cache\", "
	                "\"task\", \"url\"");
	json_array_clear(in);
	json_array_append_new(in, json_pack("{s:s,s:s,s:s,s:s}", "name", "x", "from", "url", "url",
	                                    "http://h/x", "object",
	                                    "U-a4b0723993d3751f3d530e3c20da4c24ccdd32e65820fba8"
	                                    "97cc5f119e85ca55"));
	expect_task_ok(j);
	assert_int_equal(task_rc(j, WQ_CAP_ZLIB, &why), HTC_EPROTO);
	expect_why(why, "message \"task\": key \"inputs[0].from\": \"url\" needs the fetch "
	                "capability");
	/* `validated`: absent is false; a boolean when present */
	{
		struct wq_task_msg *u = NULL;
		assert_int_equal(wq_msg_task_parse(j, WQ_CAPS_ALL, &u, &why), 0);
		assert_false(u->inputs[0].validated);
		wq_task_msg_free(u);
		json_object_set_new(json_array_get(in, 0), "validated", json_true());
		assert_int_equal(wq_msg_task_parse(j, WQ_CAPS_ALL, &u, &why), 0);
		assert_true(u->inputs[0].validated);
		wq_task_msg_free(u);
		json_object_set_new(json_array_get(in, 0), "validated", json_string("yes"));
		expect_task_bad(
		    j, HTC_EPROTO,
		    "message \"task\": key \"inputs[0].validated\": expected true or false");
	}
	json_array_clear(in);
	json_array_append_new(in, json_integer(3));
	expect_task_bad(j, HTC_EPROTO, "message \"task\": key \"inputs[0]\": expected an object");
	json_array_clear(in);
	/* outputs */
	json_object_set_new(
	    j, "outputs", json_pack("[{s:s,s:s,s:b}]", "name", "o", "when", "success", "watch", 1));
	expect_task_ok(j);
	assert_int_equal(task_rc(j, 0, &why), HTC_EPROTO);
	expect_why(why, "message \"task\": key \"outputs[0].watch\": needs the watch capability");
	json_object_set_new(j, "outputs", json_pack("[{s:s,s:s}]", "name", "o", "when", "never"));
	expect_task_bad(j, HTC_EPROTO,
	                "message \"task\": key \"outputs[0].when\": expected one of \"always\", "
	                "\"success\", \"failure\"");
	json_object_set_new(j, "outputs", json_array());
	/* container: only with `containers`; an archive must be one of the task's cache inputs */
	const unsigned CC = WQ_CAPS_ALL | WQ_CAP_CONTAINERS;
	json_object_set_new(j, "container", json_pack("{s:s,s:s}", "image", OBJ, "mode", "shared"));
	assert_int_equal(task_rc(j, WQ_CAPS_ALL, &why), HTC_EPROTO);
	expect_why(why, "message \"task\": key \"container\": needs the capability "
	                "\"containers\"");
	assert_int_equal(task_rc(j, CC, &why), HTC_EPROTO);
	expect_why(why, "message \"task\": key \"container.image\": the object is not one of the "
	                "task's cache inputs");
	json_object_set_new(
	    j, "inputs",
	    json_pack("[{s:s,s:s,s:s}]", "name", "img.tar", "from", "cache", "object", OBJ));
	assert_int_equal(wq_msg_task_parse(j, CC, &t, &why), 0);
	assert_true(t->has_container);
	assert_string_equal(t->container_image, OBJ);
	assert_null(t->container_name);
	assert_int_equal(t->container_mode, WQ_CONTAINER_SHARED);
	wq_task_msg_free(t);
	json_object_set_new(j, "container",
	                    json_pack("{s:s,s:s}", "name", "busybox:local", "mode", "task"));
	assert_int_equal(wq_msg_task_parse(j, CC, &t, &why), 0);
	assert_string_equal(t->container_name, "busybox:local");
	assert_null(t->container_image);
	assert_int_equal(t->container_mode, WQ_CONTAINER_TASK);
	wq_task_msg_free(t);
	json_object_set_new(j, "container",
	                    json_pack("{s:s,s:s}", "name", "-bad name", "mode", "task"));
	assert_int_equal(task_rc(j, CC, &why), HTC_EPROTO);
	expect_why(why, "message \"task\": key \"container.name\": expected an image name "
	                "(letters, digits and . _ - / : @)");
	json_object_set_new(j, "container",
	                    json_pack("{s:s,s:s,s:s}", "name", "x", "image", OBJ, "mode", "task"));
	assert_int_equal(task_rc(j, CC, &why), HTC_EPROTO);
	expect_why(why, "message \"task\": key \"container.image\": expected exactly one of image "
	                "(a cached archive) and name");
	json_object_set_new(j, "container", json_pack("{s:s}", "image", OBJ));
	assert_int_equal(task_rc(j, CC, &why), HTC_EPROTO);
	expect_why(why, "message \"task\": key \"container\": missing key \"mode\"");
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hello_bytes),    cmocka_unit_test(test_hello_parse),
	    cmocka_unit_test(test_version),        cmocka_unit_test(test_error),
	    cmocka_unit_test(test_escape),         cmocka_unit_test(test_table),
	    cmocka_unit_test(test_accessors),      cmocka_unit_test(test_task_section8),
	    cmocka_unit_test(test_task_dirout),    cmocka_unit_test(test_task_grow),
	    cmocka_unit_test(test_task_limits),    cmocka_unit_test(test_task_env),
	    cmocka_unit_test(test_task_resources), cmocka_unit_test(test_task_files),

	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
