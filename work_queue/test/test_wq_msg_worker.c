/* test_wq_msg_worker.c: unit tests for the transfer messages (xfer_begin and the others of
 * section 5.4), task_done (with the section 8 frame as the valid base) and the other messages
 * a worker sends, each limit at its boundary. The hello, task and table tests are in
 * test_wq_msg.c. */
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

static const char done8[] =
    "{\"m\":\"task_done\",\"id\":1,\"try\":1,\"outcome\":\"exited\",\"exit_status\":0,"
    "\"stdout\":{\"size\":2,\"truncated\":false,\"xfer\":2},\"outputs\":[{\"index\":0,"
    "\"xfer\":1}],\"summary\":{\"exit_type\":\"normal\",\"exit_status\":0,\"wall_time\":0.004,"
    "\"cpu_time\":0.002,\"cores\":0.5,\"memory\":1.3,\"disk\":0.008,\"total_processes\":3},"
    "\"times\":{\"received\":1795426939004000,\"inputs_ready\":1795426939008000,\"started\":"
    "1795426939010000,\"ended\":1795426939014000,\"reported\":1795426939015000},"
    "\"disk_full\":false}";

/* ---- transfers ------------------------------------------------------------------ */

static void test_xfer(void **state)
{
	(void)state;
	struct wq_xfer_begin *x = NULL;
	char *why = NULL;
	/* frame 8 */
	json_t *j = load("{\"m\":\"xfer_begin\",\"xfer\":1,\"target\":{\"object\":\"" OBJ
	                 "\",\"keep\":\"run\"},\"size\":5,\"enc\":\"none\"}");
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_M2W, 0, &x, &why), 0);
	assert_int_equal(x->target.kind, WQ_TARGET_OBJECT);
	assert_string_equal(x->target.object, OBJ);
	assert_int_equal(x->size, 5);
	assert_false(x->exec);
	wq_xfer_begin_free(x);
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_W2M, 0, &x, &why), HTC_EPROTO);
	expect_why(why, "message \"xfer_begin\": key \"target\": a cache object target is not "
	                "allowed from a worker");
	assert_null(x);
	json_object_set_new(j, "enc", json_string("zlib"));
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_M2W, 0, &x, &why), HTC_EPROTO);
	expect_why(why, "message \"xfer_begin\": key \"enc\": \"zlib\" needs the zlib capability");
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_M2W, WQ_CAP_ZLIB, &x, &why), 0);
	wq_xfer_begin_free(x);
	json_object_set_new(j, "size", json_integer(0));
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_M2W, WQ_CAP_ZLIB, &x, &why), HTC_EPROTO);
	expect_why(why, "message \"xfer_begin\": key \"enc\": \"zlib\" is not allowed for size 0");
	json_object_set_new(j, "enc", json_string("none"));
	json_object_set_new(j, "xfer", json_integer(4294967296));
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_M2W, 0, &x, &why), HTC_EPROTO);
	expect_why(why,
	           "message \"xfer_begin\": key \"xfer\": expected an integer in 1..4294967295");
	json_decref(j);

	/* frames 13 and 16 */
	j = load("{\"m\":\"xfer_begin\",\"xfer\":1,\"target\":{\"task\":1,\"output\":0},"
	         "\"size\":5,\"enc\":\"none\"}");
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_W2M, 0, &x, &why), 0);
	assert_int_equal(x->target.kind, WQ_TARGET_OUTPUT);
	assert_int_equal(x->target.offset, -1);
	wq_xfer_begin_free(x);
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_M2W, 0, &x, &why), HTC_EPROTO);
	expect_why(why, "message \"xfer_begin\": key \"target\": an output target is not allowed "
	                "from the master");
	json_object_set_new(json_object_get(j, "target"), "offset", json_integer(10));
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_W2M, 0, &x, &why), HTC_EPROTO);
	expect_why(why,
	           "message \"xfer_begin\": key \"target.offset\": needs the watch capability");
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_W2M, WQ_CAP_WATCH, &x, &why), 0);
	assert_int_equal(x->target.offset, 10);
	wq_xfer_begin_free(x);
	json_decref(j);
	j = load("{\"m\":\"xfer_begin\",\"xfer\":2,\"target\":{\"task\":1,\"stdout\":true},"
	         "\"size\":2,\"enc\":\"none\"}");
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_W2M, 0, &x, &why), 0);
	assert_int_equal(x->target.kind, WQ_TARGET_STDOUT);
	wq_xfer_begin_free(x);
	json_decref(j);
	/* member names */
	j = load(
	    "{\"m\":\"xfer_begin\",\"xfer\":3,\"target\":{\"dir\":2,\"member\":\"../../evil\"},"
	    "\"size\":2,\"enc\":\"none\",\"exec\":true}");
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_W2M, 0, &x, &why), HTC_EPARSE);
	expect_why(why, "member name \"../../evil\": \"..\" is not allowed");
	assert_true(x->exec);
	wq_xfer_begin_free(x);
	json_decref(j);
	j = load("{\"m\":\"xfer_begin\",\"xfer\":3,\"target\":{\"nothing\":1},\"size\":2,"
	         "\"enc\":\"none\"}");
	assert_int_equal(wq_msg_xfer_begin_parse(j, WQ_DIR_W2M, 0, &x, &why), HTC_EPROTO);
	expect_why(why, "message \"xfer_begin\": key \"target\": not a known transfer target");
	json_decref(j);

	/* frame 10, xfer_abort, xfer_error */
	struct wq_xfer_end *e = NULL;
	j = load("{\"m\":\"xfer_end\",\"xfer\":1,\"sha256\":"
	         "\"a4b0723993d3751f3d530e3c20da4c24ccdd32e65820fba897cc5f119e85ca55\"}");
	assert_int_equal(wq_msg_xfer_end_parse(j, &e, &why), 0);
	assert_int_equal(e->xfer, 1);
	wq_xfer_end_free(e);
	json_object_set_new(j, "sha256", json_string("A4"));
	assert_int_equal(wq_msg_xfer_end_parse(j, &e, &why), HTC_EPROTO);
	expect_why(why, "message \"xfer_end\": key \"sha256\": expected 64 lowercase hex digits");
	json_decref(j);
	j = load("{\"m\":\"xfer_abort\",\"xfer\":1,\"reason\":\"file changed while being sent\"}");
	assert_int_equal(wq_msg_xfer_abort_parse(j, &e, &why), 0);
	assert_string_equal(e->reason, "file changed while being sent");
	wq_xfer_end_free(e);
	json_decref(j);
	struct wq_xfer_error *xe = NULL;
	j = load("{\"m\":\"xfer_error\",\"id\":4,\"code\":\"disk_full\",\"text\":\"no room\"}");
	assert_int_equal(wq_msg_xfer_error_parse(j, &xe, &why), 0);
	assert_int_equal(xe->code, WQ_XERR_DISK_FULL);
	wq_xfer_error_free(xe);
	json_object_set_new(j, "code", json_string("meh"));
	assert_int_equal(wq_msg_xfer_error_parse(j, &xe, &why), HTC_EPROTO);
	free(why);
	json_decref(j);
}

