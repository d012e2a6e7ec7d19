/* master_prepare.c: names the inputs of submitted tasks without blocking the master's loop.
 * Hashing a cached file (unless the memo knows it), walking and hashing an input directory, and
 * the HEAD request of a URL input run as jobs in libuv's thread pool, at most
 * MASTER_PREPARE_MAX_JOBS at once per queue; one job per path or URL serves every task waiting
 * for it. The memo of file hashes, and that of directory names (reused when a stat-only walk
 * sees what the hashing walk saw), are only read and written on the loop thread. The state is
 * the queue's (struct master_prepare, q->prep). */
#include "master_prepare.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uthash.h>
#include <utlist.h>
#include <uv.h>

#include "debug.h"
#include "htc_error.h"
#include "sha256.h"
#include "wq_listing.h"
#include "curl_init.h"
#include "master_url.h"
#include "xalloc.h"
#include "banned.h"

#define READ_CHUNK (256 * 1024)

/* A cached directory's name already computed, by path, with the signature of what its walk saw
 * then (every entry's path, kind, size, mtime, inode and device): a later walk that sees the
 * same signature reuses the name without reading the files again. */
struct dir_memo {
	char *path;
	char sig[SHA256_HEX_SIZE];
	char hex[SHA256_HEX_SIZE];
	int64_t size;
	UT_hash_handle hh;
};

/* Hashes of local files already computed, by path (content names of cached inputs). */
struct hash_memo {
	char *path;
	dev_t dev;
	ino_t ino;
	int64_t size;
	int64_t mtime_ns;
	char hex[SHA256_HEX_SIZE];
	UT_hash_handle hh;
};

enum job_kind { JOB_FILE = 'F', JOB_DIR = 'D', JOB_DIR_NOHASH = 'd', JOB_URL = 'U' };

/* A task input waiting for a job (tasks are found again by id: a cancelled one is gone). */
struct waiter {
	int taskid;
	int input;
	struct waiter *next;
};

struct job {
	uv_work_t req;
	struct master_prepare *p;
	struct work_queue *q; /* NULL once detached (queue deleted) */
	enum job_kind kind;
	char *key; /* queue, kind and path: the jobs table's key */
	char *what;
	struct waiter *waiters;
	atomic_int stop;
	bool running;
	/* Results, written by the pool thread, read after it handed the job back. */
	int rc;
	char *why;
	char hex[SHA256_HEX_SIZE];
	char name[MASTER_URL_OBJECT_SIZE];
	bool validated;  /* JOB_URL: the server gave a validator */
	char *validator; /* JOB_URL: that validator ("" without) */
	int64_t size;
	dev_t dev;
	ino_t ino;
	int64_t mtime_ns;
	/* JOB_DIR: the signature its walk saw, and the memo's (loop thread's copy) */
	char sig[SHA256_HEX_SIZE];
	bool has_memo, reused;
	char memo_sig[SHA256_HEX_SIZE], memo_hex[SHA256_HEX_SIZE];
	int64_t memo_size;
	struct job *next; /* FIFO of jobs not started */
	UT_hash_handle hh;
};

/* The preparation state of one queue (q->prep). Once the queue is deleted it lives on, ended,
 * until the last of its detached jobs is handed back. */
struct master_prepare {
	struct hash_memo *memo;
	struct dir_memo *dir_memo;
	struct job *jobs;      /* by key: queued and running jobs */
	struct job *fifo_head; /* not started yet */
	int64_t preparing;     /* tasks in MTASK_PREPARING */
	bool ended;
	struct master_prepare_counters counters;
	void (*test_hook)(const char *what, void *arg);
	void *test_hook_arg;
};

