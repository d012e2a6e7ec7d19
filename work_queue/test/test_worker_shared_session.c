/* test_worker_shared_session.c: unit tests of a worker with --shared-cache in a session with the
 * scripted fake master (wq_fake_master.h) over a socketpair: the store's identity in `identity`,
 * the store's objects listed in `store_have` after `cache_have`, and `cache_take` answered for an
 * object in the store (linked: one file), a missing one, one of another size and one already
 * held; without the capability `cache_take` is a violation. With `shared_dirs` a directory
 * object of the store is listed and taken too (its files linked), and never without. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "full_io.h"
#include "path.h"
#include "sha256.h"
#include "ts_net.h"
#include "ts_tmpdir.h"
#include "worker_conn.h"
#include "worker_opts.h"
#include "wq_fake_master.h"
#include "wq_listing.h"
#include "wq_msg.h"
#include "xalloc.h"
#include "banned.h"

struct fx {
	uv_loop_t loop;
	char *dir;
	char *store;
	char obj[80]; /* an object put into the store before the worker starts */
	char *dobj;   /* a directory object put there too, or NULL */
	struct worker_opts o;
	struct worker *w;
	struct fake_master *m;
};

static const char content[] = "an image archive, in small";

static char *store_dir(struct fx *f, const char *two);

/* A worker with --shared-cache DIR/store, whose store holds one file object (and a directory
 * object whose "a/two" is DIR_TWO, unless NULL), talking to a fake master that offers CAPS. */
static struct fx *start(unsigned caps, const char *dir_two)
{
	struct fx *f = xcalloc(1, sizeof *f);
	assert_int_equal(uv_loop_init(&f->loop), 0);
	f->dir = ts_tmpdir_create("test_worker_shared_session");
	f->store = path_join(f->dir, "store");
	char *objects = path_join(f->store, "objects");
	assert_int_equal(path_mkdir_p(objects, 0755), 0);
	char h[SHA256_HEX_SIZE];
	assert_int_equal(sha256_buffer(content, strlen(content), h), 0);
	snprintf(f->obj, sizeof f->obj, "F-%s", h);
	char *p = path_join(objects, f->obj);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0555);
	assert_true(fd >= 0);
	assert_int_equal(full_write(fd, content, strlen(content)), 0);
	close(fd);
	free(p);
	free(objects);
	if (dir_two)
		f->dobj = store_dir(f, dir_two);
	f->o.host = xstrdup("127.0.0.1");
	f->o.port = 1;
	f->o.cores = 1;
	f->o.memory_mb = 1000;
	f->o.disk_mb = 1000;
	f->o.gpus = 0;
	f->o.idle_timeout = WORKER_DEFAULT_IDLE_TIMEOUT;
	f->o.connect_timeout = WORKER_DEFAULT_CONNECT_TIMEOUT;
	f->o.workdir = path_join(f->dir, "worker");
	f->o.shared_cache = xstrdup(f->store);
	char *err = NULL;
	f->w = worker_create(&f->loop, &f->o, &err);
	if (!f->w)
		fail_msg("worker_create: %s", err);
	uv_tcp_t *wt, *mt;
	ts_socket_pair(&f->loop, &wt, &mt);
	char *mdir = path_join(f->dir, "master");
	f->m = fake_master_start(&f->loop, mt, mdir, caps, 0, 0);
	free(mdir);
	worker_start_connected(f->w, wt, "fake-master");
	fake_master_wait_handshake(f->m);
	assert_int_equal(f->m->outcome, WQ_HS_OK);
	fake_master_wait_msg(f->m, "cache_have", 1);
	return f;
}

static void stop(struct fx *f)
{
	fake_master_delete(f->m);
	worker_delete(f->w);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	free(f->o.host);
	free(f->o.workdir);
	free(f->o.shared_cache);
	ts_tmpdir_remove(f->dir);
	free(f->store);
	free(f->dobj);
	free(f);
}

