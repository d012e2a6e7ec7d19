/* engine_archive.c: the archive of completed rules. A rule's key is the SHA-256 of its
 * command, environment, input names and contents, and output names; its entry is the
 * directory jobs/KK/KEY (KK: the key's first two digits) holding job.json and one copy per
 * output, built under tmp/ and renamed into place, so an entry is whole or absent. */
#include "engine_archive.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "atomic_file.h"
#include "debug.h"
#include "dir_entries.h"
#include "engine_copy.h"
#include "htc_error.h"
#include "path.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

#define ARCHIVE_FORMAT "htc-makeflow-archive 1"

/* Content hashes of regular files already read in this run, checked by size and time. */
struct hashed {
	char *name;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	char hex[SHA256_HEX_SIZE];
	UT_hash_handle hh;
};

/* The key of a submitted rule, until it is stored: memory follows the rules in flight, not
 * the size of the workflow. */
struct pending {
	int id;
	char key[SHA256_HEX_SIZE];
	UT_hash_handle hh;
};

struct engine_archive {
	char *dir;
	int read, write;
	struct pending *pending; /* keys of the rules submitted and not yet stored */
	struct hashed *hashes;
	unsigned seq; /* names of entries being built */
	int64_t restored, stored;
};

/* The name under tmp/ of an entry being built: KEY.HOST.PID.SEQ. */
static char *tmp_name(struct engine_archive *a, const char *key)
{
	char host[256] = "localhost";
	gethostname(host, sizeof host - 1);
	host[sizeof host - 1] = 0;
	return xasprintf("%s/tmp/%s.%s.%ld.%u", a->dir, key, host, (long)getpid(), a->seq++);
}

/* An entry under tmp/ that a process of this host, now gone, was building (killed while
 * storing) is removed; those of other hosts and of live processes are left. */
static int sweep_one(int dirfd, const char *name, unsigned char type, void *arg)
{
	(void)dirfd;
	(void)type;
	const char *tmpdir = arg;
	size_t len = strlen(name);
	if (len < SHA256_HEX_SIZE + 4 || name[SHA256_HEX_SIZE - 1] != '.')
		return 0;
	const char *last = strrchr(name, '.');
	const char *p = last;
	while (p > name + SHA256_HEX_SIZE && p[-1] != '.')
		p--;
	if (p <= name + SHA256_HEX_SIZE)
		return 0;
	/* name = KEY '.' HOST '.' PID '.' SEQ; p points at PID */
	char host[256] = "localhost";
	gethostname(host, sizeof host - 1);
	host[sizeof host - 1] = 0;
	size_t hlen = (size_t)(p - 1 - (name + SHA256_HEX_SIZE));
	if (hlen != strlen(host) || strncmp(name + SHA256_HEX_SIZE, host, hlen))
		return 0;
	char *end = NULL;
	long pid = strtol(p, &end, 10);
	if (end != last || pid <= 0 || pid > INT_MAX)
		return 0;
	if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return 0;
	char *path = path_join(tmpdir, name);
	debug(D_MAKEFLOW, "archive: removing %s, left by process %ld", path, pid);
	path_rm_rf(path);
	free(path);
	return 0;
}

static void sweep_tmp(const char *tmpdir)
{
	int fd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	dir_entries(fd, sweep_one, (void *)tmpdir);
	close(fd);
}

struct engine_archive *engine_archive_create(const char *dir, int read, int write, char *err,
                                             size_t errlen)
{
	char *jobs = path_join(dir, "jobs");
	char *tmp = path_join(dir, "tmp");
	int r = path_mkdir_p(jobs, 0777);
	if (r == 0)
		r = path_mkdir_p(tmp, 0777);
	if (r == 0 && write && access(tmp, W_OK) < 0)
		r = -errno;
	if (r == 0 && write)
		sweep_tmp(tmp);
	free(jobs);
	free(tmp);
	if (r < 0) {
		snprintf(err, errlen, "archive %s: %s", dir, strerror(-r));
		errno = -r;
		return NULL;
	}
	struct engine_archive *a = xcalloc(1, sizeof *a);
	a->dir = xstrdup(dir);
	a->read = read;
	a->write = write;
	return a;
}

