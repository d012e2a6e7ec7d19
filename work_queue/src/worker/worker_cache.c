/* worker_cache.c: the worker's content-addressed object store (protocol section 5.5). Objects are
 * written under `.partial/`, verified against the hash they are named by, and renamed into
 * place read-only; a uthash index on the loop thread tracks complete objects and their keep
 * class, which survives restarts through empty marker files in `.keep/`. */
#include "worker_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <uthash.h>

#include "atomic_file.h"
#include "debug.h"
#include "full_io.h"
#include "htc_error.h"
#include "path.h"
#include "worker_sandbox.h"
#include "xalloc.h"
#include "banned.h"

#define MASTER_ID_FILE ".master_id"
#define MASTER_ID_MAX  4096

enum obj_state { OBJ_RECEIVING, OBJ_COMPLETE };

struct obj {
	char name[WORKER_CACHE_NAME_LEN + 1];
	uint64_t size;
	enum worker_cache_keep keep;
	enum obj_state state;
	bool is_dir;
	bool dropped;
	unsigned refs;
	UT_hash_handle hh;
};

struct worker_cache {
	char *path;
	char *partial_path;
	char *trash_path;
	int fd;
	int partial_fd;
	int trash_fd;
	int keep_fd;
	struct obj *index;
	uint64_t bytes;
	uint64_t reserved;
	uint64_t trash_seq;
};

struct worker_cache_partial {
	char name[WORKER_CACHE_NAME_LEN + 1];
	char tmp[32];
	char *tmp_path; /* absolute, for removing a directory */
	bool is_dir;
	uint64_t size;
	uint64_t written;
	uint64_t final_size;
	int cache_fd;   /* borrowed from the cache */
	int partial_fd; /* borrowed from the cache */
	int fd;         /* the file being written, or the directory */
	struct sha256_ctx *ctx;
	bool removed;
	bool stored; /* written with worker_cache_partial_store: the caller hashes */
	bool hashed; /* written with worker_cache_partial_write */
};

