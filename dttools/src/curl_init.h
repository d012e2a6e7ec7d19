/* curl_init.h: the one place libcurl's global state is initialised. Every module that uses
 * libcurl (the master's URL inputs, the worker's downloads, the Docker Engine client) calls
 * curl_init_once() before its first handle, so the process initialises libcurl exactly once. */
#ifndef HTC_CURL_INIT_H
#define HTC_CURL_INIT_H

/* Calls curl_global_init(CURL_GLOBAL_DEFAULT) the first time; later calls do nothing.
 * Thread-safe (pthread_once). Never undone: libcurl's state lives until the process exits. */
void curl_init_once(void);

#endif
