/* worker_masters.h: the addresses a worker given -M PROJECT tries, in order, from the masters
 * the catalog lists (doc/work-queue-protocol.md section 1). */
#ifndef WORKER_MASTERS_H
#define WORKER_MASTERS_H

#include <jansson.h>

struct catalog_project;

/* From RECORDS (catalog records, not kept), the masters whose whole project name PROJECT (-M,
 * a regular expression) matches (type wq_master, a port from 1 to 65535) as a JSON array of
 * {"host": address to connect to, "name": the master's host name (for TLS checks), "port": n,
 * "project": the master's project}: masters of higher "priority" first, those of equal
 * priority in random order (random()); each master at the addresses its
 * "manager_preferred_connection" names: by_hostname its "name", by_apparent_ip the
 * "address" the catalog saw, and by_ip (or none) each host of its "network_interfaces" then
 * the "address" if not among them. Caller decrefs. */
json_t *worker_masters_order(const json_t *records, const struct catalog_project *project);

#endif