static int64_t mtime_of(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static void count_preparing(const struct work_queue *q, int delta)
{
	if (q->prep)
		q->prep->preparing += delta;
}

/* ---- the memo (loop thread only) ----------------------------------------------------------- */

static struct hash_memo *memo_find(struct master_prepare *p, const char *path,
                                   const struct stat *st)
{
	struct hash_memo *h = NULL;
	HASH_FIND_STR(p->memo, path, h);
	if (h && h->dev == st->st_dev && h->ino == st->st_ino && h->size == st->st_size &&
	    h->mtime_ns == mtime_of(st))
		return h;
	return NULL;
}

static void memo_put(struct master_prepare *p, const struct job *j)
{
	struct hash_memo *h = NULL;
	HASH_FIND_STR(p->memo, j->what, h);
	if (!h) {
		h = xcalloc(1, sizeof *h);
		h->path = xstrdup(j->what);
		HASH_ADD_KEYPTR(hh, p->memo, h->path, strlen(h->path), h);
	}
	h->dev = j->dev;
	h->ino = j->ino;
	h->size = j->size;
	h->mtime_ns = j->mtime_ns;
	memcpy(h->hex, j->hex, SHA256_HEX_SIZE);
}

static void dir_memo_put(struct master_prepare *p, const struct job *j)
{
	struct dir_memo *h = NULL;
	HASH_FIND_STR(p->dir_memo, j->what, h);
	if (!h) {
		h = xcalloc(1, sizeof *h);
		h->path = xstrdup(j->what);
		HASH_ADD_KEYPTR(hh, p->dir_memo, h->path, strlen(h->path), h);
	}
	memcpy(h->sig, j->sig, SHA256_HEX_SIZE);
	memcpy(h->hex, j->hex, SHA256_HEX_SIZE);
	h->size = j->size;
}

/* ---- the work (pool threads) --------------------------------------------------------------- */

static int work_file(struct job *j)
{
	int fd = open(j->what, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;
		j->why = xasprintf("cannot be opened any more: %s", strerror(-rc));
		return rc;
	}
	int rc = 0;
	struct stat before, after;
	char *buf = NULL;
	struct sha256_ctx *ctx = NULL;
	if (fstat(fd, &before) < 0) {
		rc = -errno;
		j->why = xasprintf("cannot be examined: %s", strerror(-rc));
		goto out;
	}
	if (!S_ISREG(before.st_mode)) {
		rc = -EINVAL;
		j->why = xstrdup("is no longer a regular file");
		goto out;
	}
	ctx = sha256_ctx_create();
	buf = xmalloc(READ_CHUNK);
	if (!ctx) {
		rc = -ENOMEM;
		j->why = xstrdup("cannot be hashed: out of memory");
		goto out;
	}
	for (;;) {
		if (atomic_load(&j->stop)) {
			rc = -ECANCELED;
			j->why = xstrdup("hashing stopped: the queue is being deleted");
			goto out;
		}
		ssize_t n = read(fd, buf, READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			j->why = xasprintf("read error: %s", strerror(-rc));
			goto out;
		}
		if (n == 0)
			break;
		rc = sha256_ctx_update(ctx, buf, (size_t)n);
		if (rc < 0) {
			j->why = xstrdup("cannot be hashed: the crypto library failed");
			goto out;
		}
	}
	if (fstat(fd, &after) < 0 || after.st_size != before.st_size ||
	    mtime_of(&after) != mtime_of(&before)) {
		rc = -ESTALE;
		j->why = xstrdup("changed while it was being hashed");
		goto out;
	}
	rc = sha256_ctx_final(ctx, j->hex);
	if (rc < 0) {
		j->why = xstrdup("cannot be hashed: the crypto library failed");
		goto out;
	}
	j->size = before.st_size;
	j->dev = before.st_dev;
	j->ino = before.st_ino;
	j->mtime_ns = mtime_of(&before);
out:
	free(buf);
	sha256_ctx_delete(ctx);
	close(fd);
	return rc;
}

/* The signature of the tree FD that L lists (stat-only): every entry's path, kind, size,
 * mtime, inode and device, hashed. 0 or -errno. */
static int dir_signature(int fd, struct wq_listing *l, char out[SHA256_HEX_SIZE])
{
	struct sha256_ctx *ctx = sha256_ctx_create();
	if (!ctx)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0, n = wq_listing_count(l); rc == 0 && i < n; i++) {
		const struct wq_listing_entry *e = wq_listing_get(l, i);
		struct stat st;
		if (fstatat(fd, e->path, &st, 0) < 0) {
			rc = -errno;
			break;
		}
		char line[WQ_LISTING_MAX_PATH + 128];
		int k = snprintf(line, sizeof line, "%s %d %lld %lld %llu %llu\n", e->path,
		                 e->is_dir, (long long)st.st_size, (long long)mtime_of(&st),
		                 (unsigned long long)st.st_ino, (unsigned long long)st.st_dev);
		rc = sha256_ctx_update(ctx, line, (size_t)k);
	}
	if (rc == 0)
		rc = sha256_ctx_final(ctx, out);
	sha256_ctx_delete(ctx);
	return rc;
}

