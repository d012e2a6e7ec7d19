/* txlog_read.c: the incremental reader of the makeflow transaction log (see txlog_read.h).
 * Lines are gathered from the bytes fed, parsed with txlog.c's own header and record parsers,
 * and applied to a table of rule states and the counts of the latest run. */
#include "txlog_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "htc_error.h"
#include "vec.h"
#include "xalloc.h"
#include "banned.h"

#define END_REASON_MAX 256
#define READ_CHUNK     (64 * 1024)

struct txlog_reader {
	char *name;
	txlog_reader_fn fn;
	void *arg;
	char *line;  /* the line being gathered (TXLOG_MAX_LINE + 1 bytes) */
	size_t plen; /* its length so far */
	int lineno;  /* complete lines read */
	int error;   /* the first error, final */
	char err[1024];
	char *workflow;
	char end_reason[END_REASON_MAX];
	struct txlog_progress p;
	struct txlog_rule *rules; /* by id; rules past nrules are all zero */
	size_t nrules, rules_cap;
	int64_t recent[TXLOG_READER_RECENT]; /* times of the latest completions, a ring */
	int nrecent, recent_next;
	int all_done; /* the run ended complete: rules past the table are complete */
	/* read_file: the file being followed and how much of it was fed */
	int have_file;
	dev_t dev;
	ino_t ino;
	off_t offset;   /* bytes fed */
	off_t good_off; /* bytes up to the end of the last complete line */
};

static const struct txlog_rule zero_rule;
static const struct txlog_rule complete_rule = {.state = TXLOG_NODE_COMPLETE};

struct txlog_reader *txlog_reader_create(const char *name, txlog_reader_fn fn, void *arg)
{
	struct txlog_reader *rd = xcalloc(1, sizeof *rd);
	rd->name = xstrdup(name);
	rd->fn = fn;
	rd->arg = arg;
	rd->line = xmalloc(TXLOG_MAX_LINE + 1);
	return rd;
}

void txlog_reader_reset(struct txlog_reader *rd)
{
	free(rd->workflow);
	free(rd->rules);
	rd->workflow = NULL;
	rd->rules = NULL;
	rd->nrules = rd->rules_cap = 0;
	rd->plen = 0;
	rd->lineno = 0;
	rd->error = 0;
	rd->err[0] = 0;
	rd->end_reason[0] = 0;
	memset(&rd->p, 0, sizeof rd->p);
	rd->nrecent = rd->recent_next = 0;
	rd->all_done = 0;
	rd->have_file = 0;
	rd->offset = rd->good_off = 0;
}

void txlog_reader_delete(struct txlog_reader *rd)
{
	if (!rd)
		return;
	txlog_reader_reset(rd);
	free(rd->line);
	free(rd->name);
	free(rd);
}

const char *txlog_reader_error(const struct txlog_reader *rd)
{
	return rd->err;
}

const struct txlog_progress *txlog_reader_progress(const struct txlog_reader *rd)
{
	return &rd->p;
}

const struct txlog_rule *txlog_reader_rule(const struct txlog_reader *rd, int64_t id)
{
	if (id < 0 || id >= rd->p.rules)
		return NULL;
	if ((size_t)id < rd->nrules)
		return &rd->rules[id];
	return rd->all_done ? &complete_rule : &zero_rule;
}

int txlog_reader_lines(const struct txlog_reader *rd)
{
	return rd->lineno;
}

int txlog_reader_partial(const struct txlog_reader *rd)
{
	return rd->plen > 0;
}

double txlog_reader_recent_rate(const struct txlog_reader *rd)
{
	if (rd->nrecent < 2)
		return -1;
	int newest = (rd->recent_next + TXLOG_READER_RECENT - 1) % TXLOG_READER_RECENT;
	int oldest = rd->nrecent < TXLOG_READER_RECENT ? 0 : rd->recent_next;
	int64_t span = rd->recent[newest] - rd->recent[oldest];
	if (span <= 0)
		return -1;
	return (rd->nrecent - 1) / (span / 1e6);
}

static int fail(struct txlog_reader *rd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct txlog_reader *rd, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rd->err, sizeof rd->err, fmt, ap);
	va_end(ap);
	rd->error = code;
	return code;
}

