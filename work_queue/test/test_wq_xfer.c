/* test_wq_xfer.c: unit tests of the transfer engine (wq_xfer.h) with two wq_conns over real
 * loopback TCP in one libuv loop: files of edge sizes, 64 MiB under bounded memory, zlib, a
 * buffer, a directory tree, a file that shrinks, a tampered transfer, every receiver violation
 * with its text, interleaved transfers, and a full disk on a small tmpfs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>
#include <zlib.h>

#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "sha256.h"
#include "wq_conn.h"
#include "wq_frame.h"
#include "wq_listing.h"
#include "worker_sandbox.h"
#include "wq_xfer.h"
#include "ts_loop.h"
#include "ts_net.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

/* How long a run may take before the test calls it hung: runs end as soon as their transfers
 * do, so this only needs to be far above a slow run (under ASan, on a loaded machine). */
#define HANG_MS 60000

/* ---- a loop with one connected pair ---------------------------------------------------- */

struct sent_rec {
	uint32_t id;     /* on the wire */
	uint32_t handle; /* what the send call gave */
	enum wq_xfer_outcome outcome;
	enum wq_xfer_error_code code;
	char text[256];
	uint64_t bytes, wire;
	bool zlib;
	char sha[SHA256_HEX_SIZE];
	uint64_t entries;
};

struct recv_rec {
	uint32_t id;
	bool is_dir;
	int status;
	char text[256];
	char sha[SHA256_HEX_SIZE];
};

struct t {
	uv_loop_t loop;
	uv_timer_t ticker;       /* samples the sender's write queue into max_wq */
	struct wq_conn *sc, *rc; /* sender side, receiver side */
	struct wq_xfer_out *out;
	struct wq_xfer_in *in;
	char *dir; /* receiver's directory */
	char *src; /* sender's files */
	int nsent, nrecv, npeer;
	struct sent_rec sent[16];
	struct recv_rec recv[16];
	enum wq_xfer_error_code peer_code;
	int r_closed, s_closed;
	char r_text[512];
	int s_errors; /* `error` messages seen by the sender */
	int r_other;  /* non-transfer messages seen by the receiver */
	size_t max_wq, max_pending;
};

static void tick(uv_timer_t *h)
{
	struct t *t = h->data;
	if (t->sc && wq_conn_write_queue_size(t->sc) > t->max_wq)
		t->max_wq = wq_conn_write_queue_size(t->sc);
}

/* sender side callbacks */
static void s_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                      size_t len, void *user)
{
	(void)c, (void)raw, (void)len;
	struct t *t = user;
	if (!strcmp(name, "error"))
		t->s_errors++;
	if (t->out)
		wq_xfer_out_message(t->out, msg, name);
	else if (!strcmp(name, "xfer_error")) {
		t->npeer++;
		const char *code = json_string_value(json_object_get(msg, "code"));
		t->peer_code = !strcmp(code, "corrupt")     ? WQ_XERR_CORRUPT
		               : !strcmp(code, "disk_full") ? WQ_XERR_DISK_FULL
		                                            : WQ_XERR_IO;
	}
}

static void s_writable(struct wq_conn *c, void *user)
{
	(void)c;
	struct t *t = user;
	wq_xfer_out_writable(t->out);
}

static void s_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	(void)c, (void)why, (void)text;
	((struct t *)user)->s_closed++;
}

static void r_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                      size_t len, void *user)
{
	(void)c, (void)raw, (void)len;
	struct t *t = user;
	if (!wq_xfer_in_message(t->in, msg, name))
		t->r_other++;
}

static void r_data(struct wq_conn *c, uint32_t xfer, const uint8_t *bytes, size_t len, void *user)
{
	(void)c;
	struct t *t = user;
	wq_xfer_in_data(t->in, xfer, bytes, len);
	if (wq_xfer_in_pending_bytes(t->in) > t->max_pending)
		t->max_pending = wq_xfer_in_pending_bytes(t->in);
	if (t->sc && wq_conn_write_queue_size(t->sc) > t->max_wq)
		t->max_wq = wq_conn_write_queue_size(t->sc);
}

static void r_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	(void)c, (void)why;
	struct t *t = user;
	t->r_closed++;
	snprintf(t->r_text, sizeof t->r_text, "%s", text);
}

static const struct wq_conn_callbacks s_cb = {s_message, NULL, s_writable, s_closed};
static const struct wq_conn_callbacks r_cb = {r_message, r_data, NULL, r_closed};

static void on_sent(struct wq_xfer_out *o, const struct wq_xfer_sent *r, void *user)
{
	(void)o;
	struct t *t = user;
	assert_true(t->nsent < 16);
	struct sent_rec *s = &t->sent[t->nsent++];
	s->id = r->id;
	s->handle = r->handle;
	s->outcome = r->outcome;
	s->code = r->code;
	snprintf(s->text, sizeof s->text, "%s", r->text);
	s->bytes = r->bytes;
	s->wire = r->wire_bytes;
	s->zlib = r->zlib;
	snprintf(s->sha, sizeof s->sha, "%s", r->sha256 ? r->sha256 : "");
	s->entries = r->entries;
}

static void on_peer_error(struct wq_xfer_out *o, uint32_t id, enum wq_xfer_error_code code,
                          const char *text, void *user)
{
	(void)o, (void)id, (void)text;
	struct t *t = user;
	t->npeer++;
	t->peer_code = code;
}

