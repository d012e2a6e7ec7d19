/* test_jx.c: unit tests for the JX expression language (jx.h): literals,
 * every operator and built-in function, the define section, errors with
 * positions, the nesting and size limits, and random garbage input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jx.h"
#include "ts_tmpdir.h"
#include "xalloc.h"
#include "banned.h"

/* Symbols available to every expression test. */
static json_t *symbols;

static int setup(void **state)
{
	(void)state;
	symbols = json_pack("{s:i, s:f, s:s, s:[i,i,i], s:{s:i, s:s}, s:b}", "n", 3, "half", 0.5,
	                    "name", "data", "xs", 10, 20, 30, "obj", "a", 1, "b", "two", "yes", 1);
	return symbols ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	json_decref(symbols);
	return 0;
}

static void check_value(json_t *v, const char *expect_json, const char *what,
                        const struct jx_error *err)
{
	char buf[1024];
	if (!v)
		fail_msg("%s: unexpected error: %s", what, jx_error_format(err, buf, sizeof buf));
	json_error_t jerr;
	json_t *want = json_loads(expect_json, JSON_DECODE_ANY, &jerr);
	if (!want)
		fail_msg("bad expectation %s: %s", expect_json, jerr.text);
	if (!json_equal(v, want)) {
		char *got = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		print_error("%s\n  got:  %s\n  want: %s\n", what, got, expect_json);
		free(got);
		json_decref(want);
		json_decref(v);
		fail();
	}
	json_decref(want);
	json_decref(v);
}

/* Evaluates an expression with the test symbols and compares with JSON. */
static void expect(const char *expr, const char *expect_json)
{
	struct jx_error err;
	check_value(jx_eval_expr(expr, symbols, &err), expect_json, expr, &err);
}

/* Expects an error whose formatted text contains `part`; line/column are
 * checked when non-zero. */
static void expect_error_at(const char *expr, const char *part, int line, int column)
{
	struct jx_error err;
	json_t *v = jx_eval_expr(expr, symbols, &err);
	if (v) {
		char *got = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		print_error("%s: expected an error, got %s\n", expr, got);
		free(got);
		json_decref(v);
		fail();
	}
	char buf[1024];
	jx_error_format(&err, buf, sizeof buf);
	if (!strstr(buf, part))
		fail_msg("%s: error \"%s\" does not mention \"%s\"", expr, buf, part);
	if (line && (err.line != line || err.column != column))
		fail_msg("%s: error at %d:%d, expected %d:%d (%s)", expr, err.line, err.column,
		         line, column, buf);
}

static void expect_error(const char *expr, const char *part)
{
	expect_error_at(expr, part, 0, 0);
}

/* ---- literals ------------------------------------------------------------------ */

static void test_literals(void **state)
{
	(void)state;
	expect("null", "null");
	expect("true", "true");
	expect("false", "false");
	expect("0", "0");
	expect("42", "42");
	expect("-7", "-7");
	expect("9223372036854775807", "9223372036854775807");
	expect("-9223372036854775808", "-9223372036854775808");
	expect("1.5", "1.5");
	expect("-2.5e3", "-2500.0");
	expect("1E2", "100.0");
	expect("\"hi\"", "\"hi\"");
	expect("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "\"a\\\"b\\\\c/d\\b\\f\\n\\r\\t\"");
	expect("\"\\u00e9\\u20AC\\ud83d\\ude00\"", "\"\\u00e9\\u20ac\\ud83d\\ude00\"");
	expect("\"caf\xc3\xa9\"", "\"caf\\u00e9\"");
	expect("[]", "[]");
	expect("[1, \"a\", null, [true]]", "[1, \"a\", null, [true]]");
	expect("{}", "{}");
	expect("{\"a\": 1, \"b\": {\"c\": []}}", "{\"a\": 1, \"b\": {\"c\": []}}");
	expect("  # leading comment\n [1, # one\n 2] # trailing", "[1, 2]");
	expect("\"# not a comment\"", "\"# not a comment\"");
	/* a trailing comma in a list, an object and a call, as CCTools reads them */
	expect("[1,]", "[1]");
	expect("[1, 2,\n]", "[1, 2]");
	expect("{\"a\": 1,}", "{\"a\": 1}");
	expect("{\"a\": {\"b\": [1,],},\n}", "{\"a\": {\"b\": [1]}}");
	expect("range(3,)", "[0, 1, 2]");
	expect("[x for x in [1, 2],]", "[1, 2]");
}

static void test_literal_errors(void **state)
{
	(void)state;
	expect_error_at("\"abc", "unterminated string", 1, 1);
	expect_error_at("[1,\n \"abc\n\"]", "unterminated string", 2, 2);
	expect_error("\"a\\qb\"", "invalid escape");
	expect_error("\"\\u12\"", "4 hex digits");
	expect_error("\"\\ud800\"", "unpaired surrogate");
	expect_error("\"\\udc00x\"", "unpaired surrogate");
	expect_error("\"\\u0000\"", "\\u0000");
	expect_error("\"\xff\"", "invalid UTF-8");
	expect_error("\"\xc0\x80\"", "invalid UTF-8");
	expect_error("\"a\x01\"", "control character");
	expect_error("01", "leading zeros");
	expect_error("1.", "digit expected");
	expect_error("1e", "digit expected");
	expect_error("12abc", "invalid number");
	expect_error("9223372036854775808", "out of range");
	expect_error("99999999999999999999", "out of range");
	expect_error("1e999", "out of range");
	expect_error("'single'", "double quotes");
	expect_error("@", "unexpected character '@'");
	expect_error("\x80", "unexpected byte 0x80");
	expect_error("a = 1", "'=='");
	expect_error("true & false", "'&&'");
	expect_error("true | false", "'||'");
	expect_error_at("1 2", "expected end of input but found integer", 1, 3);
	expect_error("[1, 2", "expected ',' or ']'");
	expect_error("[1 2]", "expected ',' or ']'");
	expect_error("[,]", "unexpected ','");
	expect_error("[1,,2]", "unexpected ','");
	expect_error("{\"a\" 1}", "expected ':'");
	expect_error("{,}", "unexpected ','");
	expect_error("{\"a\": 1,,}", "unexpected ','");
	expect_error("{\"a\": 1 \"b\": 2}", "expected ',' or '}'");
	expect_error("{\"a\": 1, \"a\": 2}", "duplicate key \"a\"");
	expect_error("{1: 2}", "object key must be a string");
	expect_error("", "empty input");
	expect_error("   # only a comment", "empty input");
	expect_error("(1", "expected ')'");
	expect_error(")", "unexpected ')'");
}

