/* catalog_update_main.c: the catalog_update tool. It reads one JSON record from a file or
 * standard input, checks it as the server would, and sends it to every catalog server of a
 * host list, by UDP or HTTP (doc/catalog.md, sections 2 and 7); for scripts and tests. Options:
 * catalog_update_opts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "catalog_client.h"
#include "catalog_store.h"
#include "catalog_update_opts.h"
#include "cli.h"
#include "debug.h"
#include "timeutil.h"

#include "banned.h"

#define MAX_RECORD (1 << 20)

static char *read_all(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f)
		fatal("%s: %s", path, strerror(errno));
	struct buffer b;
	buffer_init(&b, MAX_RECORD);
	char chunk[8192];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		if (buffer_putlstring(&b, chunk, n) < 0)
			fatal("%s: record too large (limit %d bytes)", path, MAX_RECORD);
	if (ferror(f))
		fatal("%s: %s", path, strerror(errno));
	if (f != stdin)
		fclose(f);
	return buffer_steal(&b, len);
}

int main(int argc, char **argv)
{
	debug_config_program("catalog_update");
	struct catalog_update_opts o;
	char *err = NULL;
	char msg[1024] = "";
	int r = catalog_update_opts_parse(argc, argv, &o, msg, sizeof msg);
	if (r == CLI_EXIT)
		return 0;
	if (r < 0)
		fatal("%s", msg);

	size_t len;
	char *text = read_all(o.path, &len);
	/* Check the record the way the server will, with a scratch store. */
	struct catalog_store *check = catalog_store_create(NULL);
	int rc = catalog_store_update(check, text, len, "0.0.0.0", time_now_us(), NULL, &err);
	catalog_store_delete(check);
	if (rc < 0)
		fatal("%s: %s", o.path, err);
	if (o.mode == CATALOG_SEND_UDP && len > 65507)
		fatal("%s: %zu bytes do not fit in one UDP datagram (use --http)", o.path, len);

	rc = catalog_update_send(o.catalog, text, len, o.mode, o.timeout, &err);
	free(text);
	if (rc < 0) {
		fprintf(stderr, "catalog_update: %s\n", err);
		free(err);
		return 2;
	}
	debug_close();
	return 0;
}