static int recv_begin(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
                      struct wq_xfer_dest *dest, struct wq_xfer_refusal *r, void *user)
{
	(void)i, (void)r;
	struct t *t = user;
	static char tmp[128], fin[128];
	snprintf(tmp, sizeof tmp, "%s/.tmp.%u", t->dir, in->id);
	snprintf(fin, sizeof fin, "%s/%s.%lld", t->dir, in->is_dir ? "dir" : "out",
	         (long long)in->target->index);
	dest->tmp_path = tmp;
	dest->final_path = fin;
	dest->fsync = true;
	return 0;
}

static void recv_end(struct wq_xfer_in *i, const struct wq_xfer_incoming *in, int status,
                     const char *text, void *user)
{
	(void)i;
	struct t *t = user;
	assert_true(t->nrecv < 16);
	struct recv_rec *r = &t->recv[t->nrecv++];
	r->id = in->id;
	r->is_dir = in->is_dir;
	r->status = status;
	snprintf(r->text, sizeof r->text, "%s", text);
	snprintf(r->sha, sizeof r->sha, "%s", in->sha256 ? in->sha256 : "");
}

static const struct wq_xfer_out_callbacks out_cb = {.sent = on_sent, .peer_error = on_peer_error};
static const struct wq_xfer_in_callbacks in_cb = {recv_begin, recv_end};

/* Sets up the loop and one pair; RAW: no sender engine (the test writes frames itself). */
static void t_init(struct t *t, bool raw, bool zlib)
{
	memset(t, 0, sizeof *t);
	assert_int_equal(uv_loop_init(&t->loop), 0);
	uv_timer_init(&t->loop, &t->ticker);
	t->ticker.data = t;
	uv_timer_start(&t->ticker, tick, 2, 2);
	uv_tcp_t *c, *accepted;
	ts_tcp_pair(&t->loop, &c, &accepted);
	t->sc = wq_conn_create(c, "master test", &s_cb, t);
	t->rc = wq_conn_create(accepted, "wq: test", &r_cb, t);
	assert_non_null(t->sc);
	assert_non_null(t->rc);
	wq_conn_set_msg_limit(t->sc, WQ_MAX_MSG);
	wq_conn_set_msg_limit(t->rc, WQ_MAX_MSG);
	t->dir = ts_tmpdir_create("wqx-r");
	t->src = ts_tmpdir_create("wqx-s");
	if (!raw)
		t->out = wq_xfer_out_create(&t->loop, t->sc, zlib, &out_cb, t);
	/* the receiver is a worker: it accepts master-to-worker transfers */
	t->in = wq_xfer_in_create(&t->loop, t->rc, false, zlib ? WQ_CAP_ZLIB : 0, &in_cb, t);
}

static void t_done(struct t *t)
{
	wq_xfer_out_delete(t->out);
	wq_xfer_in_delete(t->in);
	wq_conn_delete(t->sc);
	wq_conn_delete(t->rc);
	uv_close((uv_handle_t *)&t->ticker, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&t->loop), 0);
	ts_tmpdir_remove(t->dir);
	ts_tmpdir_remove(t->src);
}

static char *t_path(const char *dir, const char *name)
{
	return path_join(dir, name);
}