/* ---- operators ------------------------------------------------------------------- */

static void test_arithmetic(void **state)
{
	(void)state;
	expect("1 + 2", "3");
	expect("1 - 5", "-4");
	expect("6 * 7", "42");
	expect("7 / 2", "3");
	expect("-7 / 2", "-3");
	expect("7 % 3", "1");
	expect("-7 % 3", "-1");
	expect("7.0 / 2", "3.5");
	expect("1 + 0.5", "1.5");
	expect("half * 4", "2.0");
	expect("7.5 % 2", "1.5");
	expect("2 + 3 * 4", "14");
	expect("(2 + 3) * 4", "20");
	expect("10 - 3 - 2", "5");
	expect("100 / 10 / 5", "2");
	expect("-n", "-3");
	expect("+n", "3");
	expect("-half", "-0.5");
	expect("- -3", "3");
	expect("-(1 + 2) * 2", "-6");
	expect("n * -1", "-3");
	expect("-9223372036854775807 - 1", "-9223372036854775808");
	expect("-9223372036854775808 % -1", "0");
	expect_error_at("1 / 0", "division by zero", 1, 3);
	expect_error("1 % 0", "division by zero");
	expect_error("1.0 / 0", "division by zero");
	expect_error("1.5 % 0.0", "division by zero");
	expect_error("9223372036854775807 + 1", "integer overflow");
	expect_error("-9223372036854775807 - 2", "integer overflow");
	expect_error("4611686018427387904 * 2", "integer overflow");
	expect_error("-9223372036854775808 / -1", "integer overflow");
	expect_error("-(-9223372036854775808)", "integer overflow");
	expect_error("1e308 * 10", "out of range");
	expect_error("\"a\" - 1", "cannot apply '-' to string and integer");
	expect_error("[1] * 2", "cannot apply '*'");
	expect_error("null + 1", "cannot apply '+' to null and integer");
	expect_error("-\"a\"", "unary '-' needs a number");
	expect_error("+true", "unary '+' needs a number");
}

static void test_concatenation(void **state)
{
	(void)state;
	expect("\"a\" + \"b\"", "\"ab\"");
	expect("\"out.\" + 3", "\"out.3\"");
	expect("3 + \".txt\"", "\"3.txt\"");
	expect("\"x\" + 1.5", "\"x1.5\"");
	expect("\"x\" + 0.1", "\"x0.1\"");
	expect("\"x\" + -2", "\"x-2\"");
	expect("name + \".\" + n", "\"data.3\"");
	expect("1 + 2 + \"a\"", "\"3a\"");
	expect("\"a\" + 1 + 2", "\"a12\"");
	expect("[1] + [2, 3]", "[1, 2, 3]");
	expect("[] + []", "[]");
	expect("xs + xs", "[10, 20, 30, 10, 20, 30]");
	expect_error("\"a\" + true", "cannot apply '+' to string and boolean");
	expect_error("\"a\" + [1]", "cannot apply '+'");
	expect_error("[1] + {}", "cannot apply '+' to list and object");
	expect_error("{} + {}", "cannot apply '+'");
}

static void test_comparison(void **state)
{
	(void)state;
	expect("1 == 1", "true");
	expect("1 == 2", "false");
	expect("1 != 2", "true");
	expect("1 == 1.0", "true");
	expect("1 < 2", "true");
	expect("2 <= 2", "true");
	expect("3 > 2.5", "true");
	expect("2 >= 3", "false");
	expect("0.5 < 1", "true");
	expect("\"abc\" < \"abd\"", "true");
	expect("\"b\" > \"abc\"", "true");
	expect("\"a\" <= \"a\"", "true");
	expect("\"a\" >= \"b\"", "false");
	expect("\"a\" == \"a\"", "true");
	expect("\"a\" == 1", "false");
	expect("null == null", "true");
	expect("null != false", "true");
	expect("[1, [2]] == [1, [2.0]]", "true");
	expect("[1, 2] == [1]", "false");
	expect("{\"a\": 1, \"b\": 2} == {\"b\": 2, \"a\": 1}", "true");
	expect("{\"a\": 1} == {\"a\": 2}", "false");
	expect("{\"a\": 1} == {\"b\": 1}", "false");
	expect("obj == {\"a\": 1, \"b\": \"two\"}", "true");
	expect("1 + 1 == 2", "true");
	expect_error_at("1 < \"a\"", "cannot compare integer and string with '<'", 1, 3);
	expect_error("[1] < [2]", "cannot compare list and list");
	expect_error("null >= null", "cannot compare null and null");
}

static void test_logic(void **state)
{
	(void)state;
	expect("true and true", "true");
	expect("true and false", "false");
	expect("false or true", "true");
	expect("false or false", "false");
	expect("not true", "false");
	expect("not false", "true");
	expect("true && false", "false");
	expect("false || true", "true");
	expect("!true", "false");
	expect("! !true", "true");
	expect("not not yes", "true");
	expect("not 1 == 2", "true");
	expect("not true and false", "false");
	expect("true or false and false", "true");
	expect("(true or false) and false", "false");
	expect("false and undefined_thing", "false");
	expect("true or undefined_thing", "true");
	expect("true and true and true", "true");
	expect("false or false or true", "true");
	expect("n > 1 and n < 5", "true");
	expect_error("1 and true", "'and' needs booleans, got a integer");
	expect_error("true and 1", "'and' needs booleans");
	expect_error("null or true", "'or' needs booleans");
	expect_error("not 0", "'not' needs a boolean");
	expect_error("true and undefined_thing", "undefined symbol 'undefined_thing'");
}

