/* k8s_config.c: kubeconfig and in-cluster credentials (k8s_config.h). The kubeconfig is read
 * with k8s_yaml into a JSON tree; the named context picks a cluster and a user by name from the
 * `clusters` and `users` lists. */
#include "k8s_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "htc_error.h"
#include "base64.h"
#include "k8s_yaml.h"
#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

#define SMALL_FILE_MAX (1024 * 1024)

void k8s_config_delete(struct k8s_config *c)
{
	if (!c)
		return;
	free(c->source);
	free(c->context);
	free(c->user);
	free(c->server);
	free(c->namespace);
	free(c->ca_file);
	free(c->ca_pem);
	free(c->token);
	free(c->token_file);
	free(c->cert_file);
	free(c->key_file);
	free(c->cert_pem);
	free(c->key_pem);
	free(c);
}

/* ---- kubeconfig ------------------------------------------------------------------------ */

struct kc {
	const char *path;
	char *dir; /* for relative file names */
	char *err;
};

static void kc_fail(struct kc *k, const char *fmt, const char *a, const char *b)
{
	if (k->err)
		return;
	char *m = xasprintf(fmt, a ? a : "", b ? b : "");
	k->err = xasprintf("%s: %s", k->path, m);
	free(m);
}

/* The entry named NAME of the list LIST ("clusters", "users", "contexts"): its inner object
 * (KEY: "cluster", "user", "context"). */
static json_t *named(struct kc *k, json_t *root, const char *list, const char *key,
                     const char *name)
{
	json_t *arr = json_object_get(root, list);
	if (arr && !json_is_array(arr) && !json_is_null(arr)) {
		kc_fail(k, "'%s' is not a list", list, NULL);
		return NULL;
	}
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e)
	{
		const char *n = json_string_value(json_object_get(e, "name"));
		if (n && strcmp(n, name) == 0) {
			json_t *in = json_object_get(e, key);
			if (json_is_null(in) || !in)
				return json_object(); /* an entry with nothing set */
			if (!json_is_object(in)) {
				char *m =
				    xasprintf("%s \"%s\": '%s' is not a mapping", list, name, key);
				kc_fail(k, "%s%s", m, NULL);
				free(m);
				return NULL;
			}
			return json_incref(in);
		}
	}
	char *m = xasprintf("no entry named \"%s\" in '%s'", name, list);
	kc_fail(k, "%s%s", m, NULL);
	free(m);
	return NULL;
}

/* The string field F of O (NULL when absent or null); a non-string fails. */
static const char *str_field(struct kc *k, json_t *o, const char *what, const char *f)
{
	json_t *v = json_object_get(o, f);
	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		char *m = xasprintf("%s: '%s' is not a string", what, f);
		kc_fail(k, "%s%s", m, NULL);
		free(m);
		return NULL;
	}
	return json_string_value(v);
}

static char *file_name(struct kc *k, const char *f)
{
	if (!f || !*f)
		return NULL;
	if (f[0] == '/')
		return xstrdup(f);
	return xasprintf("%s/%s", k->dir, f);
}

static char *data_field(struct kc *k, json_t *o, const char *what, const char *f)
{
	const char *s = str_field(k, o, what, f);
	if (!s || !*s)
		return NULL;
	char *d = base64_decode(s, strlen(s), NULL);
	if (!d) {
		char *m = xasprintf("%s: '%s' is not base64", what, f);
		kc_fail(k, "%s%s", m, NULL);
		free(m);
	}
	return d;
}