/* Writes N bytes of a pattern (text when TEXT, else pseudo-random) to DIR/NAME. */
static char *make_file(const char *dir, const char *name, size_t n, bool text, mode_t mode)
{
	char *p = t_path(dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	fchmod(fd, mode);
	uint8_t *buf = xmalloc(1 << 20);
	uint64_t x = 88172645463325252ULL ^ n;
	size_t done = 0;
	while (done < n) {
		size_t k = n - done < (1u << 20) ? n - done : (1u << 20);
		for (size_t j = 0; j < k; j++) {
			if (text) {
				buf[j] = (uint8_t)("the quick brown fox jumps over the lazy dog\n"
				                       [(done + j) % 44]);
			} else {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				buf[j] = (uint8_t)x;
			}
		}
		assert_int_equal(write(fd, buf, k), (ssize_t)k);
		done += k;
	}
	free(buf);
	close(fd);
	return p;
}

static int all_done(struct t *t, int nsent, int nrecv)
{
	return t->nsent >= nsent && t->nrecv >= nrecv;
}

static int want_sent, want_recv;
static bool done_counts(void *arg)
{
	struct t *t = arg;
	return all_done(t, want_sent, want_recv) || t->r_closed || t->s_closed;
}

static bool r_is_closed(void *arg)
{
	struct t *t = arg;
	return t->r_closed > 0;
}

static bool peer_refused(void *arg)
{
	return ((struct t *)arg)->npeer > 0;
}

static bool sender_erred(void *arg)
{
	return ((struct t *)arg)->s_errors > 0;
}

static struct sent_rec *sent_of(struct t *t, uint32_t handle);

/* What arrived of the send with HANDLE (its wire id is in its sent record), or of wire id HANDLE
 * when nothing was sent through the engine (the raw tests write frames themselves). */
static struct recv_rec *recv_of(struct t *t, uint32_t handle)
{
	struct sent_rec *s = sent_of(t, handle);
	uint32_t id = s ? s->id : handle;
	for (int i = 0; i < t->nrecv; i++)
		if (t->recv[i].id == id)
			return &t->recv[i];
	return NULL;
}

static struct sent_rec *sent_of(struct t *t, uint32_t handle)
{
	for (int i = 0; i < t->nsent; i++)
		if (t->sent[i].handle == handle)
			return &t->sent[i];
	return NULL;
}

/* Checks that transfer ID of source SRC arrived as out.INDEX with the same content. */
static void check_same(struct t *t, uint32_t id, const char *src, int index)
{
	char want[SHA256_HEX_SIZE], got[SHA256_HEX_SIZE];
	assert_int_equal(sha256_file(src, want), 0);
	char name[32];
	snprintf(name, sizeof name, "out.%d", index);
	char *dst = t_path(t->dir, name);
	assert_int_equal(sha256_file(dst, got), 0);
	assert_string_equal(want, got);
	struct sent_rec *s = sent_of(t, id);
	struct recv_rec *r = recv_of(t, id);
	assert_non_null(s);
	assert_non_null(r);
	assert_int_equal(s->outcome, WQ_XFER_SENT);
	assert_int_equal(r->status, 0);
	assert_string_equal(s->sha, want);
	assert_string_equal(r->sha, want);
	free(dst);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_sizes(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, false, true);
	size_t sizes[] = {0, 1, 262144, 262145, 3 * 262144 + 17};
	char *paths[5];
	uint32_t ids[5];
	for (int k = 0; k < 5; k++) {
		char name[32];
		snprintf(name, sizeof name, "f%d", k);
		paths[k] = make_file(t.src, name, sizes[k], false, 0644);
		json_t *target = wq_xfer_target_input(1, k);
		assert_int_equal(
		    wq_xfer_send_file(t.out, paths[k], -1, -1, target, WQ_XFER_ZLIB, NULL, &ids[k]),
		    0);
		json_decref(target);
	}
	want_sent = want_recv = 5;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	for (int k = 0; k < 5; k++) {
		check_same(&t, ids[k], paths[k], k);
		assert_int_equal(sent_of(&t, ids[k])->bytes, sizes[k]);
		assert_false(sent_of(&t, ids[k])->zlib); /* random data does not shrink */
		free(paths[k]);
	}
	assert_int_equal(t.r_closed, 0);
	assert_int_equal(wq_xfer_out_pending(t.out), 0);
	assert_int_equal(wq_xfer_in_open(t.in), 0);
	t_done(&t);
}

/* The receiver reads again once the sender's write queue has filled up to its high mark. */
static void resume_when_full(uv_timer_t *h)
{
	struct t *t = h->data;
	size_t q = wq_conn_write_queue_size(t->sc);
	if (q > t->max_wq)
		t->max_wq = q;
	if (q >= WQ_CONN_QUEUE_HIGH) {
		uv_timer_stop(h);
		wq_conn_resume_reading(t->rc);
	}
}

static void test_big(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, false, false);
	/* the receiver does not read until the sender's queue has filled up to its high mark
	 * (a sender that went past it, or never stopped there, fails the checks below; one that
	 * never got there makes the run hang until HANG_MS) */
	uv_timer_t pause;
	uv_timer_init(&t.loop, &pause);
	pause.data = &t;
	wq_conn_pause_reading(t.rc);
	uv_timer_start(&pause, resume_when_full, 5, 5);
	size_t n = 64u << 20;
	char *p = make_file(t.src, "big", n, false, 0644);
	json_t *target = wq_xfer_target_input(1, 0);
	uint32_t id;
	assert_int_equal(wq_xfer_send_file(t.out, p, -1, -1, target, 0, NULL, &id), 0);
	json_decref(target);
	want_sent = want_recv = 1;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	check_same(&t, id, p, 0);
	assert_int_equal(t.sent[0].wire, n);
	/* bounded memory: the write queue stays near its high mark, and received data waiting
	 * for the disk stays under 8 MiB plus one frame */
	print_message("64 MiB: write queue peak %zu, receiver pending peak %zu\n", t.max_wq,
	              wq_xfer_in_pending_peak(t.in));
	assert_true(t.max_wq >= WQ_CONN_QUEUE_HIGH); /* the pause did fill the queue */
	assert_true(t.max_wq <= WQ_CONN_QUEUE_HIGH + 5 * WQ_MAX_DATA);
	assert_true(t.max_wq < WQ_CONN_QUEUE_CAP);
	assert_true(wq_xfer_in_pending_peak(t.in) <= WQ_XFER_RECV_HIGH + WQ_MAX_DATA);
	assert_true(wq_xfer_in_pending_peak(t.in) > 0);
	uv_close((uv_handle_t *)&pause, NULL);
	free(p);
	t_done(&t);
}

static void test_zlib(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, false, true);
	char *text = make_file(t.src, "text.txt", (1u << 20) + 5, true, 0644);
	char *gz = make_file(t.src, "text.gz", 100000, true, 0644);
	char *small = make_file(t.src, "small.txt", 4000, true, 0644);
	uint32_t a, b, c;
	json_t *t0 = wq_xfer_target_input(1, 0), *t1 = wq_xfer_target_input(1, 1),
	       *t2 = wq_xfer_target_input(1, 2);
	assert_int_equal(wq_xfer_send_file(t.out, text, -1, -1, t0, WQ_XFER_ZLIB, NULL, &a), 0);
	assert_int_equal(wq_xfer_send_file(t.out, gz, -1, -1, t1, WQ_XFER_ZLIB, NULL, &b), 0);
	assert_int_equal(wq_xfer_send_file(t.out, small, -1, -1, t2, WQ_XFER_ZLIB, NULL, &c), 0);
	json_decref(t0), json_decref(t1), json_decref(t2);
	want_sent = want_recv = 3;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	check_same(&t, a, text, 0);
	check_same(&t, b, gz, 1);
	check_same(&t, c, small, 2);
	assert_true(sent_of(&t, a)->zlib);
	assert_true(sent_of(&t, a)->wire < sent_of(&t, a)->bytes / 4);
	assert_false(sent_of(&t, b)->zlib); /* .gz is sent plain */
	assert_false(sent_of(&t, c)->zlib); /* under 4 KiB */
	assert_int_equal(sent_of(&t, b)->wire, 100000);
	free(text), free(gz), free(small);
	t_done(&t);
}

