/* debug.c: subsystem-filtered logging to stderr or a file (see debug.h). */
#include "debug.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "banned.h"

uint64_t debug_enabled_flags = D_NOTICE;

static FILE *debug_file;
static char debug_program[64] = "htc";
static char debug_path[4096];    /* the -o file, for rotation */
static int64_t debug_rotate_max; /* bytes; 0: never rotated */

static const struct {
	const char *name;
	uint64_t flag;
} subsystems[] = {
    {"dttools", D_DTTOOLS}, {"makeflow", D_MAKEFLOW},
    {"dag", D_DAG},         {"log", D_LOG},
    {"batch", D_BATCH},     {"wq", D_WQ},
    {"worker", D_WORKER},   {"catalog", D_CATALOG},
    {"rmon", D_RMON},       {"net", D_NET},
    {"jx", D_JX},           {"factory", D_FACTORY},
    {"http", D_HTTP},       {"alloc", D_ALLOC},
};

const char *debug_flags_help(void)
{
	return "all,none,dttools,makeflow,dag,log,batch,wq,worker,catalog,rmon,net,jx,factory,http,"
	       "alloc";
}

int debug_flags_set(const char *list)
{
	uint64_t flags = debug_enabled_flags;
	const char *p = list;
	while (p && *p) {
		size_t n = strcspn(p, ",");
		int found = 0;
		if (n == 3 && !strncmp(p, "all", 3)) {
			flags = D_ALL;
			found = 1;
		} else if (n == 4 && !strncmp(p, "none", 4)) {
			flags = D_NOTICE;
			found = 1;
		} else {
			for (size_t i = 0; i < sizeof subsystems / sizeof subsystems[0]; i++) {
				if (strlen(subsystems[i].name) == n &&
				    !strncmp(p, subsystems[i].name, n)) {
					flags |= subsystems[i].flag;
					found = 1;
				}
			}
		}
		if (!found && n > 0)
			return -EINVAL;
		p += n;
		if (*p == ',')
			p++;
	}
	debug_enabled_flags = flags | D_NOTICE;
	return 0;
}

int debug_config_file(const char *path)
{
	debug_close();
	if (!path || !strcmp(path, "-"))
		return 0;
	FILE *f = fopen(path, "a");
	if (!f)
		return -errno;
	setvbuf(f, NULL, _IOLBF, 0);
	debug_file = f;
	snprintf(debug_path, sizeof debug_path, "%s", path);
	return 0;
}

int debug_config_file_size(int64_t bytes)
{
	if (bytes < 0)
		return -EINVAL;
	debug_rotate_max = bytes;
	return 0;
}

/* Once the -o file has reached the rotation size it becomes FILE.old (replacing the one
 * before) and logging goes on in a new FILE. */
static void maybe_rotate(void)
{
	long size = ftell(debug_file);
	if (debug_rotate_max <= 0 || size < 0 || (int64_t)size < debug_rotate_max)
		return;
	char old[sizeof debug_path + 8];
	snprintf(old, sizeof old, "%s.old", debug_path);
	if (rename(debug_path, old) != 0)
		return; /* keep writing where we were */
	FILE *f = fopen(debug_path, "a");
	if (!f)
		f = fopen(old, "a"); /* rather than losing the log */
	if (!f)
		return;
	setvbuf(f, NULL, _IOLBF, 0);
	fclose(debug_file);
	debug_file = f;
}

void debug_config_program(const char *name)
{
	const char *base = strrchr(name, '/');
	snprintf(debug_program, sizeof debug_program, "%s", base ? base + 1 : name);
}

void debug_close(void)
{
	if (debug_file)
		fclose(debug_file);
	debug_file = NULL;
}

static const char *flag_name(uint64_t flags)
{
	for (size_t i = 0; i < sizeof subsystems / sizeof subsystems[0]; i++)
		if (flags & subsystems[i].flag)
			return subsystems[i].name;
	return "notice";
}

static void emit(FILE *f, const char *kind, const char *fmt, va_list ap)
{
	struct timeval tv;
	struct tm tm;
	char stamp[32];
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y/%m/%d %H:%M:%S", &tm);
	/* Format into one buffer so concurrent writers' lines do not interleave. */
	char line[4096];
	int n = snprintf(line, sizeof line, "%s.%03ld %s[%ld] %s: ", stamp,
	                 (long)(tv.tv_usec / 1000), debug_program, (long)getpid(), kind);
	if (n < 0 || n >= (int)sizeof line)
		n = 0;
	int m = vsnprintf(line + n, sizeof line - n, fmt, ap);
	size_t len = (m < 0) ? (size_t)n : (size_t)n + (size_t)m;
	if (len >= sizeof line - 1)
		len = sizeof line - 2;
	if (len == 0 || line[len - 1] != '\n')
		line[len++] = '\n';
	fwrite(line, 1, len, f);
	fflush(f);
	if (f == debug_file)
		maybe_rotate();
}

void debug_write(uint64_t flags, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(debug_file ? debug_file : stderr, flag_name(flags), fmt, ap);
	va_end(ap);
}

static void user_message(const char *kind, const char *fmt, va_list ap)
{
	va_list copy;
	va_copy(copy, ap);
	if (debug_file)
		emit(debug_file, kind, fmt, copy);
	va_end(copy);
	char msg[4096];
	int n = vsnprintf(msg, sizeof msg, fmt, ap);
	if (n < 0)
		msg[0] = 0;
	size_t len = strlen(msg);
	int nl = len > 0 && msg[len - 1] == '\n';
	if (strcmp(kind, "notice"))
		fprintf(stderr, "%s: %s: %s%s", debug_program, kind, msg, nl ? "" : "\n");
	else
		fprintf(stderr, "%s: %s%s", debug_program, msg, nl ? "" : "\n");
}

void notice(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	user_message("notice", fmt, ap);
	va_end(ap);
}

void htc_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	user_message("warning", fmt, ap);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	user_message("error", fmt, ap);
	va_end(ap);
	exit(1);
}
