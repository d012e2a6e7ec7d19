/* wq_listing.c: directory listings of section 5.5 of the protocol, shared by master and worker.
 * Entries live in a uthash table (for duplicate and parent checks) and a pointer array that is
 * sorted by path on demand; the walker reads a tree without following links and streams each
 * file through SHA-256. */
#include "wq_listing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uthash.h>

#include "buffer.h"
#include "htc_error.h"
#include "path.h"
#include "xalloc.h"
#include "vec.h"
#include "banned.h"

struct node {
	struct wq_listing_entry e;
	char *path;
	UT_hash_handle hh;
};

struct wq_listing {
	struct node *table; /* uthash by path */
	struct node **array;
	size_t count;
	size_t alloc;
	uint64_t bytes;
	bool sorted;
	bool no_hash;
};

struct wq_listing *wq_listing_create(void)
{
	struct wq_listing *l = xcalloc(1, sizeof(*l));
	l->sorted = true;
	return l;
}

void wq_listing_delete(struct wq_listing *l)
{
	if (!l)
		return;
	HASH_CLEAR(hh, l->table);
	for (size_t i = 0; i < l->count; i++) {
		free(l->array[i]->path);
		free(l->array[i]);
	}
	free(l->array);
	free(l);
}

/* Checks PATH as a listing path; the protocol's own name check (wq_name) is stricter on
 * wording, this one protects the listing format (a newline would forge a line). */
static int check_path(const char *path)
{
	size_t len = strlen(path);
	if (len == 0 || len > WQ_LISTING_MAX_PATH || path[0] == '/')
		return HTC_EPARSE;
	int comps = 1;
	const char *start = path;
	for (const char *p = path;; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '/' || c == 0) {
			size_t n = (size_t)(p - start);
			if (n == 0 || n > 255 || (n == 1 && start[0] == '.') ||
			    (n == 2 && start[0] == '.' && start[1] == '.'))
				return HTC_EPARSE;
			if (c == 0)
				break;
			comps++;
			start = p + 1;
		} else if (c < 0x20 || c == 0x7f) {
			return HTC_EPARSE;
		}
	}
	return comps > WQ_LISTING_MAX_DEPTH ? HTC_EPARSE : 0;
}