void engine_archive_delete(struct engine_archive *a)
{
	if (!a)
		return;
	struct hashed *h, *tmp;
	HASH_ITER(hh, a->hashes, h, tmp)
	{
		HASH_DEL(a->hashes, h);
		free(h->name);
		free(h);
	}
	struct pending *p, *ptmp;
	HASH_ITER(hh, a->pending, p, ptmp)
	{
		HASH_DEL(a->pending, p);
		free(p);
	}
	free(a->dir);
	free(a);
}

void engine_archive_report(const struct engine_archive *a)
{
	if (a && (a->restored || a->stored))
		notice("archive %s: %lld rule%s restored, %lld stored", a->dir,
		       (long long)a->restored, a->restored == 1 ? "" : "s", (long long)a->stored);
}

char *engine_archive_entry(const struct engine_archive *a, const char *key)
{
	return xasprintf("%s/jobs/%.2s/%s", a->dir, key, key);
}

/* "TAG LEN:TEXT\n": no two different sequences of fields feed the same bytes. */
static int feed(struct sha256_ctx *c, const char *tag, const char *text)
{
	char head[64];
	size_t len = strlen(text);
	int n = snprintf(head, sizeof head, "%s %zu:", tag, len);
	if (sha256_ctx_update(c, head, (size_t)n) < 0 || sha256_ctx_update(c, text, len) < 0 ||
	    sha256_ctx_update(c, "\n", 1) < 0)
		return -EIO;
	return 0;
}

static int hash_path(struct engine_archive *a, const char *path, int depth,
                     char out[SHA256_HEX_SIZE]);

struct names {
	char **v;
	size_t n, cap;
};

static int collect(int dirfd, const char *name, unsigned char type, void *arg)
{
	(void)dirfd;
	(void)type;
	struct names *ns = arg;
	if (ns->n >= 1000000)
		return -E2BIG;
	VEC_PUSH(ns->v, ns->n, ns->cap, xstrdup(name));
	return 0;
}

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* A directory: its sorted entries with the hash of each. */
static int hash_dir(struct engine_archive *a, const char *path, int depth,
                    char out[SHA256_HEX_SIZE])
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct names ns = {0};
	int r = dir_entries(fd, collect, &ns);
	close(fd);
	struct sha256_ctx *c = r == 0 ? sha256_ctx_create() : NULL;
	if (r == 0 && !c)
		r = -ENOMEM;
	if (r == 0) {
		qsort(ns.v, ns.n, sizeof *ns.v, cmp_names);
		r = feed(c, "dir", "");
	}
	for (size_t i = 0; r == 0 && i < ns.n; i++) {
		char *p = path_join(path, ns.v[i]);
		char h[SHA256_HEX_SIZE];
		r = hash_path(a, p, depth + 1, h);
		free(p);
		if (r == 0)
			r = feed(c, "entry", ns.v[i]);
		if (r == 0)
			r = feed(c, "hash", h);
	}
	if (r == 0)
		r = sha256_ctx_final(c, out);
	sha256_ctx_delete(c);
	for (size_t i = 0; i < ns.n; i++)
		free(ns.v[i]);
	free(ns.v);
	return r;
}

