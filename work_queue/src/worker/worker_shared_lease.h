/* worker_shared_lease.h: object locks of a shared store on a file system whose fcntl locks are
 * not trusted (NFS: a dead client's lock lives on until the server's lease for it ends). A lock
 * is a lease file, created with O_EXCL, whose modification time its holder renews (a heartbeat
 * thread touches every held lease every timeout / 6). A lease not renewed for longer than the
 * timeout belongs to a dead holder and is broken by the next taker. Times are the file
 * server's: a lease's age is measured against a probe file this process touches, never against
 * the local clock (doc/work-queue-shared-cache.md, "Leases"). */
#ifndef HTC_WORKER_SHARED_LEASE_H
#define HTC_WORKER_SHARED_LEASE_H

#include <stdbool.h>
#include <time.h>

/* THREADING: every function but create and delete may run in any thread, several at once. */
struct shared_leases;

/* Leases in the directory DIRFD (borrowed; it must outlive the result) with TIMEOUT_S seconds
 * (> 0) before a lease not renewed counts as dead; starts the heartbeat thread. NULL with
 * -errno in *ERR. */
struct shared_leases *shared_leases_create(int dirfd, double timeout_s, int *err);
/* Stops the heartbeat and drops every lease still held. NULL is ok. */
void shared_leases_delete(struct shared_leases *l);

/* Takes the lease NAME. With WAIT it waits (polling, in a thread, never the loop) until it is
 * free or its holder is dead; without, a live lease gives -EAGAIN. The fd that holds it
 * (give it to shared_lease_drop), or -errno. */
int shared_lease_take(struct shared_leases *l, const char *name, bool wait);
/* Drops the lease held through FD: deleted when it is still this holder's (a lease broken as
 * dead, and maybe taken by another, is left alone), then FD is closed. */
void shared_lease_drop(struct shared_leases *l, int fd);

/* Deletes what dead processes left, untouched for AGE_S seconds: leases (broken as a taker
 * breaks them), time probes, and leases a breaker moved aside. */
void shared_leases_sweep(struct shared_leases *l, double age_s);

/* The file server's time now (its time for a file this process touches). 0 or -errno. */
int shared_leases_now(struct shared_leases *l, struct timespec *now);

#endif