bool worker_cache_name_valid(const char *name)
{
	if (!name || strlen(name) != WORKER_CACHE_NAME_LEN)
		return false;
	if ((name[0] != 'F' && name[0] != 'D' && name[0] != 'U') || name[1] != '-')
		return false;
	for (int i = 2; i < WORKER_CACHE_NAME_LEN; i++) {
		char c = name[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

static int open_subdir(int fd, const char *name)
{
	if (mkdirat(fd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	int r = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

struct worker_cache *worker_cache_create(const char *workdir)
{
	if (!workdir || !path_is_absolute(workdir)) {
		errno = EINVAL;
		return NULL;
	}
	struct worker_cache *c = xcalloc(1, sizeof(*c));
	c->fd = c->partial_fd = c->trash_fd = c->keep_fd = -1;
	c->path = path_join(workdir, "cache");
	c->partial_path = path_join(c->path, ".partial");
	c->trash_path = path_join(c->path, ".trash");
	int r = path_mkdir_p(c->path, 0755);
	if (r == 0) {
		c->fd = open(c->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = c->fd < 0 ? -errno : 0;
	}
	if (r == 0)
		r = c->partial_fd = open_subdir(c->fd, ".partial");
	if (r >= 0)
		r = c->trash_fd = open_subdir(c->fd, ".trash");
	if (r >= 0)
		r = c->keep_fd = open_subdir(c->fd, ".keep");
	if (r < 0) {
		warn("cannot open the cache %s: %s", c->path, strerror(-r));
		worker_cache_delete(c);
		errno = -r;
		return NULL;
	}
	return c;
}

void worker_cache_delete(struct worker_cache *c)
{
	if (!c)
		return;
	struct obj *o, *tmp;
	HASH_ITER(hh, c->index, o, tmp)
	{
		HASH_DEL(c->index, o);
		free(o);
	}
	int fds[] = {c->fd, c->partial_fd, c->trash_fd, c->keep_fd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(c->path);
	free(c->partial_path);
	free(c->trash_path);
	free(c);
}

const char *worker_cache_path(const struct worker_cache *c)
{
	return c->path;
}

int worker_cache_fd(const struct worker_cache *c)
{
	return c->fd;
}

/* ---- removal helpers ------------------------------------------------------------------------ */

/* Removes entry NAME of directory FD (whose absolute path is DIRPATH), whatever it is. */
static int remove_entry(int fd, const char *dirpath, const char *name)
{
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(fd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	char *p = path_join(dirpath, name);
	int r = tree_remove(p);
	free(p);
	return r;
}

/* Removes every entry of directory FD (path DIRPATH). */
static int empty_dir(int fd, const char *dirpath)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		return -e;
	}
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		int rr = remove_entry(fd, dirpath, de->d_name);
		if (rr < 0 && r == 0)
			r = rr;
	}
	closedir(d);
	return r;
}

int worker_cache_empty_trash(int cache_fd, const char *cache_path)
{
	int fd = openat(cache_fd, ".trash", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	char *p = path_join(cache_path, ".trash");
	int r = empty_dir(fd, p);
	free(p);
	close(fd);
	return r;
}

/* Deletes object O from the disk (files: unlink; directories: into .trash) and the index. */
static int remove_object(struct worker_cache *c, struct obj *o)
{
	int r = 0;
	if (o->is_dir) {
		char t[WORKER_CACHE_NAME_LEN + 32];
		snprintf(t, sizeof(t), "%llu-%s", (unsigned long long)++c->trash_seq, o->name);
		/* Moving a directory to another parent needs write permission on it (its ".."). */
		fchmodat(c->fd, o->name, 0755, AT_SYMLINK_NOFOLLOW);
		if (renameat(c->fd, o->name, c->trash_fd, t) < 0 && errno != ENOENT) {
			r = -errno;
			int rr = remove_entry(c->fd, c->path, o->name);
			if (rr == 0)
				r = 0;
		}
	} else if (unlinkat(c->fd, o->name, 0) < 0 && errno != ENOENT) {
		r = -errno;
	}
	if (r < 0)
		warn("cannot delete cache object %s: %s", o->name, strerror(-r));
	unlinkat(c->keep_fd, o->name, 0);
	if (o->state == OBJ_COMPLETE)
		c->bytes -= o->size;
	HASH_DEL(c->index, o);
	free(o);
	return r;
}

/* ---- index -------------------------------------------------------------------------------- */

static struct obj *find(const struct worker_cache *c, const char *name)
{
	struct obj *o = NULL;
	HASH_FIND_STR(c->index, name, o);
	return o;
}

static bool visible(const struct obj *o)
{
	return o->state == OBJ_COMPLETE && !o->dropped;
}

static struct obj *add_obj(struct worker_cache *c, const char *name, enum obj_state state,
                           uint64_t size, enum worker_cache_keep keep)
{
	struct obj *o = xcalloc(1, sizeof(*o));
	memcpy(o->name, name, WORKER_CACHE_NAME_LEN + 1);
	o->state = state;
	o->size = size;
	o->keep = keep;
	o->is_dir = name[0] == 'D';
	HASH_ADD_STR(c->index, name, o);
	if (state == OBJ_COMPLETE)
		c->bytes += size;
	return o;
}

bool worker_cache_has(const struct worker_cache *c, const char *name, uint64_t *size)
{
	struct obj *o = find(c, name);
	if (!o || !visible(o))
		return false;
	if (size)
		*size = o->size;
	return true;
}

size_t worker_cache_count(const struct worker_cache *c)
{
	size_t n = 0;
	for (const struct obj *o = c->index; o; o = o->hh.next)
		n += visible(o);
	return n;
}

uint64_t worker_cache_bytes(const struct worker_cache *c)
{
	return c->bytes;
}

uint64_t worker_cache_reserved(const struct worker_cache *c)
{
	return c->reserved;
}

int worker_cache_foreach_batch(const struct worker_cache *c, worker_cache_batch_fn cb, void *arg)
{
	size_t total = worker_cache_count(c);
	struct worker_cache_item *items = xcalloc(WORKER_CACHE_HAVE_BATCH, sizeof(*items));
	size_t n = 0, sent = 0;
	int r = 0;
	for (const struct obj *o = c->index; o && r >= 0; o = o->hh.next) {
		if (!visible(o))
			continue;
		memcpy(items[n].name, o->name, sizeof(items[n].name));
		items[n].size = o->size;
		items[n].keep = o->keep;
		n++;
		if (n == WORKER_CACHE_HAVE_BATCH) {
			sent += n;
			r = cb(items, n, sent == total, arg);
			n = 0;
		}
	}
	if (r >= 0 && (n > 0 || sent == 0 || sent < total))
		r = cb(items, n, true, arg);
	free(items);
	return r < 0 ? r : 0;
}

int worker_cache_ref(struct worker_cache *c, const char *name)
{
	struct obj *o = find(c, name);
	if (!o || !visible(o))
		return -ENOENT;
	o->refs++;
	return 0;
}

void worker_cache_unref(struct worker_cache *c, const char *name)
{
	struct obj *o = find(c, name);
	if (!o || o->refs == 0)
		return;
	if (--o->refs == 0 && o->dropped && o->state == OBJ_COMPLETE) {
		debug(D_WORKER, "cache: deleting dropped %s after its last use", o->name);
		remove_object(c, o);
	}
}

int worker_cache_drop(struct worker_cache *c, const char *name)
{
	struct obj *o = find(c, name);
	if (!o)
		return 0;
	debug(D_WORKER, "cache: drop %s", name);
	if (o->state == OBJ_RECEIVING || (o->is_dir && o->refs > 0)) {
		o->dropped = true;
		unlinkat(c->keep_fd, o->name, 0);
		return 0;
	}
	return remove_object(c, o);
}

/* ---- receiving ---------------------------------------------------------------------------- */

int worker_cache_begin(struct worker_cache *c, const char *name, enum worker_cache_keep keep,
                       uint64_t xfer, uint64_t size, struct worker_cache_partial **out)
{
	*out = NULL;
	if (!worker_cache_name_valid(name))
		return HTC_EPARSE;
	struct obj *o = find(c, name);
	if (o) {
		if (o->dropped) {
			/* Content-addressed: the data still here is exactly what would come. */
			debug(D_WORKER, "cache: %s dropped but still in use: kept again", name);
			o->dropped = false;
			o->keep = keep;
		}
		return HTC_EDUP;
	}
	struct worker_cache_partial *p = xcalloc(1, sizeof(*p));
	memcpy(p->name, name, WORKER_CACHE_NAME_LEN + 1);
	snprintf(p->tmp, sizeof(p->tmp), "%llu", (unsigned long long)xfer);
	p->tmp_path = path_join(c->partial_path, p->tmp);
	p->is_dir = name[0] == 'D';
	p->size = size;
	p->cache_fd = c->fd;
	p->partial_fd = c->partial_fd;
	p->fd = -1;
	/* A leftover of an earlier connection with the same transfer id goes first. */
	remove_entry(c->partial_fd, c->partial_path, p->tmp);
	int r = 0;
	if (p->is_dir) {
		if (mkdirat(c->partial_fd, p->tmp, 0700) < 0)
			r = -errno;
		else if ((p->fd = openat(c->partial_fd, p->tmp,
		                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			r = -errno;
	} else {
		p->fd = openat(c->partial_fd, p->tmp,
		               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (p->fd < 0)
			r = -errno;
		else if (!(p->ctx = sha256_ctx_create()))
			r = -ENOMEM;
	}
	if (r < 0) {
		worker_cache_partial_abort(p);
		sha256_ctx_delete(p->ctx);
		free(p->tmp_path);
		free(p);
		return r == -ENOSPC || r == -EDQUOT ? -ENOSPC : r;
	}
	add_obj(c, name, OBJ_RECEIVING, 0, keep);
	c->reserved += size;
	*out = p;
	return 0;
}

int worker_cache_partial_dirfd(const struct worker_cache_partial *p)
{
	return p->is_dir ? p->fd : -1;
}

int worker_cache_partial_abort(struct worker_cache_partial *p)
{
	if (p->fd >= 0) {
		close(p->fd);
		p->fd = -1;
	}
	if (p->removed)
		return 0;
	p->removed = true;
	struct stat st;
	if (fstatat(p->partial_fd, p->tmp, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode))
		return tree_remove(p->tmp_path);
	return unlinkat(p->partial_fd, p->tmp, 0) < 0 && errno != ENOENT ? -errno : 0;
}

static int partial_append(struct worker_cache_partial *p, const void *data, size_t len)
{
	if (p->is_dir || p->fd < 0)
		return -EBADF;
	if (len > p->size - p->written)
		return HTC_ETOOBIG;
	int r = full_write(p->fd, data, len);
	if (r == -ENOSPC) {
		debug(D_WORKER, "cache: %s: file system full, partial deleted", p->name);
		worker_cache_partial_abort(p);
		return r;
	}
	if (r < 0)
		return r;
	p->written += len;
	return 0;
}

int worker_cache_partial_write(struct worker_cache_partial *p, const void *data, size_t len)
{
	p->hashed = true;
	int r = partial_append(p, data, len);
	return r < 0 ? r : sha256_ctx_update(p->ctx, data, len);
}

int worker_cache_partial_store(struct worker_cache_partial *p, const void *data, size_t len)
{
	p->stored = true;
	return partial_append(p, data, len);
}

static int corrupt(struct worker_cache_partial *p, const char *what)
{
	debug(D_WORKER, "cache: %s: %s", p->name, what);
	worker_cache_partial_abort(p);
	return HTC_ECORRUPT;
}

/* The checks and the commit common to both finishes: HEX is the hash of what was written. */
static int partial_commit(struct worker_cache_partial *p, const char *hex, const char *sha256hex)
{
	if (!sha256hex || strcmp(hex, sha256hex))
		return corrupt(p, "content does not match the announced sha256");
	if (p->name[0] == 'F' && strcmp(hex, p->name + 2))
		return corrupt(p, "content does not match the object name");
	int r;
	if (fchmod(p->fd, 0555) < 0 || close(p->fd) < 0) {
		r = errno == ENOSPC || errno == EDQUOT ? -ENOSPC : -errno;
		p->fd = -1;
		worker_cache_partial_abort(p);
		return r;
	}
	p->fd = -1;
	if (renameat2(p->partial_fd, p->tmp, p->cache_fd, p->name, RENAME_NOREPLACE) < 0) {
		r = -errno;
		worker_cache_partial_abort(p);
		return r;
	}
	p->removed = true;
	p->final_size = p->written;
	return 0;
}

int worker_cache_partial_finish(struct worker_cache_partial *p, const char *sha256hex)
{
	if (p->is_dir || p->fd < 0)
		return -EBADF;
	if (p->stored) {
		worker_cache_partial_abort(p);
		return -EINVAL;
	}
	if (p->written != p->size)
		return corrupt(p, "shorter than its declared size");
	char hex[SHA256_HEX_SIZE];
	int r = sha256_ctx_final(p->ctx, hex);
	if (r < 0) {
		worker_cache_partial_abort(p);
		return r;
	}
	return partial_commit(p, hex, sha256hex);
}

int worker_cache_partial_finish_hashed(struct worker_cache_partial *p, const char *hex,
                                       const char *sha256hex)
{
	if (p->is_dir || p->fd < 0)
		return -EBADF;
	if (p->hashed || !hex) {
		worker_cache_partial_abort(p);
		return -EINVAL;
	}
	if (p->written != p->size)
		return corrupt(p, "shorter than its declared size");
	return partial_commit(p, hex, sha256hex);
}

int worker_cache_partial_link(struct worker_cache_partial *p, int src_dirfd, const char *src_name)
{
	if (p->is_dir || p->fd < 0 || p->written > 0)
		return -EBADF;
	struct stat st;
	if (fstatat(src_dirfd, src_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		int r = -errno;
		worker_cache_partial_abort(p);
		return r;
	}
	if (linkat(src_dirfd, src_name, p->cache_fd, p->name, 0) < 0) {
		int r = -errno;
		if (r != -EXDEV)
			worker_cache_partial_abort(p);
		return r;
	}
	worker_cache_partial_abort(p); /* the empty temporary: the object is in place */
	p->final_size = (uint64_t)st.st_size;
	return 0;
}

int worker_cache_partial_finish_dir(struct worker_cache_partial *p, struct wq_listing *listing,
                                    uint64_t entries, const char *listing_hex)
{
	if (!p->is_dir || p->fd < 0)
		return -EBADF;
	if (wq_listing_count(listing) != entries)
		return corrupt(p, "entry count differs from dir_end");
	char hex[SHA256_HEX_SIZE];
	int r = wq_listing_hash(listing, hex);
	if (r < 0) {
		worker_cache_partial_abort(p);
		return r;
	}
	if (!listing_hex || strcmp(hex, listing_hex))
		return corrupt(p, "listing does not match dir_end");
	if (strcmp(hex, p->name + 2))
		return corrupt(p, "listing does not match the object name");
	/* What is on disk must be exactly the listing's shape. */
	struct wq_listing *disk = NULL;
	char *why = NULL;
	r = wq_listing_walk(p->fd, p->name, WQ_LISTING_NO_HASH, &disk, &why);
	bool same = r == 0 && wq_listing_count(disk) == entries &&
	            wq_listing_bytes(disk) == wq_listing_bytes(listing);
	for (size_t i = 0; same && i < entries; i++) {
		const struct wq_listing_entry *a = wq_listing_get(disk, i);
		const struct wq_listing_entry *b = wq_listing_get(listing, i);
		same = !strcmp(a->path, b->path) && a->is_dir == b->is_dir && a->size == b->size;
	}
	wq_listing_delete(disk);
	if (!same) {
		r = corrupt(p, why ? why : "directory on disk differs from its listing");
		free(why);
		return r;
	}
	free(why);
	/* Children before parents: reverse sorted order. */
	for (size_t i = entries; i-- > 0;) {
		const struct wq_listing_entry *e = wq_listing_get(listing, i);
		mode_t m = e->is_dir || e->exec ? 0555 : 0444;
		if (fchmodat(p->fd, e->path, m, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			worker_cache_partial_abort(p);
			return r;
		}
	}
	if (renameat2(p->partial_fd, p->tmp, p->cache_fd, p->name, RENAME_NOREPLACE) < 0) {
		r = -errno;
		worker_cache_partial_abort(p);
		return r;
	}
	/* After the rename: a non-root owner cannot move a directory it cannot write. */
	fchmod(p->fd, 0555);
	close(p->fd);
	p->fd = -1;
	p->removed = true;
	p->final_size = wq_listing_bytes(listing);
	return 0;
}

int worker_cache_end(struct worker_cache *c, struct worker_cache_partial *p, bool committed)
{
	int r = 0;
	struct obj *o = find(c, p->name);
	c->reserved -= p->size < c->reserved ? p->size : c->reserved;
	if (!committed) {
		r = worker_cache_partial_abort(p);
		if (o && o->state == OBJ_RECEIVING) {
			HASH_DEL(c->index, o);
			free(o);
		}
	} else if (o) {
		o->state = OBJ_COMPLETE;
		o->size = p->final_size;
		c->bytes += o->size;
		if (o->dropped) {
			r = remove_object(c, o);
		} else if (o->keep == WORKER_CACHE_KEEP_WORKER) {
			int fd = openat(c->keep_fd, o->name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
			if (fd >= 0)
				close(fd);
		}
	}
	if (p->fd >= 0)
		close(p->fd);
	sha256_ctx_delete(p->ctx);
	free(p->tmp_path);
	free(p);
	return r;
}

/* ---- scan and master_id ------------------------------------------------------------------- */

/* Checks object NAME of the cache; returns its size (>= 0) or a negative code if it must go. */
static int64_t check_object(struct worker_cache *c, const char *name, bool verify)
{
	struct stat st;
	if (fstatat(c->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (name[0] != 'D') {
		if (!S_ISREG(st.st_mode))
			return HTC_ECORRUPT;
		if (!verify || name[0] == 'U')
			return st.st_size;
		int fd = openat(c->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		char hex[SHA256_HEX_SIZE];
		uint64_t size = 0;
		int r = wq_listing_hash_fd(fd, hex, &size);
		close(fd);
		if (r < 0)
			return r;
		return strcmp(hex, name + 2) ? HTC_ECORRUPT : (int64_t)size;
	}
	if (!S_ISDIR(st.st_mode))
		return HTC_ECORRUPT;
	int fd = openat(c->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct wq_listing *l = NULL;
	char *why = NULL;
	int r = wq_listing_walk(fd, name, verify ? 0 : WQ_LISTING_NO_HASH, &l, &why);
	close(fd);
	int64_t result;
	if (r < 0) {
		debug(D_WORKER, "cache scan: %s", why);
		result = HTC_ECORRUPT;
	} else if (verify) {
		char hex[SHA256_HEX_SIZE];
		r = wq_listing_hash(l, hex);
		result = r < 0                   ? r
		         : strcmp(hex, name + 2) ? HTC_ECORRUPT
		                                 : (int64_t)wq_listing_bytes(l);
	} else {
		result = (int64_t)wq_listing_bytes(l);
	}
	free(why);
	wq_listing_delete(l);
	return result;
}

int worker_cache_scan(struct worker_cache *c, bool verify)
{
	struct obj *o, *tmp;
	HASH_ITER(hh, c->index, o, tmp)
	{
		HASH_DEL(c->index, o);
		free(o);
	}
	c->bytes = 0;
	c->reserved = 0;
	int deleted = 0;
	empty_dir(c->partial_fd, c->partial_path);
	worker_cache_empty_trash(c->fd, c->path);

	int dfd = openat(c->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		return -e;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, ".partial") ||
		    !strcmp(n, ".trash") || !strcmp(n, ".keep") || !strcmp(n, MASTER_ID_FILE))
			continue;
		int64_t size = worker_cache_name_valid(n) ? check_object(c, n, verify) : HTC_EPARSE;
		if (size < 0) {
			notice("cache: deleting %s/%s: %s", c->path, n,
			       size == HTC_EPARSE ? "not a cache object name"
			       : size == HTC_ECORRUPT
			           ? "wrong type, a link inside, or content not matching its name"
			           : strerror((int)-size));
			remove_entry(c->fd, c->path, n);
			deleted++;
			continue;
		}
		struct stat st;
		enum worker_cache_keep keep = fstatat(c->keep_fd, n, &st, AT_SYMLINK_NOFOLLOW) == 0
		                                  ? WORKER_CACHE_KEEP_WORKER
		                                  : WORKER_CACHE_KEEP_RUN;
		add_obj(c, n, OBJ_COMPLETE, (uint64_t)size, keep);
	}
	closedir(d);

	/* Markers of objects that are gone. */
	dfd = openat(c->keep_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0 && (d = fdopendir(dfd))) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (!find(c, de->d_name))
				unlinkat(c->keep_fd, de->d_name, 0);
		}
		closedir(d);
	} else if (dfd >= 0) {
		close(dfd);
	}
	debug(D_WORKER, "cache scan: %zu objects, %llu bytes, %d deleted", worker_cache_count(c),
	      (unsigned long long)c->bytes, deleted);
	return deleted;
}

int worker_cache_set_master(struct worker_cache *c, const char *master_id)
{
	char old[MASTER_ID_MAX + 1];
	ssize_t n = -1;
	int fd = openat(c->fd, MASTER_ID_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, old, MASTER_ID_MAX);
		close(fd);
	}
	if (n >= 0) {
		old[n] = 0;
		if (!strcmp(old, master_id))
			return 0;
	}
	int deleted = 0;
	struct obj *o, *tmp;
	HASH_ITER(hh, c->index, o, tmp)
	{
		if (o->keep != WORKER_CACHE_KEEP_RUN || o->state != OBJ_COMPLETE)
			continue;
		if (o->is_dir && o->refs > 0) {
			o->dropped = true;
			continue;
		}
		remove_object(c, o);
		deleted++;
	}
	if (deleted > 0)
		notice("cache: a new master: %d objects of the previous one deleted", deleted);
	else
		debug(D_WORKER, "cache: a new master, no objects of a previous one");
	worker_cache_empty_trash(c->fd, c->path);
	char *p = path_join(c->path, MASTER_ID_FILE);
	int r = atomic_file_write(p, master_id, strlen(master_id), 0644);
	free(p);
	return r < 0 ? r : deleted;
}

/* ---- free space --------------------------------------------------------------------------- */

uint64_t wq_disk_reserve(uint64_t total)
{
	uint64_t pct = total / 100;
	return pct > WQ_DISK_RESERVE_MIN ? pct : WQ_DISK_RESERVE_MIN;
}

int wq_disk_info(const char *path, struct wq_disk_info *info)
{
	struct statvfs s;
	memset(info, 0, sizeof(*info));
	if (statvfs(path, &s) < 0)
		return -errno;
	uint64_t frsize = s.f_frsize ? s.f_frsize : s.f_bsize;
	info->fs_total = (uint64_t)s.f_blocks * frsize;
	info->fs_avail = (uint64_t)s.f_bavail * frsize;
	info->reserve = wq_disk_reserve(info->fs_total);
	info->usable = info->fs_avail > info->reserve ? info->fs_avail - info->reserve : 0;
	info->disk_full = info->fs_avail < info->reserve;
	return 0;
}

int64_t wq_disk_free_mb(const struct wq_disk_info *info, uint64_t disk_total_bytes,
                        uint64_t cache_bytes, uint64_t sandbox_bytes)
{
	uint64_t used = cache_bytes + sandbox_bytes;
	uint64_t share = disk_total_bytes > used ? disk_total_bytes - used : 0;
	uint64_t v = info->usable < share ? info->usable : share;
	return (int64_t)(v >> 20);
}

/* ---- the transfer receiver's sink (wq_xfer.h) ------------------------------------------------ */

static int sink_store(void *obj, const void *data, size_t len)
{
	return worker_cache_partial_store(obj, data, len);
}

static int sink_finish_file(void *obj, const char *hex, const char *want)
{
	return worker_cache_partial_finish_hashed(obj, hex, want);
}

static int sink_dirfd(const void *obj)
{
	return worker_cache_partial_dirfd(obj);
}

static int sink_finish_dir(void *obj, struct wq_listing *listing, uint64_t entries,
                           const char *want)
{
	return worker_cache_partial_finish_dir(obj, listing, entries, want);
}

static int sink_abort(void *obj)
{
	return worker_cache_partial_abort(obj);
}

const struct wq_xfer_sink_ops worker_cache_sink_ops = {
    .store = sink_store,
    .finish_file = sink_finish_file,
    .dirfd = sink_dirfd,
    .finish_dir = sink_finish_dir,
    .abort = sink_abort,
};
