/* rmon_cgroup_layout.c: finds where the resource monitor's cgroups go, once per process: the
 * layout (v1 hierarchies or the v2 tree, our own group in each, the parent "htc" groups) is
 * cached under a mutex, keyed by the root and the /proc/self/cgroup file so that tests with
 * fake roots keep working. Also the small file helpers of the cgroup backend. */
#include "rmon_cgroup_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "stringtools.h"
#include "xalloc.h"
#include "banned.h"

const char *const rmon_cg_ctrl_names[C_N] = {"memory", "cpu",     "cpuacct", "pids",
                                             "cpuset", "freezer", "blkio"};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rmon_cg_layout *cache;

ssize_t rmon_read_file(const char *path, char *buf, size_t size)
{
	if (size == 0)
		return -EINVAL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len + 1 < size) {
		ssize_t r = read(fd, buf + len, size - 1 - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = 0;
	close(fd);
	return (ssize_t)len;
}

int rmon_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text);
	ssize_t w = write(fd, text, n);
	int e = 0;
	if (w < 0)
		e = -errno;
	else if ((size_t)w != n)
		e = -EIO;
	close(fd);
	return e;
}

int rmon_cg_write_in(const char *dir, const char *file, const char *text)
{
	char *p = path_join(dir, file);
	int r = rmon_write_file(p, text);
	debug(D_RMON, "cgroup: %s <- %s: %s", p, text, r ? htc_strerror(r) : "ok");
	free(p);
	return r;
}

ssize_t rmon_cg_read_in(const char *dir, const char *file, char *buf, size_t size)
{
	char *p = path_join(dir, file);
	ssize_t r = rmon_read_file(p, buf, size);
	free(p);
	return r;
}

int rmon_cg_has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;
	while ((p = strstr(p, word)) != NULL) {
		int start_ok = p == list || p[-1] == ' ' || p[-1] == '\n' || p[-1] == '\t';
		char c = p[n];
		if (start_ok && (c == 0 || c == ' ' || c == '\n' || c == '\t'))
			return 1;
		p += n;
	}
	return 0;
}

int rmon_cg_is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int rmon_cg_file_in(const char *dir, const char *file)
{
	char *p = path_join(dir, file);
	int r = access(p, F_OK) == 0;
	free(p);
	return r;
}

int rmon_cg_make_dir(const char *p, int exist_ok)
{
	if (mkdir(p, 0755) == 0)
		return 0;
	if (errno == EEXIST && exist_ok && rmon_cg_is_dir(p))
		return 0;
	return -errno;
}

void rmon_cg_cpuset_inherit(const char *parent, const char *dir)
{
	static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
	for (int i = 0; i < 2; i++) {
		char cur[1024], up[1024];
		if (rmon_cg_read_in(dir, files[i], cur, sizeof cur) < 0)
			continue;
		str_trim(cur);
		if (*cur)
			continue;
		if (rmon_cg_read_in(parent, files[i], up, sizeof up) <= 0)
			continue;
		str_trim(up);
		rmon_cg_write_in(dir, files[i], up);
	}
}

/* Our path for controller CTRL (v1) or in the unified hierarchy (CTRL NULL), from TEXT in
 * /proc/self/cgroup format. Caller frees; NULL when absent. */
