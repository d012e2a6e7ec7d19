/* test_k8s_yaml.c: unit tests of the kubeconfig YAML reader (k8s_yaml.h, our own parser): the
 * forms kubeconfig files are written in (a sequence at its key's indentation, "- key: value"
 * items, quoted and block scalars, flow collections, comments, document markers) and the
 * refusals, each naming the file and line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "k8s_yaml.h"
#include "banned.h"

/* TEXT parsed and dumped with sorted keys (caller frees), or "ERR message". */
static char *yaml(const char *text)
{
	char *err = NULL;
	json_t *j = k8s_yaml_parse(text, strlen(text), "t.yaml", &err);
	if (!j) {
		size_t n = strlen(err) + 5;
		char *out = malloc(n);
		snprintf(out, n, "ERR %s", err);
		free(err);
		return out;
	}
	char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(j);
	return s;
}

static void expect(const char *text, const char *want)
{
	char *got = yaml(text);
	if (strcmp(got, want) != 0)
		fail_msg("%s\n  gave %s\n  want %s", text, got, want);
	free(got);
}

static void test_kubeconfig_forms(void **state)
{
	(void)state;
	expect("apiVersion: v1\n"
	       "clusters:\n"
	       "- cluster:\n"
	       "    certificate-authority-data: LS0t\n"
	       "    server: https://127.0.0.1:6443\n"
	       "  name: kind\n"
	       "contexts:\n"
	       "  - context: {cluster: kind, user: kind}\n"
	       "    name: kind\n"
	       "current-context: kind   # the one in use\n"
	       "preferences: {}\n"
	       "users:\n"
	       "- name: kind\n"
	       "  user:\n"
	       "    token: \"a:b\"\n",
	       "{\"apiVersion\":\"v1\",\"clusters\":[{\"cluster\":{\"certificate-authority-data\":"
	       "\"LS0t\",\"server\":\"https://127.0.0.1:6443\"},\"name\":\"kind\"}],\"contexts\":"
	       "[{\"context\":{\"cluster\":\"kind\",\"user\":\"kind\"},\"name\":\"kind\"}],"
	       "\"current-context\":\"kind\",\"preferences\":{},\"users\":[{\"name\":\"kind\","
	       "\"user\":{\"token\":\"a:b\"}}]}");
}

static void test_scalars(void **state)
{
	(void)state;
	expect(
	    "a: ~\nb:\nc: null\nd: true\ne: False\nf: 12\ng: x y  \n",
	    "{\"a\":null,\"b\":null,\"c\":null,\"d\":true,\"e\":false,\"f\":\"12\",\"g\":\"x y\"}");
	expect("a: 'it''s # not a comment'\nb: \"t\\tab \\u00e9 \\\"q\\\"\"\n",
	       "{\"a\":\"it's # not a comment\",\"b\":\"t\\tab \\u00E9 \\\"q\\\"\"}");
	expect("u: http://h:80/p#frag\n", "{\"u\":\"http://h:80/p#frag\"}");
	expect("\"quoted key\": 1\n", "{\"quoted key\":\"1\"}");
	expect("l: |\n  one\n    two\n\n  three\nn: 1\n",
	       "{\"l\":\"one\\n  two\\n\\nthree\\n\",\"n\":\"1\"}");
	expect("f: >-\n  a\n  b\n", "{\"f\":\"a b\"}");
	expect("a: [1, \"x, y\", [], {k: v}]\n", "{\"a\":[\"1\",\"x, y\",[],{\"k\":\"v\"}]}");
}

static void test_sequences_and_documents(void **state)
{
	(void)state;
	expect("- a\n- - b\n  - c\n- k: v\n  l: w\n-\n",
	       "[\"a\",[\"b\",\"c\"],{\"k\":\"v\",\"l\":\"w\"},null]");
	expect("%YAML 1.2\n---\na: 1\n---\nb: 2\n", "{\"a\":\"1\"}");
	expect("# only a comment\n", "{}");
	expect("", "{}");
	expect("a: 1\r\nb: 2\r\n", "{\"a\":\"1\",\"b\":\"2\"}");
	/* a kubeconfig written as JSON, over several lines */
	expect("\n{\"apiVersion\": \"v1\",\n \"users\": [{\"name\": \"u\"}]}\n",
	       "{\"apiVersion\":\"v1\",\"users\":[{\"name\":\"u\"}]}");
	expect("{\"a\": 1,\n \"a\": 2}\n", "ERR t.yaml:2: duplicate object key near '\"a\"'");
}

static void test_refusals(void **state)
{
	(void)state;
	expect("a: 1\n b: 2\n", "ERR t.yaml:2: unexpected indentation");
	expect("a: [1, 2\n", "ERR t.yaml:1: a [...] or {...} value must end on its line");
	expect("a: &x 1\n",
	       "ERR t.yaml:1: anchors, aliases and tags are not read here (found '&')");
	expect("a: *x\n", "ERR t.yaml:1: anchors, aliases and tags are not read here (found '*')");
	expect("a: !!str 1\n",
	       "ERR t.yaml:1: anchors, aliases and tags are not read here (found '!')");
	expect("a: 1\na: 2\n", "ERR t.yaml:2: key \"a\" given twice");
	expect("a:\n\t- x\n", "ERR t.yaml:2: a tab in the indentation");
	expect("a: \"x\n", "ERR t.yaml:1: a quoted value must end on its line");
	expect("- a\nb: 1\n", "ERR t.yaml:2: unexpected text at the top level");
	expect("key: value extra: no\n", "ERR t.yaml:1: unexpected text after a value");
	expect("a: \"\\q\"\n", "ERR t.yaml:1: a bad escape in a double-quoted value");
	char *err = NULL;
	assert_null(k8s_yaml_parse("a\0b", 3, "t.yaml", &err));
	assert_string_equal(err, "t.yaml: a NUL byte: not a YAML text");
	free(err);
	char *got;
	/* deep nesting is bounded */
	char deep[400];
	memcpy(deep, "a: ", 3);
	memset(deep + 3, '[', 200);
	deep[203] = 0;
	got = yaml(deep);
	assert_non_null(strstr(got, "ERR t.yaml:1: nested deeper than 64 levels"));
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kubeconfig_forms),
	    cmocka_unit_test(test_scalars),
	    cmocka_unit_test(test_sequences_and_documents),
	    cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