static bool bool_field(struct kc *k, json_t *o, const char *what, const char *f)
{
	json_t *v = json_object_get(o, f);
	if (!v || json_is_null(v))
		return false;
	if (json_is_boolean(v))
		return json_is_true(v);
	const char *s = json_string_value(v);
	if (s && (strcmp(s, "true") == 0 || strcmp(s, "false") == 0))
		return strcmp(s, "true") == 0;
	char *m = xasprintf("%s: '%s' is not true or false", what, f);
	kc_fail(k, "%s%s", m, NULL);
	free(m);
	return false;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

struct k8s_config *k8s_config_from_kubeconfig(const char *path, const char *context, char **err)
{
	*err = NULL;
	json_t *root = k8s_yaml_load(path, err);
	if (!root)
		return NULL;
	struct kc k = {.path = path, .dir = dir_of(path)};
	struct k8s_config *c = xcalloc(1, sizeof *c);
	c->source = xstrdup(path);
	json_t *ctx = NULL, *cl = NULL, *us = NULL;
	if (!json_is_object(root)) {
		kc_fail(&k, "not a kubeconfig (the top level is not a mapping)", NULL, NULL);
		goto out;
	}
	const char *cur = context;
	if (!cur)
		cur = str_field(&k, root, "the top level", "current-context");
	if (!cur || !*cur) {
		kc_fail(&k, "no current-context is set, and no context was named", NULL, NULL);
		goto out;
	}
	c->context = xstrdup(cur);
	ctx = named(&k, root, "contexts", "context", cur);
	if (!ctx)
		goto out;
	char *what = xasprintf("context \"%s\"", cur);
	const char *cname = str_field(&k, ctx, what, "cluster");
	const char *uname = str_field(&k, ctx, what, "user");
	const char *ns = str_field(&k, ctx, what, "namespace");
	if (!k.err && (!cname || !*cname))
		kc_fail(&k, "%s names no cluster", what, NULL);
	free(what);
	if (k.err)
		goto out;
	c->namespace = xstrdup(ns && *ns ? ns : "default");
	cl = named(&k, root, "clusters", "cluster", cname);
	if (!cl)
		goto out;
	what = xasprintf("cluster \"%s\"", cname);
	const char *server = str_field(&k, cl, what, "server");
	if (!k.err && (!server || !*server))
		kc_fail(&k, "%s has no server", what, NULL);
	if (!k.err && !str_has_prefix(server, "https://") && !str_has_prefix(server, "http://"))
		kc_fail(&k, "%s: server \"%s\" is not an http(s):// URL", what, server);
	if (!k.err) {
		c->server = xstrdup(server);
		size_t n = strlen(c->server);
		while (n > 0 && c->server[n - 1] == '/')
			c->server[--n] = 0;
	}
	c->insecure = bool_field(&k, cl, what, "insecure-skip-tls-verify");
	c->ca_file = file_name(&k, str_field(&k, cl, what, "certificate-authority"));
	c->ca_pem = data_field(&k, cl, what, "certificate-authority-data");
	free(what);
	if (k.err)
		goto out;
	if (uname && *uname) {
		c->user = xstrdup(uname);
		us = named(&k, root, "users", "user", uname);
		if (!us)
			goto out;
		what = xasprintf("user \"%s\"", uname);
		static const char *const refused[] = {"exec", "auth-provider", "username",
		                                      "password"};
		for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
			json_t *v = json_object_get(us, refused[i]);
			if (v && !json_is_null(v)) {
				char *m =
				    xasprintf("%s uses '%s', which is not supported (use a token "
				              "or a client certificate)",
				              what, refused[i]);
				kc_fail(&k, "%s%s", m, NULL);
				free(m);
			}
		}
		const char *tok = str_field(&k, us, what, "token");
		c->token = tok && *tok ? xstrdup(tok) : NULL;
		c->token_file = file_name(&k, str_field(&k, us, what, "tokenFile"));
		c->cert_file = file_name(&k, str_field(&k, us, what, "client-certificate"));
		c->key_file = file_name(&k, str_field(&k, us, what, "client-key"));
		c->cert_pem = data_field(&k, us, what, "client-certificate-data");
		c->key_pem = data_field(&k, us, what, "client-key-data");
		bool has_cert = c->cert_file || c->cert_pem, has_key = c->key_file || c->key_pem;
		if (!k.err && has_cert != has_key)
			kc_fail(&k, "%s has a client %s", what,
			        has_cert ? "certificate without its key"
			                 : "key without its certificate");
		free(what);
	}
out:
	json_decref(ctx);
	json_decref(cl);
	json_decref(us);
	json_decref(root);
	free(k.dir);
	if (k.err) {
		*err = k.err;
		k8s_config_delete(c);
		return NULL;
	}
	return c;
}

/* ---- in cluster ------------------------------------------------------------------------ */

struct k8s_config *k8s_config_in_cluster(const char *dir, char **err)
{
	*err = NULL;
	if (!dir)
		dir = K8S_SA_DIR;
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (!host || !*host) {
		*err = xstrdup("in-cluster credentials: KUBERNETES_SERVICE_HOST is not set");
		return NULL;
	}
	char *token_file = xasprintf("%s/token", dir);
	if (access(token_file, R_OK) != 0) {
		*err = xasprintf("in-cluster credentials: %s: %s", token_file, strerror(errno));
		free(token_file);
		return NULL;
	}
	struct k8s_config *c = xcalloc(1, sizeof *c);
	c->source = xasprintf("in-cluster service account (%s)", dir);
	/* an IPv6 address goes in brackets */
	if (strchr(host, ':'))
		c->server = xasprintf("https://[%s]:%s", host, port && *port ? port : "443");
	else
		c->server = xasprintf("https://%s:%s", host, port && *port ? port : "443");
	c->token_file = token_file;
	char *ca = xasprintf("%s/ca.crt", dir);
	if (access(ca, R_OK) == 0)
		c->ca_file = ca;
	else
		free(ca);
	char *nsf = xasprintf("%s/namespace", dir), *ns = NULL;
	size_t len;
	if (k8s_read_file(nsf, SMALL_FILE_MAX, &ns, &len) == 0 && *str_trim(ns))
		c->namespace = xstrdup(str_trim(ns));
	else
		c->namespace = xstrdup("default");
	free(ns);
	free(nsf);
	return c;
}

struct k8s_config *k8s_config_load(const char *kubeconfig_path, const char *context, char **err)
{
	*err = NULL;
	if (kubeconfig_path)
		return k8s_config_from_kubeconfig(kubeconfig_path, context, err);
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	if (host && *host && access(K8S_SA_DIR "/token", R_OK) == 0)
		return k8s_config_in_cluster(NULL, err);
	const char *env = getenv("KUBECONFIG");
	if (env && *env) {
		char *first = xstrdup(env);
		char *colon = strchr(first, ':');
		if (colon)
			*colon = 0;
		struct k8s_config *c = k8s_config_from_kubeconfig(first, context, err);
		free(first);
		return c;
	}
	const char *home = getenv("HOME");
	if (!home || !*home) {
		*err = xstrdup("no kubeconfig: KUBECONFIG and HOME are not set, and no in-cluster "
		               "service account was found");
		return NULL;
	}
	char *p = xasprintf("%s/.kube/config", home);
	struct k8s_config *c = k8s_config_from_kubeconfig(p, context, err);
	free(p);
	return c;
}
