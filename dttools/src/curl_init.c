/* curl_init.c: initialises libcurl's global state once per process, whichever module asks
 * first (see curl_init.h). This is one of the named process-wide states of doc/design.md. */
#include "curl_init.h"

#include <curl/curl.h>
#include <pthread.h>

#include "banned.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void curl_init_once(void)
{
	pthread_once(&once, init);
}