/* ---- task_done ---------------------------------------------------------------------- */

static void test_task_done(void **state)
{
	(void)state;
	struct wq_task_done *d = NULL;
	char *why = NULL;
	json_t *j = load(done8);
	assert_int_equal(wq_msg_task_done_parse(j, &d, &why), 0);
	assert_int_equal(d->outcome, WQ_OUTCOME_EXITED);
	assert_int_equal(d->exit_status, 0);
	assert_int_equal(d->stdout_size, 2);
	assert_int_equal(d->stdout_xfer, 2);
	assert_int_equal(d->noutputs, 1);
	assert_int_equal(d->outputs[0].kind, WQ_DONE_XFER);
	assert_int_equal(d->outputs[0].xfer, 1);
	assert_int_equal(d->t_reported, 1795426939015000);
	assert_non_null(d->summary);
	wq_task_done_free(d);
	json_object_del(j, "exit_status");
	assert_int_equal(wq_msg_task_done_parse(j, &d, &why), HTC_EPROTO);
	expect_why(why, "message \"task_done\": missing key \"exit_status\"");
	json_decref(j);

	struct {
		const char *json;
		int rc;
		const char *text;
	} cases[] = {
	    {"{\"id\":2,\"try\":1,\"outcome\":\"signaled\",\"signal\":11}", 0, NULL},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"signaled\",\"signal\":0}", HTC_EPROTO,
	     "message \"task_done\": key \"signal\": expected an integer in 1..127"},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"exhausted\",\"signal\":9,\"exhausted\":[\"memory\"]"
	     "}",
	     0, NULL},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"exhausted\",\"signal\":9}", HTC_EPROTO,
	     "message \"task_done\": missing key \"exhausted\""},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"input_missing\",\"missing\":{\"input\":0,\"text\":"
	     "\"HTTP 404\"}}",
	     0, NULL},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"input_missing\",\"missing\":{\"input\":0}}",
	     HTC_EPROTO, "message \"task_done\": key \"missing\": missing key \"text\""},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"sandbox_error\",\"text\":\"ENOSPC\"}", 0, NULL},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"exploded\"}", HTC_EPROTO,
	     "message \"task_done\": key \"outcome\": expected one of \"exited\", \"signaled\", "
	     "\"exhausted\", \"input_missing\", \"sandbox_error\""},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"exited\",\"exit_status\":256}", HTC_EPROTO,
	     "message \"task_done\": key \"exit_status\": expected an integer in 0..255"},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"exited\",\"exit_status\":1,\"outputs\":[{\"index\":"
	     "0,"
	     "\"missing\":\"is a symbolic link: out.txt\"},{\"index\":1,\"skipped\":true},"
	     "{\"index\":2,\"dir\":4}]}",
	     0, NULL},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"exited\",\"exit_status\":1,\"outputs\":[{\"index\":"
	     "0,"
	     "\"xfer\":3,\"skipped\":true}]}",
	     HTC_EPROTO,
	     "message \"task_done\": key \"outputs[0]\": expected exactly one of \"xfer\", "
	     "\"dir\", "
	     "\"missing\", \"skipped\""},
	    {"{\"id\":2,\"try\":1,\"outcome\":\"exited\",\"exit_status\":1,\"stdout\":{\"size\":-1,"
	     "\"truncated\":false,\"xfer\":0}}",
	     HTC_EPROTO,
	     "message \"task_done\": key \"stdout.size\": expected an integer in "
	     "0..9007199254740991"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		j = load(cases[i].json);
		int rc = wq_msg_task_done_parse(j, &d, &why);
		if (rc != cases[i].rc)
			fail_msg("case %zu: rc %d (%s)", i, rc, why ? why : "");
		if (cases[i].text)
			expect_why(why, cases[i].text);
		wq_task_done_free(d);
		json_decref(j);
	}
	/* WQ_FILES_MAX outputs fine, one more not */
	j = load("{\"id\":2,\"try\":1,\"outcome\":\"exited\",\"exit_status\":0}");
	json_t *outs = json_array();
	for (int i = 0; i < WQ_FILES_MAX; i++)
		json_array_append_new(outs, json_pack("{s:i,s:b}", "index", i, "skipped", 1));
	json_object_set(j, "outputs", outs);
	assert_int_equal(wq_msg_task_done_parse(j, &d, &why), 0);
	assert_int_equal(d->noutputs, WQ_FILES_MAX);
	wq_task_done_free(d);
	json_array_append_new(outs, json_pack("{s:i,s:b}", "index", 1, "skipped", 1));
	assert_int_equal(wq_msg_task_done_parse(j, &d, &why), HTC_EPROTO);
	free(why);
	json_decref(outs);
	json_decref(j);
}

