/* engine_mounts.c: the mount file. Every line is checked before anything is copied, so a bad
 * line changes nothing; then each source is copied (or downloaded with libcurl) into the
 * cache directory under a name made from the source, and the target becomes a relative
 * symbolic link to it. Targets and the cache stay inside the working directory. */
#include "engine_mounts.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "curl_init.h"
#include "debug.h"
#include "engine_copy.h"
#include "htc_error.h"
#include "path.h"
#include "sha256.h"
#include "stringtools.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

#define MOUNT_LINE_MAX  65536
#define MOUNT_LINES_MAX 100000

void engine_mounts_free(struct engine_mount *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].target);
		free(m[i].source);
	}
	free(m);
}

static int is_url(const char *s)
{
	return !strncasecmp(s, "http://", 7) || !strncasecmp(s, "https://", 8);
}

/* A path that stays inside the working directory: relative, without "..". */
static const char *inside_problem(const char *p)
{
	if (!*p)
		return "is empty";
	if (path_is_absolute(p))
		return "is absolute (it must be relative to the working directory)";
	for (const char *c = p; *c;) {
		size_t len = strcspn(c, "/");
		if (len == 2 && c[0] == '.' && c[1] == '.')
			return "contains '..' (it must stay inside the working directory)";
		c += len;
		while (*c == '/')
			c++;
	}
	char *norm = path_normalize(p, NULL);
	int dot = !strcmp(norm, ".");
	free(norm);
	return dot ? "names the working directory itself" : NULL;
}

int engine_mounts_parse(const char *path, struct engine_mount **mounts, size_t *count, char *err,
                        size_t errlen)
{
	*mounts = NULL;
	*count = 0;
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "--mounts %s: %s", path, strerror(errno));
		return -errno;
	}
	struct engine_mount *m = NULL;
	size_t n = 0, cap = 0;
	char *buf = NULL;
	size_t bufcap = 0;
	int lineno = 0, r = 0;
	ssize_t len;
	while ((len = getline(&buf, &bufcap, f)) >= 0) {
		lineno++;
		if (len > MOUNT_LINE_MAX || lineno > MOUNT_LINES_MAX) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno,
			         len > MOUNT_LINE_MAX ? "line longer than 65536 bytes"
			                              : "more than 100000 lines");
			r = HTC_EPARSE;
			break;
		}
		if ((size_t)len != strlen(buf)) {
			snprintf(err, errlen, "%s:%d: the line contains a NUL byte", path, lineno);
			r = HTC_EPARSE;
			break;
		}
		str_trim(buf);
		if (!buf[0] || buf[0] == '#')
			continue;
		int words = 0;
		char **w = str_split_ws(buf, &words);
		if (words != 2) {
			snprintf(err, errlen,
			         "%s:%d: expected 'TARGET SOURCE' (two words), got %d word%s", path,
			         lineno, words, words == 1 ? "" : "s");
			str_free_argv(w);
			r = HTC_EPARSE;
			break;
		}
		const char *why = inside_problem(w[0]);
		if (why) {
			snprintf(err, errlen, "%s:%d: target '%s' %s", path, lineno, w[0], why);
			str_free_argv(w);
			r = HTC_EPARSE;
			break;
		}
		for (size_t i = 0; i < n && !why; i++)
			if (!strcmp(m[i].target, w[0])) {
				snprintf(err, errlen,
				         "%s:%d: target '%s' is already mounted at line %d", path,
				         lineno, w[0], m[i].line);
				why = "dup";
			}
		if (why) {
			str_free_argv(w);
			r = HTC_EPARSE;
			break;
		}
		VEC_PUSH(
		    m, n, cap,
		    ((struct engine_mount){xstrdup(w[0]), xstrdup(w[1]), lineno, is_url(w[1])}));
		str_free_argv(w);
	}
	if (r == 0 && ferror(f)) {
		r = -EIO;
		snprintf(err, errlen, "--mounts %s: read error", path);
	}
	free(buf);
	fclose(f);
	if (r < 0) {
		engine_mounts_free(m, n);
		return r;
	}
	*mounts = m;
	*count = n;
	return 0;
}

