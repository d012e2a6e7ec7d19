/* workflow_bundle.c: the portable bundle of makeflow_analyze -b (workflow_bundle.h). */
#include "workflow_bundle.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <uthash.h>

#include "atomic_file.h"
#include "buffer.h"
#include "engine_copy.h"
#include "path.h"
#include "xalloc.h"
#include "banned.h"

struct placed {
	char *dest;
	UT_hash_handle hh;
};

static int path_char(char c)
{
	return c && (isalnum((unsigned char)c) || strchr("._-/+~@%,", c) != NULL);
}

char *workflow_bundle_replace_word(const char *text, const char *from, const char *to)
{
	struct buffer b;
	buffer_init(&b, 0);
	size_t n = strlen(from);
	const char *p = text;
	const char *hit;
	while (n > 0 && (hit = strstr(p, from))) {
		int left = hit == text || !path_char(hit[-1]);
		int right = !path_char(hit[n]);
		buffer_putlstring(&b, p, (size_t)(hit - p));
		buffer_putstring(&b, left && right ? to : from);
		p = hit + n;
	}
	buffer_putstring(&b, p);
	char *s = xstrdup(buffer_tostring(&b));
	buffer_free(&b);
	return s;
}

/* Does NAME stay where it is in the bundle (relative, never leading out with "..")? */
static int keeps_place(const char *name)
{
	if (path_is_absolute(name))
		return 0;
	const char *p = name;
	while (*p) {
		size_t len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p += len;
		while (*p == '/')
			p++;
	}
	return 1;
}

/* Where NAME goes in the bundle; *MOVED when it is not NAME. */
static char *place(struct placed **taken, const char *name, int *moved)
{
	char *dest;
	*moved = !keeps_place(name);
	if (!*moved) {
		dest = xstrdup(name);
	} else {
		char *base = path_basename(name);
		dest = xstrdup(base);
		struct placed *p;
		for (int k = 1;; k++) {
			HASH_FIND_STR(*taken, dest, p);
			if (!p)
				break;
			free(dest);
			dest = xasprintf("%s.%d", base, k);
		}
		free(base);
	}
	struct placed *p;
	HASH_FIND_STR(*taken, dest, p);
	if (!p) {
		p = xcalloc(1, sizeof *p);
		p->dest = xstrdup(dest);
		HASH_ADD_KEYPTR(hh, *taken, p->dest, strlen(p->dest), p);
	}
	return dest;
}

static int copy_into(const char *dir, const char *from, const char *to, char *err, size_t errlen)
{
	char *dst = path_join(dir, to);
	char *parent = path_dirname(dst);
	int r = path_mkdir_p(parent, 0777);
	if (r == 0)
		r = engine_copy(from, dst, 0);
	if (r < 0)
		snprintf(err, errlen, "cannot copy %s to %s: %s", from, dst, strerror(-r));
	free(parent);
	free(dst);
	return r < 0 ? -1 : 0;
}

static int dir_usable(const char *dir, char *err, size_t errlen)
{
	DIR *dh = opendir(dir);
	if (!dh) {
		if (errno != ENOENT) {
			snprintf(err, errlen, "%s: %s", dir, strerror(errno));
			return -1;
		}
		if (path_mkdir_p(dir, 0777) < 0) {
			snprintf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
			return -1;
		}
		return 0;
	}
	struct dirent *e;
	int empty = 1;
	while (empty && (e = readdir(dh)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(dh);
	if (!empty) {
		snprintf(err, errlen, "%s is not empty: a bundle goes into a new directory", dir);
		return -1;
	}
	return 0;
}

static char *read_text(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	struct buffer b;
	buffer_init(&b, 0);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		buffer_putlstring(&b, chunk, n);
	int bad = ferror(f);
	fclose(f);
	char *s = bad ? NULL : xstrdup(buffer_tostring(&b));
	buffer_free(&b);
	if (bad)
		snprintf(err, errlen, "%s: read error", path);
	return s;
}

int workflow_bundle(const struct workflow_source *src, const struct dag *d, const char *dir,
                    FILE *out, char *err, size_t errlen)
{
	/* every source must exist before anything is written */
	for (struct dag_file *f = d->files; f; f = f->hh.next) {
		if (f->is_source && (f->nconsumers > 0 || f->is_extra_input) &&
		    !path_exists(f->name)) {
			snprintf(err, errlen,
			         "%s: input %s does not exist: the bundle would miss it",
			         d->filename, f->name);
			return -1;
		}
	}
	if (dir_usable(dir, err, errlen) < 0)
		return -1;
	struct placed *taken = NULL, *p, *ptmp;
	int status = 0;
	/* the workflow file and its --jx-args file keep their places when they can */
	int wf_moved;
	char *wf_dest = place(&taken, src->path, &wf_moved);
	char *args_dest = NULL;
	int args_moved = 0;
	if (src->jx_args)
		args_dest = place(&taken, src->jx_args, &args_moved);
	char *text = read_text(src->path, err, errlen);
	if (!text)
		status = -1;
	for (struct dag_file *f = d->files; status == 0 && f; f = f->hh.next) {
		if (!f->is_source || !(f->nconsumers > 0 || f->is_extra_input))
			continue;
		if (!strcmp(f->name, src->path))
			continue; /* the workflow itself, written below */
		int moved;
		char *dest = place(&taken, f->name, &moved);
		if (copy_into(dir, f->name, dest, err, errlen) < 0)
			status = -1;
		else
			fprintf(out, "%s\t%s\n", f->name, dest);
		if (moved && status == 0) {
			char *t = workflow_bundle_replace_word(text, f->name, dest);
			free(text);
			text = t;
		}
		free(dest);
	}
	if (status == 0 && args_dest) {
		if (copy_into(dir, src->jx_args, args_dest, err, errlen) < 0)
			status = -1;
		else
			fprintf(out, "%s\t%s\n", src->jx_args, args_dest);
	}
	if (status == 0) {
		char *at = path_join(dir, wf_dest);
		char *parent = path_dirname(at);
		path_mkdir_p(parent, 0777);
		int r = atomic_file_write(at, text, strlen(text), 0644);
		if (r < 0) {
			snprintf(err, errlen, "cannot write %s: %s", at, strerror(-r));
			status = -1;
		} else {
			fprintf(out, "%s\t%s\n", src->path, wf_dest);
		}
		free(parent);
		free(at);
	}
	free(text);
	free(wf_dest);
	free(args_dest);
	HASH_ITER(hh, taken, p, ptmp)
	{
		HASH_DEL(taken, p);
		free(p->dest);
		free(p);
	}
	(void)wf_moved;
	(void)args_moved;
	return status;
}
