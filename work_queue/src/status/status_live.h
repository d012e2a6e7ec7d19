/* status_live.h: work_queue_status --live: a view of one master (its workers, tasks by state and
 * category, completion rates) refreshed every few seconds, in place on a terminal and as plain
 * repeated blocks otherwise, until q is typed, SIGINT or SIGTERM arrives, or the master goes
 * away. The frame is built apart from the loop so that it is tested without a master. */
#ifndef HTC_STATUS_LIVE_H
#define HTC_STATUS_LIVE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "buffer.h"
#include "status_client.h"

/* What one refresh gathered: the replies of the four queries (borrowed). */
struct status_live_sample {
	const json_t *master;     /* the "master" reply (an array of one object) */
	const json_t *workers;    /* "workers" */
	const json_t *tasks;      /* "tasks" */
	const json_t *categories; /* "categories" */
	int64_t now_us;           /* wall clock of the sample */
};

/* The done count and time of the previous frame, for the recent rate. */
struct status_live_prev {
	int have;
	int64_t done;
	int64_t at_us;
};

/* At most this many workers are listed one by one in a frame. */
#define STATUS_LIVE_MAX_WORKERS 20

/* Appends the frame of S for the master at HOST:PORT to OUT and updates PREV. Returns 0 or
 * HTC_ETOOBIG (OUT's cap). */
int status_live_frame(struct buffer *out, const char *host, int port,
                      const struct status_live_sample *s, struct status_live_prev *prev);

struct status_live_opts {
	const char *host;
	int port;
	double interval_s;              /* between two refreshes */
	const struct wq_status_opts *q; /* password, TLS, timeout of each query */
	FILE *out;                      /* the frames */
	int tty;                        /* OUT is a terminal: redraw in place */
	int input_fd; /* where q is read (a terminal is put in raw mode); -1: none */
};

/* How the view ended. */
enum status_live_end {
	STATUS_LIVE_QUIT = 0,   /* q typed */
	STATUS_LIVE_SIGNAL = 1, /* SIGINT or SIGTERM */
	STATUS_LIVE_GONE = 2,   /* the master went away after at least one frame */
	STATUS_LIVE_ERROR = 3,  /* the first query failed */
};

/* Runs the view until it ends; a one-line message saying why is in MSG. */
enum status_live_end status_live_run(const struct status_live_opts *o, char *msg, size_t msglen);

#endif
