/* fuzz_catalog_expr.c: libFuzzer target for the catalog's JX filter expressions
 * (catalog_expr.h), which come from the network in CCTools queries: the input is parsed as an
 * expression and, when it parses, evaluated over two records; it is also read as the path of
 * a /query/BASE64 request (catalog_cctools.h). Built and run by test/fuzz.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "catalog_cctools.h"
#include "catalog_expr.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *recs;
	if (!recs)
		recs = json_loads("[{\"type\":\"wq_master\",\"project\":\"p\",\"port\":9123,"
		                  "\"load\":0.5,\"ssl\":true,\"none\":null,\"obj\":{\"a\":1},"
		                  "\"big\":9223372036854775807,\"lastheard\":1},{}]",
		                  0, NULL);
	char *err = NULL;
	struct catalog_expr *e = catalog_expr_parse((const char *)data, size, &err);
	if (e) {
		json_t *a = catalog_cctools_select(recs, e);
		json_decref(a);
		catalog_expr_delete(e);
	}
	free(err);
	/* the same bytes as a query path (a C string: up to the first NUL) */
	char *path = malloc(size + 1);
	if (!path)
		return 0;
	for (size_t i = 0; i < size; i++)
		path[i] = (char)data[i];
	path[size] = 0;
	err = NULL;
	e = catalog_cctools_parse_query(path, &err);
	catalog_expr_delete(e);
	free(err);
	free(path);
	return 0;
}
