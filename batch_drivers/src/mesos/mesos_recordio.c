/* mesos_recordio.c: the RecordIO stream parser of mesos_recordio.h, a small state machine over
 * bytes: digits up to a newline give a length, then that many bytes are collected into one
 * record, which is handed to the caller. */
#include "mesos_recordio.h"

#include <stdio.h>
#include <string.h>

#include "banned.h"

void mesos_recordio_init(struct mesos_recordio *r, size_t max)
{
	memset(r, 0, sizeof *r);
	r->max = max ? max : MESOS_RECORD_MAX;
	buffer_init(&r->rec, r->max);
	r->in_length = 1;
}

void mesos_recordio_free(struct mesos_recordio *r)
{
	buffer_free(&r->rec);
}

void mesos_recordio_reset(struct mesos_recordio *r)
{
	buffer_clear(&r->rec);
	r->in_length = 1;
	r->want = 0;
	r->digits = 0;
	r->failed = 0;
	r->err[0] = 0;
}

int mesos_recordio_idle(const struct mesos_recordio *r)
{
	return r->in_length && r->digits == 0;
}

static int fail(struct mesos_recordio *r, const char *what, unsigned char c)
{
	if (c >= 0x20 && c < 0x7f)
		snprintf(r->err, sizeof r->err, "%s (byte '%c')", what, c);
	else
		snprintf(r->err, sizeof r->err, "%s (byte 0x%02x)", what, c);
	r->failed = 1;
	return -1;
}

int mesos_recordio_feed(struct mesos_recordio *r, const char *data, size_t n, mesos_record_fn fn,
                        void *arg)
{
	if (r->failed)
		return -1;
	size_t i = 0;
	while (i < n) {
		if (r->in_length) {
			unsigned char c = (unsigned char)data[i++];
			if (c == '\n') {
				if (r->digits == 0)
					return fail(r, "a record length without digits", c);
				r->in_length = 0;
				buffer_clear(&r->rec);
				if (r->want == 0) { /* an empty record */
					r->in_length = 1;
					r->digits = 0;
					int s = fn("", 0, arg);
					if (s)
						return s;
				}
				continue;
			}
			if (c < '0' || c > '9')
				return fail(r, "a record length that is not a decimal number", c);
			if (r->digits >= 12 || r->want > (r->max - (c - '0')) / 10) {
				snprintf(r->err, sizeof r->err,
				         "a record longer than the limit of %zu bytes", r->max);
				r->failed = 1;
				return -1;
			}
			r->want = r->want * 10 + (size_t)(c - '0');
			r->digits++;
			continue;
		}
		size_t have = buffer_len(&r->rec);
		size_t take = r->want - have;
		if (take > n - i)
			take = n - i;
		if (buffer_putlstring(&r->rec, data + i, take) < 0) {
			snprintf(r->err, sizeof r->err,
			         "a record longer than the limit of %zu bytes", r->max);
			r->failed = 1;
			return -1;
		}
		i += take;
		if (buffer_len(&r->rec) == r->want) {
			r->in_length = 1;
			r->want = 0;
			r->digits = 0;
			int s = fn(buffer_tostring(&r->rec), buffer_len(&r->rec), arg);
			buffer_clear(&r->rec);
			if (s)
				return s;
		}
	}
	return 0;
}