/* A directory its memo knows: walked without reading its files; when the walk's signature is
 * the memo's, its name is reused (J->reused). 0 when reused; otherwise 1 (J->sig set when it
 * could be made), and the directory is hashed. */
static int dir_from_memo(struct job *j, int fd)
{
	struct wq_listing *l = NULL;
	char *why = NULL;
	int rc =
	    wq_listing_walk(fd, j->what, WQ_LISTING_FOLLOW_LINKS | WQ_LISTING_NO_HASH, &l, &why);
	free(why);
	if (rc == 0)
		rc = dir_signature(fd, l, j->sig);
	wq_listing_delete(l);
	if (rc < 0) {
		j->sig[0] = 0;
		return 1;
	}
	if (!j->has_memo || strcmp(j->sig, j->memo_sig) != 0)
		return 1;
	memcpy(j->hex, j->memo_hex, SHA256_HEX_SIZE);
	j->size = j->memo_size;
	j->reused = true;
	return 0;
}

static int work_dir(struct job *j)
{
	int fd = open(j->what, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;
		j->why = xasprintf("cannot be opened any more: %s", strerror(-rc));
		return rc;
	}
	/* the signature is taken before the files are read: a file changed meanwhile changes
	 * the next signature, so its new content is hashed then */
	if (j->kind == JOB_DIR && dir_from_memo(j, fd) == 0) {
		close(fd);
		return 0;
	}
	struct wq_listing *l = NULL;
	char *why = NULL;
	int flags = WQ_LISTING_FOLLOW_LINKS | (j->kind == JOB_DIR_NOHASH ? WQ_LISTING_NO_HASH : 0);
	int rc = wq_listing_walk(fd, j->what, flags, &l, &why);
	close(fd);
	if (rc < 0) {
		j->why = xstrdup(why ? why : htc_strerror(rc));
		free(why);
		return rc;
	}
	j->size = (int64_t)wq_listing_bytes(l);
	if (j->kind == JOB_DIR) {
		rc = wq_listing_hash(l, j->hex);
		if (rc < 0)
			j->why = xasprintf("cannot be hashed: %s", htc_strerror(rc));
	}
	wq_listing_delete(l);
	return rc;
}

static int work_url(struct job *j)
{
	char *v = NULL;
	int rc = master_url_head(j->what, MASTER_URL_HEAD_TIMEOUT_MS, &j->stop, &v, &j->why);
	if (rc < 0)
		return rc;
	rc = master_url_object_name(j->what, v, j->name);
	j->validated = v && *v;
	j->validator = v ? v : xstrdup("");
	if (rc < 0)
		j->why = xasprintf("cannot name its object: %s", htc_strerror(rc));
	return rc;
}

static void job_work(uv_work_t *req)
{
	struct job *j = req->data;
	if (j->p->test_hook)
		j->p->test_hook(j->what, j->p->test_hook_arg);
	switch (j->kind) {
	case JOB_FILE: j->rc = work_file(j); break;
	case JOB_DIR:
	case JOB_DIR_NOHASH: j->rc = work_dir(j); break;
	case JOB_URL: j->rc = work_url(j); break;
	}
}

/* ---- jobs (loop thread) -------------------------------------------------------------------- */

static void job_free(struct job *j)
{
	while (j->waiters) {
		struct waiter *w = j->waiters;
		j->waiters = w->next;
		free(w);
	}
	free(j->key);
	free(j->what);
	free(j->why);
	free(j->validator);
	free(j);
}

