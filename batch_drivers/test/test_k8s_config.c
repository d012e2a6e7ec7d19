/* test_k8s_config.c: unit tests of the kubeconfig reader and the in-cluster credentials
 * (k8s_config.h, k8s_yaml.h): the current or a named context, token / token file / client
 * certificate users, CA file or data, insecure-skip-tls-verify, relative paths, JSON form,
 * and a clear error naming the file (and line) for each kind of bad input. No cluster. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_config.h"
#include "k8s_yaml.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

static char *dir;

static int setup(void **state)
{
	(void)state;
	dir = ts_tmpdir_create("test_k8s_config");
	return dir ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	ts_tmpdir_remove(dir);
	return 0;
}

/* Writes TEXT to DIR/NAME; the path (caller frees). */
static char *file(const char *name, const char *text)
{
	char *p = xasprintf("%s/%s", dir, name);
	ts_write_file(p, text);
	return p;
}

static const char *two_contexts = "apiVersion: v1\n"
                                  "kind: Config\n"
                                  "preferences: {}\n"
                                  "clusters:\n"
                                  "- name: prod\n"
                                  "  cluster:\n"
                                  "    server: https://10.0.0.1:6443/\n"
                                  "    certificate-authority: certs/ca.crt\n"
                                  "- name: lab\n"
                                  "  cluster:\n"
                                  "    server: \"https://lab.example:443\"\n"
                                  "    insecure-skip-tls-verify: true\n"
                                  "users:\n"
                                  "- name: alice\n"
                                  "  user:\n"
                                  "    token: 'abc.def'\n"
                                  "- name: bob\n"
                                  "  user:\n"
                                  "    client-certificate: /etc/bob.crt\n"
                                  "    client-key: bob.key\n"
                                  "contexts:\n"
                                  "- name: prod-alice   # a comment\n"
                                  "  context:\n"
                                  "    cluster: prod\n"
                                  "    user: alice\n"
                                  "    namespace: batch\n"
                                  "- name: lab-bob\n"
                                  "  context:\n"
                                  "    cluster: lab\n"
                                  "    user: bob\n"
                                  "current-context: prod-alice\n";

static void test_current_context_token(void **state)
{
	(void)state;
	char *p = file("kc1", two_contexts), *err = NULL;
	struct k8s_config *c = k8s_config_from_kubeconfig(p, NULL, &err);
	assert_non_null(c);
	assert_null(err);
	assert_string_equal(c->context, "prod-alice");
	assert_string_equal(c->server, "https://10.0.0.1:6443"); /* the trailing '/' goes */
	assert_string_equal(c->namespace, "batch");
	assert_string_equal(c->token, "abc.def");
	assert_false(c->insecure);
	char *ca = xasprintf("%s/certs/ca.crt", dir); /* relative to the kubeconfig */
	assert_string_equal(c->ca_file, ca);
	assert_null(c->cert_file);
	assert_string_equal(c->source, p);
	free(ca);
	k8s_config_delete(c);
	free(p);
}

static void test_named_context_client_cert(void **state)
{
	(void)state;
	char *p = file("kc2", two_contexts), *err = NULL;
	struct k8s_config *c = k8s_config_from_kubeconfig(p, "lab-bob", &err);
	assert_non_null(c);
	assert_string_equal(c->server, "https://lab.example:443");
	assert_true(c->insecure);
	assert_string_equal(c->namespace, "default");
	assert_null(c->token);
	assert_string_equal(c->cert_file, "/etc/bob.crt");
	char *key = xasprintf("%s/bob.key", dir);
	assert_string_equal(c->key_file, key);
	assert_string_equal(c->user, "bob");
	free(key);
	k8s_config_delete(c);
	free(p);
}

static void test_data_fields_and_json(void **state)
{
	(void)state;
	/* "-----CA-----\n", "CERT", "KEY" in base64; a kubeconfig in JSON form */
	char *p =
	    file("kc.json",
	         "{\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://h:1\","
	         "\"certificate-authority-data\":\"LS0tLS1DQS0tLS0tCg==\"}}],"
	         "\"users\":[{\"name\":\"u\",\"user\":{\"client-certificate-data\":\"Q0VSVA==\","
	         "\"client-key-data\":\"S0VZ\"}}],"
	         "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\",\"user\":\"u\"}}],"
	         "\"current-context\":\"x\"}");
	char *err = NULL;
	struct k8s_config *c = k8s_config_from_kubeconfig(p, NULL, &err);
	assert_non_null(c);
	assert_string_equal(c->ca_pem, "-----CA-----\n");
	assert_string_equal(c->cert_pem, "CERT");
	assert_string_equal(c->key_pem, "KEY");
	k8s_config_delete(c);
	free(p);
}

/* Loads TEXT as a kubeconfig (context CTX) and expects an error containing each of the
 * NULL-terminated fragments, the file's path among them. */
