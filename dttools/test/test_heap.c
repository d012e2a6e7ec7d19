/* test_heap.c: unit tests for the min-heap priority queue (heap.h),
 * including 100k random pushes that must pop out in key order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "heap.h"
#include "banned.h"

static void test_empty(void **state)
{
	(void)state;
	struct heap *h = heap_create(0);
	int64_t key = 99;
	assert_int_equal(heap_size(h), 0);
	assert_null(heap_pop(h, &key));
	assert_null(heap_peek(h, &key));
	assert_int_equal(key, 99);
	heap_delete(h);
	heap_delete(NULL);
}

static void test_basic(void **state)
{
	(void)state;
	struct heap *h = heap_create(1);
	int a = 1, b = 2, c = 3;
	assert_int_equal(heap_push(h, 30, &c), 0);
	assert_int_equal(heap_push(h, 10, &a), 0);
	assert_int_equal(heap_push(h, 20, &b), 0);
	assert_int_equal(heap_push(h, -5, NULL), 0);
	assert_int_equal(heap_size(h), 4);
	int64_t key;
	assert_null(heap_peek(h, &key));
	assert_int_equal(key, -5);
	assert_null(heap_pop(h, &key));
	assert_int_equal(key, -5);
	assert_int_equal(heap_size(h), 3);
	assert_ptr_equal(heap_peek(h, NULL), &a);
	assert_ptr_equal(heap_pop(h, &key), &a);
	assert_int_equal(key, 10);
	assert_ptr_equal(heap_pop(h, NULL), &b);
	assert_ptr_equal(heap_pop(h, &key), &c);
	assert_int_equal(key, 30);
	assert_int_equal(heap_size(h), 0);
	assert_null(heap_pop(h, NULL));
	heap_delete(h);
}

static void test_extremes_and_duplicates(void **state)
{
	(void)state;
	struct heap *h = heap_create(4);
	int64_t keys[] = {INT64_MAX, 0, INT64_MIN, 5, 5, 5, -1, INT64_MAX, INT64_MIN};
	size_t n = sizeof keys / sizeof keys[0];
	for (size_t i = 0; i < n; i++)
		heap_push(h, keys[i], &keys[i]);
	int64_t want[] = {INT64_MIN, INT64_MIN, -1, 0, 5, 5, 5, INT64_MAX, INT64_MAX};
	for (size_t i = 0; i < n; i++) {
		int64_t key;
		int64_t *v = heap_pop(h, &key);
		assert_true(key == want[i]);
		assert_true(*v == key);
	}
	heap_delete(h);
}

static void test_random_100k(void **state)
{
	(void)state;
	enum { N = 100000 };
	int64_t *keys = malloc(N * sizeof *keys);
	assert_non_null(keys);
	struct heap *h = heap_create(0);
	srandom(12345);
	for (size_t i = 0; i < N; i++) {
		/* a narrow range so there are many duplicates, plus negatives */
		keys[i] = (int64_t)(random() % 50000) - 25000;
		heap_push(h, keys[i], &keys[i]);
	}
	assert_int_equal(heap_size(h), N);
	int64_t prev = INT64_MIN;
	int64_t sum_in = 0, sum_out = 0;
	for (size_t i = 0; i < N; i++)
		sum_in += keys[i];
	for (size_t i = 0; i < N; i++) {
		int64_t key, peek;
		heap_peek(h, &peek);
		int64_t *v = heap_pop(h, &key);
		assert_true(peek == key);
		assert_true(key >= prev);
		assert_true(*v == key);
		prev = key;
		sum_out += key;
	}
	assert_true(sum_in == sum_out);
	assert_int_equal(heap_size(h), 0);

	/* interleaved pushes and pops keep the order */
	for (int round = 0; round < 1000; round++) {
		for (int j = 0; j < 3; j++)
			heap_push(h, random() % 1000, NULL);
		int64_t k1, k2;
		heap_pop(h, &k1);
		heap_peek(h, &k2);
		assert_true(k1 <= k2);
	}
	assert_int_equal(heap_size(h), 2000);
	heap_delete(h);
	free(keys);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_basic),
	    cmocka_unit_test(test_extremes_and_duplicates),
	    cmocka_unit_test(test_random_100k),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