static void job_after(uv_work_t *req, int status);
static void prepare_free(struct master_prepare *p);

/* Starts queued jobs while there is room. A job whose tasks are all gone is dropped unless it
 * hashes a file (its result still fills the memo). */
static void start_jobs(struct master_prepare *p)
{
	while (p->fifo_head && p->counters.in_flight < MASTER_PREPARE_MAX_JOBS) {
		struct job *j = p->fifo_head;
		LL_DELETE(p->fifo_head, j);
		p->counters.queued--;
		bool wanted = j->kind == JOB_FILE;
		for (struct waiter *w = j->waiters; w && !wanted; w = w->next) {
			struct mtask *m = master_queue_task_lookup(j->q, w->taskid);
			wanted = m && m->state == MTASK_PREPARING;
		}
		if (!wanted) {
			debug(D_WQ, "no task needs %s any more", j->what);
			HASH_DEL(p->jobs, j);
			job_free(j);
			continue;
		}
		j->running = true;
		j->req.data = j;
		int rc = uv_queue_work(j->q->loop, &j->req, job_work, job_after);
		if (rc < 0) {
			/* Never for valid arguments; fail its tasks rather than leave them waiting.
			 */
			j->rc = rc;
			j->why = xasprintf("cannot be prepared: %s", uv_strerror(rc));
			p->counters.in_flight++;
			p->counters.jobs_started++;
			job_after(&j->req, 0);
			continue;
		}
		p->counters.in_flight++;
		p->counters.jobs_started++;
		if (p->counters.in_flight > p->counters.max_in_flight)
			p->counters.max_in_flight = p->counters.in_flight;
	}
}

static void task_failed(struct work_queue *q, struct mtask *m, const struct work_queue_file *f,
                        const char *why)
{
	struct work_queue_task *t = m->t;
	snprintf(t->last_error, sizeof t->last_error, "input %s: %s", f->source, why);
	warn("wq: task %d: input %s: %s", m->id, f->source, why);
	t->result = WORK_QUEUE_RESULT_INPUT_MISSING;
	count_preparing(q, -1);
	master_queue_task_finish(q, m);
}

/* The object of a URL input that is not cached (WORK_QUEUE_NOCACHE): named for task M alone,
 * so that no other task uses it and the worker fetches it for M; it is dropped from the worker
 * once M is done there (master_task_done.c). NULL on failure. */
static char *per_task_url(const struct job *j, const struct mtask *m)
{
	char *v = xasprintf("%s\nper-task %d", j->validator ? j->validator : "", m->id);
	char name[MASTER_URL_OBJECT_SIZE];
	int rc = master_url_object_name(j->what, v, name);
	free(v);
	return rc < 0 ? NULL : xstrdup(name);
}

static void task_named(struct work_queue *q, struct mtask *m)
{
	struct master_sched_task_spec spec;
	master_sched_task_spec_from_task(&spec, m->t);
	spec.data = m;
	count_preparing(q, -1);
	m->st = master_sched_task_add(q->sched, &spec);
	if (!m->st) {
		/* Checked at submission: only an application that changed the task since. */
		snprintf(m->t->last_error, sizeof m->t->last_error,
		         "invalid resources or features (changed after submission)");
		warn("wq: task %d: %s", m->id, m->t->last_error);
		m->t->result = WORK_QUEUE_RESULT_INVALID_TASK;
		master_queue_task_finish(q, m);
		return;
	}
	m->state = MTASK_READY;
	debug(D_WQ, "task %d: inputs named, ready", m->id);
	master_queue_request_pass(q);
}