static void test_buffer_and_shrink(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, false, true);
	const char *msg = "hello, buffer\n";
	uint32_t a, b;
	json_t *t0 = wq_xfer_target_input(2, 0), *t1 = wq_xfer_target_input(2, 1);
	assert_int_equal(wq_xfer_send_buffer(t.out, msg, strlen(msg), t0, 0, NULL, &a), 0);
	char *p = make_file(t.src, "short", 300000, false, 0644);
	/* announced larger than it is: the file "shrank" between stat and read */
	assert_int_equal(wq_xfer_send_file(t.out, p, -1, 600000, t1, 0, NULL, &b), 0);
	json_decref(t0), json_decref(t1);
	assert_true(b > a);
	want_sent = want_recv = 2;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	char *dst = t_path(t.dir, "out.0");
	char buf[64] = {0};
	int fd = open(dst, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof buf), (ssize_t)strlen(msg));
	close(fd);
	assert_string_equal(buf, msg);
	assert_int_equal(recv_of(&t, a)->status, 0);
	struct sent_rec *s = sent_of(&t, b);
	assert_int_equal(s->outcome, WQ_XFER_ABORTED);
	assert_string_equal(s->text, WQ_XFER_ABORT_CHANGED);
	struct recv_rec *r = recv_of(&t, b);
	assert_int_equal(r->status, -ECANCELED);
	assert_string_equal(r->text, WQ_XFER_ABORT_CHANGED);
	free(dst);
	dst = t_path(t.dir, "out.1");
	assert_int_equal(access(dst, F_OK), -1);
	free(dst);
	dst = xasprintf("%s/.tmp.%u", t.dir, b);
	assert_int_equal(access(dst, F_OK), -1); /* the partial file is gone */
	free(dst);
	assert_int_equal(t.r_closed, 0);
	free(p);
	t_done(&t);
}

static void test_directory(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, false, true);
	char *root = t_path(t.src, "tree");
	assert_int_equal(mkdir(root, 0755), 0);
	char *sub = t_path(root, "sub");
	char *empty = t_path(root, "sub/empty");
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(mkdir(empty, 0755), 0);
	free(make_file(root, "run.sh", 30, true, 0755));
	free(make_file(root, "a.txt", 10000, true, 0644));
	free(make_file(sub, "b.bin", 300000, false, 0644));
	free(make_file(sub, "zero", 0, false, 0644));
	json_t *target = wq_xfer_target_input(3, 0);
	uint32_t id;
	assert_int_equal(wq_xfer_send_dir(t.out, root, target, WQ_XFER_ZLIB, NULL, &id), 0);
	json_decref(target);
	want_sent = want_recv = 1;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	struct sent_rec *s = sent_of(&t, id);
	struct recv_rec *r = recv_of(&t, id);
	assert_non_null(s);
	assert_non_null(r);
	assert_int_equal(s->outcome, WQ_XFER_SENT);
	assert_int_equal(r->status, 0);
	assert_true(r->is_dir);
	assert_int_equal(s->entries, 6);
	/* the listing hash equals wq_listing's walk of the source and of what arrived */
	char hex_src[SHA256_HEX_SIZE], hex_dst[SHA256_HEX_SIZE];
	struct wq_listing *l = NULL;
	char *why = NULL;
	int fd = open(root, O_RDONLY | O_DIRECTORY);
	assert_int_equal(wq_listing_walk(fd, NULL, 0, &l, &why), 0);
	close(fd);
	assert_int_equal(wq_listing_hash(l, hex_src), 0);
	wq_listing_delete(l);
	char *dst = t_path(t.dir, "dir.0");
	fd = open(dst, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(wq_listing_walk(fd, NULL, 0, &l, &why), 0);
	close(fd);
	assert_int_equal(wq_listing_hash(l, hex_dst), 0);
	wq_listing_delete(l);
	assert_string_equal(hex_src, s->sha);
	assert_string_equal(hex_src, r->sha);
	assert_string_equal(hex_src, hex_dst);
	char *exe = t_path(dst, "run.sh");
	struct stat st;
	assert_int_equal(stat(exe, &st), 0);
	assert_true(st.st_mode & S_IXUSR);
	free(exe);
	exe = t_path(dst, "sub/empty");
	assert_int_equal(stat(exe, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	free(exe);
	/* a link inside is refused without WQ_XFER_FOLLOW_LINKS */
	char *link = t_path(root, "link");
	assert_int_equal(symlink("a.txt", link), 0);
	target = wq_xfer_target_input(3, 1);
	assert_int_equal(wq_xfer_send_dir(t.out, root, target, 0, NULL, &id), 0);
	want_sent = 2;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	assert_int_equal(sent_of(&t, id)->outcome, WQ_XFER_FAILED);
	assert_non_null(strstr(sent_of(&t, id)->text, "is a symbolic link"));
	/* ... and dereferenced with it */
	assert_int_equal(wq_xfer_send_dir(t.out, root, target, WQ_XFER_FOLLOW_LINKS, NULL, &id), 0);
	json_decref(target);
	want_sent = 3, want_recv = 2; /* the refused walk never reached the receiver */
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	assert_int_equal(sent_of(&t, id)->outcome, WQ_XFER_SENT);
	assert_int_equal(recv_of(&t, id)->status, 0);
	assert_int_equal(sent_of(&t, id)->entries, 7);
	free(link), free(dst), free(root), free(sub), free(empty);
	t_done(&t);
}

/* Directories queued one after the other, with a file after them: a directory's members are
 * known only once it begins, and only one directory is open at a time, so the members go first
 * and ids on the wire are given as transfers begin (with ids fixed when queued, the second
 * directory, ahead of the first one's members, waited for a slot that never freed). */
static void test_directories_queued_together(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, false, false);
	char *a = t_path(t.src, "a"), *b = t_path(t.src, "b");
	assert_int_equal(mkdir(a, 0755), 0);
	assert_int_equal(mkdir(b, 0755), 0);
	for (int i = 0; i < 6; i++) {
		char name[16];
		snprintf(name, sizeof name, "f%d", i);
		free(make_file(a, name, 1000 + (size_t)i, false, 0644));
		free(make_file(b, name, 2000 + (size_t)i, false, 0644));
	}
	char *c = make_file(t.src, "c", 5000, false, 0644);
	uint32_t ha, hb, hc;
	json_t *target = wq_xfer_target_input(4, 0);
	assert_int_equal(wq_xfer_send_dir(t.out, a, target, 0, NULL, &ha), 0);
	json_decref(target);
	target = wq_xfer_target_input(4, 1);
	assert_int_equal(wq_xfer_send_dir(t.out, b, target, 0, NULL, &hb), 0);
	json_decref(target);
	target = wq_xfer_target_input(4, 2);
	assert_int_equal(wq_xfer_send_file(t.out, c, -1, -1, target, 0, NULL, &hc), 0);
	json_decref(target);
	want_sent = want_recv = 3;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	assert_int_equal(t.r_closed, 0); /* the receiver saw no id out of order */
	uint32_t h[3] = {ha, hb, hc};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sent_of(&t, h[i])->outcome, WQ_XFER_SENT);
		assert_int_equal(recv_of(&t, h[i])->status, 0);
	}
	assert_int_equal(sent_of(&t, ha)->entries, 6);
	assert_int_equal(sent_of(&t, hb)->entries, 6);
	/* a's six members took the ids between a's and b's */
	assert_int_equal(sent_of(&t, hb)->id, sent_of(&t, ha)->id + 7);
	assert_int_equal(wq_xfer_out_pending(t.out), 0);
	free(a), free(b), free(c);
	t_done(&t);
}