static bool is_hex64(const char *s)
{
	if (!s || strlen(s) != 64)
		return false;
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool wq_listing_has_dir(const struct wq_listing *l, const char *path)
{
	if (!path[0])
		return true;
	struct node *n = NULL;
	HASH_FIND_STR(l->table, path, n);
	return n && n->e.is_dir;
}

static int add(struct wq_listing *l, const char *path, bool is_dir, bool exec, uint64_t size,
               const char *sha)
{
	int r = check_path(path);
	if (r < 0)
		return r;
	if (!is_dir && !is_hex64(sha))
		return HTC_EPARSE;
	struct node *n = NULL;
	HASH_FIND_STR(l->table, path, n);
	if (n)
		return HTC_EDUP;
	const char *slash = strrchr(path, '/');
	if (slash) {
		char *parent = xstrndup(path, (size_t)(slash - path));
		bool ok = wq_listing_has_dir(l, parent);
		free(parent);
		if (!ok)
			return HTC_EUNDEF;
	}
	if (l->count >= WQ_LISTING_MAX_ENTRIES)
		return HTC_ELIMIT;
	n = xcalloc(1, sizeof(*n));
	n->path = xstrdup(path);
	n->e.path = n->path;
	n->e.is_dir = is_dir;
	if (!is_dir) {
		n->e.exec = exec;
		n->e.size = size;
		memcpy(n->e.sha256, sha, SHA256_HEX_SIZE);
		l->bytes += size;
	}
	VEC_PUSH(l->array, l->count, l->alloc, n);
	l->sorted = false;
	HASH_ADD_KEYPTR(hh, l->table, n->path, strlen(n->path), n);
	return 0;
}

int wq_listing_add_dir(struct wq_listing *l, const char *path)
{
	return add(l, path, true, false, 0, NULL);
}

int wq_listing_add_file(struct wq_listing *l, const char *path, bool exec, uint64_t size,
                        const char *sha256hex)
{
	return add(l, path, false, exec, size, sha256hex);
}

size_t wq_listing_count(const struct wq_listing *l)
{
	return l->count;
}

uint64_t wq_listing_bytes(const struct wq_listing *l)
{
	return l->bytes;
}

static int cmp_node(const void *a, const void *b)
{
	const struct node *x = *(const struct node *const *)a;
	const struct node *y = *(const struct node *const *)b;
	return strcmp(x->path, y->path);
}

static void sort(struct wq_listing *l)
{
	if (!l->sorted) {
		qsort(l->array, l->count, sizeof(*l->array), cmp_node);
		l->sorted = true;
	}
}

const struct wq_listing_entry *wq_listing_get(struct wq_listing *l, size_t i)
{
	sort(l);
	return i < l->count ? &l->array[i]->e : NULL;
}

/* Formats entry E as its listing line into LINE; returns the length. */
static size_t format_line(const struct wq_listing_entry *e, char *line, size_t size)
{
	int n;
	if (e->is_dir)
		n = snprintf(line, size, "d %s\n", e->path);
	else
		n = snprintf(line, size, "f %c %llu %s %s\n", e->exec ? 'x' : '-',
		             (unsigned long long)e->size, e->sha256, e->path);
	return n < 0 ? 0 : (size_t)n;
}

#define LINE_MAX_BYTES (WQ_LISTING_MAX_PATH + 128)

char *wq_listing_text(struct wq_listing *l, size_t *len)
{
	if (l->no_hash)
		return NULL;
	sort(l);
	struct buffer b;
	buffer_init(&b, 0);
	char line[LINE_MAX_BYTES];
	for (size_t i = 0; i < l->count; i++) {
		size_t n = format_line(&l->array[i]->e, line, sizeof(line));
		buffer_putlstring(&b, line, n);
	}
	return buffer_steal(&b, len);
}

int wq_listing_hash(struct wq_listing *l, char out_hex[SHA256_HEX_SIZE])
{
	out_hex[0] = 0;
	if (l->no_hash)
		return -EINVAL;
	sort(l);
	struct sha256_ctx *ctx = sha256_ctx_create();
	if (!ctx)
		return -ENOMEM;
	char line[LINE_MAX_BYTES];
	int r = 0;
	for (size_t i = 0; i < l->count && r == 0; i++) {
		size_t n = format_line(&l->array[i]->e, line, sizeof(line));
		r = sha256_ctx_update(ctx, line, n);
	}
	if (r == 0)
		r = sha256_ctx_final(ctx, out_hex);
	sha256_ctx_delete(ctx);
	return r;
}

#define HASH_CHUNK 65536

int wq_listing_hash_fd(int fd, char out_hex[SHA256_HEX_SIZE], uint64_t *size)
{
	out_hex[0] = 0;
	struct sha256_ctx *ctx = sha256_ctx_create();
	if (!ctx)
		return -ENOMEM;
	char *buf = xmalloc(HASH_CHUNK);
	uint64_t off = 0;
	int r = 0;
	for (;;) {
		ssize_t n = pread(fd, buf, HASH_CHUNK, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		r = sha256_ctx_update(ctx, buf, (size_t)n);
		if (r < 0)
			break;
		off += (uint64_t)n;
	}
	if (r == 0)
		r = sha256_ctx_final(ctx, out_hex);
	if (r == 0 && size)
		*size = off;
	free(buf);
	sha256_ctx_delete(ctx);
	return r;
}

/* ---- the walk ------------------------------------------------------------------------------ */

struct ancestor {
	dev_t dev;
	ino_t ino;
};

struct walk {
	struct wq_listing *l;
	int flags;
	const char *label;
	char **why;
	char path[WQ_LISTING_MAX_PATH + 300]; /* the current relative path */
	struct ancestor stack[WQ_LISTING_MAX_DEPTH + 1];
};

static int fail(struct walk *w, int code, const char *what)
{
	const char *lab = w->label && w->label[0] ? w->label : "";
	const char *sep = lab[0] && w->path[0] ? "/" : "";
	const char *p = w->path[0] || lab[0] ? w->path : ".";
	if (what)
		*w->why = xasprintf("%s: %s%s%s", what, lab, sep, p);
	else
		*w->why = xasprintf("%s%s%s: %s", lab, sep, p, strerror(-code));
	return code;
}

static int walk_file(struct walk *w, int dfd, const char *name)
{
	if (w->flags & WQ_LISTING_NO_HASH) {
		struct stat st;
		int sflags = (w->flags & WQ_LISTING_FOLLOW_LINKS) ? 0 : AT_SYMLINK_NOFOLLOW;
		if (fstatat(dfd, name, &st, sflags) < 0)
			return fail(w, -errno, NULL);
		if (S_ISLNK(st.st_mode))
			return fail(w, -ELOOP, "is a symbolic link");
		if (!S_ISREG(st.st_mode))
			return fail(w, -EINVAL, "is not a regular file");
		static const char zero[SHA256_HEX_SIZE] =
		    "0000000000000000000000000000000000000000000000000000000000000000";
		int r = wq_listing_add_file(w->l, w->path, (st.st_mode & 0111) != 0,
		                            (uint64_t)st.st_size, zero);
		return r < 0 ? fail(w, r, "cannot list") : 0;
	}
	int oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
	if (!(w->flags & WQ_LISTING_FOLLOW_LINKS))
		oflags |= O_NOFOLLOW;
	int fd = openat(dfd, name, oflags);
	if (fd < 0) {
		if (errno == ELOOP)
			return fail(w, -ELOOP, "is a symbolic link");
		if (errno == ENXIO) /* a socket */
			return fail(w, -EINVAL, "is not a regular file");
		return fail(w, -errno, NULL);
	}
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0) {
		r = fail(w, -errno, NULL);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = fail(w, -EINVAL, "is not a regular file");
		goto out;
	}
	char hex[SHA256_HEX_SIZE];
	uint64_t size;
	r = wq_listing_hash_fd(fd, hex, &size);
	if (r < 0) {
		fail(w, r, NULL);
		goto out;
	}
	r = wq_listing_add_file(w->l, w->path, (st.st_mode & 0111) != 0, size, hex);
	if (r == HTC_ELIMIT)
		fail(w, r, "more than 100000 entries");
	else if (r < 0)
		fail(w, r, "cannot list");
out:
	close(fd);
	return r;
}

/* Lists the directory open as DFD (closed here) at DEPTH (0 = root); W->path holds its
 * relative path. */
static int walk_dir(struct walk *w, int dfd, int depth)
{
	int e = 0;
	DIR *d = path_fdopendir(dfd, &e);
	if (!d)
		return fail(w, e, NULL);
	size_t base = strlen(w->path);
	int r = 0;
	struct dirent *de;
	while ((errno = 0, de = readdir(d))) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		size_t nl = strlen(name);
		if (base + (base ? 1 : 0) + nl > WQ_LISTING_MAX_PATH) {
			/* show the parent: the full path is too long to print */
			r = fail(w, HTC_ELIMIT, "path longer than 1024 bytes");
			break;
		}
		if (base)
			w->path[base] = '/';
		memcpy(w->path + base + (base ? 1 : 0), name, nl + 1);
		for (size_t i = 0; i < nl; i++) {
			unsigned char c = (unsigned char)name[i];
			if (c < 0x20 || c == 0x7f) {
				r = fail(w, HTC_EPARSE, "name with a control character");
				break;
			}
		}
		if (r < 0)
			break;
		if (depth + 1 > WQ_LISTING_MAX_DEPTH) {
			r = fail(w, HTC_ELIMIT, "deeper than 64 levels");
			break;
		}
		struct stat st;
		int sflags = (w->flags & WQ_LISTING_FOLLOW_LINKS) ? 0 : AT_SYMLINK_NOFOLLOW;
		if (fstatat(dirfd(d), name, &st, sflags) < 0) {
			r = fail(w, -errno, NULL);
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			r = fail(w, -ELOOP, "is a symbolic link");
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			if (wq_listing_count(w->l) >= WQ_LISTING_MAX_ENTRIES) {
				r = fail(w, HTC_ELIMIT, "more than 100000 entries");
				break;
			}
			int oflags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
			if (!(w->flags & WQ_LISTING_FOLLOW_LINKS))
				oflags |= O_NOFOLLOW;
			int sub = openat(dirfd(d), name, oflags);
			if (sub < 0) {
				r = fail(w, errno == ELOOP ? -ELOOP : -errno,
				         errno == ELOOP ? "is a symbolic link" : NULL);
				break;
			}
			struct stat sst;
			if (fstat(sub, &sst) < 0) {
				r = fail(w, -errno, NULL);
				close(sub);
				break;
			}
			for (int i = 0; i <= depth; i++) {
				if (w->stack[i].dev == sst.st_dev &&
				    w->stack[i].ino == sst.st_ino) {
					r = fail(w, HTC_ECYCLE, "directory cycle");
					break;
				}
			}
			if (r < 0) {
				close(sub);
				break;
			}
			w->stack[depth + 1].dev = sst.st_dev;
			w->stack[depth + 1].ino = sst.st_ino;
			r = wq_listing_add_dir(w->l, w->path);
			if (r < 0) {
				fail(w, r, "cannot list");
				close(sub);
				break;
			}
			r = walk_dir(w, sub, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			if (wq_listing_count(w->l) >= WQ_LISTING_MAX_ENTRIES) {
				r = fail(w, HTC_ELIMIT, "more than 100000 entries");
				break;
			}
			r = walk_file(w, dirfd(d), name);
		} else {
			r = fail(w, -EINVAL, "is not a regular file");
		}
		if (r < 0)
			break;
		w->path[base] = 0;
	}
	if (r == 0 && errno) {
		w->path[base] = 0;
		r = fail(w, -errno, NULL);
	}
	closedir(d);
	return r;
}

int wq_listing_walk(int dirfd, const char *label, int flags, struct wq_listing **out, char **why)
{
	*out = NULL;
	*why = NULL;
	struct walk *w = xcalloc(1, sizeof(*w));
	w->l = wq_listing_create();
	w->l->no_hash = (flags & WQ_LISTING_NO_HASH) != 0;
	w->flags = flags;
	w->label = label;
	w->why = why;
	/* A new open file description: readdir must not move the caller's offset. */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;
	if (fd < 0) {
		r = fail(w, -errno, NULL);
	} else {
		struct stat st;
		if (fstat(fd, &st) == 0) {
			w->stack[0].dev = st.st_dev;
			w->stack[0].ino = st.st_ino;
		}
		r = walk_dir(w, fd, 0);
	}
	if (r < 0)
		wq_listing_delete(w->l);
	else
		*out = w->l;
	free(w);
	return r;
}
