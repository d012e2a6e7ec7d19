/* worker_opts.c: parses the command line of work_queue_worker (getopt_long) into struct
 * worker_opts, with the defaults of doc/work-queue-protocol.md and an error text naming the
 * option for any bad value; help, version and getopt's errors go through cli.h. No side effects
 * beyond printing help or the version: nothing is opened or created here. */
#include "worker_opts.h"

#include "catalog_project.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "htc_error.h"
#include "rmon_seccomp.h"
#include "stringtools.h"
#include "units.h"
#include "xalloc.h"

#include "vec.h"
#include "banned.h"

enum {
	OPT_CORES = 1000,
	OPT_MEMORY,
	OPT_DISK,
	OPT_GPUS,
	OPT_CONNECT_TIMEOUT,
	OPT_WALL_TIME,
	OPT_SINGLE_SHOT,
	OPT_EXIT_AFTER_TASKS,
	OPT_IDLE_TIMEOUT,
	OPT_PARENT_DEATH,
	OPT_NOT_HERE, /* a CCTools option this worker does not have */
	OPT_KEEP_CACHE,
	OPT_PIN_CORES,
	OPT_PROC_EVENTS,
	OPT_SSL,
	OPT_SSL_CA,
	OPT_SSL_FINGERPRINT,
	OPT_SSL_NO_VERIFY,
	OPT_FEATURE,
	OPT_DOCKER,
	OPT_DOCKER_PRESERVE,
	OPT_CONTAINERS,
	OPT_NO_CONTAINERS_AHEAD,
	OPT_CONTAINER_CGROUPS,
	OPT_SECCOMP,
	OPT_DEBUG_ROTATE_MAX,
	OPT_SHARED_CACHE,
	OPT_SHARED_CACHE_SIZE,
	OPT_SHARED_CACHE_LEASES,
	OPT_MEMORY_GROW,
	OPT_GROW_STEP_UP,
	OPT_GROW_STEP_DOWN,
	OPT_SHRINK_COOLDOWN,
	OPT_MEMORY_THROTTLE,
	OPT_THROTTLE_RATE,
	OPT_CPU_GROW,
};

