/* test_catalog_http.c: unit tests of the catalog server's HTTP request parser (catalog_http.h):
 * whole and byte-by-byte requests, bodies, every error status and cap, and URL decoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "catalog_http.h"
#include "htc_error.h"
#include "xalloc.h"
#include "banned.h"

static struct catalog_http_request *feed_all(const char *text, int *rc)
{
	struct catalog_http_request *r = catalog_http_request_create(1000);
	*rc = catalog_http_request_feed(r, text, strlen(text));
	return r;
}

/* A browser's Accept header asks for the HTML page; curl's and CCTools clients' do not. */
static void test_accept_html(void **state)
{
	(void)state;
	int rc;
	struct catalog_http_request *r = feed_all(
	    "GET / HTTP/1.1\r\nAccept: text/html,application/xhtml+xml;q=0.9\r\n\r\n", &rc);
	assert_int_equal(rc, CATALOG_HTTP_COMPLETE);
	assert_true(catalog_http_request_accepts_html(r));
	catalog_http_request_delete(r);
	r = feed_all("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", &rc);
	assert_false(catalog_http_request_accepts_html(r));
	catalog_http_request_delete(r);
	r = feed_all("GET / HTTP/1.0\r\n\r\n", &rc);
	assert_false(catalog_http_request_accepts_html(r));
	catalog_http_request_delete(r);
}

static void test_get(void **state)
{
	(void)state;
	int rc;
	struct catalog_http_request *r =
	    feed_all("GET /query.json?project=a%20b&type=x HTTP/1.1\r\nHost: h\r\n\r\n", &rc);
	assert_int_equal(rc, CATALOG_HTTP_COMPLETE);
	assert_string_equal(catalog_http_request_method(r), "GET");
	assert_string_equal(catalog_http_request_path(r), "/query.json");
	assert_string_equal(catalog_http_request_query(r), "project=a%20b&type=x");
	assert_int_equal(catalog_http_request_minor(r), 1);
	size_t len = 99;
	assert_string_equal(catalog_http_request_body(r, &len), "");
	assert_int_equal(len, 0);
	/* More bytes after completion are ignored. */
	assert_int_equal(catalog_http_request_feed(r, "junk", 4), CATALOG_HTTP_COMPLETE);
	catalog_http_request_delete(r);
	catalog_http_request_delete(NULL);

	r = feed_all("GET / HTTP/1.0\n\n", &rc); /* bare LF line ends */
	assert_int_equal(rc, CATALOG_HTTP_COMPLETE);
	assert_string_equal(catalog_http_request_path(r), "/");
	assert_string_equal(catalog_http_request_query(r), "");
	assert_int_equal(catalog_http_request_minor(r), 0);
	catalog_http_request_delete(r);
}

static void test_post_bytewise(void **state)
{
	(void)state;
	const char *text = "POST /update HTTP/1.1\r\nContent-Length: 11\r\nExpect: 100-continue"
	                   "\r\n\r\n{\"a\":\"b\\u0\"}";
	struct catalog_http_request *r = catalog_http_request_create(1000);
	size_t n = strlen(text);
	size_t head = strstr(text, "\r\n\r\n") + 4 - text;
	for (size_t i = 0; i < n; i++) {
		int rc = catalog_http_request_feed(r, text + i, 1);
		if (i + 1 < head) {
			assert_int_equal(rc, CATALOG_HTTP_MORE);
			assert_false(catalog_http_request_header_done(r));
		} else if (i + 1 < head + 11) {
			assert_int_equal(rc, CATALOG_HTTP_MORE);
			assert_true(catalog_http_request_header_done(r));
			assert_true(catalog_http_request_expect_continue(r));
		} else {
			assert_int_equal(rc, CATALOG_HTTP_COMPLETE);
			break;
		}
	}
	size_t len;
	const char *body = catalog_http_request_body(r, &len);
	assert_int_equal(len, 11);
	assert_memory_equal(body, "{\"a\":\"b\\u0\"", 11);
	catalog_http_request_delete(r);
}