/* ---- worker description --------------------------------------------------------------- */

/* The identity J with KEY set to BAD (stolen) is refused; KEY is then removed. */
static void identity_refuses(json_t *j, const char *key, json_t *bad)
{
	struct wq_identity *id = NULL;
	char *why = NULL;
	json_object_set_new(j, key, bad);
	assert_int_equal(wq_msg_identity_parse(j, &id, &why), HTC_EPROTO);
	assert_null(id);
	free(why);
	json_object_del(j, key);
}

static void test_worker_messages(void **state)
{
	(void)state;
	char *why = NULL;
	struct wq_identity *id = NULL;
	json_t *j =
	    load("{\"m\":\"identity\",\"host\":\"node12\",\"os\":\"Linux\",\"os_release\":"
	         "\"6.1.0-18-amd64\",\"arch\":\"x86_64\",\"software\":\"htc 0.1.0\","
	         "\"pid\":4242,\"workdir\":\"/tmp/wq-4242\",\"labels\":[],\"end_time\":null,"
	         "\"docker\":false,\"cgroups\":\"v2\"}");
	assert_int_equal(wq_msg_identity_parse(j, &id, &why), 0);
	assert_int_equal(id->pid, 4242);
	assert_int_equal(id->max_tasks, 0);
	assert_int_equal(id->end_time, -1);
	assert_int_equal(id->cgroups, WQ_CGROUPS_V2);
	assert_int_equal(id->memory_grow_step, 0); /* absent: it does not grow memory */
	wq_identity_free(id);
	json_object_set_new(j, "memory_grow_step", json_integer(256));
	assert_int_equal(wq_msg_identity_parse(j, &id, &why), 0);
	assert_int_equal(id->memory_grow_step, 256);
	wq_identity_free(id);
	identity_refuses(j, "memory_grow_step", json_integer(0));
	json_object_set_new(j, "cpu_grow", json_true());
	assert_int_equal(wq_msg_identity_parse(j, &id, &why), 0);
	assert_true(id->cpu_grow);
	wq_identity_free(id);
	identity_refuses(j, "cpu_grow", json_integer(1));
	json_t *labels = json_object_get(j, "labels");
	char *l = filled(129);
	for (int i = 0; i < 64; i++)
		json_array_append_new(labels, json_stringn(l, 128));
	assert_int_equal(wq_msg_identity_parse(j, &id, &why), 0);
	assert_int_equal(id->nlabels, 64);
	wq_identity_free(id);
	json_array_set_new(labels, 0, json_string(l));
	assert_int_equal(wq_msg_identity_parse(j, &id, &why), HTC_EPROTO);
	expect_why(why,
	           "message \"identity\": key \"labels\": expected strings of at most 128 bytes");
	json_array_set_new(labels, 0, json_string("x"));
	json_array_append_new(labels, json_string("x"));
	assert_int_equal(wq_msg_identity_parse(j, &id, &why), HTC_EPROTO);
	expect_why(
	    why, "message \"identity\": key \"labels\": expected an array of at most 64 elements");
	free(l);
	json_decref(j);

	struct wq_capacity *c = NULL;
	j = load("{\"m\":\"capacity\",\"cores\":{\"total\":4,\"source\":\"measured\"},\"memory\":{"
	         "\"total\":7800,\"source\":\"measured\"},\"disk\":{\"total\":20000,\"source\":"
	         "\"declared\"},\"gpus\":{\"total\":0,\"source\":\"measured\"},\"disk_free\":19990,"
	         "\"cache\":0,\"disk_full\":false}");
	assert_int_equal(wq_msg_capacity_parse(j, &c, &why), 0);
	assert_true(c->disk.declared);
	assert_false(c->cores.declared);
	assert_true(c->memory.total == 7800);
	wq_capacity_free(c);
	json_object_set_new(json_object_get(j, "gpus"), "source", json_string("guessed"));
	assert_int_equal(wq_msg_capacity_parse(j, &c, &why), HTC_EPROTO);
	expect_why(why, "message \"capacity\": key \"gpus.source\": expected one of \"measured\", "
	                "\"declared\"");
	json_decref(j);

	struct worker_cache_list *cl = NULL;
	j = load("{\"m\":\"cache_have\",\"objects\":[],\"last\":true}");
	assert_int_equal(wq_msg_cache_have_parse(j, &cl, &why), 0);
	assert_true(cl->last);
	assert_int_equal(cl->n, 0);
	worker_cache_list_free(cl);
	json_t *objs = json_object_get(j, "objects");
	for (int i = 0; i < 1000; i++)
		json_array_append_new(objs, json_pack("[s,i]", OBJ, i));
	assert_int_equal(wq_msg_cache_have_parse(j, &cl, &why), 0);
	assert_int_equal(cl->n, 1000);
	assert_int_equal(cl->sizes[999], 999);
	worker_cache_list_free(cl);
	json_array_append_new(objs, json_pack("[s,i]", OBJ, 1));
	assert_int_equal(wq_msg_cache_have_parse(j, &cl, &why), HTC_EPROTO);
	expect_why(why,
	           "message \"cache_have\": key \"objects\": expected an array of at most 1000 "
	           "elements");
	json_array_clear(objs);
	json_array_append_new(objs, json_pack("[s,i]", "F-../x", 1));
	assert_int_equal(wq_msg_cache_have_parse(j, &cl, &why), HTC_EPROTO);
	expect_why(why, "message \"cache_have\": key \"objects[0]\": expected a cache object name "
	                "(FDU- and 64 hex digits)");
	json_array_set_new(objs, 0, json_pack("[s]", OBJ));
	assert_int_equal(wq_msg_cache_have_parse(j, &cl, &why), HTC_EPROTO);
	expect_why(why, "message \"cache_have\": key \"objects[0]\": expected [name, size]");
	json_decref(j);

	j = load("{\"m\":\"cache_drop\",\"objects\":[\"" OBJ "\"],\"reason\":\"disk\"}");
	assert_int_equal(wq_msg_cache_drop_parse(j, &cl, &why), 0);
	assert_int_equal(cl->n, 1);
	assert_string_equal(cl->names[0], OBJ);
	assert_string_equal(cl->reason, "disk");
	worker_cache_list_free(cl);
	objs = json_object_get(j, "objects");
	for (int i = 0; i < 999; i++)
		json_array_append_new(objs, json_string(OBJ));
	assert_int_equal(wq_msg_cache_drop_parse(j, &cl, &why), 0);
	worker_cache_list_free(cl);
	json_array_append_new(objs, json_string(OBJ));
	assert_int_equal(wq_msg_cache_drop_parse(j, &cl, &why), HTC_EPROTO);
	free(why);
	json_decref(j);
}

