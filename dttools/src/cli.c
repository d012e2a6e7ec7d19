/* cli.c: the shared part of every program's option parsing (debug options, version, help,
 * and the texts for a missing value or an unknown option). See cli.h. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <string.h>

#include "config.h"
#include "debug.h"
#include "htc_error.h"

#include "banned.h"

int cli_common_option(int c, char *const argv[], const char *prog,
                      void (*usage)(FILE *out, const char *argv0), char *err, size_t errlen)
{
	switch (c) {
	case 'd':
		if (debug_flags_set(optarg) < 0) {
			snprintf(err, errlen, "-d %s: unknown subsystem (valid: %s)", optarg,
			         debug_flags_help());
			return CLI_FAIL;
		}
		return CLI_DONE;
	case 'o':
		if (debug_config_file(optarg) < 0) {
			snprintf(err, errlen, "-o %s: %s", optarg, strerror(errno));
			return CLI_FAIL;
		}
		return CLI_DONE;
	case 'v': printf("%s %s\n", prog, HTC_VERSION); return CLI_EXIT;
	case 'h': usage(stdout, argv[0]); return CLI_EXIT;
	case ':':
		snprintf(err, errlen, "option %s needs a value (see --help)", argv[optind - 1]);
		return CLI_FAIL;
	default:
		if (optopt && optopt < 256)
			snprintf(err, errlen, "unknown option -%c (see --help)", optopt);
		else
			snprintf(err, errlen, "unknown option %s (see --help)", argv[optind - 1]);
		return CLI_FAIL;
	}
}

int cli_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return HTC_EPARSE;
}
