/* fuzz_parser.c: libFuzzer target for the Makeflow-language parser. Any byte
 * string must give either a dag or a "FILE:LINE: message" error, without a
 * crash, leak, hang or runaway memory. Not built by default; for example:
 * clang -g -fsanitize=fuzzer,address,undefined -I. -Idttools/src -Imakeflow/src
 *   makeflow/test/fuzz_parser.c makeflow/src/{dag,dag_check,parser,parser_lex}.c
 *   dttools/src/{buffer,units,xalloc,debug,htc_error}.c -o fuzz_parser */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dag.h"
#include "parser.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	/* small caps keep each run fast and bounded */
	struct dag_parse_options o = {
	    .ignore_environment = 1, .max_line = 64 * 1024, .max_expansion = 64 * 1024};
	struct dag *d = dag_from_buffer((const char *)data, size, "fuzz.mf", &o, err, sizeof err);
	if (d) {
		/* touch the structure the way the engine would */
		int max_depth, *widths = NULL;
		if (dag_topological_depth(d, &max_depth, &widths) != 0)
			abort();
		free(widths);
		dag_delete(d);
	} else if (strncmp(err, "fuzz.mf:", 8) != 0) {
		abort();
	}
	return 0;
}
