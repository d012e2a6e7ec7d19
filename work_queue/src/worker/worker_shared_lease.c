/* worker_shared_lease.c: lease files with heartbeats (see worker_shared_lease.h). */
#include "worker_shared_lease.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug.h"
#include "full_io.h"
#include "path.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

#define WAIT_POLL_US 100000 /* how often a waiting taker looks again */

struct held {
	int fd;
	ino_t ino;
	char *name;
};

struct shared_leases {
	int dirfd;
	double timeout_s;
	char host[256];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
	pthread_t beat;
	struct held *held;
	size_t n_held, cap_held;
	int probe_fd; /* .now.HOST.PID: touched to read the server's time (under MU) */
	char probe[320];
	atomic_uint_fast64_t seq;
};

static double ts_s(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

/* Renews every held lease: a NULL time is the server's time on NFS (SET_TO_SERVER_TIME). */
static void renew_all(struct shared_leases *l)
{
	for (size_t i = 0; i < l->n_held; i++)
		if (futimens(l->held[i].fd, NULL) < 0)
			debug(D_WORKER, "shared cache: cannot renew the lease %s: %s",
			      l->held[i].name, strerror(errno));
}

static void *beat_main(void *arg)
{
	struct shared_leases *l = arg;
	double every = l->timeout_s / 6;
	pthread_mutex_lock(&l->mu);
	while (!l->stopping) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		double t = ts_s(&until) + every;
		until.tv_sec = (time_t)t;
		until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
		pthread_cond_timedwait(&l->cv, &l->mu, &until);
		if (!l->stopping)
			renew_all(l);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

struct shared_leases *shared_leases_create(int dirfd, double timeout_s, int *err)
{
	*err = 0;
	if (!(timeout_s > 0)) {
		*err = -EINVAL;
		return NULL;
	}
	struct shared_leases *l = xcalloc(1, sizeof *l);
	l->dirfd = dirfd;
	l->timeout_s = timeout_s;
	if (gethostname(l->host, sizeof l->host - 1) < 0)
		snprintf(l->host, sizeof l->host, "localhost");
	snprintf(l->probe, sizeof l->probe, ".now.%s.%ld", l->host, (long)getpid());
	l->probe_fd = openat(dirfd, l->probe, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (l->probe_fd < 0) {
		*err = -errno;
		free(l);
		return NULL;
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	int r = pthread_create(&l->beat, NULL, beat_main, l);
	if (r != 0) {
		*err = -r;
		close(l->probe_fd);
		unlinkat(dirfd, l->probe, 0);
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		free(l);
		return NULL;
	}
	return l;
}

void shared_leases_delete(struct shared_leases *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stopping = true;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->beat, NULL);
	while (l->n_held > 0)
		shared_lease_drop(l, l->held[l->n_held - 1].fd);
	free(l->held);
	close(l->probe_fd);
	unlinkat(l->dirfd, l->probe, 0);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

int shared_leases_now(struct shared_leases *l, struct timespec *now)
{
	pthread_mutex_lock(&l->mu);
	struct stat st;
	int r = futimens(l->probe_fd, NULL) == 0 && fstat(l->probe_fd, &st) == 0 ? 0 : -errno;
	pthread_mutex_unlock(&l->mu);
	if (r == 0)
		*now = st.st_mtim;
	return r;
}

/* Moves the dead lease NAME (inode INO when seen) aside and deletes it. A lease that turns out
 * to be another (dropped and taken again meanwhile) is put back when its name is still free. */
static void break_lease(struct shared_leases *l, const char *name, ino_t ino)
{
	char aside[320];
	snprintf(aside, sizeof aside, ".broken.%s.%ld.%llu", l->host, (long)getpid(),
	         (unsigned long long)atomic_fetch_add(&l->seq, 1));
	if (renameat(l->dirfd, name, l->dirfd, aside) < 0)
		return; /* gone already, or another taker broke it first */
	struct stat st;
	if (fstatat(l->dirfd, aside, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino != ino &&
	    linkat(l->dirfd, aside, l->dirfd, name, 0) == 0)
		debug(D_WORKER, "shared cache: lease %s was taken again meanwhile: left", name);
	else
		notice("shared cache: the lease %s of a dead holder broken", name);
	unlinkat(l->dirfd, aside, 0);
}

/* One try at NAME: the fd, -EEXIST while a live lease holds it, or -errno. */
static int try_take(struct shared_leases *l, const char *name)
{
	int fd = openat(l->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0) {
		char who[320];
		int n = snprintf(who, sizeof who, "%s %ld\n", l->host, (long)getpid());
		struct stat st;
		if (full_write(fd, who, (size_t)n) < 0 || fstat(fd, &st) < 0) {
			int e = -errno;
			close(fd);
			unlinkat(l->dirfd, name, 0);
			return e;
		}
		pthread_mutex_lock(&l->mu);
		VEC_RESERVE(l->held, l->cap_held, l->n_held + 1);
		l->held[l->n_held++] = (struct held){fd, st.st_ino, xstrdup(name)};
		pthread_mutex_unlock(&l->mu);
		return fd;
	}
	if (errno != EEXIST)
		return -errno;
	struct stat st;
	struct timespec now;
	if (fstatat(l->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? -EINTR : -errno; /* dropped meanwhile: try again */
	int r = shared_leases_now(l, &now);
	if (r < 0)
		return r;
	if (ts_s(&now) - ts_s(&st.st_mtim) > l->timeout_s) {
		break_lease(l, name, st.st_ino);
		return -EINTR;
	}
	return -EEXIST;
}

int shared_lease_take(struct shared_leases *l, const char *name, bool wait)
{
	for (;;) {
		int r = try_take(l, name);
		if (r >= 0 || (r != -EEXIST && r != -EINTR))
			return r;
		if (r == -EINTR)
			continue;
		if (!wait)
			return -EAGAIN;
		usleep(WAIT_POLL_US);
	}
}

void shared_lease_drop(struct shared_leases *l, int fd)
{
	if (fd < 0)
		return;
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->n_held; i++) {
		if (l->held[i].fd != fd)
			continue;
		struct held h = l->held[i];
		l->held[i] = l->held[--l->n_held];
		struct stat st;
		if (fstatat(l->dirfd, h.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == h.ino)
			unlinkat(l->dirfd, h.name, 0);
		else
			debug(D_WORKER, "shared cache: the lease %s was broken as dead while held",
			      h.name);
		free(h.name);
		break;
	}
	pthread_mutex_unlock(&l->mu);
	close(fd);
}

void shared_leases_sweep(struct shared_leases *l, double age_s)
{
	struct timespec now;
	int err = 0;
	if (shared_leases_now(l, &now) < 0)
		return;
	DIR *d = path_opendir_at(l->dirfd, ".", &err);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(l->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    ts_s(&now) - ts_s(&st.st_mtim) <= age_s)
			continue;
		if (de->d_name[0] == '.')
			unlinkat(l->dirfd, de->d_name, 0); /* a probe or a lease moved aside */
		else
			break_lease(l, de->d_name, st.st_ino);
	}
	closedir(d);
}