/* The content hash of PATH: a file's bytes, a directory's tree, a link's target text. */
static int hash_path(struct engine_archive *a, const char *path, int depth,
                     char out[SHA256_HEX_SIZE])
{
	if (depth > 256)
		return -ELOOP;
	struct stat st;
	if ((depth == 0 ? stat(path, &st) : lstat(path, &st)) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return hash_dir(a, path, depth, out);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX + 3] = "l:";
		ssize_t n = readlink(path, target + 2, PATH_MAX);
		if (n < 0)
			return -errno;
		target[n + 2] = 0;
		return sha256_buffer(target, (size_t)n + 2, out);
	}
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	struct hashed *h = NULL;
	HASH_FIND_STR(a->hashes, path, h);
	if (h && h->dev == st.st_dev && h->ino == st.st_ino && h->size == st.st_size &&
	    h->mtime.tv_sec == st.st_mtim.tv_sec && h->mtime.tv_nsec == st.st_mtim.tv_nsec) {
		memcpy(out, h->hex, SHA256_HEX_SIZE);
		return 0;
	}
	int r = sha256_file(path, out);
	if (r < 0)
		return r;
	if (!h) {
		h = xcalloc(1, sizeof *h);
		h->name = xstrdup(path);
		HASH_ADD_KEYPTR(hh, a->hashes, h->name, strlen(h->name), h);
	}
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	h->size = st.st_size;
	h->mtime = st.st_mtim;
	memcpy(h->hex, out, SHA256_HEX_SIZE);
	return 0;
}

static const char *sandbox_name(const struct dag_file_ref *ref)
{
	return ref->remote_name ? ref->remote_name : ref->file->name;
}

int engine_archive_key(struct engine_archive *a, const struct dag_node *n, const char *command,
                       char key[SHA256_HEX_SIZE])
{
	struct sha256_ctx *c = sha256_ctx_create();
	if (!c)
		return -ENOMEM;
	int r = feed(c, "format", ARCHIVE_FORMAT);
	if (r == 0)
		r = feed(c, "command", command);
	for (int i = 0; r == 0 && n->env && i < n->env->count; i++)
		r = feed(c, "env", n->env->vars[i]);
	for (int i = 0; r == 0 && i < n->ninputs; i++) {
		char h[SHA256_HEX_SIZE];
		r = hash_path(a, n->inputs[i].file->name, 0, h);
		if (r < 0)
			break;
		r = feed(c, "input", sandbox_name(&n->inputs[i]));
		if (r == 0)
			r = feed(c, "content", h);
	}
	for (int i = 0; r == 0 && i < n->noutputs; i++)
		r = feed(c, "output", sandbox_name(&n->outputs[i]));
	if (r == 0)
		r = sha256_ctx_final(c, key);
	sha256_ctx_delete(c);
	return r;
}

/* Copies the archived outputs of N from ENTRY into place. */
static int restore(const struct dag_node *n, const char *entry)
{
	for (int i = 0; i < n->noutputs; i++) {
		char *src = xasprintf("%s/outputs/%d", entry, i);
		int ok = path_exists(src);
		free(src);
		if (!ok)
			return -ENOENT;
	}
	for (int i = 0; i < n->noutputs; i++) {
		const char *name = n->outputs[i].file->name;
		char *src = xasprintf("%s/outputs/%d", entry, i);
		char *dir = path_dirname(name);
		path_mkdir_p(dir, 0777);
		int r = engine_copy_replace(src, name);
		free(dir);
		free(src);
		if (r < 0)
			return r;
	}
	return 0;
}

int engine_archive_lookup(struct engine_archive *a, const struct dag_node *n, const char *command)
{
	struct pending *p = NULL;
	HASH_FIND_INT(a->pending, &n->id, p);
	if (!p) {
		p = xcalloc(1, sizeof *p);
		p->id = n->id;
		HASH_ADD_INT(a->pending, id, p);
	}
	char *key = p->key;
	int r = engine_archive_key(a, n, command, key);
	if (r < 0) {
		HASH_DEL(a->pending, p);
		free(p);
		warn("archive: rule %d (line %d) is not archived: cannot hash its inputs: %s",
		     n->id, n->line, strerror(-r));
		return 0;
	}
	debug(D_MAKEFLOW, "archive: rule %d has key %s", n->id, key);
	if (!a->read)
		return 0;
	char *entry = engine_archive_entry(a, key);
	char *job = path_join(entry, "job.json");
	int found = path_exists(job);
	free(job);
	if (found) {
		r = restore(n, entry);
		if (r < 0) {
			warn("archive: rule %d (line %d): cannot restore from %s (%s); running it",
			     n->id, n->line, entry, strerror(-r));
			found = 0;
		}
	}
	free(entry);
	if (found) {
		HASH_DEL(a->pending, p);
		free(p);
	}
	a->restored += found;
	return found;
}