static const struct option longopts[] = {
    {"master-name", required_argument, NULL, 'M'},
    {"manager-name", required_argument, NULL, 'M'},
    {"catalog", required_argument, NULL, 'C'},
    {"cores", required_argument, NULL, OPT_CORES},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"disk", required_argument, NULL, OPT_DISK},
    {"gpus", required_argument, NULL, OPT_GPUS},
    {"timeout", required_argument, NULL, 't'},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"parent-death", no_argument, NULL, OPT_PARENT_DEATH},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"wall-time", required_argument, NULL, OPT_WALL_TIME},
    {"single-shot", no_argument, NULL, OPT_SINGLE_SHOT},
    {"exit-after-tasks", required_argument, NULL, OPT_EXIT_AFTER_TASKS},
    {"workdir", required_argument, NULL, 's'},
    {"keep-cache", no_argument, NULL, OPT_KEEP_CACHE},
    {"shared-cache", required_argument, NULL, OPT_SHARED_CACHE},
    {"shared-cache-size", required_argument, NULL, OPT_SHARED_CACHE_SIZE},
    {"shared-cache-leases", required_argument, NULL, OPT_SHARED_CACHE_LEASES},
    {"pin-cores", no_argument, NULL, OPT_PIN_CORES},
    {"proc-events", no_argument, NULL, OPT_PROC_EVENTS},
    {"password", required_argument, NULL, 'P'},
    {"ssl", no_argument, NULL, OPT_SSL},
    {"ssl-ca", required_argument, NULL, OPT_SSL_CA},
    {"ssl-fingerprint", required_argument, NULL, OPT_SSL_FINGERPRINT},
    {"ssl-no-verify", no_argument, NULL, OPT_SSL_NO_VERIFY},
    {"feature", required_argument, NULL, OPT_FEATURE},
    {"docker", required_argument, NULL, OPT_DOCKER},
    {"docker-preserve", required_argument, NULL, OPT_DOCKER_PRESERVE},
    {"containers", no_argument, NULL, OPT_CONTAINERS},
    {"no-containers-ahead", no_argument, NULL, OPT_NO_CONTAINERS_AHEAD},
    {"container-cgroups", required_argument, NULL, OPT_CONTAINER_CGROUPS},
    {"seccomp", required_argument, NULL, OPT_SECCOMP},
    {"memory-grow", required_argument, NULL, OPT_MEMORY_GROW},
    {"grow-step-up", required_argument, NULL, OPT_GROW_STEP_UP},
    {"grow-step-down", required_argument, NULL, OPT_GROW_STEP_DOWN},
    {"shrink-cooldown", required_argument, NULL, OPT_SHRINK_COOLDOWN},
    {"memory-throttle", required_argument, NULL, OPT_MEMORY_THROTTLE},
    {"memory-throttle-rate", required_argument, NULL, OPT_THROTTLE_RATE},
    {"cpu-grow", required_argument, NULL, OPT_CPU_GROW},
    {"debug", required_argument, NULL, 'd'},
    {"debug-file", required_argument, NULL, 'o'},
    /* CCTools options refused by name (doc/compatibility.md) */
    {"debug-rotate-max", required_argument, NULL, OPT_DEBUG_ROTATE_MAX},
    {"foreman", no_argument, NULL, OPT_NOT_HERE},
    {"foreman-name", required_argument, NULL, 'f'},
    {"foreman-port", required_argument, NULL, OPT_NOT_HERE},
    {"foreman-port-file", required_argument, NULL, 'Z'},
    {"fast-abort", required_argument, NULL, 'F'},
    {"specify-log", required_argument, NULL, OPT_NOT_HERE},
    {"tcp-window-size", required_argument, NULL, 'w'},
    {"min-backoff", required_argument, NULL, 'i'},
    {"max-backoff", required_argument, NULL, 'b'},
    {"arch", required_argument, NULL, 'A'},
    {"os", required_argument, NULL, 'O'},
    {"bandwidth", required_argument, NULL, OPT_NOT_HERE},
    {"disk-allocation", no_argument, NULL, OPT_NOT_HERE},
    {"disable-symlinks", no_argument, NULL, OPT_NOT_HERE},
    {"volatility", required_argument, NULL, OPT_NOT_HERE},
    {"tlq", required_argument, NULL, OPT_NOT_HERE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

static const char usage_text[] =
    "Usage: work_queue_worker [options] HOST PORT\n"
    "       work_queue_worker [options] -M PROJECT\n"
    "Connects to a Work Queue master and runs its tasks.\n"
    "\n"
    "Where the master is:\n"
    "  HOST PORT                 the master's address (or HOST:PORT, or several as\n"
    "                            \"HOST:PORT;HOST:PORT\", tried in turn)\n"
    "  -M, -N, --manager-name P  a master whose whole project name matches the regular\n"
    "                            expression P, found through the catalog\n"
    "                            (also --master-name)\n"
    "  -C, --catalog H:P[,...]   catalog servers (default: $CATALOG_HOST, localhost:9097)\n"
    "Resources offered (default or 0 for cores: measured):\n"
    "      --cores N  --memory MB  --disk MB  --gpus N   (sizes accept units: 4G)\n"
    "Lifetime:\n"
    "  -t, --timeout T           set both --idle-timeout and --connect-timeout\n"
    "      --idle-timeout T      exit after T idle (default 900 s; units: 15m, 1h)\n"
    "      --connect-timeout T   exit 3 if no master is reached within T (default 900 s)\n"
    "      --parent-death        drain and exit when the parent process exits\n"
    "      --wall-time T         run at most T, then drain\n"
    "      --single-shot         exit as soon as the master disconnects (no reconnecting)\n"
    "      --exit-after-tasks N  finish N tasks, then drain and exit\n"
    "  -s, --workdir DIR         where the cache and sandboxes live\n"
    "      --keep-cache          do not delete the workdir at exit\n"
    "      --shared-cache DIR    keep cached files once in DIR, shared with the other\n"
    "                            workers that name it (doc/work-queue-shared-cache.md)\n"
    "      --shared-cache-size MB  delete unused files of DIR beyond MB (default: none)\n"
    "      --shared-cache-leases S  lock DIR's objects with lease files renewed by a\n"
    "                            heartbeat, dead after S seconds (default on NFS: 30)\n"
    "      --pin-cores           run each task on whole cpus of its own (a cpuset:\n"
    "                            nproc in the task is its cores; doc/elasticity.md)\n"
    "      --proc-events         count every process of a task, also those that live\n"
    "                            between two samples, when it has a cgroup (costs work\n"
    "                            in every worker of the machine; doc/resource-monitor.md)\n"
    "Security:\n"
    "  -P, --password FILE       shared password (HMAC both ways; never sent)\n"
    "      --ssl                 TLS, checked against the system trust store and host name\n"
    "      --ssl-ca FILE         TLS, checked against the CAs in FILE\n"
    "      --ssl-fingerprint HEX TLS, the master's certificate must have this SHA-256\n"
    "      --ssl-no-verify       TLS without checking the master's certificate\n"
    "Tasks:\n"
    "      --feature NAME        advertise a label tasks can require (repeatable)\n"
    "      --docker IMAGE        each task in its own container of IMAGE (already loaded)\n"
    "      --docker-preserve IMAGE  every task in one container of IMAGE kept for the worker\n"
    "      --containers          run the tasks that name a container image in it (Docker);\n"
    "                            implied by --docker and --docker-preserve\n"
    "      --no-containers-ahead  make a task's own container when it starts, not while\n"
    "                            it waits in the queue\n"
    "      --container-cgroups task|engine  where a task's own container's cgroup is: in\n"
    "                            the task's (default, where the engine allows it) or in\n"
    "                            the engine's own, grown through its update call\n"
    "      --seccomp PROFILE     system calls tasks may not make: default, strict, nonet, off\n"
    "                            (default: default; doc/seccomp.md)\n"
    "Elasticity (doc/elasticity.md):\n"
    "      --memory-grow on|off  grow a task at its memory limit, in steps, into memory no\n"
    "                            other task holds, up to the maximum its master sent\n"
    "                            (default off)\n"
    "      --grow-step-up MB     step of a growth (default 256)\n"
    "      --grow-step-down MB   step of a shrink of a grown task (default 128; 0: never)\n"
    "      --shrink-cooldown T   time since a task's last change before a shrink (10 s)\n"
    "      --memory-throttle on|off  hold a task whose memory grows faster than the rate\n"
    "                            while the worker is short of memory (default off)\n"
    "      --memory-throttle-rate MB/s  the rate (default 1024)\n"
    "      --cpu-grow on|off     raise the CPU quota of a task that uses all of it into the\n"
    "                            worker's idle cores (default off)\n"
    "Other:\n"
    "  -d, --debug SUBSYS        debug output (worker, net, rmon, all)\n"
    "  -o, --debug-file FILE     debug output to FILE\n"
    "      --debug-rotate-max SIZE  FILE becomes FILE.old once it holds SIZE (default 10M;\n"
    "                            0: never)\n"
    "  -v, --version             print the version\n"
    "  -h, --help                this text\n"
    "Exit status: 0 normal end, 1 local error, 2 refused by the master, 3 no master reached.\n";

const char *worker_opts_usage(void)
{
	return usage_text;
}

/* The usage for cli.h's -h. */
static void usage(FILE *out, const char *argv0)
{
	(void)argv0;
	fputs(usage_text, out);
}

static void init(struct worker_opts *o)
{
	memset(o, 0, sizeof *o);
	o->port = WORKER_DEFAULT_PORT;
	o->cores = -1;
	o->memory_mb = -1;
	o->disk_mb = -1;
	o->gpus = -1;
	o->idle_timeout = WORKER_DEFAULT_IDLE_TIMEOUT;
	o->connect_timeout = WORKER_DEFAULT_CONNECT_TIMEOUT;
	o->seccomp = RMON_SECCOMP_DEFAULT;
	o->debug_rotate_max = WORKER_DEFAULT_DEBUG_ROTATE_MAX;
	o->grow_step_up_mb = WORKER_DEFAULT_GROW_STEP_UP;
	o->grow_step_down_mb = WORKER_DEFAULT_GROW_STEP_DOWN;
	o->shrink_cooldown_s = WORKER_DEFAULT_SHRINK_COOLDOWN;
	o->throttle_rate_mbps = WORKER_DEFAULT_THROTTLE_RATE;
}

/* on|off (also yes/no, true/false, 1/0) into *OUT; -1 for anything else. */
static int parse_on_off(const char *arg, bool *out)
{
	if (!strcmp(arg, "on") || !strcmp(arg, "yes") || !strcmp(arg, "true") || !strcmp(arg, "1"))
		*out = true;
	else if (!strcmp(arg, "off") || !strcmp(arg, "no") || !strcmp(arg, "false") ||
	         !strcmp(arg, "0"))
		*out = false;
	else
		return -1;
	return 0;
}

void worker_opts_clear(struct worker_opts *o)
{
	free(o->host);
	for (int i = 0; i < o->nlist; i++)
		free(o->list_hosts[i]);
	free(o->list_hosts);
	free(o->list_ports);
	free(o->project);
	catalog_project_delete(o->project_re);
	free(o->catalog_hosts);
	free(o->workdir);
	free(o->shared_cache);
	free(o->password_file);
	free(o->ssl_ca);
	free(o->ssl_fingerprint);
	for (int i = 0; i < o->feature_count; i++)
		free(o->features[i]);
	free(o->features);
	free(o->docker_image);
	free(o->debug_flags);
	free(o->debug_file);
	init(o);
}

static void set(char **dst, const char *v)
{
	free(*dst);
	*dst = xstrdup(v);
}

/* A port number 1..65535. */
static int parse_port(const char *s, int *port)
{
	int64_t v;
	if (str_to_int64(s, &v) < 0 || v < 1 || v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

/* "HOST:PORT;HOST:PORT;..." into O's list (empty pieces are skipped); 0 or -1 with ERR. */
static int parse_list(struct worker_opts *o, const char *arg, char *err, size_t errlen)
{
	char *copy = xstrdup(arg), *save = NULL;
	int r = 0;
	for (char *p = strtok_r(copy, ";", &save); p && r == 0; p = strtok_r(NULL, ";", &save)) {
		char *colon = strrchr(p, ':');
		int port;
		if (!colon || colon == p || strchr(p, ':') != colon ||
		    parse_port(colon + 1, &port) < 0) {
			r = cli_error(err, errlen,
			              "\"%s\" in \"%s\": expected HOST:PORT (port 1..65535)", p,
			              arg);
			break;
		}
		*colon = 0;
		o->list_hosts =
		    xrealloc(o->list_hosts, (size_t)(o->nlist + 1) * sizeof *o->list_hosts);
		o->list_ports =
		    xrealloc(o->list_ports, (size_t)(o->nlist + 1) * sizeof *o->list_ports);
		o->list_hosts[o->nlist] = xstrdup(p);
		o->list_ports[o->nlist] = port;
		o->nlist++;
	}
	if (r == 0 && o->nlist == 0)
		r = cli_error(err, errlen, "\"%s\": no HOST:PORT in it", arg);
	if (r == 0) {
		o->host = xstrdup(o->list_hosts[0]);
		o->port = o->list_ports[0];
	}
	free(copy);
	return r < 0 ? -1 : 0;
}

/* 64 hex digits, with optional colons between bytes; stored lower case without colons. */
static char *parse_fingerprint(const char *s)
{
	char out[65];
	size_t n = 0;
	for (; *s; s++) {
		if (*s == ':')
			continue;
		if (!isxdigit((unsigned char)*s) || n == 64)
			return NULL;
		out[n++] = (char)tolower((unsigned char)*s);
	}
	if (n != 64)
		return NULL;
	out[64] = 0;
	return xstrdup(out);
}

/* A feature label: 1..128 bytes of letters, digits, and . _ - + = : / */
static int feature_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 128)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-+=:/", *s))
			return 0;
	return 1;
}

static int parse_one(int c, const char *arg, const char *name, struct worker_opts *o, char *err,
                     size_t errlen)
{
	int64_t v;
	double d;
	switch (c) {
	case 'M':
	case 'N': set(&o->project, arg); break;
	case 'C': set(&o->catalog_hosts, arg); break;
	case OPT_CORES:
		if (str_to_double(arg, &d) < 0 || d < 0 || d > 1e6)
			return cli_error(err, errlen,
			                 "%s: \"%s\" is not a number of cores (0: measure)", name,
			                 arg);
		o->cores = d == 0 ? -1 : d; /* 0 measures, as in CCTools */
		break;
	case OPT_MEMORY:
	case OPT_DISK:
		if (units_parse_mb(arg, &v) < 0)
			return cli_error(err, errlen, "%s: \"%s\" is not a size (e.g. 4000, 4G)",
			                 name, arg);
		*(c == OPT_MEMORY ? &o->memory_mb : &o->disk_mb) = v;
		break;
	case OPT_GPUS:
		if (str_to_int64(arg, &v) < 0 || v < 0 || v > 1024)
			return cli_error(err, errlen, "%s: \"%s\" is not a number of GPUs", name,
			                 arg);
		o->gpus = v;
		break;
	case 't':
	case OPT_IDLE_TIMEOUT:
	case OPT_CONNECT_TIMEOUT:
	case OPT_WALL_TIME:
		if (units_parse_seconds(arg, &v) < 0)
			return cli_error(err, errlen,
			                 "%s: \"%s\" is not a duration (e.g. 900, 15m, 2h)", name,
			                 arg);
		if (v == 0 && c != OPT_WALL_TIME)
			return cli_error(err, errlen, "%s: the duration must be above 0", name);
		if (c == 't' || c == OPT_IDLE_TIMEOUT)
			o->idle_timeout = v;
		if (c == 't' || c == OPT_CONNECT_TIMEOUT)
			o->connect_timeout = v;
		if (c == OPT_WALL_TIME)
			o->wall_time = v;
		break;
	case OPT_PARENT_DEATH: o->parent_death = true; break;
	case OPT_NOT_HERE:
	case 'f':
	case 'Z':
	case 'F':
	case 'w':
	case 'i':
	case 'b':
	case 'A':
	case 'O':
		return cli_error(
		    err, errlen,
		    "%s: a CCTools work_queue_worker option that is not supported here "
		    "(doc/compatibility.md)",
		    name);
	case OPT_SINGLE_SHOT: o->single_shot = true; break;
	case OPT_EXIT_AFTER_TASKS:
		if (str_to_int64(arg, &v) < 0 || v < 1 || v > 1000000000)
			return cli_error(err, errlen, "%s: \"%s\" is not a number of tasks above 0",
			                 name, arg);
		o->exit_after_tasks = v;
		break;
	case 's':
		if (!*arg)
			return cli_error(err, errlen, "%s: the directory is empty", name);
		set(&o->workdir, arg);
		break;
	case OPT_KEEP_CACHE: o->keep_cache = true; break;
	case OPT_SHARED_CACHE:
		if (!*arg)
			return cli_error(err, errlen, "%s: the directory is empty", name);
		set(&o->shared_cache, arg);
		break;
	case OPT_SHARED_CACHE_SIZE:
		if (units_parse_mb(arg, &v) < 0 || v < 1)
			return cli_error(err, errlen, "%s: \"%s\" is not a size (e.g. 4000, 4G)",
			                 name, arg);
		o->shared_cache_limit = v;
		break;
	case OPT_SHARED_CACHE_LEASES:
		if (str_to_double(arg, &d) < 0 || !(d >= 1 && d <= 3600))
			return cli_error(err, errlen,
			                 "%s: \"%s\" is not a number of seconds (1 .. 3600)", name,
			                 arg);
		o->shared_cache_leases = d;
		break;
	case OPT_PIN_CORES: o->pin_cores = true; break;
	case OPT_PROC_EVENTS: o->proc_events = true; break;
	case 'P': set(&o->password_file, arg); break;
	case OPT_SSL: o->ssl = true; break;
	case OPT_SSL_CA:
		o->ssl = true;
		set(&o->ssl_ca, arg);
		break;
	case OPT_SSL_FINGERPRINT: {
		char *fp = parse_fingerprint(arg);
		if (!fp)
			return cli_error(err, errlen,
			                 "%s: \"%s\" is not a SHA-256 fingerprint (64 hex digits)",
			                 name, arg);
		o->ssl = true;
		free(o->ssl_fingerprint);
		o->ssl_fingerprint = fp;
		break;
	}
	case OPT_SSL_NO_VERIFY:
		o->ssl = true;
		o->ssl_no_verify = true;
		break;
	case OPT_FEATURE:
		if (!feature_ok(arg))
			return cli_error(
			    err, errlen,
			    "%s: \"%s\" is not a label (1-128 letters, digits or ._-+=:/)", name,
			    arg);
		if (o->feature_count >= 64)
			return cli_error(err, errlen, "%s: at most 64 labels", name);
		VEC_RESIZE(o->features, (size_t)o->feature_count + 1);
		o->features[o->feature_count++] = xstrdup(arg);
		break;
	case OPT_DOCKER:
	case OPT_DOCKER_PRESERVE:
		if (!*arg)
			return cli_error(err, errlen, "%s: the image name is empty", name);
		set(&o->docker_image, arg);
		o->docker_preserve = c == OPT_DOCKER_PRESERVE;
		break;
	case OPT_CONTAINERS: o->containers = true; break;
	case OPT_NO_CONTAINERS_AHEAD: o->no_containers_ahead = true; break;
	case OPT_CONTAINER_CGROUPS:
		if (strcmp(arg, "task") != 0 && strcmp(arg, "engine") != 0)
			return cli_error(err, errlen, "%s: \"%s\" is neither task nor engine", name,
			                 arg);
		o->container_cgroups_engine = strcmp(arg, "engine") == 0;
		break;
	case OPT_SECCOMP:
		if (rmon_seccomp_parse(arg, &o->seccomp) < 0)
			return cli_error(
			    err, errlen,
			    "%s: \"%s\" is not a profile (default, strict, nonet, off)", name, arg);
		break;
	case OPT_MEMORY_GROW:
	case OPT_MEMORY_THROTTLE:
	case OPT_CPU_GROW:
		if (parse_on_off(arg, c == OPT_MEMORY_GROW ? &o->memory_grow
		                      : c == OPT_CPU_GROW  ? &o->cpu_grow
		                                           : &o->memory_throttle) < 0)
			return cli_error(err, errlen, "%s: \"%s\" is neither on nor off", name,
			                 arg);
		break;
	case OPT_GROW_STEP_UP:
	case OPT_GROW_STEP_DOWN:
		if (units_parse_mb(arg, &v) < 0 || v < (c == OPT_GROW_STEP_UP ? 1 : 0))
			return cli_error(err, errlen, "%s: \"%s\" is not a size in MB%s", name, arg,
			                 c == OPT_GROW_STEP_UP ? " above 0" : "");
		*(c == OPT_GROW_STEP_UP ? &o->grow_step_up_mb : &o->grow_step_down_mb) = v;
		break;
	case OPT_SHRINK_COOLDOWN:
		if (units_parse_seconds(arg, &v) < 0 || v < 0)
			return cli_error(err, errlen, "%s: \"%s\" is not a time (e.g. 10, 1m)",
			                 name, arg);
		o->shrink_cooldown_s = v;
		break;
	case OPT_THROTTLE_RATE:
		if (str_to_int64(arg, &v) < 0 || v < 1)
			return cli_error(err, errlen, "%s: \"%s\" is not a rate in MB/s above 0",
			                 name, arg);
		o->throttle_rate_mbps = v;
		break;
	case 'd':
		if (o->debug_flags) {
			char *j = xasprintf("%s,%s", o->debug_flags, arg);
			free(o->debug_flags);
			o->debug_flags = j;
		} else {
			set(&o->debug_flags, arg);
		}
		break;
	case 'o': set(&o->debug_file, arg); break;
	case OPT_DEBUG_ROTATE_MAX:
		if (units_parse_bytes(arg, &o->debug_rotate_max) < 0 || o->debug_rotate_max < 0)
			return cli_error(
			    err, errlen,
			    "--debug-rotate-max %s: expected a size such as 10M (0: never "
			    "rotate)",
			    arg);
		break;
	default: return cli_error(err, errlen, "%s: unknown option (see --help)", name);
	}
	return 0;
}

int worker_opts_parse(int argc, char *const argv[], struct worker_opts *o, char *err, size_t errlen)
{
	init(o);
	opterr = 0;
	optind = 0; /* full reinitialisation of getopt, so the parser can be called again */
	int c, r = 0, li = -1;
	while ((c = getopt_long(argc, argv, "+:M:N:C:t:s:P:d:o:f:Z:F:w:i:b:A:O:hv", longopts,
	                        &li)) != -1) {
		if (c == 'h' || c == 'v' || c == ':' || c == '?') {
			/* help, version and getopt's errors worded as every program words them */
			r = cli_common_option(c, argv, "work_queue_worker", usage, err, errlen);
			r = r == CLI_EXIT ? CLI_EXIT : HTC_EPARSE;
			goto fail;
		}
		/* The option's name as the user would recognise it, without its value. */
		char oname[64];
		if (li >= 0)
			snprintf(oname, sizeof oname, "--%s", longopts[li].name);
		else
			snprintf(oname, sizeof oname, "-%c", c);
		li = -1;
		r = parse_one(c, optarg, oname, o, err, errlen);
		if (r < 0)
			goto fail;
	}
	int rest = argc - optind;
	if (o->project) {
		char *why = NULL;
		o->project_re = catalog_project_create(o->project, &why);
		if (!o->project_re) {
			r = cli_error(err, errlen, "-M: %s", why);
			free(why);
			goto fail;
		}
		if (rest > 0) {
			r = cli_error(
			    err, errlen,
			    "give either -M PROJECT or HOST PORT, not both (extra \"%s\")",
			    argv[optind]);
			goto fail;
		}
	} else if (rest == 0) {
		r = cli_error(err, errlen,
		              "no master given: use HOST PORT or -M PROJECT (see --help)");
		goto fail;
	} else if (rest > 2) {
		r = cli_error(err, errlen, "unexpected argument \"%s\" after HOST PORT",
		              argv[optind + 2]);
		goto fail;
	} else {
		const char *host = argv[optind];
		const char *colon = strrchr(host, ':');
		if (!*host) {
			r = cli_error(err, errlen, "the master's host name is empty");
			goto fail;
		}
		/* HOST:PORT in one argument is accepted too (not for IPv6 literals), and several
		 * of them separated by ';' */
		if (rest == 1 && strchr(host, ';')) {
			if (parse_list(o, host, err, errlen) < 0) {
				r = HTC_EPARSE;
				goto fail;
			}
		} else if (rest == 1 && colon && strchr(host, ':') == colon) {
			if (parse_port(colon + 1, &o->port) < 0) {
				r = cli_error(err, errlen, "\"%s\": the port must be 1..65535",
				              host);
				goto fail;
			}
			o->host = xstrdup(host);
			o->host[colon - host] = 0;
		} else if (rest == 1) {
			/* an empty $(cat port) expands to nothing: never guess a default port */
			r = cli_error(
			    err, errlen,
			    "no port given after \"%s\": use HOST PORT or HOST:PORT (a port file "
			    "read before the master wrote it is empty)",
			    host);
			goto fail;
		} else {
			if (parse_port(argv[optind + 1], &o->port) < 0) {
				r = cli_error(err, errlen, "port \"%s\": must be 1..65535",
				              argv[optind + 1]);
				goto fail;
			}
			o->host = xstrdup(host);
		}
	}
	if (o->ssl_no_verify && (o->ssl_ca || o->ssl_fingerprint)) {
		r = cli_error(err, errlen,
		              "--ssl-no-verify contradicts --ssl-ca and --ssl-fingerprint");
		goto fail;
	}
	if (o->ssl_ca && o->ssl_fingerprint) {
		r = cli_error(err, errlen, "give --ssl-ca or --ssl-fingerprint, not both");
		goto fail;
	}
	if (o->shared_cache_limit > 0 && !o->shared_cache) {
		r = cli_error(err, errlen, "--shared-cache-size needs --shared-cache DIR");
		goto fail;
	}
	if (o->shared_cache_leases > 0 && !o->shared_cache) {
		r = cli_error(err, errlen, "--shared-cache-leases needs --shared-cache DIR");
		goto fail;
	}
	return CLI_DONE;
fail:
	worker_opts_clear(o);
	return r;
}