/* ---- raw sender ------------------------------------------------------------------------------ */

static void raw_msg(struct t *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	json_error_t err;
	json_t *m = json_vpack_ex(&err, 0, fmt, ap);
	va_end(ap);
	assert_non_null(m);
	assert_int_equal(wq_conn_send_msg(t->sc, m), 0);
	json_decref(m);
}

static void raw_begin(struct t *t, uint32_t id, int64_t size, const char *enc)
{
	raw_msg(t, "{s:s, s:I, s:{s:I, s:I}, s:I, s:s}", "m", "xfer_begin", "xfer", (json_int_t)id,
	        "target", "task", (json_int_t)1, "input", (json_int_t)id, "size", (json_int_t)size,
	        "enc", enc);
}

static void raw_end(struct t *t, uint32_t id, const void *content, size_t len)
{
	char hex[SHA256_HEX_SIZE];
	sha256_buffer(content, len, hex);
	raw_msg(t, "{s:s, s:I, s:s}", "m", "xfer_end", "xfer", (json_int_t)id, "sha256", hex);
}

static void expect_violation(struct t *t, const char *text)
{
	assert_true(ts_run_until(&t->loop, r_is_closed, t, HANG_MS));
	assert_string_equal(t->r_text, text);
}

/* A `sent` callback that deletes its own sender at the first transfer it hears of. */
static void on_sent_delete(struct wq_xfer_out *o, const struct wq_xfer_sent *r, void *user)
{
	on_sent(o, r, user);
	struct t *t = user;
	wq_xfer_out_delete(o);
	t->out = NULL;
}

static bool one_sent(void *arg)
{
	struct t *t = arg;
	return t->nsent >= 1;
}

/* Tags handed back by the `dropped` callback: each send's tag is a slot of this array, set to 1
 * when dropped (twice would be a double free in a real owner). */
static int dropped_tags[8];

static void on_dropped(struct wq_xfer_out *o, void *tag, void *user)
{
	(void)o;
	(void)user;
	int *slot = tag;
	assert_true(slot >= dropped_tags && slot < dropped_tags + 8);
	assert_int_equal(*slot, 0);
	*slot = 1;
}

static int count_dropped(void)
{
	int n = 0;
	for (int k = 0; k < 8; k++)
		n += dropped_tags[k];
	return n;
}

/* Queues KINDS ('b' buffer, 'f' file) on a sender that deletes itself at its first `sent`: every
 * other send's tag comes back through `dropped`, the sent one's does not. */
static void delete_inside(const char *kinds)
{
	struct t t;
	t_init(&t, true, false);
	memset(dropped_tags, 0, sizeof dropped_tags);
	static const struct wq_xfer_out_callbacks cb = {.sent = on_sent_delete,
	                                                .dropped = on_dropped};
	t.out = wq_xfer_out_create(&t.loop, t.sc, false, &cb, &t);
	char *p = make_file(t.src, "f", 300000, false, 0644);
	int queued = 0;
	for (int k = 0; kinds[k]; k++) {
		json_t *tg = wq_xfer_target_input(5, k);
		if (kinds[k] == 'f')
			assert_int_equal(
			    wq_xfer_send_file(t.out, p, -1, -1, tg, 0, &dropped_tags[k], NULL), 0);
		else
			assert_int_equal(
			    wq_xfer_send_buffer(t.out, "abc", 3, tg, 0, &dropped_tags[k], NULL), 0);
		json_decref(tg);
		queued++;
		if (!t.out)
			break; /* deleted already, inside this call */
	}
	assert_true(ts_run_until(&t.loop, one_sent, &t, HANG_MS));
	/* let any work in flight come back: no callback after the delete, no use after free */
	for (int k = 0; k < 50; k++)
		uv_run(&t.loop, UV_RUN_NOWAIT);
	assert_int_equal(t.nsent, 1);
	assert_int_equal(count_dropped(), queued - 1);
	assert_null(t.out);
	free(p);
	t_done(&t);
}

