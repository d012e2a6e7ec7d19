/* path.c: lexical path helpers and recursive mkdir/remove (see path.h). The
 * recursive remove works relative to directory descriptors (openat and
 * unlinkat with O_NOFOLLOW) so a symbolic link is never traversed. */
#include "path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buffer.h"
#include "xalloc.h"
#include "banned.h"

char *path_basename(const char *p)
{
	size_t end = strlen(p);
	if (end == 0)
		return xstrdup(".");
	while (end > 1 && p[end - 1] == '/')
		end--;
	if (end == 1 && p[0] == '/')
		return xstrdup("/");
	size_t start = end;
	while (start > 0 && p[start - 1] != '/')
		start--;
	return xstrndup(p + start, end - start);
}

char *path_dirname(const char *p)
{
	size_t end = strlen(p);
	while (end > 1 && p[end - 1] == '/')
		end--;
	while (end > 0 && p[end - 1] != '/')
		end--;
	if (end == 0)
		return xstrdup(".");
	while (end > 1 && p[end - 1] == '/')
		end--;
	return xstrndup(p, end);
}

char *path_join(const char *a, const char *b)
{
	size_t alen = strlen(a);
	if (alen == 0)
		return xstrdup(b);
	if (*b == 0)
		return xstrdup(a);
	while (alen > 1 && a[alen - 1] == '/')
		alen--;
	while (*b == '/')
		b++;
	if (alen == 1 && a[0] == '/')
		return xasprintf("/%s", b);
	return xasprintf("%.*s/%s", (int)alen, a, b);
}

bool path_is_absolute(const char *p)
{
	return p[0] == '/';
}

char *path_normalize(const char *p, bool *escapes)
{
	bool absolute = path_is_absolute(p);
	bool escaped = false;
	size_t n = strlen(p);
	/* Components are kept as (start, length) pairs into P. */
	size_t *start = xmalloc((n / 2 + 1) * sizeof *start);
	size_t *len = xmalloc((n / 2 + 1) * sizeof *len);
	size_t depth = 0; /* components kept */
	size_t ups = 0;   /* leading ".." kept (relative paths only) */
	size_t i = 0;
	while (i < n) {
		while (i < n && p[i] == '/')
			i++;
		size_t s = i;
		while (i < n && p[i] != '/')
			i++;
		size_t l = i - s;
		if (l == 0 || (l == 1 && p[s] == '.'))
			continue;
		if (l == 2 && p[s] == '.' && p[s + 1] == '.') {
			if (depth > ups) {
				depth--;
				continue;
			}
			escaped = true;
			if (absolute)
				continue;
			ups++;
		}
		start[depth] = s;
		len[depth] = l;
		depth++;
	}
	struct buffer b;
	buffer_init(&b, 0);
	if (absolute)
		buffer_putc(&b, '/');
	for (size_t k = 0; k < depth; k++) {
		if (k)
			buffer_putc(&b, '/');
		buffer_putlstring(&b, p + start[k], len[k]);
	}
	if (buffer_len(&b) == 0)
		buffer_putc(&b, '.');
	free(start);
	free(len);
	if (escapes)
		*escapes = escaped;
	return buffer_steal(&b, NULL);
}

bool path_escapes_root(const char *p)
{
	if (path_is_absolute(p))
		return true;
	bool escapes;
	free(path_normalize(p, &escapes));
	return escapes;
}

int path_mkdir_p(const char *p, mode_t mode)
{
	if (!*p)
		return -ENOENT;
	char *copy = xstrdup(p);
	size_t n = strlen(copy);
	int r = 0;
	for (size_t i = 1; i <= n; i++) {
		if (i < n && copy[i] != '/')
			continue;
		if (copy[i - 1] == '/')
			continue;
		char saved = copy[i];
		copy[i] = 0;
		if (mkdir(copy, mode) < 0) {
			int e = errno;
			struct stat st;
			if (e != EEXIST) {
				r = -e;
			} else if (stat(copy, &st) < 0) {
				r = -errno;
			} else if (!S_ISDIR(st.st_mode)) {
				r = (i == n) ? -EEXIST : -ENOTDIR;
			}
		}
		copy[i] = saved;
		if (r < 0)
			break;
	}
	free(copy);
	return r;
}

DIR *path_fdopendir(int dfd, int *err)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		*err = -errno;
		close(dfd);
	}
	return d;
}

DIR *path_opendir_at(int dirfd, const char *name, int *err)
{
	int dfd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		*err = -errno;
		return NULL;
	}
	return path_fdopendir(dfd, err);
}

/* Empties the directory open as DFD (closed here), depth first. */
static int rm_dir_contents(int dfd)
{
	int e = 0;
	DIR *d = path_fdopendir(dfd, &e);
	if (!d)
		return e;
	int r = 0;
	struct dirent *de;
	while ((errno = 0, de = readdir(d))) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT && r == 0)
				r = -errno;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(dirfd(d), name, 0) < 0 && errno != ENOENT && r == 0)
				r = -errno;
			continue;
		}
		int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			if (r == 0)
				r = -errno;
			continue;
		}
		int rr = rm_dir_contents(sub);
		if (rr < 0 && r == 0)
			r = rr;
		if (unlinkat(dirfd(d), name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
			r = -errno;
	}
	if (errno && r == 0)
		r = -errno;
	closedir(d);
	return r;
}

int path_rm_rf(const char *p)
{
	struct stat st;
	if (lstat(p, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(p) < 0 && errno != ENOENT ? -errno : 0;
	int dfd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int r = rm_dir_contents(dfd);
	if (rmdir(p) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

bool path_exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

int64_t path_file_size(const char *p)
{
	struct stat st;
	if (stat(p, &st) < 0)
		return -errno;
	return (int64_t)st.st_size;
}

char *path_find_program(const char *beside, const char *name)
{
	if (beside) {
		char *dir = path_dirname(beside);
		char *p = path_join(dir, name);
		free(dir);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	const char *env = getenv("PATH");
	char *copy = xstrdup(env ? env : "/usr/local/bin:/usr/bin:/bin");
	char *save = NULL, *found = NULL;
	for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char *p = path_join(*d ? d : ".", name);
		if (access(p, X_OK) == 0)
			found = p;
		else
			free(p);
	}
	free(copy);
	return found;
}
