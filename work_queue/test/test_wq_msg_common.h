/* test_wq_msg_common.h: what the tests of the control messages (test_wq_msg.c,
 * test_wq_msg_worker.c) share: the cache object name of the section 8 frames and small
 * helpers. */
#ifndef TEST_WQ_MSG_COMMON_H
#define TEST_WQ_MSG_COMMON_H

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define OBJ "F-a4b0723993d3751f3d530e3c20da4c24ccdd32e65820fba897cc5f119e85ca55"

static inline json_t *load(const char *s)
{
	json_error_t err;
	json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, &err);
	if (!j)
		fail_msg("bad test JSON: %s: %s", err.text, s);
	return j;
}

static inline void expect_why(char *why, const char *text)
{
	assert_non_null(why);
	if (strcmp(why, text) != 0)
		fail_msg("got \"%s\", expected \"%s\"", why, text);
	free(why);
}

/* A string of N 'c's (caller frees). */
static inline char *filled(size_t n)
{
	char *s = malloc(n + 1);
	memset(s, 'c', n);
	s[n] = 0;
	return s;
}

#endif
