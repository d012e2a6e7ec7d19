/* wq_foreign.h: recognising a CCTools Work Queue peer, whose protocol (text lines) does not mix
 * with this one, so that each side says so in one line instead of timing out. A CCTools worker
 * opens with "workqueue PROTOCOL HOST OS ARCH VERSION\n"; a CCTools master sends nothing first
 * but answers the line "queue_status\n" with a JSON array. doc/work-queue-protocol.md, 3.3. */
#ifndef HTC_WQ_FOREIGN_H
#define HTC_WQ_FOREIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a master answers a CCTools worker (a CCTools worker exits on it instead of trying the
 * master again and again). */
#define WQ_FOREIGN_CCTOOLS_EXIT "exit\n"
/* The query a worker sends to learn whether a silent peer is a CCTools master. */
#define WQ_FOREIGN_CCTOOLS_PROBE "queue_status\n"
/* The most bytes of a probe's answer that are read. */
#define WQ_FOREIGN_PROBE_MAX 65536

/* True if the LEN first bytes a master received are a CCTools worker's first line; TEXT (SIZE
 * bytes) then says so in one line, with the worker's protocol, version and host when the line
 * is whole. */
bool wq_foreign_cctools_worker(const uint8_t *data, size_t len, char *text, size_t size);

/* True if the LEN bytes answered to WQ_FOREIGN_CCTOOLS_PROBE are a CCTools master's status (a
 * JSON array of one object with "project" or "version" keys, or the start of one); TEXT then
 * holds "a CCTools Work Queue master (version V, project P)" (what is readable of the two),
 * to which the caller adds what the user should do. */
bool wq_foreign_cctools_master(const char *data, size_t len, char *text, size_t size);

#endif
