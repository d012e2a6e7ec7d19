/* catalog_update_main.c: the catalog_update tool. It reads one JSON record from a file or
 * standard input, checks it as the server would, and sends it to every catalog server of a
 * host list, by UDP or HTTP (doc/catalog.md, sections 2 and 7); for scripts and tests. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "buffer.h"
#include "catalog_client.h"
#include "catalog_store.h"
#include "debug.h"
#include "stringtools.h"
#include "timeutil.h"
#include "xalloc.h"
#include "banned.h"

#define MAX_RECORD (1 << 20)

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "Usage: %s [options] FILE|-\n"
	        "Sends the JSON record in FILE (or standard input) to the catalog servers.\n\n"
	        "  -C, --catalog=HOST:PORT[,...]  catalog servers (default $CATALOG_HOST, else "
	        "%s)\n"
	        "      --udp                  send a UDP datagram (no reply)\n"
	        "      --http                 send POST /update (the server's answer is checked)\n"
	        "                             (default: UDP below %d bytes, else HTTP)\n"
	        "  -t, --timeout=SECONDS      give up after this long (default 5)\n"
	        "  -d, --debug=SUBSYS         debug output: %s\n"
	        "  -o, --debug-file=FILE      write debug output to FILE\n"
	        "  -v, --version              show the version\n"
	        "  -h, --help                 show this help\n\n"
	        "Exit status: 0 sent; 1 bad option or record; 2 not delivered to some host.\n",
	        prog, CATALOG_DEFAULT_HOST, CATALOG_UDP_THRESHOLD, debug_flags_help());
}

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
	const char *list = NULL;
	enum catalog_send_mode mode = CATALOG_SEND_AUTO;
	double timeout = 5;

	debug_config_program("catalog_update");
	enum { OPT_UDP = 256, OPT_HTTP };
	static const struct option longopts[] = {
	    {"catalog", required_argument, 0, 'C'},
	    {"udp", no_argument, 0, OPT_UDP},
	    {"http", no_argument, 0, OPT_HTTP},
	    {"timeout", required_argument, 0, 't'},
	    {"debug", required_argument, 0, 'd'},
	    {"debug-file", required_argument, 0, 'o'},
	    {"version", no_argument, 0, 'v'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":C:t:d:o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'C': list = optarg; break;
		case OPT_UDP: mode = CATALOG_SEND_UDP; break;
		case OPT_HTTP: mode = CATALOG_SEND_HTTP; break;
		case 't':
			if (str_to_double(optarg, &timeout) < 0 || timeout <= 0 || timeout > 3600)
				fatal("-t %s: expected a number of seconds in (0, 3600]", optarg);
			break;
		default: {
			char err[256];
			int r =
			    cli_common_option(c, argv, "catalog_update", usage, err, sizeof err);
			if (r == CLI_EXIT)
				return 0;
			if (r == CLI_FAIL)
				fatal("%s", err);
			break;
		}
		}
	}
	if (argc - optind != 1)
		fatal("expected one FILE (or - for standard input); see --help");
	const char *path = argv[optind];

	struct catalog_host hosts[CATALOG_MAX_HOSTS];
	int n;
	char *err = NULL;
	if (catalog_hosts_parse(list, hosts, CATALOG_MAX_HOSTS, &n, &err) < 0)
		fatal("%s", err);

	size_t len;
	char *text = read_all(path, &len);
	/* Check the record the way the server will, with a scratch store. */
	struct catalog_store *check = catalog_store_create(NULL);
	int rc = catalog_store_update(check, text, len, "0.0.0.0", time_now_us(), NULL, &err);
	catalog_store_delete(check);
	if (rc < 0)
		fatal("%s: %s", path, err);
	if (mode == CATALOG_SEND_UDP && len > 65507)
		fatal("%s: %zu bytes do not fit in one UDP datagram (use --http)", path, len);

	rc = catalog_update_send(list, text, len, mode, timeout, &err);
	free(text);
	if (rc < 0) {
		fprintf(stderr, "catalog_update: %s\n", err);
		free(err);
		return 2;
	}
	debug_close();
	return 0;
}