static void test_conditional(void **state)
{
	(void)state;
	expect("true ? 1 : 2", "1");
	expect("false ? 1 : 2", "2");
	expect("n > 2 ? \"big\" : \"small\"", "\"big\"");
	expect("false ? 1 : true ? 2 : 3", "2");
	expect("false ? undefined_thing : 0", "0"); /* only the chosen branch runs */
	expect("true ? 1 : 1 / 0", "1");
	expect("(true ? xs : [])[1]", "20");
	expect("1 + (n == 3 ? 1 : 2) * 10", "11");
	expect_error("1 ? 2 : 3", "condition must be a boolean, got a integer");
	expect_error("true ? 1", "expected ':' in a conditional");
}

static void test_symbols(void **state)
{
	(void)state;
	expect("n", "3");
	expect("name", "\"data\"");
	expect("xs", "[10, 20, 30]");
	expect("{name: n}", "{\"data\": 3}");
	expect("{\"k\" + n: [n]}", "{\"k3\": [3]}");
	expect_error_at("\n  missing + 1", "undefined symbol 'missing'", 2, 3);
	struct jx_error err;
	check_value(jx_eval_expr("1 + 1", NULL, &err), "2", "no symbols", &err);
	assert_null(jx_eval_expr("x", NULL, &err));
	assert_string_equal(err.message, "undefined symbol 'x'");
	assert_string_equal(err.file, "<expression>");
	json_t *notobj = json_integer(1);
	assert_null(jx_eval_expr("1", notobj, &err));
	json_decref(notobj);
	/* a NULL err pointer is allowed */
	assert_null(jx_eval_expr("nope", NULL, NULL));
}

static void test_index_slice(void **state)
{
	(void)state;
	expect("xs[0]", "10");
	expect("xs[2]", "30");
	expect("xs[-1]", "30");
	expect("xs[-3]", "10");
	expect("[[1, 2], [3, 4]][1][0]", "3");
	expect("obj[\"b\"]", "\"two\"");
	expect("obj[\"a\"] + 1", "2");
	expect("{\"x\": [5, 6]}[\"x\"][1]", "6");
	expect("\"hello\"[1]", "\"e\"");
	expect("\"hello\"[-1]", "\"o\"");
	expect("xs[1:3]", "[20, 30]");
	expect("xs[:2]", "[10, 20]");
	expect("xs[1:]", "[20, 30]");
	expect("xs[:]", "[10, 20, 30]");
	expect("xs[-2:]", "[20, 30]");
	expect("xs[:-1]", "[10, 20]");
	expect("xs[-100:100]", "[10, 20, 30]");
	expect("xs[2:1]", "[]");
	expect("xs[5:]", "[]");
	expect("xs[null:2]", "[10, 20]");
	expect("\"hello\"[1:3]", "\"el\"");
	expect("\"file.txt\"[:-4]", "\"file\"");
	expect("\"abc\"[5:]", "\"\"");
	expect_error_at("xs[3]", "index 3 out of range (length 3)", 1, 3);
	expect_error("xs[-4]", "out of range");
	expect_error("xs[\"a\"]", "index must be an integer, got a string");
	expect_error("xs[1.0]", "index must be an integer");
	expect_error("obj[\"zz\"]", "no key \"zz\" in object");
	expect_error("obj[1]", "object key must be a string");
	expect_error("n[0]", "cannot index a integer");
	expect_error("n[0:1]", "cannot slice a integer");
	expect_error("xs[0:\"a\"]", "index must be an integer");
	expect_error("\"caf\xc3\xa9\"[4]", "UTF-8");
	expect_error("xs[1", "expected ']'");
}

/* ---- comprehensions ------------------------------------------------------------------ */

static void test_comprehension(void **state)
{
	(void)state;
	expect("[x * 2 for x in xs]", "[20, 40, 60]");
	expect("[x for x in range(10) if x % 3 == 0]", "[0, 3, 6, 9]");
	expect("[x + y for x in [\"a\", \"b\"] for y in [\"1\", \"2\"]]",
	       "[\"a1\", \"a2\", \"b1\", \"b2\"]");
	expect("[[x, y] for x in range(3) for y in range(x)]", "[[1, 0], [2, 0], [2, 1]]");
	expect("[x for x in range(10) if x > 2 if x < 5]", "[3, 4]");
	expect("[x for x in range(3) if x > 0 for y in [x, x]]", "[1, 1, 2, 2]");
	expect("[0, x for x in range(3), 9]", "[0, 0, 1, 2, 9]");
	expect("[x for x in []]", "[]");
	expect("[n for n in [7, 8]]", "[7, 8]"); /* shadows the symbol n */
	expect("[n for x in [7]]", "[3]");
	expect("[[y for y in range(x)] for x in range(3)]", "[[], [0], [0, 1]]");
	expect("[\"out.\" + i for i in range(2)]", "[\"out.0\", \"out.1\"]");
	expect("[k for k in keys(obj)]", "[\"a\", \"b\"]");
	expect_error("[x for x in 5]", "'for' needs a list, got a integer");
	expect_error("[x for x in xs if 1]", "'if' condition must be a boolean");
	expect_error("[x for 1 in xs]", "expected a variable name");
	expect_error("[x for x xs]", "expected 'in'");
	expect_error("[y for x in xs]", "undefined symbol 'y'");
}

/* ---- functions ------------------------------------------------------------------------ */

static void test_range(void **state)
{
	(void)state;
	expect("range(4)", "[0, 1, 2, 3]");
	expect("range(0)", "[]");
	expect("range(-2)", "[]");
	expect("range(2, 5)", "[2, 3, 4]");
	expect("range(5, 2)", "[]");
	expect("range(0, 10, 3)", "[0, 3, 6, 9]");
	expect("range(10, 0, -4)", "[10, 6, 2]");
	expect("range(-9223372036854775808, -9223372036854775806)",
	       "[-9223372036854775808, -9223372036854775807]");
	expect("range(9223372036854775806, 9223372036854775807)", "[9223372036854775806]");
	expect("len(range(0, 9223372036854775807, 4611686018427387904))", "2");
	expect_error("range(1, 2, 0)", "step must not be zero");
	expect_error("range(1.5)", "range(): argument 1 must be an integer, got a float");
	expect_error("range(\"a\")", "must be an integer");
	expect_error("range(100000000)", "more than the limit");
	expect_error("range(-9223372036854775808, 9223372036854775807)", "more than the limit");
	expect_error_at("range()", "range() takes 1 to 3 arguments, got 0", 1, 1);
	expect_error("range(1, 2, 3, 4)", "takes 1 to 3 arguments, got 4");
	expect_error_at("\n  nosuch(1)", "unknown function 'nosuch'", 2, 3);
}

