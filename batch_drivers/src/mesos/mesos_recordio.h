/* mesos_recordio.h: the RecordIO framing of the Mesos v1 event stream ("Events" section of the
 * Scheduler HTTP API document): each record is its length in decimal ASCII, a newline, and that
 * many bytes of JSON. The parser takes the stream in arbitrary pieces, gives each whole record
 * to a callback, and refuses a bad length (not digits, no digits, leading junk) and a length
 * above its cap instead of buffering it. */
#ifndef HTC_MESOS_RECORDIO_H
#define HTC_MESOS_RECORDIO_H

#include <stddef.h>

#include "buffer.h"

#define MESOS_RECORD_MAX   (16u << 20) /* default cap of one record */
#define MESOS_RECORDIO_ERR 160

/* Called with each whole record (DATA is not NUL-terminated beyond LEN, but data[len] is 0).
 * Returns 0 to go on, non-zero to stop the feed (mesos_recordio_feed returns that value). */
typedef int (*mesos_record_fn)(const char *data, size_t len, void *arg);

struct mesos_recordio {
	size_t max;    /* cap of one record */
	int in_length; /* 1 while reading the decimal length */
	size_t want;   /* length of the record being read */
	int digits;    /* digits read of the length */
	struct buffer rec;
	char err[MESOS_RECORDIO_ERR]; /* why the stream was refused, once feed returned -1 */
	int failed;
};

/* MAX: cap of one record (0: MESOS_RECORD_MAX). */
void mesos_recordio_init(struct mesos_recordio *r, size_t max);
void mesos_recordio_free(struct mesos_recordio *r);
/* Starts a new stream (a new subscription): forgets any partial record and error. */
void mesos_recordio_reset(struct mesos_recordio *r);
/* Feeds N bytes. Returns 0; -1 when the stream is malformed (r->err says why, and every later
 * feed returns -1 until reset); or the non-zero value FN returned. */
int mesos_recordio_feed(struct mesos_recordio *r, const char *data, size_t n, mesos_record_fn fn,
                        void *arg);
/* 1 when the stream is between records (nothing partial is held). */
int mesos_recordio_idle(const struct mesos_recordio *r);

#endif