static void job_after(uv_work_t *req, int status)
{
	struct job *j = req->data;
	struct master_prepare *p = j->p;
	p->counters.in_flight--;
	p->counters.jobs_finished++;
	if (status == UV_ECANCELED && j->rc == 0) {
		j->rc = -ECANCELED;
		j->why = xstrdup("cancelled");
	}
	struct work_queue *q = j->q;
	if (q)
		HASH_DEL(p->jobs, j);
	if (j->kind == JOB_FILE && j->rc == 0 && !p->ended)
		memo_put(p, j);
	if (j->kind == JOB_DIR && j->rc == 0 && !p->ended) {
		if (j->reused)
			p->counters.dirs_reused++;
		else if (j->sig[0])
			dir_memo_put(p, j);
	}
	for (struct waiter *w = j->waiters; w && q; w = w->next) {
		struct mtask *m = master_queue_task_lookup(q, w->taskid);
		if (!m || m->state != MTASK_PREPARING)
			continue; /* cancelled, or failed by another input */
		const struct work_queue_file *f = master_worker_nth_file(m->t->inputs, w->input);
		if (j->rc < 0) {
			task_failed(q, m, f, j->why ? j->why : htc_strerror(j->rc));
			continue;
		}
		switch (j->kind) {
		case JOB_FILE: m->objects[w->input] = xasprintf("F-%s", j->hex); break;
		case JOB_DIR: m->objects[w->input] = xasprintf("D-%s", j->hex); break;
		case JOB_DIR_NOHASH: break;
		case JOB_URL:
			if (f->flags & WORK_QUEUE_CACHE) {
				m->objects[w->input] = xstrdup(j->name);
				if (j->validated && !m->validated)
					m->validated =
					    xcalloc((size_t)m->n_inputs + 1, sizeof *m->validated);
				if (j->validated)
					m->validated[w->input] = true;
			} else if ((m->objects[w->input] = per_task_url(j, m)) == NULL) {
				task_failed(q, m, f, "cannot name its object");
				continue;
			}
			break;
		}
		m->obj_size[w->input] = j->size;
		if (--m->prep_pending == 0)
			task_named(q, m);
	}
	job_free(j);
	if (p->ended) {
		if (p->counters.in_flight == 0)
			prepare_free(p);
		return;
	}
	start_jobs(p);
}

/* Attaches input I of M to the job for (KIND, WHAT), creating it if needed. */
static void need(struct work_queue *q, struct mtask *m, int i, enum job_kind kind, const char *what)
{
	struct master_prepare *p = q->prep;
	char *key = xasprintf("%p %c %s", (void *)q, (char)kind, what);
	struct job *j = NULL;
	HASH_FIND_STR(p->jobs, key, j);
	if (j) {
		free(key);
		p->counters.jobs_joined++;
	} else {
		j = xcalloc(1, sizeof *j);
		j->p = p;
		j->q = q;
		j->kind = kind;
		j->key = key;
		j->what = xstrdup(what);
		atomic_init(&j->stop, 0);
		struct dir_memo *dm = NULL;
		if (kind == JOB_DIR)
			HASH_FIND_STR(p->dir_memo, what, dm);
		if (dm) {
			j->has_memo = true;
			memcpy(j->memo_sig, dm->sig, SHA256_HEX_SIZE);
			memcpy(j->memo_hex, dm->hex, SHA256_HEX_SIZE);
			j->memo_size = dm->size;
		}
		HASH_ADD_KEYPTR(hh, p->jobs, j->key, strlen(j->key), j);
		LL_APPEND(p->fifo_head, j);
		p->counters.queued++;
		if (kind == JOB_URL)
			curl_init_once();
	}
	struct waiter *w = xcalloc(1, sizeof *w);
	w->taskid = m->id;
	w->input = i;
	LL_PREPEND(j->waiters, w);
}

/* ---- the interface ------------------------------------------------------------------------- */