static void test_format(void **state)
{
	(void)state;
	expect("format(\"echo %d > out.%d\", 1, 2)", "\"echo 1 > out.2\"");
	expect("format(\"%s-%s\", \"a\", 3)", "\"a-3\"");
	expect("format(\"%s %s %s\", true, null, 1.5)", "\"true null 1.5\"");
	expect("format(\"%f\", 1.5)", "\"1.500000\"");
	expect("format(\"%.2f\", 2)", "\"2.00\"");
	expect("format(\"%g\", 0.25)", "\"0.25\"");
	expect("format(\"%e\", 1000)", "\"1.000000e+03\"");
	expect("format(\"%05d|%-4d|%+d\", 42, 7, 3)", "\"00042|7   |+3\"");
	expect("format(\"%5s|%-5s|\", \"ab\", \"cd\")", "\"   ab|cd   |\"");
	expect("format(\"100%%\")", "\"100%\"");
	expect("format(\"plain\")", "\"plain\"");
	expect("format(\"\")", "\"\"");
	expect("format(\"%s|%s\", format(\"%s\", format(\"%-3s\", 1)), 2)", "\"1  |2\"");
	expect_error("format(\"%d\")", "not enough arguments");
	expect_error("format(\"%d\", 1, 2)", "1 argument not used");
	expect_error("format(\"%d\", 1.5)", "%d needs an integer, got a float");
	expect_error("format(\"%f\", \"x\")", "%f needs a number");
	expect_error("format(\"%s\", [1])", "cannot use a list as text");
	expect_error("format(\"%x\", 1)", "unsupported conversion '%x'");
	expect_error("format(\"%\", 1)", "unsupported conversion");
	expect_error("format(\"%99999d\", 1)", "width or precision");
	expect_error("format(\"%#d\", 1)", "flag not allowed");
	expect_error("format(\"%0s\", \"a\")", "flag not allowed");
	expect_error("format(1)", "argument 1 must be a string");
	expect_error("format()", "format() takes 1 to 10000 arguments, got 0");
}

static void test_template(void **state)
{
	(void)state;
	expect("template(\"{name}.{n}\")", "\"data.3\"");
	expect("template(\"a {x} b\", {\"x\": 1.5})", "\"a 1.5 b\"");
	expect("template(\"{name}\", {\"name\": \"override\"})", "\"override\"");
	expect("template(\"{{literal}} }}\")", "\"{literal} }\"");
	expect("template(\"none\")", "\"none\"");
	expect("[template(\"out.{i}\") for i in range(2)]", "[\"out.0\", \"out.1\"]");
	expect_error("template(\"{missing}\")", "undefined name 'missing'");
	expect_error("template(\"{xs}\")", "cannot use a list as text");
	expect_error("template(\"{open\")", "must be followed by a name");
	expect_error("template(\"{}\")", "must be followed by a name");
	expect_error("template(\"a } b\")", "unmatched '}'");
	expect_error("template(\"x\", 1)", "argument 2 must be an object");
}

static void test_text_functions(void **state)
{
	(void)state;
	expect("join([\"a\", \"b\", \"c\"])", "\"a b c\"");
	expect("join([\"a\", 1, 2.5], \",\")", "\"a,1,2.5\"");
	expect("join([])", "\"\"");
	expect("join([\"x\"], \", \")", "\"x\"");
	expect("join([\"out.\" + i for i in range(3)])", "\"out.0 out.1 out.2\"");
	expect_error("join([[1]])", "join(): item 0 is a list, not text");
	expect_error("join(\"a\")", "must be a list");
	expect_error("join([], 1)", "argument 2 must be a string");
	expect("escape(\"a b\")", "\"'a b'\"");
	expect("escape(\"it's\")", "\"'it'\\\\''s'\"");
	expect("escape(\"\")", "\"''\"");
	expect_error("escape(1)", "must be a string");
	expect("basename(\"/a/b/c.txt\")", "\"c.txt\"");
	expect("basename(\"c.txt\")", "\"c.txt\"");
	expect("basename(\"a/b/\")", "\"b\"");
	expect("basename(\"/\")", "\"/\"");
	expect("basename(\"//\")", "\"/\"");
	expect("basename(\"\")", "\".\"");
	expect("dirname(\"/a/b/c.txt\")", "\"/a/b\"");
	expect("dirname(\"a/b/\")", "\"a\"");
	expect("dirname(\"c.txt\")", "\".\"");
	expect("dirname(\"/c\")", "\"/\"");
	expect("dirname(\"/\")", "\"/\"");
	expect("dirname(\"a//b\")", "\"a\"");
	expect("dirname(\"\")", "\".\"");
	expect_error("basename(1)", "must be a string");
	expect_error("dirname(null)", "must be a string");
}

static void test_collection_functions(void **state)
{
	(void)state;
	expect("len(xs)", "3");
	expect("len([])", "0");
	expect("len(obj)", "2");
	expect("len(\"abc\")", "3");
	expect_error("len(1)", "len(): needs a list, object or string, got a integer");
	expect("keys(obj)", "[\"a\", \"b\"]");
	expect("values(obj)", "[1, \"two\"]");
	expect("items(obj)", "[[\"a\", 1], [\"b\", \"two\"]]");
	expect("keys({})", "[]");
	expect_error("keys(xs)", "keys(): argument 1 must be an object, got a list");
	expect_error("values(1)", "must be an object");
	expect_error("items(\"a\")", "must be an object");
	expect("ceil(1.2)", "2");
	expect("ceil(-1.2)", "-1");
	expect("floor(1.8)", "1");
	expect("floor(-1.2)", "-2");
	expect("floor(7)", "7");
	expect("ceil(n / 2)", "1");
	expect("ceil(n / 2.0)", "2");
	expect_error("ceil(\"1\")", "ceil(): needs a number");
	expect_error("floor(1e300)", "out of integer range");
	const char *people = "[{\"name\": \"a\", \"age\": 3}, {\"name\": \"b\", \"age\": 5},"
	                     " {\"name\": \"c\", \"age\": 3}, {\"other\": 1}]";
	char buf[512];
	snprintf(buf, sizeof buf, "select(%s, \"age\", 3)", people);
	expect(buf, "[{\"name\": \"a\", \"age\": 3}, {\"name\": \"c\", \"age\": 3}]");
	snprintf(buf, sizeof buf, "project(select(%s, \"age\", 3.0), \"name\")", people);
	expect(buf, "[\"a\", \"c\"]");
	snprintf(buf, sizeof buf, "project(%s, \"name\")", people);
	expect_error(buf, "project(): item 3 has no key \"name\"");
	expect("select([], \"k\", 1)", "[]");
	expect("project([], \"k\")", "[]");
	expect_error("select([1], \"k\", 1)", "select(): item 0 is a integer, not an object");
	expect_error("project([[]], \"k\")", "project(): item 0 is a list");
	expect_error("select(xs, 1, 1)", "argument 2 must be a string");
	expect_error("select(xs, \"k\")", "select() takes 3 arguments, got 2");
}

