/* scaler_hook.h: the answer of a --scaler-hook command (doc/work-queue-factory.md, "The scaler
 * hook"): one JSON object, {"workers": N} or {"start": N, "drain": [worker ids]}, with an
 * optional "next_in" in seconds. Parsing is apart from running the command so that every answer
 * a hook may give is tested. */
#ifndef HTC_SCALER_HOOK_H
#define HTC_SCALER_HOOK_H

#include <stddef.h>

#include "scaler.h"

/* Most bytes of a hook's answer. */
#define SCALER_HOOK_MAX_OUTPUT (64 * 1024)

/* Turns OUT (what the hook printed) into D, given what the hook was shown (IN: {"workers": N}
 * starts or drains the difference with the factory's live pool, draining its idle workers
 * first). Returns 0, or -EINVAL with ERR saying what is wrong with the answer (D is then empty:
 * the pool keeps its size). */
int scaler_hook_parse(const char *out, const struct scaler_input *in, struct scaler_decision *d,
                      char *err, size_t errlen);

#endif
