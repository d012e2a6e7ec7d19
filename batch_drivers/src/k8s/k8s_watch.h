/* k8s_watch.h: one watch stream on the pods of a namespace that match a label selector, kept
 * alive across broken streams and apiserver restarts by resuming from the last
 * resourceVersion, and re-listing on 410 Gone (doc/kubernetes.md, section 3). Blocking: run it
 * in a thread of its own when the caller has a loop. */
#ifndef HTC_K8S_WATCH_H
#define HTC_K8S_WATCH_H

#include <stdbool.h>

#include <jansson.h>

#include "k8s_client.h"

#define K8S_WATCH_LINE_MAX   (4 * 1024 * 1024) /* cap of one event */
#define K8S_WATCH_GIVE_UP_MS 60000
#define K8S_WATCH_SERVER_S   300 /* timeoutSeconds asked of the server */

enum k8s_watch_event {
	K8S_WATCH_ADDED,
	K8S_WATCH_MODIFIED,
	K8S_WATCH_DELETED,
	K8S_WATCH_RELISTED, /* OBJECT is the array of every pod now matching (after a 410) */
};

/* Called for each event; OBJECT is borrowed. Return false to end k8s_watch_run (0). */
typedef bool (*k8s_watch_fn)(enum k8s_watch_event ev, json_t *object, void *arg);

struct k8s_watch_options {
	const char *ns;
	const char *selector;         /* label selector, NULL: every pod */
	const char *resource_version; /* where to start; NULL: list first (a RELISTED event) */
	long give_up_ms;              /* 0: K8S_WATCH_GIVE_UP_MS */
	int server_timeout_s;         /* 0: K8S_WATCH_SERVER_S */
	volatile int *stop;           /* non-zero ends the watch (checked about once a second) */
};

struct k8s_watch_stats {
	int streams;  /* streams opened */
	int resumed;  /* streams opened again from a remembered resourceVersion */
	int relisted; /* lists made after a 410 Gone */
	char last_rv[64];
};

/* Watches until FN returns false or *STOP is set (0), or until an error that retrying cannot
 * mend: 401/403/404 at once, no answer for give_up_ms in a row (the last error). *ERR (caller
 * frees) names the call. STATS (may be NULL) is filled as it goes. */
int k8s_watch_run(struct k8s_client *k, const struct k8s_watch_options *o, k8s_watch_fn fn,
                  void *arg, struct k8s_watch_stats *stats, char **err);

#endif
