/* catalog_server_main.c: the catalog server program: parses its options
 * (catalog_server_opts) and serves (catalog_server) until SIGTERM or SIGINT. The protocol,
 * limits and logging are described in doc/catalog.md. */
#include <signal.h>
#include <stdio.h>

#include "catalog_server.h"
#include "catalog_server_opts.h"
#include "cli.h"
#include "debug.h"

#include "banned.h"

int main(int argc, char **argv)
{
	debug_config_program("catalog_server");
	signal(SIGPIPE, SIG_IGN);
	struct catalog_server_opts o;
	char err[512] = "";
	int r = catalog_server_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r < 0 || catalog_server_run(&o, err, sizeof err) < 0)
		fatal("%s", err);
	debug_close();
	return 0;
}