/* A sender deleted with sends still queued hands every tag back, once. */
static void test_delete_drops_tags(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, true, false);
	memset(dropped_tags, 0, sizeof dropped_tags);
	static const struct wq_xfer_out_callbacks cb = {.sent = on_sent, .dropped = on_dropped};
	t.out = wq_xfer_out_create(&t.loop, t.sc, false, &cb, &t);
	char *p = make_file(t.src, "f", 300000, false, 0644);
	for (int k = 0; k < 4; k++) {
		json_t *tg = wq_xfer_target_input(5, k);
		if (k % 2)
			assert_int_equal(
			    wq_xfer_send_file(t.out, p, -1, -1, tg, 0, &dropped_tags[k], NULL), 0);
		else
			assert_int_equal(
			    wq_xfer_send_buffer(t.out, "abc", 3, tg, 0, &dropped_tags[k], NULL), 0);
		json_decref(tg);
	}
	wq_xfer_out_delete(t.out);
	t.out = NULL;
	for (int k = 0; k < 50; k++)
		uv_run(&t.loop, UV_RUN_NOWAIT);
	assert_int_equal(count_dropped() + t.nsent, 4);
	assert_int_equal(t.nsent, 0);
	free(p);
	t_done(&t);
}

static void test_delete_inside_callback(void **state)
{
	(void)state;
	delete_inside("b"); /* nothing else in flight when the callback runs */
	delete_inside("f");
	delete_inside("bbb");
	delete_inside("fb"); /* the callback runs when the file's last read comes back */
	delete_inside("bfb");
}

static void test_corrupt(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, true, false);
	raw_begin(&t, 1, 5, "none");
	assert_int_equal(wq_conn_send_data(t.sc, 1, "hellp", 5), 0); /* tampered byte */
	raw_end(&t, 1, "hello", 5);
	want_sent = 0, want_recv = 1;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	assert_int_equal(t.recv[0].status, HTC_ECORRUPT);
	assert_true(ts_run_until(&t.loop, peer_refused, &t, HANG_MS));
	assert_int_equal(t.npeer, 1);
	assert_int_equal(t.peer_code, WQ_XERR_CORRUPT);
	char *p = t_path(t.dir, "out.1");
	assert_int_equal(access(p, F_OK), -1);
	free(p);
	/* the connection stays up: a correct transfer follows */
	raw_begin(&t, 2, 5, "none");
	assert_int_equal(wq_conn_send_data(t.sc, 2, "hello", 5), 0);
	raw_end(&t, 2, "hello", 5);
	want_recv = 2;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	assert_int_equal(t.recv[1].status, 0);
	assert_int_equal(t.r_closed, 0);
	t_done(&t);
}

static void test_violations(void **state)
{
	(void)state;
	struct t t;
	uint8_t z[256];
	uLongf zlen;
	const char *text =
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

	t_init(&t, true, false);
	assert_int_equal(wq_conn_send_data(t.sc, 9, "x", 1), 0);
	expect_violation(&t, "data for transfer 9 which is not open");
	t_done(&t);

	t_init(&t, true, false);
	raw_begin(&t, 3, 5, "none");
	assert_int_equal(wq_conn_send_data(t.sc, 3, "1234567", 7), 0);
	expect_violation(&t, "transfer 3: more data than its declared 5 bytes");
	t_done(&t);

	t_init(&t, true, false);
	raw_begin(&t, 3, 5, "none");
	assert_int_equal(wq_conn_send_data(t.sc, 3, "12", 2), 0);
	raw_end(&t, 3, "12", 2);
	expect_violation(&t, "transfer 3: ended after 2 of its declared 5 bytes");
	t_done(&t);

	/* a zlib stream that inflates past its size */
	t_init(&t, true, true);
	zlen = sizeof z;
	assert_int_equal(compress2(z, &zlen, (const Bytef *)text, strlen(text), 1), Z_OK);
	raw_begin(&t, 3, 10, "zlib");
	assert_int_equal(wq_conn_send_data(t.sc, 3, z, zlen), 0);
	expect_violation(&t, "transfer 3: compressed data does not match its declared size");
	t_done(&t);

	/* a zlib stream that stops short of its end at xfer_end */
	t_init(&t, true, true);
	zlen = sizeof z;
	assert_int_equal(compress2(z, &zlen, (const Bytef *)text, strlen(text), 1), Z_OK);
	raw_begin(&t, 3, (int64_t)strlen(text), "zlib");
	assert_int_equal(wq_conn_send_data(t.sc, 3, z, zlen - 3), 0);
	raw_end(&t, 3, text, strlen(text));
	expect_violation(&t, "transfer 3: compressed data does not match its declared size");
	t_done(&t);

	t_init(&t, true, false);
	raw_begin(&t, 4, 1, "none");
	raw_begin(&t, 4, 1, "none");
	expect_violation(&t, "transfer 4: id not above the last one (4)");
	t_done(&t);

	t_init(&t, true, false);
	for (uint32_t id = 1; id <= 5; id++)
		raw_begin(&t, id, 1, "none");
	expect_violation(&t, "more than 4 open transfers");
	t_done(&t);

	/* after a violation the sender got a fatal `error` */
	t_init(&t, true, false);
	raw_msg(&t, "{s:s, s:I, s:s}", "m", "xfer_end", "xfer", (json_int_t)7, "sha256",
	        "0000000000000000000000000000000000000000000000000000000000000000");
	expect_violation(&t, "message \"xfer_end\" for transfer 7 which is not open");
	assert_true(ts_run_until(&t.loop, sender_erred, &t, HANG_MS));
	assert_int_equal(t.s_errors, 1);
	t_done(&t);
}