static const char *str(json_t *msg, const char *key)
{
	const char *v = json_string_value(json_object_get(msg, key));
	return v ? v : "";
}

/* Sends cache_take NAME SIZE and returns the N-th cache_taken. */
static json_t *take(struct fx *f, const char *name, int64_t size, int n)
{
	fake_master_send(f->m, json_pack("{s:s,s:s,s:I}", "m", "cache_take", "object", name, "size",
	                                 (json_int_t)size));
	json_t *t = fake_master_wait_msg(f->m, "cache_taken", n);
	assert_string_equal(str(t, "object"), name);
	return t;
}

static void test_identity_and_store_have(void **state)
{
	(void)state;
	struct fx *f = start(WQ_CAP_SHARED_CACHE, NULL);
	assert_true(f->m->caps & WQ_CAP_SHARED_CACHE);
	json_t *ident = fake_master_msg(f->m, "identity", 1);
	char *idp = path_join(f->store, "store-id");
	size_t len = 0;
	char *id = ts_read_file(idp, &len);
	assert_int_equal(len, 33);
	id[32] = 0;
	assert_string_equal(str(ident, "store"), id);
	free(id);
	free(idp);
	/* after cache_have, what the store holds */
	json_t *sh = fake_master_wait_msg(f->m, "store_have", 1);
	assert_true(fake_master_index(f->m, sh) >
	            fake_master_index(f->m, fake_master_msg(f->m, "cache_have", 1)));
	json_t *objs = json_object_get(sh, "objects");
	assert_int_equal(json_array_size(objs), 1);
	assert_string_equal(json_string_value(json_array_get(json_array_get(objs, 0), 0)), f->obj);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(objs, 0), 1)),
	                 strlen(content));
	stop(f);
}

static void test_cache_take(void **state)
{
	(void)state;
	struct fx *f = start(WQ_CAP_SHARED_CACHE, NULL);
	/* in the store: linked into the cache, one file */
	json_t *t = take(f, f->obj, (int64_t)strlen(content), 1);
	assert_true(json_is_true(json_object_get(t, "ok")));
	assert_int_equal(json_integer_value(json_object_get(t, "size")), strlen(content));
	char *sp = xasprintf("%s/objects/%s", f->store, f->obj);
	struct stat st;
	assert_int_equal(stat(sp, &st), 0);
	assert_int_equal(st.st_nlink, 2); /* the store's and the worker's cache */
	free(sp);
	/* held already: at once */
	t = take(f, f->obj, (int64_t)strlen(content), 2);
	assert_true(json_is_true(json_object_get(t, "ok")));
	/* not in the store */
	char missing[80];
	snprintf(missing, sizeof missing, "F-%064d", 7);
	t = take(f, missing, 10, 3);
	assert_true(json_is_false(json_object_get(t, "ok")));
	assert_string_equal(str(t, "text"), "not in the shared store: missing");
	/* in the store with another size than the master's */
	char *other = xasprintf("%s/objects/%s", f->store, missing);
	ts_write_file(other, "12345");
	free(other);
	t = take(f, missing, 10, 4);
	assert_true(json_is_false(json_object_get(t, "ok")));
	assert_string_equal(str(t, "text"), "not in the shared store: another size");
	stop(f);
}

static void test_take_without_capability(void **state)
{
	(void)state;
	struct fx *f = start(0, NULL);
	assert_false(f->m->caps & WQ_CAP_SHARED_CACHE);
	assert_int_equal(fake_master_count(f->m, "store_have"), 0);
	assert_null(json_object_get(fake_master_msg(f->m, "identity", 1), "store"));
	fake_master_send(
	    f->m, json_pack("{s:s,s:s,s:i}", "m", "cache_take", "object", f->obj, "size", 1));
	json_t *e = fake_master_wait_msg(f->m, "error", 1);
	assert_string_equal(str(e, "text"),
	                    "message \"cache_take\" needs capability \"shared_cache\"");
	fake_master_wait_closed(f->m);
	stop(f);
}