static void expect_error(const char *text, const char *ctx, ...)
{
	char *p = file("bad", text), *err = NULL;
	struct k8s_config *c = k8s_config_from_kubeconfig(p, ctx, &err);
	assert_null(c);
	assert_non_null(err);
	if (strstr(err, p) != err)
		fail_msg("the error does not start with the file: %s", err);
	va_list ap;
	va_start(ap, ctx);
	const char *frag;
	while ((frag = va_arg(ap, const char *)) != NULL)
		if (!strstr(err, frag))
			fail_msg("\"%s\" not in the error: %s", frag, err);
	va_end(ap);
	free(err);
	free(p);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("clusters: [\n  - a\n  b: c\n", NULL, ":1:", "must end on its line", NULL);
	expect_error("- just\n- a list\n", NULL, "not a kubeconfig", NULL);
	expect_error("clusters: []\n", NULL, "no current-context", NULL);
	expect_error(two_contexts, "nosuch", "no entry named \"nosuch\" in 'contexts'", NULL);
	expect_error("contexts:\n- name: x\n  context:\n    cluster: gone\ncurrent-context: x\n",
	             NULL, "no entry named \"gone\" in 'clusters'", NULL);
	expect_error("clusters:\n- name: c\n  cluster:\n    server: 10.0.0.1:6443\n"
	             "contexts:\n- name: x\n  context:\n    cluster: c\ncurrent-context: x\n",
	             NULL, "not an http(s):// URL", NULL);
	expect_error("clusters:\n- name: c\n  cluster:\n    server: https://h\n"
	             "    certificate-authority-data: '!!notbase64'\n"
	             "contexts:\n- name: x\n  context:\n    cluster: c\ncurrent-context: x\n",
	             NULL, "cluster \"c\"", "not base64", NULL);
	expect_error("clusters:\n- name: c\n  cluster:\n    server: https://h\n"
	             "users:\n- name: u\n  user:\n    exec:\n      command: aws\n"
	             "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
	             "current-context: x\n",
	             NULL, "user \"u\" uses 'exec', which is not supported", NULL);
	expect_error("clusters:\n- name: c\n  cluster:\n    server: https://h\n"
	             "users:\n- name: u\n  user:\n    client-certificate: a.crt\n"
	             "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
	             "current-context: x\n",
	             NULL, "client certificate without its key", NULL);
	expect_error("a: 1\na: 2\n", NULL, ":2:", "given twice", NULL);
	expect_error("base: &b {x: 1}\nother: *b\n", NULL,
	             ":1:", "anchors, aliases and tags are not read here", NULL);
	char *err = NULL;
	char *missing = xasprintf("%s/no-such-file", dir);
	assert_null(k8s_config_from_kubeconfig(missing, NULL, &err));
	assert_non_null(strstr(err, missing));
	assert_non_null(strstr(err, "No such file"));
	free(err);
	free(missing);
}

static void test_in_cluster(void **state)
{
	(void)state;
	char *sa = xasprintf("%s/sa", dir);
	char *cmd = xasprintf("mkdir -p %s", sa);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	char *err = NULL;
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_null(k8s_config_in_cluster(sa, &err));
	assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST"));
	free(err);
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_null(k8s_config_in_cluster(sa, &err)); /* no token yet */
	assert_non_null(strstr(err, "/sa/token"));
	free(err);
	free(file("sa/token", "tok\n"));
	free(file("sa/ca.crt", "PEM\n"));
	free(file("sa/namespace", "jobs\n"));
	struct k8s_config *c = k8s_config_in_cluster(sa, &err);
	assert_non_null(c);
	assert_string_equal(c->server, "https://10.96.0.1:443");
	assert_string_equal(c->namespace, "jobs");
	assert_non_null(strstr(c->token_file, "/sa/token"));
	assert_non_null(strstr(c->ca_file, "/sa/ca.crt"));
	assert_null(c->token); /* re-read from the file on each request */
	k8s_config_delete(c);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	c = k8s_config_in_cluster(sa, &err);
	assert_string_equal(c->server, "https://[fd00::1]:443");
	k8s_config_delete(c);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	free(sa);
}

static void test_load_order(void **state)
{
	(void)state;
	char *p = file("kc-env", two_contexts);
	char *list = xasprintf("%s:/nonexistent/second", p);
	unsetenv("KUBERNETES_SERVICE_HOST");
	setenv("KUBECONFIG", list, 1);
	char *err = NULL;
	struct k8s_config *c = k8s_config_load(NULL, "lab-bob", &err);
	assert_non_null(c);
	assert_string_equal(c->source, p);
	k8s_config_delete(c);
	unsetenv("KUBECONFIG");
	setenv("HOME", dir, 1);
	c = k8s_config_load(NULL, NULL, &err);
	assert_null(c);
	assert_non_null(strstr(err, "/.kube/config"));
	free(err);
	free(list);
	free(p);
}

static void test_yaml_scalars(void **state)
{
	(void)state;
	char *err = NULL;
	const char *y = "a: null\nb: ~\nc:\nd: true\ne: 'true'\nf: \"x\\ty\"\ng: [1, two]\n";
	json_t *j = k8s_yaml_parse(y, strlen(y), "t", &err);
	assert_non_null(j);
	assert_true(json_is_null(json_object_get(j, "a")));
	assert_true(json_is_null(json_object_get(j, "b")));
	assert_true(json_is_null(json_object_get(j, "c")));
	assert_true(json_is_true(json_object_get(j, "d")));
	assert_string_equal(json_string_value(json_object_get(j, "e")), "true");
	assert_string_equal(json_string_value(json_object_get(j, "f")), "x\ty");
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "g"), 1)), "two");
	json_decref(j);
	j = k8s_yaml_parse("", 0, "empty", &err);
	assert_true(json_is_object(j));
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_current_context_token),
	    cmocka_unit_test(test_named_context_client_cert),
	    cmocka_unit_test(test_data_fields_and_json),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_in_cluster),
	    cmocka_unit_test(test_load_order),
	    cmocka_unit_test(test_yaml_scalars),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
