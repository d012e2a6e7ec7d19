/* scaler_hook_run.h: runs the --scaler-hook command once on the factory's libuv loop: `/bin/sh
 * -c CMD` in its own process group, the status document on its stdin, what it prints on stdout
 * and stderr kept up to SCALER_HOOK_MAX_OUTPUT bytes each. At the time limit the whole group is
 * killed and the result reported at once (a child that keeps the pipes open does not hold the
 * factory). */
#ifndef HTC_SCALER_HOOK_RUN_H
#define HTC_SCALER_HOOK_RUN_H

#include <uv.h>

struct scaler_hook_result {
	const char *out, *err; /* what it printed (NUL-terminated) */
	const char *fail;      /* NULL, or why there is no answer: not started, killed at the
	                          time limit, exited non-zero or by a signal, printed too much */
};

typedef void (*scaler_hook_fn)(const struct scaler_hook_result *r, void *arg);

/* Starts CMD with INPUT on its stdin; CB is called once from the loop. Returns 0, or a
 * negative error (CB will not be called). */
int scaler_hook_run(uv_loop_t *loop, const char *cmd, const char *input, double timeout_s,
                    scaler_hook_fn cb, void *arg);

#endif