/* Puts a directory object into F's store: "one" (4 bytes) and "a/two" (the 3 bytes TWO);
 * returns its name (caller frees). */
static char *store_dir(struct fx *f, const char *two)
{
	char *tree = xasprintf("%s/objects/tree", f->store);
	char *sub = path_join(tree, "a");
	assert_int_equal(path_mkdir_p(sub, 0755), 0);
	char *p1 = path_join(tree, "one"), *p2 = path_join(sub, "two");
	ts_write_file(p1, "1234");
	ts_write_file(p2, two);
	int fd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct wq_listing *l = NULL;
	char *why = NULL;
	assert_int_equal(wq_listing_walk(fd, "tree", 0, &l, &why), 0);
	close(fd);
	char hex[SHA256_HEX_SIZE];
	assert_int_equal(wq_listing_hash(l, hex), 0);
	wq_listing_delete(l);
	char *name = xasprintf("D-%s", hex);
	char *final = xasprintf("%s/objects/%s", f->store, name);
	assert_int_equal(rename(tree, final), 0);
	free(final);
	free(p1);
	free(p2);
	free(sub);
	free(tree);
	return name;
}

/* Whether the store_have messages F's master received list NAME. */
static bool announced(struct fx *f, const char *name)
{
	for (int k = 1; k <= fake_master_count(f->m, "store_have"); k++) {
		json_t *objs = json_object_get(fake_master_msg(f->m, "store_have", k), "objects");
		for (size_t i = 0; i < json_array_size(objs); i++)
			if (!strcmp(json_string_value(json_array_get(json_array_get(objs, i), 0)),
			            name))
				return true;
	}
	return false;
}

static void test_dir_take(void **state)
{
	(void)state;
	struct fx *f = start(WQ_CAP_SHARED_CACHE | WQ_CAP_SHARED_DIRS, "567");
	assert_true(f->m->caps & WQ_CAP_SHARED_DIRS);
	fake_master_wait_msg(f->m, "store_have", 1);
	assert_true(announced(f, f->dobj));
	json_t *t = take(f, f->dobj, 7, 1);
	assert_true(json_is_true(json_object_get(t, "ok")));
	assert_int_equal(json_integer_value(json_object_get(t, "size")), 7);
	char *two = xasprintf("%s/objects/%s/a/two", f->store, f->dobj);
	struct stat st;
	assert_int_equal(stat(two, &st), 0);
	assert_int_equal(st.st_nlink, 2); /* the store's and the worker's cache */
	free(two);
	/* another directory, asked for with the wrong size: refused */
	char *other = store_dir(f, "89a");
	t = take(f, other, 8, 2);
	assert_true(json_is_false(json_object_get(t, "ok")));
	assert_string_equal(str(t, "text"), "not in the shared store: another size");
	free(other);
	stop(f);
}

static void test_dirs_need_their_capability(void **state)
{
	(void)state;
	struct fx *f = start(WQ_CAP_SHARED_CACHE, "567");
	assert_false(f->m->caps & WQ_CAP_SHARED_DIRS);
	fake_master_wait_msg(f->m, "store_have", 1);
	assert_false(announced(f, f->dobj));
	assert_true(announced(f, f->obj));
	fake_master_send(
	    f->m, json_pack("{s:s,s:s,s:i}", "m", "cache_take", "object", f->dobj, "size", 7));
	json_t *e = fake_master_wait_msg(f->m, "error", 1);
	assert_string_equal(str(e, "text"),
	                    "message \"cache_take\": key \"object\": expected a file object name "
	                    "(F- and 64 hex digits)");
	fake_master_wait_closed(f->m);
	stop(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_identity_and_store_have),    cmocka_unit_test(test_cache_take),
	    cmocka_unit_test(test_take_without_capability),    cmocka_unit_test(test_dir_take),
	    cmocka_unit_test(test_dirs_need_their_capability),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
