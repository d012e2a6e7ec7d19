/* ts_fake_engine.h: a fake Docker Engine for tests of its clients: a forked child listening on
 * a Unix socket that answers each request (its body read whole) with one fixed HTTP response. */
#ifndef HTC_TS_FAKE_ENGINE_H
#define HTC_TS_FAKE_ENGINE_H

#include <sys/types.h>

/* Answers every connection on PATH with RESPONSE (N times), then exits; with HOLD_S > 0 it keeps
 * each connection open that long after answering. Never lives more than 30 s (plus HOLD_S).
 * Returns the child's pid (kill and reap it). */
pid_t ts_fake_engine_hold(const char *path, const char *response, int n, unsigned hold_s);
pid_t ts_fake_engine(const char *path, const char *response, int n);

#endif