/* Protocol 5.12: `store` in identity, store_have, cache_take and cache_taken. */
static void test_shared_cache_messages(void **state)
{
	(void)state;
	char *why = NULL;
	struct wq_identity *id = NULL;
	json_t *j = load("{\"m\":\"identity\",\"host\":\"n\",\"os\":\"Linux\",\"os_release\":\"6\","
	                 "\"arch\":\"x86_64\",\"software\":\"htc\",\"pid\":1,\"workdir\":\"/w\","
	                 "\"labels\":[],\"end_time\":null,\"docker\":false,\"cgroups\":\"v2\","
	                 "\"store\":\"0123456789abcdef0123456789abcdef\"}");
	assert_int_equal(wq_msg_identity_parse(j, &id, &why), 0);
	assert_string_equal(id->store, "0123456789abcdef0123456789abcdef");
	wq_identity_free(id);
	json_object_set_new(j, "store", json_string("0123456789ABCDEF0123456789abcdef"));
	assert_int_equal(wq_msg_identity_parse(j, &id, &why), HTC_EPROTO);
	expect_why(why, "message \"identity\": key \"store\": expected 32 lowercase hex digits");
	json_object_del(j, "store");
	assert_int_equal(wq_msg_identity_parse(j, &id, &why), 0);
	assert_null(id->store);
	wq_identity_free(id);
	json_decref(j);

	struct worker_cache_list *cl = NULL;
	j = load("{\"m\":\"store_have\",\"objects\":[[\"" OBJ "\",5]],\"last\":true}");
	assert_int_equal(wq_msg_store_have_parse(j, false, &cl, &why), 0);
	assert_int_equal(cl->n, 1);
	assert_int_equal(cl->sizes[0], 5);
	worker_cache_list_free(cl);
	json_decref(j);
	j = load("{\"m\":\"store_have\",\"objects\":[[\"D-"
	         "a4b0723993d3751f3d530e3c20da4c24ccdd32e65820fba897cc5f119e85ca55\",5]],\"last\":"
	         "true}");
	assert_int_equal(wq_msg_store_have_parse(j, false, &cl, &why), HTC_EPROTO);
	expect_why(why, "message \"store_have\": key \"objects[0]\": expected a file object (F-)");
	/* with shared_dirs a directory object is announced too; a U- object never */
	assert_int_equal(wq_msg_store_have_parse(j, true, &cl, &why), 0);
	assert_int_equal(cl->names[0][0], 'D');
	worker_cache_list_free(cl);
	json_decref(j);
	j = load("{\"m\":\"store_have\",\"objects\":[[\"U-"
	         "a4b0723993d3751f3d530e3c20da4c24ccdd32e65820fba897cc5f119e85ca55\",5]],\"last\":"
	         "true}");
	assert_int_equal(wq_msg_store_have_parse(j, true, &cl, &why), HTC_EPROTO);
	expect_why(why, "message \"store_have\": key \"objects[0]\": expected a file or directory "
	                "object (F-, D-)");
	json_decref(j);

	struct wq_cache_take *t = NULL;
	j = load("{\"m\":\"cache_take\",\"object\":\"" OBJ "\",\"size\":300000000}");
	assert_int_equal(wq_msg_cache_take_parse(j, false, false, &t, &why), 0);
	assert_string_equal(t->object, OBJ);
	assert_int_equal(t->size, 300000000);
	wq_cache_take_free(t);
	assert_int_equal(wq_msg_cache_take_parse(j, true, false, &t, &why), HTC_EPROTO);
	expect_why(why, "message \"cache_taken\": missing key \"ok\"");
	json_object_set_new(j, "ok", json_false());
	json_object_set_new(j, "text", json_string("not in the shared store: missing"));
	assert_int_equal(wq_msg_cache_take_parse(j, true, false, &t, &why), 0);
	assert_false(t->ok);
	assert_string_equal(t->text, "not in the shared store: missing");
	wq_cache_take_free(t);
	json_object_set_new(j, "object", json_string("U-x"));
	assert_int_equal(wq_msg_cache_take_parse(j, false, false, &t, &why), HTC_EPROTO);
	expect_why(why, "message \"cache_take\": key \"object\": expected a file object name "
	                "(F- and 64 hex digits)");
	/* a directory object: only with shared_dirs */
	json_object_set_new(j, "object",
	                    json_string("D-a4b0723993d3751f3d530e3c20da4c24ccdd32e65820fba897cc5f1"
	                                "19e85ca55"));
	assert_int_equal(wq_msg_cache_take_parse(j, false, false, &t, &why), HTC_EPROTO);
	free(why);
	assert_int_equal(wq_msg_cache_take_parse(j, false, true, &t, &why), 0);
	assert_int_equal(t->object[0], 'D');
	wq_cache_take_free(t);
	json_object_set_new(j, "object", json_string("U-x"));
	assert_int_equal(wq_msg_cache_take_parse(j, false, true, &t, &why), HTC_EPROTO);
	expect_why(why, "message \"cache_take\": key \"object\": expected a file or directory "
	                "object name (F- or D- and 64 hex digits)");
	json_object_set_new(j, "object", json_string(OBJ));
	json_object_set_new(j, "size", json_integer(-1));
	assert_int_equal(wq_msg_cache_take_parse(j, false, false, &t, &why), HTC_EPROTO);
	free(why);
	json_decref(j);
	/* the messages and their directions */
	assert_int_equal(wq_msg_allowed("cache_take", WQ_DIR_M2W, WQ_STATE_ACTIVE, &why), 0);
	assert_int_equal(wq_msg_allowed("cache_taken", WQ_DIR_W2M, WQ_STATE_ACTIVE, &why), 0);
	assert_int_equal(wq_msg_allowed("store_have", WQ_DIR_W2M, WQ_STATE_DRAINING, &why), 0);
	assert_int_equal(wq_msg_allowed("cache_take", WQ_DIR_W2M, WQ_STATE_ACTIVE, &why),
	                 HTC_EPROTO);
	free(why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_xfer),
	    cmocka_unit_test(test_task_done),
	    cmocka_unit_test(test_worker_messages),
	    cmocka_unit_test(test_shared_cache_messages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