static void test_interleave(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, true, false);
	enum { N = 4, PARTS = 5, PART = 1000 };
	uint8_t content[N][PARTS * PART];
	for (int k = 0; k < N; k++)
		for (int j = 0; j < PARTS * PART; j++)
			content[k][j] = (uint8_t)(k * 31 + j * 7);
	for (uint32_t id = 1; id <= N; id++)
		raw_begin(&t, id, PARTS * PART, "none");
	for (int j = 0; j < PARTS; j++) {
		for (uint32_t id = 1; id <= N; id++) {
			assert_int_equal(
			    wq_conn_send_data(t.sc, id, content[id - 1] + j * PART, PART), 0);
			raw_msg(&t, "{s:s, s:i}", "m", "note", "n", j);
		}
	}
	for (uint32_t id = N; id >= 1; id--)
		raw_end(&t, id, content[id - 1], PARTS * PART);
	want_sent = 0, want_recv = N;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	assert_int_equal(t.r_other, N * PARTS);
	for (uint32_t id = 1; id <= N; id++) {
		assert_int_equal(recv_of(&t, id)->status, 0);
		char hex[SHA256_HEX_SIZE], got[SHA256_HEX_SIZE];
		sha256_buffer(content[id - 1], PARTS * PART, hex);
		char *p = xasprintf("%s/out.%u", t.dir, id);
		assert_int_equal(sha256_file(p, got), 0);
		assert_string_equal(hex, got);
		free(p);
	}
	assert_int_equal(t.r_closed, 0);
	t_done(&t);
}

/* The sender heard of the receiver's disk_full: a refusal, or an xfer_error after its end. */
struct disk_full_wait {
	struct t *t;
	uint32_t id;
};

static bool disk_full_told(void *arg)
{
	struct disk_full_wait *w = arg;
	return w->t->npeer > 0 || sent_of(w->t, w->id)->outcome != WQ_XFER_SENT;
}

static void test_disk_full(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, false, false);
	char *mnt = t_path(t.src, "small");
	assert_int_equal(mkdir(mnt, 0755), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") != 0) {
		const char *ci = getenv("CI");
		int e = errno;
		t_done(&t);
		free(mnt);
		if (ci && !strcmp(ci, "true"))
			fail_msg("cannot mount a tmpfs for the ENOSPC test: %s", strerror(e));
		print_message("SKIP ENOSPC test: cannot mount a tmpfs: %s\n", strerror(e));
		skip();
	}
	ts_tmpdir_remove(t.dir);
	t.dir = xstrdup(mnt);
	char *p = make_file(t.src, "two-mib", 2u << 20, false, 0644);
	json_t *target = wq_xfer_target_input(1, 0);
	uint32_t id;
	assert_int_equal(wq_xfer_send_file(t.out, p, -1, -1, target, 0, NULL, &id), 0);
	json_decref(target);
	want_sent = want_recv = 1;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	struct disk_full_wait w = {&t, id};
	assert_true(ts_run_until(&t.loop, disk_full_told, &w, HANG_MS));
	struct sent_rec *s = sent_of(&t, id);
	bool refused = s->outcome == WQ_XFER_REFUSED && s->code == WQ_XERR_DISK_FULL;
	bool late = t.npeer == 1 && t.peer_code == WQ_XERR_DISK_FULL;
	assert_true(refused || late);
	assert_int_equal(recv_of(&t, id)->status, -ENOSPC);
	/* the partial file was deleted at once */
	char *tmp = xasprintf("%s/.tmp.%u", mnt, id);
	assert_int_equal(access(tmp, F_OK), -1);
	free(tmp);
	/* the connection stays up: a small file still fits */
	free(p);
	p = make_file(t.src, "small-file", 1000, false, 0644);
	target = wq_xfer_target_input(1, 1);
	assert_int_equal(wq_xfer_send_file(t.out, p, -1, -1, target, 0, NULL, &id), 0);
	json_decref(target);
	want_sent = want_recv = 2;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	assert_int_equal(recv_of(&t, id)->status, 0);
	assert_int_equal(t.r_closed, 0);
	free(p);
	free(t.dir);
	t.dir = NULL; /* the mount point, removed with src */
	umount2(mnt, MNT_DETACH);
	t_done(&t);
	free(mnt);
}

/* wq_xfer_out_abort: a transfer not begun ends without a message; an open one ends with
 * xfer_abort and its reason, the receiver drops its partial file; the connection goes on. */
static bool one_open(void *arg)
{
	struct t *t = arg;
	return wq_xfer_in_open(t->in) >= 1;
}