char *engine_mounts_default_cache(const char *workflow)
{
	char abs[PATH_MAX];
	const char *key = realpath(workflow, abs) ? abs : workflow;
	char hex[SHA256_HEX_SIZE] = "";
	sha256_buffer(key, strlen(key), hex);
	return xasprintf("makeflow.cache.%.12s", hex);
}

/* The first component of P (relative) that exists and is a symbolic link, or NULL; checks
 * P itself too when WHOLE. Caller frees. */
static char *symlink_component(const char *p, int whole)
{
	char *norm = path_normalize(p, NULL);
	char *res = NULL;
	for (char *c = norm; *c && !res;) {
		char *slash = strchr(c, '/');
		if (!slash && !whole)
			break;
		if (slash)
			*slash = 0;
		struct stat st;
		if (lstat(norm, &st) == 0 && S_ISLNK(st.st_mode))
			res = xstrdup(norm);
		if (!slash)
			break;
		*slash = '/';
		c = slash + 1;
	}
	free(norm);
	return res;
}

/* The name of SOURCE's copy in the cache: a hash of the source and a readable tail. */
static char *entry_name(const struct engine_mount *m)
{
	char abs[PATH_MAX];
	const char *id = !m->is_url && realpath(m->source, abs) ? abs : m->source;
	char hex[SHA256_HEX_SIZE] = "";
	sha256_buffer(id, strlen(id), hex);
	const char *tail = strrchr(m->source, '/');
	tail = tail && tail[1] ? tail + 1 : "source";
	char clean[41];
	size_t k = 0;
	for (const char *c = tail; *c && k < sizeof clean - 1; c++)
		clean[k++] =
		    (isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-') ? *c : '_';
	clean[k] = 0;
	return xasprintf("%.16s-%s", hex, clean);
}

/* The text of the link at TARGET that reaches CACHE/ENTRY. */
static char *link_text(const char *target, const char *cache, const char *entry)
{
	char *t = path_normalize(target, NULL);
	char *c = path_normalize(cache, NULL);
	size_t up = 0;
	for (const char *s = t; *s; s++)
		up += *s == '/';
	size_t len = up * 3 + strlen(c) + strlen(entry) + 2;
	char *out = xmalloc(len);
	out[0] = 0;
	size_t o = 0;
	for (size_t i = 0; i < up; i++)
		o += (size_t)snprintf(out + o, len - o, "../");
	snprintf(out + o, len - o, "%s/%s", c, entry);
	free(t);
	free(c);
	return out;
}

/* 1 if TARGET is a link into CACHE (made by an earlier run). */
static int is_our_link(const char *target, const char *cache)
{
	char cur[PATH_MAX];
	ssize_t k = readlink(target, cur, sizeof cur - 1);
	if (k <= 0)
		return 0;
	cur[k] = 0;
	char *prefix = path_normalize(cache, NULL);
	const char *c = cur;
	while (!strncmp(c, "../", 3))
		c += 3;
	int ours = str_has_prefix(c, prefix) && c[strlen(prefix)] == '/';
	free(prefix);
	return ours;
}

/* Checks what needs the file system, before anything changes. */
static int check_one(const char *path, const struct engine_mount *m, const char *cache, char *err,
                     size_t errlen)
{
	char *sl = symlink_component(m->target, 0);
	if (sl) {
		snprintf(err, errlen, "%s:%d: target '%s': '%s' is a symbolic link", path, m->line,
		         m->target, sl);
		free(sl);
		return HTC_EPARSE;
	}
	struct stat st;
	if (lstat(m->target, &st) == 0 && !is_our_link(m->target, cache)) {
		snprintf(err, errlen,
		         "%s:%d: target '%s' already exists (a mount target must not exist; "
		         "only a link made by an earlier --mounts run is replaced)",
		         path, m->line, m->target);
		return HTC_EPARSE;
	}
	if (m->is_url)
		return 0;
	if (lstat(m->source, &st) < 0) {
		snprintf(err, errlen, "%s:%d: source '%s': %s", path, m->line, m->source,
		         strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
		snprintf(err, errlen,
		         "%s:%d: source '%s' is not a regular file, a directory or a link", path,
		         m->line, m->source);
		return HTC_EPARSE;
	}
	char src[PATH_MAX], cwd[PATH_MAX];
	if (!realpath(m->source, src)) {
		snprintf(err, errlen, "%s:%d: source '%s': %s", path, m->line, m->source,
		         strerror(errno));
		return -errno;
	}
	if (getcwd(cwd, sizeof cwd)) {
		char *t = path_join(cwd, m->target);
		size_t sl2 = strlen(src);
		int inside =
		    !strcmp(src, "/") || (!strncmp(t, src, sl2) && (t[sl2] == '/' || t[sl2] == 0));
		free(t);
		if (inside) {
			snprintf(err, errlen, "%s:%d: source '%s' contains the target '%s'", path,
			         m->line, m->source, m->target);
			return HTC_EPARSE;
		}
	}
	return 0;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	return fwrite(p, size, nmemb, arg);
}

/* Downloads URL into DEST (a new file). */
static int download(const char *url, const char *dest, char *why, size_t whylen)
{
	curl_init_once();
	FILE *f = fopen(dest, "wx");
	if (!f) {
		snprintf(why, whylen, "cannot create %s: %s", dest, strerror(errno));
		return -errno;
	}
	CURL *c = curl_easy_init();
	if (!c) {
		fclose(f);
		snprintf(why, whylen, "cannot set up libcurl");
		return -ENOMEM;
	}
	char errbuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
	/* a server that stops sending for a minute is given up */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "makeflow/" HTC_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	CURLcode rc = curl_easy_perform(c);
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	int r = 0;
	if (rc == CURLE_HTTP_RETURNED_ERROR) {
		snprintf(why, whylen, "HTTP %ld", code);
		r = -ENOENT;
	} else if (rc != CURLE_OK) {
		snprintf(why, whylen, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
		r = -EIO;
	}
	if (fclose(f) != 0 && r == 0) {
		snprintf(why, whylen, "cannot write %s: %s", dest, strerror(errno));
		r = -errno;
	}
	return r;
}

/* Puts M's source into CACHE/ENTRY. */
static int fill(const char *path, const struct engine_mount *m, const char *cache,
                const char *entry, char *err, size_t errlen)
{
	char *dest = path_join(cache, entry);
	int r = 0;
	if (m->is_url) {
		if (path_exists(dest)) {
			debug(D_MAKEFLOW, "mounts: %s is in the cache as %s", m->source, dest);
			free(dest);
			return 0;
		}
		char *tmp = xasprintf("%s/.%s.part.%ld", cache, entry, (long)getpid());
		unlink(tmp);
		char why[CURL_ERROR_SIZE + 64] = "";
		r = download(m->source, tmp, why, sizeof why);
		if (r == 0 && rename(tmp, dest) < 0) {
			r = -errno;
			snprintf(why, sizeof why, "%s", strerror(errno));
		}
		if (r < 0) {
			unlink(tmp);
			snprintf(err, errlen, "%s:%d: cannot download %s: %s", path, m->line,
			         m->source, why);
		} else
			notice("mounts: downloaded %s for %s", m->source, m->target);
		free(tmp);
	} else {
		r = engine_copy_replace(m->source, dest);
		if (r < 0)
			snprintf(err, errlen, "%s:%d: cannot copy '%s' into the cache %s: %s", path,
			         m->line, m->source, cache, strerror(-r));
	}
	free(dest);
	return r;
}

static int link_target(const char *path, const struct engine_mount *m, const char *cache,
                       const char *entry, char *err, size_t errlen)
{
	char *text = link_text(m->target, cache, entry);
	char *dir = path_dirname(m->target);
	int r = path_mkdir_p(dir, 0777);
	if (r == 0) {
		char cur[PATH_MAX];
		ssize_t k = readlink(m->target, cur, sizeof cur - 1);
		if (k >= 0)
			cur[k] = 0;
		if (k < 0 || strcmp(cur, text)) {
			unlink(m->target);
			if (symlink(text, m->target) < 0)
				r = -errno;
		}
	}
	if (r < 0)
		snprintf(err, errlen, "%s:%d: cannot link target '%s': %s", path, m->line,
		         m->target, strerror(-r));
	free(dir);
	free(text);
	return r;
}

int engine_mounts_apply(const char *path, const char *cache, const struct dag *d, char *err,
                        size_t errlen)
{
	const char *why = inside_problem(cache);
	if (why) {
		snprintf(err, errlen, "--cache-dir %s: the cache directory %s", cache, why);
		return HTC_EPARSE;
	}
	char *sl = symlink_component(cache, 1);
	if (sl) {
		snprintf(err, errlen, "--cache-dir %s: '%s' is a symbolic link", cache, sl);
		free(sl);
		return HTC_EPARSE;
	}
	struct engine_mount *m = NULL;
	size_t n = 0;
	int r = engine_mounts_parse(path, &m, &n, err, errlen);
	for (size_t i = 0; r == 0 && i < n; i++) {
		char *norm = path_normalize(m[i].target, NULL);
		const struct dag_file *f = d ? dag_file_lookup(d, norm) : NULL;
		if (!f && d)
			f = dag_file_lookup(d, m[i].target);
		free(norm);
		if (f && f->producer) {
			snprintf(err, errlen,
			         "%s:%d: target '%s' is created by the rule at line %d of %s (a "
			         "mount target is an input)",
			         path, m[i].line, m[i].target, f->producer->line, d->filename);
			r = HTC_EPARSE;
			break;
		}
		if (d && (!f || !f->nconsumers))
			warn("%s:%d: target '%s' is not an input of any rule of %s (the name must "
			     "be "
			     "written as the rules write it)",
			     path, m[i].line, m[i].target, d->filename);
		r = check_one(path, &m[i], cache, err, errlen);
	}
	if (r == 0 && n > 0 && (r = path_mkdir_p(cache, 0777)) < 0)
		snprintf(err, errlen, "--cache-dir %s: %s", cache, strerror(-r));
	for (size_t i = 0; r == 0 && i < n; i++) {
		char *entry = entry_name(&m[i]);
		r = fill(path, &m[i], cache, entry, err, errlen);
		if (r == 0)
			r = link_target(path, &m[i], cache, entry, err, errlen);
		free(entry);
	}
	engine_mounts_free(m, n);
	return r;
}

int engine_mounts_clean(const char *path, const char *cache, char *err, size_t errlen)
{
	struct engine_mount *m = NULL;
	size_t n = 0;
	int r = engine_mounts_parse(path, &m, &n, err, errlen);
	if (r < 0)
		return r;
	int links = 0;
	for (size_t i = 0; i < n; i++)
		if (is_our_link(m[i].target, cache) && unlink(m[i].target) == 0)
			links++;
	engine_mounts_free(m, n);
	int had = path_exists(cache);
	if (!inside_problem(cache) && (r = path_rm_rf(cache)) < 0) {
		snprintf(err, errlen, "--cache-dir %s: cannot remove it: %s", cache, strerror(-r));
		return r;
	}
	notice("removed %d mount link%s%s%s", links, links == 1 ? "" : "s",
	       had ? " and the cache " : "", had ? cache : "");
	return 0;
}