static void expect_error(const char *text, int status, const char *words)
{
	int rc;
	struct catalog_http_request *r = feed_all(text, &rc);
	assert_int_equal(rc, CATALOG_HTTP_ERROR);
	assert_int_equal(catalog_http_request_status(r), status);
	if (!strstr(catalog_http_request_error(r), words))
		fail_msg("error '%s' does not mention '%s'", catalog_http_request_error(r), words);
	/* Sticky. */
	assert_int_equal(catalog_http_request_feed(r, "\r\n", 2), CATALOG_HTTP_ERROR);
	catalog_http_request_delete(r);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("garbage\r\n\r\n", 400, "request line");
	expect_error("\x01\x02\x03 / HTTP/1.1\r\n\r\n", 400, "method");
	expect_error("GET / HTTP/2.0\r\n\r\n", 505, "version");
	expect_error("GET / FOO/1.0\r\n\r\n", 400, "version");
	expect_error("GET foo HTTP/1.1\r\n\r\n", 400, "'/'");
	expect_error("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400, "header");
	expect_error("POST /update HTTP/1.1\r\n\r\n", 411, "length");
	expect_error("POST /update HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", 413, "1001");
	expect_error("POST /update HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "Content-Length");
	expect_error("POST /update HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", 400, "12x");
	expect_error("POST /update HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
	             400, "Content-Length");
	expect_error("POST /update HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400,
	             "conflicting");
	expect_error("POST /update HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501,
	             "Transfer-Encoding");
	expect_error("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400, "CR");
	expect_error("GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400, "folding");
}

static void test_caps(void **state)
{
	(void)state;
	/* A request line longer than the cap, without any line end. */
	char *line = xmalloc(CATALOG_HTTP_MAX_LINE + 100);
	memcpy(line, "GET /", 5);
	memset(line + 5, 'a', CATALOG_HTTP_MAX_LINE + 50);
	line[CATALOG_HTTP_MAX_LINE + 55] = 0;
	expect_error(line, 414, "too long");
	free(line);

	/* Headers beyond the byte cap. */
	struct catalog_http_request *r = catalog_http_request_create(10);
	int rc = catalog_http_request_feed(r, "GET / HTTP/1.1\r\n", 16);
	assert_int_equal(rc, CATALOG_HTTP_MORE);
	char hdr[1000];
	memset(hdr, 'x', sizeof hdr);
	memcpy(hdr, "X-A: ", 5);
	hdr[998] = '\r';
	hdr[999] = '\n';
	for (int i = 0; i < 20 && rc == CATALOG_HTTP_MORE; i++)
		rc = catalog_http_request_feed(r, hdr, sizeof hdr);
	assert_int_equal(rc, CATALOG_HTTP_ERROR);
	assert_int_equal(catalog_http_request_status(r), 431);
	catalog_http_request_delete(r);

	/* Too many header lines. */
	r = catalog_http_request_create(10);
	rc = catalog_http_request_feed(r, "GET / HTTP/1.1\r\n", 16);
	for (int i = 0; i < CATALOG_HTTP_MAX_NLINES + 5 && rc == CATALOG_HTTP_MORE; i++)
		rc = catalog_http_request_feed(r, "A: b\r\n", 6);
	assert_int_equal(rc, CATALOG_HTTP_ERROR);
	assert_int_equal(catalog_http_request_status(r), 431);
	catalog_http_request_delete(r);

	/* Exactly at the body cap is fine. */
	r = catalog_http_request_create(4);
	const char *t = "POST /u HTTP/1.0\r\nContent-Length: 4\r\n\r\nabcdEXTRA";
	assert_int_equal(catalog_http_request_feed(r, t, strlen(t)), CATALOG_HTTP_COMPLETE);
	size_t len;
	assert_string_equal(catalog_http_request_body(r, &len), "abcd");
	catalog_http_request_delete(r);
}

static void test_url_decode(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(catalog_http_url_decode("a+b%20c%2Fd%e9", 14, &out), 0);
	assert_string_equal(out, "a b c/d\xe9");
	free(out);
	assert_int_equal(catalog_http_url_decode("", 0, &out), 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(catalog_http_url_decode("%zz", 3, &out), HTC_EPARSE);
	assert_null(out);
	assert_int_equal(catalog_http_url_decode("ab%4", 4, &out), HTC_EPARSE);
	assert_int_equal(catalog_http_url_decode("ab%", 3, &out), HTC_EPARSE);
	assert_int_equal(catalog_http_url_decode("a%00b", 5, &out), HTC_EPARSE);
	/* Only LEN bytes are read. */
	assert_int_equal(catalog_http_url_decode("abc%41", 4, &out), HTC_EPARSE);
	assert_int_equal(catalog_http_url_decode("abc%41", 3, &out), 0);
	assert_string_equal(out, "abc");
	free(out);
	assert_string_equal(catalog_http_reason(404), "Not Found");
	assert_string_equal(catalog_http_reason(999), "Unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_accept_html),   cmocka_unit_test(test_get),
	    cmocka_unit_test(test_post_bytewise), cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_caps),          cmocka_unit_test(test_url_decode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
