/* fuzz_jx.c: libFuzzer target for the JX language. Each input is evaluated
 * as a whole document and as a standalone expression; any outcome but a
 * crash, hang, leak or sanitizer report is acceptable. Under sanitizers the
 * slowest inputs reach the evaluation step limit only after a minute or two;
 * building with -DJX_MAX_WORK=5000000 keeps every run within seconds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jx.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *symbols;
	if (!symbols)
		symbols = json_pack("{s:i, s:[i,i,i], s:{s:s}, s:s}", "N", 3, "xs", 1, 2, 3, "obj",
		                    "k", "v", "name", "data");
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	struct jx_error err;
	json_t *v = jx_eval_string(text, "fuzz", symbols, &err);
	json_decref(v);
	v = jx_eval_expr(text, symbols, &err);
	json_decref(v);
	free(text);
	return 0;
}