static void test_abort(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, false, false);
	size_t n = 64u << 20;
	char *big = make_file(t.src, "big", n, false, 0644);
	char *small = make_file(t.src, "small", 1000, false, 0644);
	uint32_t id1, id2;
	json_t *target = wq_xfer_target_input(1, 0);
	assert_int_equal(wq_xfer_send_file(t.out, big, -1, -1, target, 0, NULL, &id1), 0);
	json_decref(target);
	target = wq_xfer_target_input(1, 1);
	assert_int_equal(wq_xfer_send_file(t.out, small, -1, -1, target, 0, NULL, &id2), 0);
	json_decref(target);
	/* not begun: ends at once (or when its preparation returns), nothing reaches the peer */
	assert_int_equal(wq_xfer_out_abort(t.out, id2, "second one not wanted"), 0);
	assert_int_equal(wq_xfer_out_abort(t.out, id2, "again"), -ENOENT);
	/* open: the receiver has its xfer_begin; the receiver does not read meanwhile, so the
	 * transfer cannot end before the abort */
	assert_true(ts_run_until(&t.loop, one_open, &t, HANG_MS));
	wq_conn_pause_reading(t.rc);
	assert_int_equal(wq_xfer_out_abort(t.out, id1, "first one not wanted"), 0);
	int again = wq_xfer_out_abort(t.out, id1, "again"); /* harmless: the first reason stays */
	assert_true(again == 0 || again == -ENOENT);
	assert_int_equal(wq_xfer_out_abort(t.out, 999, "unknown"), -ENOENT);
	wq_conn_resume_reading(t.rc);
	want_sent = 2;
	want_recv = 1;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	assert_int_equal(sent_of(&t, id2)->outcome, WQ_XFER_ABORTED);
	assert_string_equal(sent_of(&t, id2)->text, "second one not wanted");
	assert_int_equal(sent_of(&t, id1)->outcome, WQ_XFER_ABORTED);
	assert_string_equal(sent_of(&t, id1)->text, "first one not wanted");
	assert_int_equal(recv_of(&t, id1)->status, -ECANCELED);
	assert_non_null(strstr(recv_of(&t, id1)->text, "first one not wanted"));
	assert_int_equal(t.nrecv, 1); /* id2 never reached the receiver */
	char *tmp = xasprintf("%s/.tmp.%u", t.dir, sent_of(&t, id1)->id);
	assert_int_equal(access(tmp, F_OK), -1);
	free(tmp);
	/* the connection goes on */
	uint32_t id3;
	target = wq_xfer_target_input(1, 2);
	assert_int_equal(wq_xfer_send_file(t.out, small, -1, -1, target, 0, NULL, &id3), 0);
	json_decref(target);
	want_sent = 3;
	want_recv = 2;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	check_same(&t, id3, small, 2);
	assert_int_equal(t.r_closed, 0);
	assert_int_equal(wq_xfer_out_pending(t.out), 0);
	free(big);
	free(small);
	t_done(&t);
}

/* An F- object is sent without hashing on the sender (xfer_end carries the name's hash); the
 * receiver still hashes every byte: a right name arrives intact, a lying name is `corrupt`. */
static void test_named_object(void **state)
{
	(void)state;
	struct t t;
	t_init(&t, false, false);
	size_t n = (3u << 20) + 17; /* several read batches and a short last chunk */
	char *p = make_file(t.src, "named", n, false, 0644);
	char hex[SHA256_HEX_SIZE], other[SHA256_HEX_SIZE];
	assert_int_equal(sha256_file(p, hex), 0);
	sha256_buffer("something else", 14, other);
	char *name = xasprintf("F-%s", hex);
	json_t *target = wq_xfer_target_object(name, WQ_KEEP_RUN);
	uint32_t a, b;
	assert_int_equal(wq_xfer_send_file(t.out, p, -1, -1, target, 0, NULL, &a), 0);
	json_decref(target);
	want_sent = want_recv = 1;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	assert_int_equal(sent_of(&t, a)->outcome, WQ_XFER_SENT);
	assert_string_equal(sent_of(&t, a)->sha, hex);
	assert_int_equal(sent_of(&t, a)->wire, n);
	assert_int_equal(recv_of(&t, a)->status, 0);
	assert_string_equal(recv_of(&t, a)->sha, hex); /* the receiver's own hash of the bytes */
	free(name);
	name = xasprintf("F-%s", other);
	target = wq_xfer_target_object(name, WQ_KEEP_RUN);
	assert_int_equal(wq_xfer_send_file(t.out, p, -1, -1, target, 0, NULL, &b), 0);
	json_decref(target);
	want_sent = want_recv = 2;
	assert_true(ts_run_until(&t.loop, done_counts, &t, HANG_MS));
	assert_true(ts_run_until(&t.loop, peer_refused, &t, HANG_MS));
	assert_int_equal(recv_of(&t, b)->status, HTC_ECORRUPT);
	assert_int_equal(t.npeer, 1);
	assert_int_equal(t.peer_code, WQ_XERR_CORRUPT);
	assert_int_equal(t.r_closed, 0);
	free(name);
	free(p);
	t_done(&t);
}

int main(void)
{
	if (getenv("WQX_DEBUG"))
		debug_flags_set("wq");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_big),
	    cmocka_unit_test(test_zlib),
	    cmocka_unit_test(test_buffer_and_shrink),
	    cmocka_unit_test(test_directory),
	    cmocka_unit_test(test_directories_queued_together),
	    cmocka_unit_test(test_corrupt),
	    cmocka_unit_test(test_violations),
	    cmocka_unit_test(test_interleave),
	    cmocka_unit_test(test_disk_full),
	    cmocka_unit_test(test_delete_inside_callback),
	    cmocka_unit_test(test_named_object),
	    cmocka_unit_test(test_abort),
	    cmocka_unit_test(test_delete_drops_tags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
