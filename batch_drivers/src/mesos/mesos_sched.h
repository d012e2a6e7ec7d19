/* mesos_sched.h: one framework's connection to a Mesos master over the v1 Scheduler HTTP API on
 * a libuv loop: the SUBSCRIBE stream (RecordIO events), calls with the stream id and framework
 * id, automatic ACKNOWLEDGE of status updates, heartbeat supervision, and re-subscription with
 * the framework id when the stream breaks (doc/batch-mesos.md, "Failover" and "Heartbeats").
 * Fatal conditions (ERROR event, malformed stream, heartbeat loss, the master unreachable for
 * too long, SUBSCRIBE refused) are reported once through the lost callback. */
#ifndef HTC_MESOS_SCHED_H
#define HTC_MESOS_SCHED_H

#include <jansson.h>
#include <uv.h>

struct mesos_sched;

struct mesos_sched_ops {
	/* SUBSCRIBED: FID is the framework id; AGAIN is 1 after a re-subscription. */
	void (*subscribed)(void *arg, const char *fid, int again);
	/* Any other event (OFFERS, RESCIND, UPDATE, FAILURE, MESSAGE...): TYPE and the whole
	 * event (borrowed). UPDATEs are acknowledged after this returns. */
	void (*event)(void *arg, const char *type, json_t *ev);
	/* The master is lost for good: WHY names it ("mesos master HOST:PORT: ..."). No callback
	 * comes after this one. */
	void (*lost)(void *arg, const char *why);
	/* A call was not accepted (not 202): CALL (borrowed) and WHY (quotes the answer). */
	void (*refused)(void *arg, json_t *call, const char *why);
};

struct mesos_sched_config {
	const char *master;       /* HOST:PORT, or http://HOST:PORT */
	const char *name;         /* framework name */
	const char *fid;          /* resume this framework (NULL: a new one) */
	double failover_timeout;  /* seconds */
	int heartbeat_misses;     /* lost after this many intervals without any event */
	double reconnect_timeout; /* seconds of failed re-subscriptions before giving up */
	const char *principal;    /* HTTP basic authentication as this principal, or NULL */
	const char *secret;       /* its secret */
};

/* Copies CFG's strings. Nothing is sent before mesos_sched_start. NULL with errno set. */
struct mesos_sched *mesos_sched_new(uv_loop_t *loop, const struct mesos_sched_config *cfg,
                                    const struct mesos_sched_ops *ops, void *arg);
/* Subscribes. 0 or a negative error. */
int mesos_sched_start(struct mesos_sched *s);
/* Sends CALL (stolen; its framework_id is set here). Calls made before the subscription is
 * up, or while re-subscribing, wait and go once it is. */
void mesos_sched_call(struct mesos_sched *s, json_t *call);
/* The framework id ("" before the first SUBSCRIBED). */
const char *mesos_sched_fid(const struct mesos_sched *s);
/* "HOST:PORT" as given. */
const char *mesos_sched_master(const struct mesos_sched *s);
/* 1 while subscribed (the stream is up and SUBSCRIBED came). */
int mesos_sched_up(const struct mesos_sched *s);
/* Calls sent and not yet answered. */
int mesos_sched_pending(const struct mesos_sched *s);
/* Stops everything without callbacks and frees S (handles close from the loop). NULL is ok.
 * May be called from a callback. */
void mesos_sched_delete(struct mesos_sched *s);

/* Sends TEARDOWN for S's framework synchronously (blocking curl, TIMEOUT_MS), for destroy paths
 * where the loop may not run again. 0, or -EIO with a warning. */
int mesos_sched_teardown_sync(struct mesos_sched *s, long timeout_ms);

#endif
