/* fuzz_mesos_events.c: libFuzzer target for the Mesos event stream reader: any bytes go through
 * the RecordIO parser (mesos_recordio.h) in two pieces cut where the first byte says, each record
 * is parsed as JSON and, when it is an OFFERS event, its offers' resources are read
 * (mesos_proto.h), as the driver does. Built and run by test/fuzz.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mesos_proto.h"
#include "mesos_recordio.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_record(const char *d, size_t len, void *arg)
{
	(void)arg;
	if (d[len] != 0)
		abort();
	json_t *ev = json_loadb(d, len, 0, NULL);
	json_t *offers = json_object_get(json_object_get(ev, "offers"), "offers");
	size_t i;
	json_t *o;
	json_array_foreach(offers, i, o)
	{
		struct mesos_res r;
		mesos_offer_resources(o, &r);
	}
	json_t *st = json_object_get(json_object_get(ev, "update"), "status");
	const char *state = json_string_value(json_object_get(st, "state"));
	if (state && mesos_state_phase(state) == MESOS_PHASE_ENDED) {
		struct batch_result br;
		memset(&br, 0, sizeof br);
		free(mesos_result_from_status(
		    state, json_string_value(json_object_get(st, "reason")),
		    json_string_value(json_object_get(st, "message")), &br));
	}
	json_decref(ev);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mesos_recordio r;
	mesos_recordio_init(&r, 4096);
	size_t cut = size ? data[0] % (size + 1) : 0;
	if (mesos_recordio_feed(&r, (const char *)data, cut, on_record, NULL) == 0)
		mesos_recordio_feed(&r, (const char *)data + cut, size - cut, on_record, NULL);
	else if (!r.err[0])
		abort(); /* a refusal always says why */
	mesos_recordio_free(&r);
	return 0;
}
