/* test_vec.c: unit tests for the growable-array macros (vec.h): growth keeps the elements,
 * the first capacity and doubling, capacities of several integer types, the hard cap of
 * VEC_RESERVE_MAX, exact resizing, and the abort on a capacity that would overflow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vec.h"
#include "banned.h"

static void test_push_keeps_elements(void **state)
{
	(void)state;
	int *v = NULL;
	size_t n = 0, cap = 0;
	for (int i = 0; i < 100000; i++)
		VEC_PUSH(v, n, cap, i * 3);
	assert_int_equal(n, 100000);
	assert_true(cap >= n);
	assert_true(cap < 2 * n);
	for (int i = 0; i < 100000; i++)
		assert_int_equal(v[i], i * 3);
	free(v);
}

static void test_first_and_doubling(void **state)
{
	(void)state;
	char **v = NULL;
	int n = 0, cap = 0;
	VEC_PUSH(v, n, cap, "a");
	assert_int_equal(cap, VEC_FIRST);
	for (int i = 1; i < VEC_FIRST; i++)
		VEC_PUSH(v, n, cap, "b");
	assert_int_equal(cap, VEC_FIRST);
	VEC_PUSH(v, n, cap, "c");
	assert_int_equal(cap, 2 * VEC_FIRST);
	assert_string_equal(v[0], "a");
	assert_string_equal(v[VEC_FIRST], "c");
	/* A larger reservation doubles as often as it takes. */
	VEC_RESERVE(v, cap, 1000);
	assert_int_equal(cap, 16 * 64);
	/* Room that is there already changes nothing. */
	char **before = v;
	VEC_RESERVE(v, cap, 10);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 1024);
	free(v);
	/* An array kept once per object may start smaller. */
	int *k = NULL;
	size_t kcap = 0;
	VEC_RESERVE_FIRST(k, kcap, 1, 1);
	assert_int_equal(kcap, 1);
	VEC_RESERVE_FIRST(k, kcap, 2, 1);
	assert_int_equal(kcap, 2);
	VEC_RESERVE_FIRST(k, kcap, 3, 1);
	assert_int_equal(kcap, 4);
	free(k);
}

static void test_capacity_types(void **state)
{
	(void)state;
	uint8_t *b = NULL;
	unsigned ucap = 0;
	VEC_RESERVE(b, ucap, 3);
	assert_int_equal(ucap, VEC_FIRST);
	long long *l = NULL;
	long long lcap = 5;
	l = malloc(5 * sizeof *l);
	for (int i = 0; i < 5; i++)
		l[i] = -i;
	VEC_RESERVE(l, lcap, 6);
	assert_int_equal(lcap, 10);
	for (int i = 0; i < 5; i++)
		assert_int_equal(l[i], -i);
	struct pair {
		int a;
		double b;
	} *p = NULL;
	unsigned long pn = 0, pcap = 0;
	for (int i = 0; i < 20; i++)
		VEC_PUSH(p, pn, pcap, ((struct pair){i, i / 2.0}));
	assert_int_equal(p[19].a, 19);
	assert_true(p[19].b == 9.5);
	free(b);
	free(l);
	free(p);
}

static void test_next_cap(void **state)
{
	(void)state;
	assert_int_equal(vec_next_cap(0, 1, 4, 8, 100), 8);
	assert_int_equal(vec_next_cap(0, 9, 4, 8, 100), 16);
	assert_int_equal(vec_next_cap(3, 13, 4, 8, 100), 24);
	assert_int_equal(vec_next_cap(0, 1, 4, 0, 100), 1);
	assert_int_equal(vec_next_cap(8, 9, 4, 8, 100), 16);
	assert_int_equal(vec_next_cap(64, 65, 4, 8, 100), 100);
	assert_int_equal(vec_next_cap(100, 101, 4, 8, 100), 0);
	/* What size_t can count in bytes is a limit too. */
	assert_int_equal(vec_next_cap(0, SIZE_MAX / 16 + 1, 16, 8, SIZE_MAX), 0);
	assert_int_equal(vec_next_cap(SIZE_MAX / 32 + 1, SIZE_MAX / 32 + 2, 16, 8, SIZE_MAX),
	                 SIZE_MAX / 16);
	assert_int_equal(vec_next_cap(SIZE_MAX / 2, SIZE_MAX / 2 + 1, 1, 8, SIZE_MAX),
	                 SIZE_MAX - 1);
	assert_int_equal(vec_next_cap(SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 2, 1, 8, SIZE_MAX),
	                 SIZE_MAX);
}

static void test_reserve_max(void **state)
{
	(void)state;
	char *s = NULL;
	size_t cap = 0;
	assert_int_equal(VEC_RESERVE_MAX(s, cap, 10, 64, 100), 0);
	assert_int_equal(cap, 64);
	memset(s, 'x', 64);
	/* Growth stops at the cap... */
	assert_int_equal(VEC_RESERVE_MAX(s, cap, 65, 64, 100), 0);
	assert_int_equal(cap, 100);
	assert_int_equal(s[63], 'x');
	assert_int_equal(VEC_RESERVE_MAX(s, cap, 100, 64, 100), 0);
	/* ...and a need past it is refused, leaving the array as it was. */
	char *before = s;
	assert_int_equal(VEC_RESERVE_MAX(s, cap, 101, 64, 100), HTC_ETOOBIG);
	assert_ptr_equal(s, before);
	assert_int_equal(cap, 100);
	/* The capacity's type is a cap of its own. */
	int *v = NULL;
	int icap = 0;
	assert_int_equal(VEC_RESERVE_MAX(v, icap, (size_t)INT_MAX + 1, 8, SIZE_MAX), HTC_ETOOBIG);
	assert_null(v);
	assert_int_equal(icap, 0);
	free(s);
}

static void test_resize(void **state)
{
	(void)state;
	const char **v = NULL;
	for (int n = 1; n <= 5; n++) {
		VEC_RESIZE(v, n);
		v[n - 1] = "x";
	}
	VEC_RESIZE(v, 2);
	assert_string_equal(v[1], "x");
	VEC_RESIZE(v, 0);
	assert_non_null(v);
	free(v);
}

/* Runs FN in a child with stderr closed; 1 when it aborted. */
static int aborts(void (*fn)(void))
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 2);
		fn();
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}

static void overflow_int_cap(void)
{
	char *p = NULL;
	int cap = 16;
	VEC_RESERVE(p, cap, (size_t)INT_MAX + 1);
}

static void overflow_bytes(void)
{
	double *p = NULL;
	VEC_RESIZE(p, SIZE_MAX / 4);
}

static void test_overflow_aborts(void **state)
{
	(void)state;
	assert_true(aborts(overflow_int_cap));
	assert_true(aborts(overflow_bytes));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_push_keeps_elements), cmocka_unit_test(test_first_and_doubling),
	    cmocka_unit_test(test_capacity_types),      cmocka_unit_test(test_next_cap),
	    cmocka_unit_test(test_reserve_max),         cmocka_unit_test(test_resize),
	    cmocka_unit_test(test_overflow_aborts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