static int64_t *count_of(struct txlog_progress *p, int state)
{
	switch (state) {
	case TXLOG_NODE_RUNNING: return &p->running;
	case TXLOG_NODE_COMPLETE: return &p->complete;
	case TXLOG_NODE_FAILED: return &p->failed;
	case TXLOG_NODE_ABORTED: return &p->aborted;
	default: return NULL; /* waiting, or not named yet: counted as the rest */
	}
}

static void update_waiting(struct txlog_progress *p)
{
	p->waiting = p->rules - p->running - p->complete - p->failed - p->aborted;
}

/* A new run: with the same number of rules, completed rules stay complete (a restart skips
 * them) and every other rule waits again; with another number the workflow changed and its
 * ids may name other rules, so every rule starts over. */
static void start_run(struct txlog_reader *rd, const struct txlog_record *r)
{
	struct txlog_progress *p = &rd->p;
	if (r->rules != p->rules) {
		rd->nrules = 0; /* the table's elements are cleared as it grows again */
		rd->all_done = 0;
		p->complete = 0;
	}
	for (size_t i = 0; i < rd->nrules; i++)
		if (rd->rules[i].state != TXLOG_NODE_COMPLETE)
			rd->rules[i].state = 0;
	p->runs++;
	p->rules = r->rules;
	p->pid = r->pid;
	p->start_us = r->time_us;
	p->ended = 0;
	p->end_status = 0;
	p->end_reason = NULL;
	p->end_us = 0;
	p->running = p->failed = p->aborted = 0;
	p->completed_in_run = 0;
	rd->nrecent = rd->recent_next = 0;
	update_waiting(p);
}

static int apply_node(struct txlog_reader *rd, const struct txlog_record *r)
{
	struct txlog_progress *p = &rd->p;
	if (r->node_id < 0 || r->node_id >= p->rules)
		return fail(rd, HTC_ECORRUPT,
		            "%s:%d: rule %lld is not one of the %lld rules of the run", rd->name,
		            rd->lineno, (long long)r->node_id, (long long)p->rules);
	size_t id = (size_t)r->node_id;
	if (id >= rd->nrules) {
		VEC_RESERVE(rd->rules, rd->rules_cap, id + 1);
		memset(rd->rules + rd->nrules, 0, (id + 1 - rd->nrules) * sizeof *rd->rules);
		if (rd->all_done)
			for (size_t i = rd->nrules; i <= id; i++)
				rd->rules[i].state = TXLOG_NODE_COMPLETE;
		rd->nrules = id + 1;
	}
	struct txlog_rule *x = &rd->rules[id];
	int64_t *old = count_of(p, x->state), *now = count_of(p, r->state);
	if (old)
		(*old)--;
	if (now)
		(*now)++;
	x->state = r->state;
	x->key = r->key;
	if (r->state == TXLOG_NODE_RUNNING) {
		x->attempts++;
		x->start_us = r->time_us;
		x->end_us = 0;
		x->failure[0] = 0;
	} else if (r->state != TXLOG_NODE_WAITING) {
		x->end_us = r->time_us;
	}
	if (r->state == TXLOG_NODE_FAILED)
		snprintf(x->failure, sizeof x->failure, "%s", r->failure ? r->failure : "");
	if (r->state == TXLOG_NODE_COMPLETE) {
		p->completed_in_run++;
		rd->recent[rd->recent_next] = r->time_us;
		rd->recent_next = (rd->recent_next + 1) % TXLOG_READER_RECENT;
		if (rd->nrecent < TXLOG_READER_RECENT)
			rd->nrecent++;
	}
	update_waiting(p);
	return 0;
}

/* The run ended with every rule complete: rules it skipped as complete from a run of an
 * earlier form of the workflow (another number of rules) have no record in this run. Rules
 * past the table are complete from now on (all_done), so the table does not grow for them. */
static void all_complete(struct txlog_reader *rd)
{
	struct txlog_progress *p = &rd->p;
	for (size_t i = 0; i < rd->nrules; i++)
		rd->rules[i].state = TXLOG_NODE_COMPLETE;
	rd->all_done = 1;
	p->running = p->failed = p->aborted = 0;
	p->complete = p->rules;
	update_waiting(p);
}