static void test_listdir(void **state)
{
	(void)state;
	char *dir = ts_tmpdir_create("test_jx");
	const char *names[] = {"b.txt", "a.txt", "c"};
	char path[512];
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		ts_write_file(path, "");
	}
	char expr[600];
	snprintf(expr, sizeof expr, "listdir(\"%s\")", dir);
	expect(expr, "[\"a.txt\", \"b.txt\", \"c\"]");
	snprintf(expr, sizeof expr, "[f for f in listdir(\"%s\") if f != \"c\"]", dir);
	expect(expr, "[\"a.txt\", \"b.txt\"]");
	snprintf(expr, sizeof expr, "listdir(\"%s/a.txt\")", dir);
	expect_error(expr, "Not a directory");
	snprintf(expr, sizeof expr, "listdir(\"%s/none\")", dir);
	expect_error(expr, "No such file or directory");
	expect_error("listdir(1)", "must be a string");
	ts_tmpdir_remove(dir);
}

/* ---- documents, define, files ------------------------------------------------------------ */

static const char *example =
    "{ \"define\": {\"N\": 3},\n"
    "  \"rules\": [ {\"command\": format(\"echo %d > out.%d\", i, i), \"outputs\": [\"out.\" "
    "+ i]} for i in range(N) ]\n"
    "         + [ {\"command\": \"cat out.0 out.1 out.2 > all\", \"inputs\": "
    "[\"out.0\",\"out.1\",\"out.2\"],\n"
    "              \"outputs\": [\"all\"], \"local_job\": true} ] }\n";

static void test_example_workflow(void **state)
{
	(void)state;
	struct jx_error err;
	json_t *v = jx_eval_string(example, "example.jx", NULL, &err);
	check_value(v,
	            "{\"define\": {\"N\": 3}, \"rules\": ["
	            "{\"command\": \"echo 0 > out.0\", \"outputs\": [\"out.0\"]},"
	            "{\"command\": \"echo 1 > out.1\", \"outputs\": [\"out.1\"]},"
	            "{\"command\": \"echo 2 > out.2\", \"outputs\": [\"out.2\"]},"
	            "{\"command\": \"cat out.0 out.1 out.2 > all\","
	            " \"inputs\": [\"out.0\", \"out.1\", \"out.2\"],"
	            " \"outputs\": [\"all\"], \"local_job\": true}]}",
	            "example", &err);
	/* an override from the command line replaces the text's define */
	json_t *defs = json_pack("{s:i}", "N", 1);
	v = jx_eval_string(example, "example.jx", defs, &err);
	assert_non_null(v);
	assert_int_equal(json_array_size(json_object_get(v, "rules")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "define"), "N")), 1);
	json_decref(v);
	json_decref(defs);
	/* plain JSON is JX */
	check_value(jx_eval_string("{\"rules\": [{\"command\": \"true\"}]}", NULL, NULL, &err),
	            "{\"rules\": [{\"command\": \"true\"}]}", "plain json", &err);
}

static void test_define_section(void **state)
{
	(void)state;
	struct jx_error err;
	const char *doc =
	    "{\"define\": {\"A\": 2, \"B\": A * 10, \"C\": [B + i for i in range(A)]},"
	    " \"out\": C, \"sum\": A + B}";
	check_value(jx_eval_string(doc, "d.jx", NULL, &err),
	            "{\"define\": {\"A\": 2, \"B\": 20, \"C\": [20, 21]}, \"out\": [20, 21],"
	            " \"sum\": 22}",
	            "define order", &err);
	/* overrides are seen by later entries; extra overrides are symbols too */
	json_t *defs = json_pack("{s:i, s:s}", "A", 3, "X", "extra");
	check_value(jx_eval_string(doc, "d.jx", defs, &err),
	            "{\"define\": {\"A\": 3, \"B\": 30, \"C\": [30, 31, 32]},"
	            " \"out\": [30, 31, 32], \"sum\": 33}",
	            "define override", &err);
	check_value(jx_eval_string("{\"v\": X}", "d.jx", defs, &err), "{\"v\": \"extra\"}",
	            "extra override", &err);
	check_value(jx_eval_string("[X, 1]", "d.jx", defs, &err), "[\"extra\", 1]",
	            "non-object document", &err);
	/* the override wins even when the text's own expression would fail */
	check_value(jx_eval_string("{\"define\": {\"A\": 1 / 0}, \"v\": A}", "d.jx", defs, &err),
	            "{\"define\": {\"A\": 3}, \"v\": 3}", "override skips text", &err);
	json_decref(defs);
	/* "define" can appear after the members that use it */
	check_value(jx_eval_string("{\"v\": K, \"define\": {\"K\": 1}}", NULL, NULL, &err),
	            "{\"v\": 1, \"define\": {\"K\": 1}}", "define last", &err);
	/* a computed define object */
	check_value(jx_eval_string("{\"define\": {\"a\": 1} , \"v\": a}", NULL, NULL, &err),
	            "{\"define\": {\"a\": 1}, \"v\": 1}", "define", &err);
	assert_null(jx_eval_string("{\"define\": {\"A\": B, \"B\": 1}}", "d.jx", NULL, &err));
	assert_string_equal(err.message, "undefined symbol 'B'");
	assert_null(jx_eval_string("{\"define\": 5}", "d.jx", NULL, &err));
	assert_non_null(strstr(err.message, "\"define\" must be an object"));
	assert_null(jx_eval_string("{\"define\": {}, \"define\": {}}", "d.jx", NULL, &err));
	assert_non_null(strstr(err.message, "duplicate key \"define\""));
	assert_null(jx_eval_string("{\"define\": {\"a\": 1, \"a\": 2}}", "d.jx", NULL, &err));
	assert_non_null(strstr(err.message, "duplicate define"));
	assert_null(jx_eval_string("{\"define\": {}, \"de\" + \"fine\": 1}", "d.jx", NULL, &err));
	assert_non_null(strstr(err.message, "duplicate key"));
	/* top-level define is only special in documents */
	check_value(jx_eval_expr("{\"define\": {\"a\": 1}}", NULL, &err),
	            "{\"define\": {\"a\": 1}}", "expr define", &err);
	json_t *bad = json_integer(1);
	assert_null(jx_eval_string("1", NULL, bad, &err));
	json_decref(bad);
	assert_null(jx_eval_string(NULL, NULL, NULL, &err));
}