static int write_job(const struct dag_node *n, const char *key, const char *dir)
{
	json_t *o = json_object();
	json_object_set_new(o, "format", json_string(ARCHIVE_FORMAT));
	json_object_set_new(o, "key", json_string(key));
	json_object_set_new(o, "command", json_string(n->command));
	json_object_set_new(o, "created", json_integer((json_int_t)time(NULL)));
	json_t *outs = json_array();
	for (int i = 0; i < n->noutputs; i++)
		json_array_append_new(outs, json_string(sandbox_name(&n->outputs[i])));
	json_object_set_new(o, "outputs", outs);
	char *text = json_dumps(o, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(o);
	if (!text)
		return -ENOMEM;
	char *path = path_join(dir, "job.json");
	int r = atomic_file_write(path, text, strlen(text), 0644);
	free(path);
	free(text);
	return r;
}

int engine_archive_store(struct engine_archive *a, const struct dag_node *n)
{
	struct pending *p = NULL;
	HASH_FIND_INT(a->pending, &n->id, p);
	if (!p)
		return 0;
	HASH_DEL(a->pending, p);
	char key[SHA256_HEX_SIZE];
	memcpy(key, p->key, sizeof key);
	free(p);
	if (!a->write)
		return 0;
	char *entry = engine_archive_entry(a, key);
	char *job = path_join(entry, "job.json");
	int have = path_exists(job);
	free(job);
	if (have) {
		free(entry);
		return 0;
	}
	char *tmp = tmp_name(a, key);
	char *outs = path_join(tmp, "outputs");
	path_rm_rf(tmp);
	int r = path_mkdir_p(outs, 0777);
	for (int i = 0; r == 0 && i < n->noutputs; i++) {
		char *dst = xasprintf("%s/%d", outs, i);
		r = engine_copy(n->outputs[i].file->name, dst, 0);
		free(dst);
	}
	if (r == 0) {
		/* one flush of the file system for all the copies (an fsync per file costs
		 * seconds for an output of a few thousand files), before the entry can appear */
		int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || syncfs(fd) < 0)
			r = -errno;
		if (fd >= 0)
			close(fd);
	}
	if (r == 0)
		r = write_job(n, key, tmp);
	if (r == 0) {
		char *parent = path_dirname(entry);
		r = path_mkdir_p(parent, 0777);
		if (r == 0 && rename(tmp, entry) < 0) {
			r = -errno;
			if (r == -EEXIST || r == -ENOTEMPTY) {
				/* stored meanwhile by another run; a directory there without
				 * its record was not made by a rename from tmp/: replace it */
				char *rec = path_join(entry, "job.json");
				r = 0;
				if (!path_exists(rec)) {
					path_rm_rf(entry);
					if (rename(tmp, entry) < 0)
						r = -errno;
				}
				free(rec);
			}
		}
		if (r == 0)
			fsync_dir(parent);
		free(parent);
	}
	if (r < 0)
		warn("archive: cannot store rule %d (line %d) in %s: %s", n->id, n->line, a->dir,
		     strerror(-r));
	else {
		a->stored++;
		debug(D_MAKEFLOW, "archive: rule %d stored as %s", n->id, entry);
	}
	path_rm_rf(tmp);
	free(outs);
	free(tmp);
	free(entry);
	return r;
}