int master_prepare_inputs(struct work_queue *q, struct mtask *m)
{
	struct work_queue_task *t = m->t;
	int n = 0;
	for (struct work_queue_file *f = t->inputs; f; f = f->next)
		n++;
	m->n_inputs = n;
	m->objects = xcalloc((size_t)n + 1, sizeof *m->objects);
	m->obj_size = xcalloc((size_t)n + 1, sizeof *m->obj_size);
	m->prep_pending = 0;
	int i = 0;
	for (struct work_queue_file *f = t->inputs; f; f = f->next, i++) {
		bool cache = (f->flags & WORK_QUEUE_CACHE) != 0;
		struct stat st;
		int rc = 0;
		switch (f->kind) {
		case WORK_QUEUE_FILE_LOCAL:
			if (stat(f->source, &st) < 0) {
				rc = -errno;
			} else if (cache && !S_ISREG(st.st_mode)) {
				rc = -EINVAL;
				warn(
				    "wq: input %s: not a regular file (a cached input must be one)",
				    f->source);
				return rc;
			} else if (cache) {
				struct hash_memo *h = memo_find(q->prep, f->source, &st);
				if (h) {
					m->objects[i] = xasprintf("F-%s", h->hex);
					m->obj_size[i] = st.st_size;
				} else {
					m->prep_pending++;
				}
			}
			break;
		case WORK_QUEUE_FILE_DIRECTORY:
			if (stat(f->source, &st) < 0)
				rc = -errno;
			else if (!S_ISDIR(st.st_mode))
				rc = -ENOTDIR;
			else
				m->prep_pending++;
			break;
		case WORK_QUEUE_FILE_URL: m->prep_pending++; break;
		case WORK_QUEUE_FILE_BUFFER: break;
		}
		if (rc < 0) {
			warn("wq: input %s: %s", f->source, htc_strerror(rc));
			return rc;
		}
	}
	return m->prep_pending;
}

void master_prepare_start(struct work_queue *q, struct mtask *m)
{
	count_preparing(q, 1);
	int i = 0;
	for (struct work_queue_file *f = m->t->inputs; f; f = f->next, i++) {
		bool cache = (f->flags & WORK_QUEUE_CACHE) != 0;
		switch (f->kind) {
		case WORK_QUEUE_FILE_LOCAL:
			if (cache && !m->objects[i])
				need(q, m, i, JOB_FILE, f->source);
			break;
		case WORK_QUEUE_FILE_DIRECTORY:
			need(q, m, i, cache ? JOB_DIR : JOB_DIR_NOHASH, f->source);
			break;
		case WORK_QUEUE_FILE_URL: need(q, m, i, JOB_URL, f->source); break;
		case WORK_QUEUE_FILE_BUFFER: break;
		}
	}
	debug(D_WQ, "task %d: %d input(s) being prepared", m->id, m->prep_pending);
	start_jobs(q->prep);
}

void master_prepare_forget(struct work_queue *q, struct mtask *m)
{
	if (m->state == MTASK_PREPARING)
		count_preparing(q, -1);
}

int64_t master_prepare_count(const struct work_queue *q)
{
	return q->prep ? q->prep->preparing : 0;
}

struct master_prepare *master_prepare_create(void)
{
	return xcalloc(1, sizeof(struct master_prepare));
}

static void prepare_free(struct master_prepare *p)
{
	struct hash_memo *h, *tmp;
	HASH_ITER(hh, p->memo, h, tmp)
	{
		HASH_DEL(p->memo, h);
		free(h->path);
		free(h);
	}
	struct dir_memo *d, *dtmp;
	HASH_ITER(hh, p->dir_memo, d, dtmp)
	{
		HASH_DEL(p->dir_memo, d);
		free(d->path);
		free(d);
	}
	free(p);
}

void master_prepare_end(struct master_prepare *p)
{
	if (!p)
		return;
	struct job *j, *tmp;
	HASH_ITER(hh, p->jobs, j, tmp)
	{
		HASH_DEL(p->jobs, j);
		if (j->running) {
			/* The pool hands it back later (the loop owns the request): detach it. */
			atomic_store(&j->stop, 1);
			j->q = NULL;
		} else {
			LL_DELETE(p->fifo_head, j);
			p->counters.queued--;
			job_free(j);
		}
	}
	p->ended = true;
	if (p->counters.in_flight == 0)
		prepare_free(p);
}

void master_prepare_get_counters(const struct work_queue *q, struct master_prepare_counters *c)
{
	*c = q->prep->counters;
}

void master_prepare_set_test_hook(struct work_queue *q, void (*fn)(const char *what, void *arg),
                                  void *arg)
{
	q->prep->test_hook = fn;
	q->prep->test_hook_arg = arg;
}