static void test_error_positions(void **state)
{
	(void)state;
	struct jx_error err;
	char buf[1024];
	const char *doc = "{\n"
	                  "  \"define\": {\"N\": 2},\n"
	                  "  \"rules\": [\n"
	                  "    {\"command\": \"x\" + M}\n"
	                  "  ]\n"
	                  "}\n";
	assert_null(jx_eval_string(doc, "wf.jx", NULL, &err));
	assert_string_equal(jx_error_format(&err, buf, sizeof buf),
	                    "wf.jx:4:23: undefined symbol 'M'");
	assert_string_equal(err.file, "wf.jx");
	assert_int_equal(err.line, 4);
	assert_int_equal(err.column, 23);
	assert_null(jx_eval_string("{\n\"a\": [1,\n2,,3]}", "x.jx", NULL, &err));
	assert_string_equal(jx_error_format(&err, buf, sizeof buf), "x.jx:3:3: unexpected ','");
	assert_null(jx_eval_string("[1,\n\"tab\there\",\n\"open]", NULL, NULL, &err));
	assert_string_equal(jx_error_format(&err, buf, sizeof buf),
	                    "<string>:3:1: unterminated string");
	assert_null(jx_eval_string("{\"a\": 1}\n\n  garbage", "t.jx", NULL, &err));
	assert_string_equal(jx_error_format(&err, buf, sizeof buf),
	                    "t.jx:3:3: expected end of input but found identifier 'garbage'");
	assert_null(jx_eval_string("[1, 2] # c\n [3]", "t.jx", NULL, &err));
	assert_int_equal(err.line, 2);
	assert_null(jx_eval_string("# c\n\n\n  10 / (n - n)", "t.jx", symbols, &err));
	assert_string_equal(jx_error_format(&err, buf, sizeof buf), "t.jx:4:6: division by zero");
	/* truncated output stays terminated */
	char small[8];
	jx_error_format(&err, small, sizeof small);
	assert_string_equal(small, "t.jx:4:");
}

static char *write_temp(const char *content, size_t len)
{
	char *path = xstrdup("/tmp/test_jx_file.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, len), (ssize_t)len);
	close(fd);
	return path;
}

static void test_files(void **state)
{
	(void)state;
	struct jx_error err;
	char buf[1024];
	char *path = write_temp(example, strlen(example));
	json_t *v = jx_eval_file(path, NULL, &err);
	assert_non_null(v);
	assert_int_equal(json_array_size(json_object_get(v, "rules")), 4);
	json_decref(v);
	unlink(path);
	free(path);

	path = write_temp("{\"N\": 5, \"names\": [\"f\" + i for i in range(2)]}", 46);
	v = jx_load_args(path, &err);
	check_value(v, "{\"N\": 5, \"names\": [\"f0\", \"f1\"]}", "args", &err);
	unlink(path);
	free(path);

	path = write_temp("[1, 2]", 6);
	assert_null(jx_load_args(path, &err));
	assert_non_null(strstr(err.message, "must hold an object"));
	assert_string_equal(err.file, path);
	assert_int_equal(err.line, 0);
	unlink(path);
	free(path);

	path = write_temp("[1,\n 2 +]", 9);
	assert_null(jx_load_args(path, &err));
	jx_error_format(&err, buf, sizeof buf);
	assert_non_null(strstr(buf, ":2:5: unexpected ']'"));
	unlink(path);
	free(path);

	path = write_temp("[1,\n 2\0]", 8);
	assert_null(jx_eval_file(path, NULL, &err));
	assert_string_equal(err.message, "NUL byte in input");
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 3);
	unlink(path);
	free(path);

	assert_null(jx_eval_file("/nonexistent/x.jx", NULL, &err));
	assert_string_equal(jx_error_format(&err, buf, sizeof buf),
	                    "/nonexistent/x.jx: cannot open: No such file or directory");
	assert_null(jx_load_args("/nonexistent/args.jx", NULL));
}

/* ---- limits ---------------------------------------------------------------------------- */

static char *repeat(const char *pre, int n, const char *mid, const char *post)
{
	size_t lp = strlen(pre), lm = strlen(mid), lq = strlen(post);
	char *s = xmalloc(lp * (size_t)n + lm + lq * (size_t)n + 1);
	size_t k = 0;
	for (int i = 0; i < n; i++, k += lp)
		memcpy(s + k, pre, lp);
	memcpy(s + k, mid, lm);
	k += lm;
	for (int i = 0; i < n; i++, k += lq)
		memcpy(s + k, post, lq);
	s[k] = 0;
	return s;
}

static void expect_ok_free(char *text)
{
	struct jx_error err;
	char buf[1024];
	json_t *v = jx_eval_string(text, "deep", NULL, &err);
	if (!v)
		fail_msg("unexpected error: %s", jx_error_format(&err, buf, sizeof buf));
	json_decref(v);
	free(text);
}

