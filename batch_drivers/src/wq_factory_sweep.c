/* wq_factory_sweep.c: the record of factory runs and the removal of a dead run's workers
 * (wq_factory_sweep.h). */
#include "wq_factory_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "buffer.h"
#include "cluster_cmd.h"
#include "cluster_run.h"
#include "debug.h"
#include "xalloc.h"

#include "banned.h"

#define RECORD_MAX (1 << 20) /* bytes of record read */

char *wq_factory_sweep_default_path(void)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	if (!dir || !*dir || access(dir, W_OK) != 0)
		dir = "/tmp";
	return xasprintf("%s/work_queue_factory-%u.pool", dir, (unsigned)getuid());
}

/* The start time of process PID (field 22 of /proc/PID/stat), or 0 if it is gone. */
static unsigned long long proc_start(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p)
		return 0;
	unsigned long long start = 0;
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field == 22)
		start = strtoull(p, NULL, 10);
	return start;
}

int wq_factory_sweep_local(const char *prefix)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	pid_t self_group = getpgrp();
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 1 || pid == getpid())
			continue;
		char path[64], buf[8192];
		snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (len <= 0)
			continue;
		for (ssize_t i = 0; i < len; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[len] = 0;
		if (!strstr(buf, prefix))
			continue;
		pid_t g = getpgid((pid_t)pid);
		int rc = g > 1 && g != self_group ? kill(-g, SIGKILL) : kill((pid_t)pid, SIGKILL);
		if (rc == 0) {
			notice("removed a worker left by a stopped factory: pid %ld (%s)", pid,
			       prefix);
			n++;
		}
	}
	closedir(d);
	return n;
}

/* Removes the workers of the dead run RUN of batch type TYPE. */
static int sweep_run(const char *run, const char *type)
{
	if (!strcmp(type, "slurm")) {
		char name[CLUSTER_JOB_NAME_LEN];
		cluster_job_name(run, name);
		char arg[CLUSTER_JOB_NAME_LEN + 8];
		snprintf(arg, sizeof arg, "--name=%s", name);
		char *argv[] = {"scancel", arg, NULL};
		struct cluster_cmd_result r;
		int rc = cluster_cmd_run_sync(argv, 30000, &r);
		if (rc < 0 || r.exit_status != 0)
			warn("scancel %s (the jobs of a stopped factory): %s", arg,
			     r.fail  ? r.fail
			     : r.err ? r.err
			             : "failed");
		else
			notice("removed the Slurm jobs named %s left by a stopped factory", name);
		cluster_cmd_result_free(&r);
		return rc < 0 ? 0 : 1;
	}
	char prefix[64];
	snprintf(prefix, sizeof prefix, "wqf-%s-", run);
	return wq_factory_sweep_local(prefix);
}

/* Opens and locks the record; returns the fd or -errno. */
static int lock_record(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int read_all(int fd, struct buffer *b)
{
	char chunk[4096];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (buffer_putlstring(b, chunk, (size_t)n) < 0)
			return -EFBIG;
	}
}

static int write_all(int fd, const char *s)
{
	if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	size_t len = strlen(s);
	while (len > 0) {
		ssize_t n = write(fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		s += n;
		len -= (size_t)n;
	}
	return fsync(fd) < 0 ? -errno : 0;
}

/* Rewrites the record: its live lines (or, with DROP, all but DROP's), sweeping the dead ones
 * when SWEEP, plus ADD when not NULL. Returns the count swept or -errno. */
static int rewrite(const char *path, int sweep, const char *drop, const char *add, char *err,
                   size_t errlen)
{
	int fd = lock_record(path);
	if (fd < 0) {
		snprintf(err, errlen, "the factory record %s: %s", path, strerror(-fd));
		return fd;
	}
	struct buffer in, out;
	buffer_init(&in, RECORD_MAX);
	buffer_init(&out, 0);
	int rc = read_all(fd, &in);
	int swept = 0;
	if (rc < 0) {
		snprintf(err, errlen, "the factory record %s: %s", path,
		         rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
		goto out;
	}
	char *text = xstrdup(buffer_tostring(&in));
	int lineno = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		lineno++;
		char run[CLUSTER_RUN_ID_LEN + 2], type[32];
		long pid;
		unsigned long long start;
		if (sscanf(line, "%33s %ld %llu %31s", run, &pid, &start, type) != 4 ||
		    !cluster_run_id_valid(run) || pid <= 0) {
			warn("the factory record %s, line %d: not RUN PID START TYPE: \"%.80s\": "
			     "dropped",
			     path, lineno, line);
			continue;
		}
		if (drop && !strcmp(run, drop))
			continue;
		bool alive = proc_start(pid) == start && start != 0;
		if (!alive) {
			if (sweep)
				swept += sweep_run(run, type);
			continue;
		}
		buffer_printf(&out, "%s\n", line);
	}
	free(text);
	if (add)
		buffer_printf(&out, "%s\n", add);
	rc = write_all(fd, buffer_tostring(&out));
	if (rc < 0)
		snprintf(err, errlen, "the factory record %s: %s", path, strerror(-rc));
out:
	buffer_free(&in);
	buffer_free(&out);
	close(fd);
	return rc < 0 ? rc : swept;
}

int wq_factory_sweep_start(const char *path, const char *run, const char *type, char *err,
                           size_t errlen)
{
	char *line = xasprintf("%s %ld %llu %s", run, (long)getpid(), proc_start(getpid()), type);
	int rc = rewrite(path, 1, NULL, line, err, errlen);
	free(line);
	return rc;
}

void wq_factory_sweep_end(const char *path, const char *run)
{
	char err[512];
	if (rewrite(path, 0, run, NULL, err, sizeof err) < 0)
		warn("%s", err);
}
