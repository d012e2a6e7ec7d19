/* fuzz_txlog_read.c: libFuzzer target for the incremental transaction-log reader. Any byte
 * string, fed in pieces whose sizes come from the input itself, must give either a consistent
 * progress or a "NAME:LINE: message" error, without a crash, leak or hang. Run with
 * test/fuzz.sh (`make fuzz`). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "txlog_read.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* the first byte chooses the size of the pieces (1 to 256 bytes) */
	size_t piece = (size_t)data[0] + 1;
	data++;
	size--;
	struct txlog_reader *rd = txlog_reader_create("fuzz.log", NULL, NULL);
	int r = 0;
	for (size_t i = 0; i < size && r == 0; i += piece) {
		size_t n = size - i < piece ? size - i : piece;
		r = txlog_reader_feed(rd, (const char *)data + i, n);
	}
	if (r != 0) {
		if (strncmp(txlog_reader_error(rd), "fuzz.log:", 9) != 0)
			abort();
	} else {
		const struct txlog_progress *p = txlog_reader_progress(rd);
		if (p->waiting < 0 || p->running < 0 || p->complete < 0 || p->failed < 0 ||
		    p->aborted < 0 || p->waiting > p->rules)
			abort();
		int64_t counted = 0;
		for (int64_t id = 0; id < p->rules; id++) {
			const struct txlog_rule *x = txlog_reader_rule(rd, id);
			if (!x)
				abort();
			counted += x->state == TXLOG_NODE_COMPLETE;
		}
		if (counted != p->complete)
			abort();
		(void)txlog_reader_recent_rate(rd);
	}
	txlog_reader_delete(rd);
	return 0;
}