static void expect_error_free(char *text, const char *part)
{
	struct jx_error err;
	json_t *v = jx_eval_string(text, "deep", NULL, &err);
	if (v)
		fail_msg("expected an error mentioning %s", part);
	if (!strstr(err.message, part))
		fail_msg("error \"%s\" does not mention \"%s\"", err.message, part);
	free(text);
}

static void test_deep_nesting(void **state)
{
	(void)state;
	expect_ok_free(repeat("[", 1000, "1", "]"));
	expect_error_free(repeat("[", 1001, "1", "]"), "nesting deeper than 1000 levels");
	expect_error_free(repeat("[", 200000, "", ""), "nesting deeper");
	expect_ok_free(repeat("{\"a\":", 1000, "1", "}"));
	expect_error_free(repeat("{\"a\":", 1001, "1", "}"), "nesting deeper");
	expect_ok_free(repeat("(", 1000, "1", ")"));
	expect_error_free(repeat("(", 100000, "1", ")"), "nesting deeper");
	expect_error_free(repeat("-", 100000, "1", ""), "nesting deeper");
	expect_error_free(repeat("not ", 100000, "true", ""), "nesting deeper");
	expect_error_free(repeat("!", 100000, "true", ""), "nesting deeper");
	expect_error_free(repeat("true ? 1 : ", 100000, "1", ""), "nesting deeper");
	expect_ok_free(repeat("[", 500, "1", "][0]"));
	expect_error_free(repeat("len(", 100000, "[]", ")"), "nesting deeper");
	/* long operator chains are flat, not deep */
	expect_ok_free(repeat("1 + ", 200000, "1", ""));
	expect_ok_free(repeat("\"a\" + ", 20000, "\"b\"", ""));
	expect_ok_free(repeat("true and ", 100000, "true", ""));
	char *idx = repeat("", 100000, "", "[0]");
	char *text = xasprintf("xs%s", idx);
	free(idx);
	expect_error(text, "nesting deeper");
	free(text);
	/* values built through defines are checked too */
	size_t cap = 2000 * 40 + 100, k = 0;
	char *doc = xmalloc(cap);
	k += (size_t)snprintf(doc + k, cap - k, "{\"define\": {\"d0\": []");
	for (int i = 1; i <= 1001; i++)
		k += (size_t)snprintf(doc + k, cap - k, ", \"d%d\": [d%d]", i, i - 1);
	snprintf(doc + k, cap - k, "}, \"v\": 1}");
	expect_error_free(doc, "value nested deeper than 1000 levels");
}

static void test_size_limits(void **state)
{
	(void)state;
	expect_error("[x for x in range(5000) for y in range(5000)]", "too many elements");
	expect_error("range(10000001)", "more than the limit");
	/* doubling strings and shared lists through defines */
	size_t cap = 64 * 60 + 100, k = 0;
	char *doc = xmalloc(cap);
	k += (size_t)snprintf(doc + k, cap - k, "{\"define\": {\"s0\": \"0123456789abcdef\"");
	for (int i = 1; i <= 40; i++)
		k += (size_t)snprintf(doc + k, cap - k, ", \"s%d\": s%d + s%d", i, i - 1, i - 1);
	snprintf(doc + k, cap - k, "}}");
	expect_error_free(doc, "too much string data");
	doc = xmalloc(cap);
	k = 0;
	k += (size_t)snprintf(doc + k, cap - k, "{\"define\": {\"l0\": [1]");
	for (int i = 1; i <= 40; i++)
		k += (size_t)snprintf(doc + k, cap - k, ", \"l%d\": [l%d, l%d]", i, i - 1, i - 1);
	snprintf(doc + k, cap - k, "}}");
	expect_error_free(doc, "value too large");
	/* a format width cannot blow up either */
	expect_error("format(\"%99999999999999999999d\", 1)", "width or precision");
}

static void test_work_limit(void **state)
{
	(void)state;
	/* each comparison walks a 100000-element list */
	struct jx_error err;
	assert_null(jx_eval_string("{\"define\": {\"a\": range(100000)},"
	                           " \"v\": [a == a for x in range(5000)]}",
	                           NULL, NULL, &err));
	assert_non_null(strstr(err.message, "evaluation too long"));
}

/* ---- garbage ------------------------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void try_text(const char *text)
{
	struct jx_error err;
	json_t *v = jx_eval_string(text, "garbage", symbols, &err);
	if (v) {
		json_decref(v);
	} else {
		assert_true(err.message[0] != 0);
		assert_true(err.line >= 0 && err.column >= 0);
	}
	v = jx_eval_expr(text, symbols, &err);
	json_decref(v);
}

static void test_garbage(void **state)
{
	(void)state;
	static const char *tokens[] = {
	    "[",
	    "]",
	    "{",
	    "}",
	    "(",
	    ")",
	    ",",
	    ":",
	    "?",
	    "+",
	    "-",
	    "*",
	    "/",
	    "%",
	    "==",
	    "!=",
	    "<",
	    "<=",
	    ">",
	    ">=",
	    "and",
	    "or",
	    "not",
	    "!",
	    "for",
	    "in",
	    "if",
	    "x",
	    "n",
	    "xs",
	    "obj",
	    "0",
	    "1",
	    "-1",
	    "2.5",
	    "1e3",
	    "\"s\"",
	    "\"a\\n\"",
	    "null",
	    "true",
	    "false",
	    "range(",
	    "len(",
	    "format(\"%d\",",
	    "join(",
	    "keys(",
	    "template(\"{n}\"",
	    "\"",
	    "#c\n",
	    "\n",
	    " ",
	    "escape(",
	    "select(",
	    "project(",
	    "items(",
	    "ceil(",
	    "floor(",
	    "basename(",
	    "dirname(",
	    "values(",
	    "0:",
	    "[0]",
	    "[1:]",
	};
	size_t ntok = sizeof tokens / sizeof tokens[0];
	char buf[4096];
	for (int round = 0; round < 300; round++) {
		/* random bytes */
		size_t len = rnd() % 200;
		for (size_t i = 0; i < len; i++) {
			char c = (char)(rnd() % 255 + 1);
			buf[i] = c;
		}
		buf[len] = 0;
		try_text(buf);
		/* printable soup */
		for (size_t i = 0; i < len; i++)
			buf[i] = "[]{}(),:+-*/%<>=!?\"#\\ \nabcxn0123456789.e"[rnd() % 41];
		buf[len] = 0;
		try_text(buf);
		/* token soup */
		size_t k = 0;
		size_t ntoks = rnd() % 40;
		for (size_t i = 0; i < ntoks; i++) {
			const char *t = tokens[rnd() % ntok];
			size_t tl = strlen(t);
			if (k + tl + 2 >= sizeof buf)
				break;
			memcpy(buf + k, t, tl);
			k += tl;
			buf[k++] = ' ';
		}
		buf[k] = 0;
		try_text(buf);
		/* mutations of the example */
		size_t el = strlen(example);
		memcpy(buf, example, el + 1);
		int muts = 1 + (int)(rnd() % 4);
		for (int m = 0; m < muts; m++) {
			size_t pos = rnd() % el;
			switch (rnd() % 3) {
			case 0: buf[pos] = (char)(rnd() % 255 + 1); break;
			case 1: buf[pos] = 0; break;
			default: buf[pos] = tokens[rnd() % ntok][0]; break;
			}
		}
		try_text(buf);
	}
}