static char *self_path(const char *text, const char *ctrl)
{
	size_t clen = ctrl ? strlen(ctrl) : 0;
	for (const char *line = text; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c2) {
			const char *list = c1 + 1;
			size_t llen = (size_t)(c2 - list);
			const char *path = c2 + 1;
			size_t plen = len - (size_t)(path - line);
			if (!ctrl) {
				if (c1 == line + 1 && line[0] == '0' && llen == 0)
					return xstrndup(path, plen);
			} else {
				/* CTRL as one of the comma-separated words of the list. */
				for (const char *w = list; w < c2;) {
					const char *comma = memchr(w, ',', (size_t)(c2 - w));
					const char *wend = comma ? comma : c2;
					if ((size_t)(wend - w) == clen &&
					    strncmp(w, ctrl, clen) == 0)
						return xstrndup(path, plen);
					w = wend + 1;
				}
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return NULL;
}

/* The directory of CTRL's group (V1) or of the unified group (V2) of TEXT, under ROOT. */
static char *dir_of(const char *root, enum rmon_cg_version v, const char *text, const char *ctrl)
{
	if (!root)
		root = RMON_CG_DEFAULT_ROOT;
	if (v != RMON_CG_V1 && v != RMON_CG_V2)
		return NULL;
	char *own = self_path(text, v == RMON_CG_V1 ? ctrl : NULL);
	if (!own)
		return NULL;
	char *top = v == RMON_CG_V1 ? path_join(root, ctrl) : xstrdup(root);
	char *dir = path_join(top, own);
	free(top);
	free(own);
	return dir;
}

char *rmon_cgroup_memory_dir_of(const char *root, enum rmon_cg_version v, const char *text)
{
	return dir_of(root, v, text, "memory");
}

char *rmon_cgroup_cpu_dir_of(const char *root, enum rmon_cg_version v, const char *text)
{
	return dir_of(root, v, text, "cpuacct");
}

enum rmon_cg_version rmon_cgroup_detect(const char *root)
{
	if (!root)
		root = RMON_CG_DEFAULT_ROOT;
	char buf[512];
	if (rmon_cg_read_in(root, "cgroup.controllers", buf, sizeof buf) >= 0 &&
	    rmon_cg_has_word(buf, "memory"))
		return RMON_CG_V2;
	char *mem = path_join(root, "memory");
	int v1 = rmon_cg_file_in(mem, "memory.limit_in_bytes");
	free(mem);
	return v1 ? RMON_CG_V1 : RMON_CG_NONE;
}

static void layout_free(struct rmon_cg_layout *l)
{
	if (!l)
		return;
	for (int i = 0; i < C_N; i++) {
		free(l->owndir[i]);
		free(l->base[i]);
	}
	free(l->own2);
	free(l->base2);
	free(l->root);
	free(l->psc);
	free(l);
}

static int discover_v1(struct rmon_cg_layout *l, const char *self)
{
	char *key[C_N] = {0};
	for (int i = 0; i < C_N; i++) {
		l->same[i] = i;
		char *m = path_join(l->root, rmon_cg_ctrl_names[i]);
		char *own = NULL;
		if (rmon_cg_is_dir(m) && rmon_cg_file_in(m, "cgroup.procs") &&
		    (i != C_MEMORY || rmon_cg_file_in(m, "memory.limit_in_bytes")))
			own = self_path(self, rmon_cg_ctrl_names[i]);
		if (!own) {
			free(m);
			continue;
		}
		char rp[PATH_MAX];
		key[i] = xstrdup(realpath(m, rp) ? rp : m);
		for (int j = 0; j < i; j++)
			if (key[j] && strcmp(key[j], key[i]) == 0 && l->same[i] == i)
				l->same[i] = j;
		l->owndir[i] = path_join(m, own);
		l->base[i] = path_join(l->owndir[i], RMON_CG_PARENT);
		free(own);
		free(m);
	}
	for (int i = 0; i < C_N; i++)
		free(key[i]);
	return l->base[C_MEMORY] ? 0 : HTC_EUNSUP;
}

static int discover_v2(struct rmon_cg_layout *l, const char *self)
{
	char *own = self_path(self, NULL);
	if (!own)
		return HTC_EUNSUP;
	l->own2 = path_join(l->root, own);
	l->base2 = path_join(l->own2, RMON_CG_PARENT);
	free(own);
	if (rmon_cg_read_in(l->own2, "cgroup.controllers", l->own_avail, sizeof l->own_avail) < 0 ||
	    rmon_cg_read_in(l->own2, "cgroup.subtree_control", l->own_enabled,
	                    sizeof l->own_enabled) < 0)
		return HTC_EUNSUP;
	return 0;
}

static struct rmon_cg_layout *discover(const char *root, const char *psc, int *err)
{
	enum rmon_cg_version v = rmon_cgroup_detect(root);
	if (v == RMON_CG_NONE) {
		*err = HTC_EUNSUP;
		return NULL;
	}
	char self[8192];
	if (rmon_read_file(psc ? psc : "/proc/self/cgroup", self, sizeof self) < 0) {
		*err = HTC_EUNSUP;
		return NULL;
	}
	struct rmon_cg_layout *l = xcalloc(1, sizeof *l);
	l->root = xstrdup(root);
	l->psc = psc ? xstrdup(psc) : NULL;
	l->version = v;
	int e = v == RMON_CG_V2 ? discover_v2(l, self) : discover_v1(l, self);
	if (e < 0) {
		layout_free(l);
		*err = e;
		return NULL;
	}
	debug(D_RMON, "cgroup: layout of %s discovered (v%d)", root, (int)v);
	return l;
}

static int same_key(const struct rmon_cg_layout *l, const char *root, const char *psc)
{
	if (strcmp(l->root, root) != 0)
		return 0;
	if (!l->psc || !psc)
		return !l->psc && !psc;
	return strcmp(l->psc, psc) == 0;
}

struct rmon_cg_layout *rmon_cg_layout_lock(const char *root, const char *psc, int refresh, int *err)
{
	if (!root)
		root = RMON_CG_DEFAULT_ROOT;
	pthread_mutex_lock(&cache_lock);
	struct rmon_cg_layout **pp = &cache;
	while (*pp && !same_key(*pp, root, psc))
		pp = &(*pp)->next;
	if (*pp && !refresh)
		return *pp;
	if (*pp) {
		struct rmon_cg_layout *old = *pp;
		*pp = old->next;
		layout_free(old);
	}
	struct rmon_cg_layout *l = discover(root, psc, err);
	if (!l) {
		pthread_mutex_unlock(&cache_lock);
		return NULL;
	}
	l->next = cache;
	cache = l;
	return l;
}

void rmon_cg_layout_unlock(void)
{
	pthread_mutex_unlock(&cache_lock);
}
