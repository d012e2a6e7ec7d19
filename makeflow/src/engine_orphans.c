/* engine_orphans.c: finds and stops the jobs that an earlier makeflow run left running when it
 * was killed (kill -9, a crash), before a restart runs their rules again. Every job a run starts
 * carries the run's id in its environment (HTC_RUN_ID); a process is stopped only when its
 * /proc/PID/environ names the id of a run that the log shows started and never ended. */
#include "engine_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "debug.h"
#include "xalloc.h"
#include "banned.h"

/* The most of a process's environment that is read to find its run id. */
#define ENVIRON_CAP (1 << 20)

/* 1 if the environment of PID names one of the N run ids in IDS (ENVIRON_CAP bytes at most are
 * read; a process that is gone or unreadable does not match). BUF holds ENVIRON_CAP bytes. */
static int runs_for(long pid, char (*ids)[TXLOG_RUN_ID_LEN + 1], size_t n, char *buf)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/environ", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, ENVIRON_CAP - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == ENVIRON_CAP - 1)
			break;
	}
	close(fd);
	buf[len] = 0;
	static const char var[] = "HTC_RUN_ID=";
	for (size_t off = 0; off < len; off += strlen(buf + off) + 1) {
		const char *v = buf + off;
		if (strncmp(v, var, sizeof var - 1))
			continue;
		v += sizeof var - 1;
		for (size_t i = 0; i < n; i++)
			if (!strcmp(v, ids[i]))
				return 1;
	}
	return 0;
}

/* The process group of PID, or -1 when it is gone or a zombie. */
static long pgid_of(long pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses */
	char *p = strrchr(buf, ')');
	char state = 0;
	long ppid = 0, pgrp = -1;
	if (!p || sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3 || state == 'Z')
		return -1;
	return pgrp;
}

/* Kills every live process of the runs in IDS with SIGKILL, with its process group when it
 * leads one; returns how many processes it found. */
static int kill_round(char (*ids)[TXLOG_RUN_ID_LEN + 1], size_t n, char *buf)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	long self = (long)getpid();
	int found = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 1 || pid == self)
			continue;
		long pgid = pgid_of(pid);
		if (pgid < 0 || !runs_for(pid, ids, n, buf))
			continue;
		found++;
		debug(D_MAKEFLOW, "stopping process %ld (group %ld) of an earlier run", pid, pgid);
		/* Its group when it leads it: the group of a job the local drivers started. */
		if (pgid == pid)
			kill((pid_t)-pgid, SIGKILL);
		kill((pid_t)pid, SIGKILL);
	}
	closedir(d);
	return found;
}

int engine_stop_orphans(char (*ids)[TXLOG_RUN_ID_LEN + 1], size_t n)
{
	if (n == 0)
		return 0;
	char *buf = xmalloc(ENVIRON_CAP);
	int stopped = kill_round(ids, n, buf);
	int left = stopped;
	/* Wait until they are gone (reaped by whoever inherited them); a process that forked
	 * before it was killed is found by a later round. */
	for (int round = 0; left > 0 && round < 1000; round++) {
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
		left = kill_round(ids, n, buf);
	}
	free(buf);
	if (stopped > 0)
		notice("stopped %d process%s left running by an earlier run of this workflow that "
		       "did not end (run id %s)",
		       stopped, stopped == 1 ? "" : "es", ids[n - 1]);
	if (left > 0) {
		fprintf(stderr,
		        "makeflow: %d processes of an earlier run of this workflow (run id %s) are "
		        "still running after SIGKILL\n",
		        left, ids[n - 1]);
		return -1;
	}
	return 0;
}