/* Positions of values survive evaluation: members and items are found
 * through their container, also in a comprehension; --json reads plain JSON
 * with trailing commas and refuses expressions at their place. */
static void test_positions(void **state)
{
	(void)state;
	const char *text = "{\"rules\": [\n"
	                   "  {\"command\": \"a\" + f,\n"
	                   "   \"outputs\": [f, \"x\"]} for f in [\"p\", \"q\"],\n"
	                   "  {\"command\": 5, \"outputs\": []},\n"
	                   "]}\n";
	char *path = write_temp(text, strlen(text));
	struct jx_error err;
	struct jx_pos *pos = NULL;
	json_t *v = jx_eval_file_at(path, NULL, 0, &pos, &err);
	assert_non_null(v);
	assert_non_null(pos);
	json_t *rules = json_object_get(v, "rules");
	int line = 0, col = 0;
	assert_true(jx_pos_find(pos, rules, &line, &col));
	assert_int_equal(line, 1);
	assert_int_equal(col, 11);
	json_t *r1 = json_array_get(rules, 1);
	assert_true(jx_pos_find(pos, r1, &line, &col));
	assert_int_equal(line, 2);
	assert_int_equal(col, 3);
	assert_true(jx_pos_find_item(pos, rules, 1, &line, &col));
	assert_int_equal(line, 2);
	assert_true(jx_pos_find_member(pos, r1, "command", &line, &col));
	assert_int_equal(line, 2);
	assert_int_equal(col, 15);
	json_t *outs = json_object_get(r1, "outputs");
	assert_true(jx_pos_find_item(pos, outs, 1, &line, &col));
	assert_int_equal(line, 3);
	assert_int_equal(col, 19);
	json_t *r2 = json_array_get(rules, 2);
	assert_true(jx_pos_find_member(pos, r2, "command", &line, &col));
	assert_int_equal(line, 4);
	assert_int_equal(col, 15);
	assert_false(jx_pos_find_member(pos, r2, "nothing", &line, &col));
	json_decref(v);
	jx_pos_delete(pos);
	/* plain JSON: the same text is refused at its first expression */
	assert_null(jx_eval_file_at(path, NULL, 1, &pos, &err));
	assert_null(pos);
	assert_int_equal(err.line, 2);
	assert_non_null(strstr(err.message, "not plain JSON"));
	unlink(path);
	free(path);
	const char *json = "{\"a\": [1, 2,], \"define\": {\"x\": 1},}";
	path = write_temp(json, strlen(json));
	v = jx_eval_file_at(path, NULL, 1, NULL, &err);
	assert_non_null(v);
	assert_int_equal(json_array_size(json_object_get(v, "a")), 2);
	json_decref(v);
	unlink(path);
	free(path);
}

/* fetch() reads a local JSON file as CCTools does; URLs and bad files are
 * errors naming the file. */
static void test_fetch(void **state)
{
	(void)state;
	const char *doc = "{\"x\": 0, \"y\": \"test\", \"z\": 1.0,}\n";
	char *path = write_temp(doc, strlen(doc));
	char *expr = xasprintf("fetch(\"%s\")", path);
	expect(expr, "{\"x\": 0, \"y\": \"test\", \"z\": 1.0}");
	free(expr);
	expr = xasprintf("fetch(\"%s\")[\"y\"]", path);
	expect(expr, "\"test\"");
	free(expr);
	unlink(path);
	free(path);
	const char *bad = "{\"x\": fetch(\"self\")}";
	path = write_temp(bad, strlen(bad));
	expr = xasprintf("fetch(\"%s\")", path);
	expect_error_free(expr, "not plain JSON");
	unlink(path);
	free(path);
	expect_error("fetch(\"http://example.org/a.json\")", "is a URL");
	expect_error("fetch(\"/nonexistent/a.json\")", "cannot open");
	expect_error("fetch(1)", "must be a string");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_literals),
	    cmocka_unit_test(test_literal_errors),
	    cmocka_unit_test(test_arithmetic),
	    cmocka_unit_test(test_concatenation),
	    cmocka_unit_test(test_comparison),
	    cmocka_unit_test(test_logic),
	    cmocka_unit_test(test_conditional),
	    cmocka_unit_test(test_symbols),
	    cmocka_unit_test(test_index_slice),
	    cmocka_unit_test(test_comprehension),
	    cmocka_unit_test(test_range),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_template),
	    cmocka_unit_test(test_text_functions),
	    cmocka_unit_test(test_collection_functions),
	    cmocka_unit_test(test_listdir),
	    cmocka_unit_test(test_example_workflow),
	    cmocka_unit_test(test_define_section),
	    cmocka_unit_test(test_error_positions),
	    cmocka_unit_test(test_files),
	    cmocka_unit_test(test_deep_nesting),
	    cmocka_unit_test(test_size_limits),
	    cmocka_unit_test(test_work_limit),
	    cmocka_unit_test(test_garbage),
	    cmocka_unit_test(test_positions),
	    cmocka_unit_test(test_fetch),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