static int apply(struct txlog_reader *rd, const struct txlog_record *r)
{
	struct txlog_progress *p = &rd->p;
	p->last_us = r->time_us;
	switch (r->type) {
	case 'S':
		if (r->rules < 0 || r->rules > TXLOG_READER_MAX_RULES)
			return fail(rd, HTC_ECORRUPT, "%s:%d: a run of %lld rules (at most %d)",
			            rd->name, rd->lineno, (long long)r->rules,
			            TXLOG_READER_MAX_RULES);
		start_run(rd, r);
		return 0;
	case 'N': return apply_node(rd, r);
	case 'E':
		if (r->state == 0)
			all_complete(rd);
		p->ended = 1;
		p->end_status = r->state;
		p->end_us = r->time_us;
		snprintf(rd->end_reason, sizeof rd->end_reason, "%s", r->name);
		p->end_reason = rd->end_reason;
		return 0;
	default: return 0; /* 'F': files do not change the progress */
	}
}

/* One complete line (its newline removed) in rd->line. */
static int take_line(struct txlog_reader *rd)
{
	rd->lineno++;
	if (rd->lineno == 1) {
		const char *wf = NULL;
		int r = txlog_parse_header(rd->line, rd->name, NULL, &wf, rd->err, sizeof rd->err);
		if (r < 0) {
			rd->error = r;
			return r;
		}
		rd->workflow = wf ? xstrdup(wf) : NULL;
		rd->p.workflow = rd->workflow;
		return 0;
	}
	struct txlog_record rec;
	memset(&rec, 0, sizeof rec);
	if (txlog_parse_record(rd->line, &rec) < 0)
		return fail(rd, HTC_ECORRUPT, "%s:%d: corrupt record", rd->name, rd->lineno);
	rec.line = rd->lineno;
	int r = apply(rd, &rec);
	if (r)
		return r;
	if (rd->fn)
		return rd->fn(rd, &rec, rd->arg);
	return 0;
}

int txlog_reader_feed(struct txlog_reader *rd, const char *buf, size_t len)
{
	if (rd->error)
		return rd->error;
	size_t i = 0;
	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (buf + i)) : len - i;
		if (rd->plen + n > TXLOG_MAX_LINE)
			return fail(rd, HTC_ECORRUPT, "%s:%d: record longer than %d bytes",
			            rd->name, rd->lineno + 1, TXLOG_MAX_LINE);
		if (memchr(buf + i, 0, n))
			return fail(rd, HTC_ECORRUPT, "%s:%d: corrupt record (a NUL byte)",
			            rd->name, rd->lineno + 1);
		memcpy(rd->line + rd->plen, buf + i, n);
		rd->plen += n;
		rd->offset += (off_t)n;
		i += n;
		if (!nl)
			break;
		i++;
		rd->offset++;
		rd->line[rd->plen] = 0;
		rd->plen = 0;
		rd->good_off = rd->offset;
		int r = take_line(rd);
		if (r)
			return r;
	}
	return 0;
}

int txlog_reader_read_file(struct txlog_reader *rd, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(rd->err, sizeof rd->err, "%s: %s", path, strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		snprintf(rd->err, sizeof rd->err, "%s: %s", path, strerror(e));
		return -e;
	}
	/* A partial line is read again from the file: a restarting makeflow cuts a torn line
	 * off before it appends, so the bytes after it may not continue it. */
	rd->plen = 0;
	rd->offset = rd->good_off;
	if (rd->have_file &&
	    (st.st_dev != rd->dev || st.st_ino != rd->ino || st.st_size < rd->offset))
		txlog_reader_reset(rd);
	rd->have_file = 1;
	rd->dev = st.st_dev;
	rd->ino = st.st_ino;
	char *buf = xmalloc(READ_CHUNK);
	int r = rd->error;
	while (r == 0) {
		ssize_t n = pread(fd, buf, READ_CHUNK, rd->offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			snprintf(rd->err, sizeof rd->err, "%s: read error: %s", path, strerror(-r));
			break;
		}
		if (n == 0)
			break;
		r = txlog_reader_feed(rd, buf, (size_t)n);
	}
	free(buf);
	close(fd);
	return r;
}
