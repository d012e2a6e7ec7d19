/* makeflow_monitor_view.c: formats what makeflow_monitor shows for one workflow from the
 * progress its log reader keeps (see makeflow_monitor_view.h and doc/man/makeflow_monitor.1). */
#include "makeflow_monitor_view.h"

#include <string.h>
#include <time.h>

#include "banned.h"

#define FIELD_WIDTH    13
#define PROGRESS_WIDTH 55
#define MAX_FAILED     10

double makeflow_monitor_fraction(const struct txlog_reader *rd)
{
	const struct txlog_progress *p = txlog_reader_progress(rd);
	return p->rules > 0 ? (double)p->complete / (double)p->rules : 1.0;
}

void makeflow_monitor_duration(double seconds, char *buf, size_t len)
{
	if (seconds < 0 || seconds > 1e12) {
		snprintf(buf, len, "N/A");
		return;
	}
	long long s = (long long)seconds;
	long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;
	if (d)
		snprintf(buf, len, "%lld:%02lld:%02lld:%02lld", d, h, m, s % 60);
	else
		snprintf(buf, len, "%02lld:%02lld:%02lld", h, m, s % 60);
}

static void field(FILE *out, const char *name)
{
	char label[32];
	snprintf(label, sizeof label, "%s:", name);
	fprintf(out, "%*s ", FIELD_WIDTH, label);
}

static void start_time(int64_t us, char *buf, size_t len)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%a %b %e %H:%M:%S %Y", &tm))
		snprintf(buf, len, "?");
}

static void progress_bar(FILE *out, double fraction)
{
	int bars = (int)(PROGRESS_WIDTH * fraction) - 1;
	char bar[PROGRESS_WIDTH + 1];
	int n = 0;
	for (; n < bars && n < PROGRESS_WIDTH - 1; n++)
		bar[n] = '=';
	bar[n++] = '>';
	for (; n < PROGRESS_WIDTH; n++)
		bar[n] = ' ';
	bar[n] = 0;
	fprintf(out, "[%s] %0.2f %%\n", bar, fraction * 100.0);
}

static const char *end_word(int status)
{
	switch (status) {
	case 0: return "completed";
	case 1: return "failed";
	case 2: return "aborted";
	default: return "ended";
	}
}

/* The log's word for a failure ("exit:3") in words ("exit code 3"). */
static void failure_text(const char *word, char *buf, size_t len)
{
	if (!strncmp(word, "exit:", 5))
		snprintf(buf, len, "exit code %s", word + 5);
	else if (!strncmp(word, "signal:", 7))
		snprintf(buf, len, "signal %s", word + 7);
	else if (!strcmp(word, "exhausted"))
		snprintf(buf, len, "exceeded its resources");
	else
		snprintf(buf, len, "%s", word);
}

static void failed_rules(FILE *out, const struct txlog_reader *rd)
{
	const struct txlog_progress *p = txlog_reader_progress(rd);
	if (p->failed == 0)
		return;
	field(out, "Failed");
	int shown = 0;
	for (int64_t id = 0; id < p->rules && shown < MAX_FAILED; id++) {
		const struct txlog_rule *x = txlog_reader_rule(rd, id);
		if (x->state != TXLOG_NODE_FAILED)
			continue;
		fprintf(out, "%srule %lld", shown ? ", " : "", (long long)id);
		char how[64] = "";
		failure_text(x->failure, how, sizeof how);
		if (how[0] && x->attempts > 1)
			fprintf(out, " (%s, %d attempts)", how, x->attempts);
		else if (how[0])
			fprintf(out, " (%s)", how);
		else if (x->attempts > 1)
			fprintf(out, " (%d attempts)", x->attempts);
		shown++;
	}
	if (p->failed > shown)
		fprintf(out, " and %lld more", (long long)(p->failed - shown));
	fputc('\n', out);
}

void makeflow_monitor_view(FILE *out, const char *name, const struct txlog_reader *rd,
                           int64_t now_us)
{
	const struct txlog_progress *p = txlog_reader_progress(rd);
	fputc('\n', out);
	field(out, "Makeflow");
	fprintf(out, "%s\n", name);
	if (p->runs == 0) {
		field(out, "Status");
		fprintf(out, "waiting for events...\n");
		return;
	}
	int64_t end = p->ended ? p->end_us : now_us;
	double elapsed = (double)(end - p->start_us) / 1e6;
	if (elapsed < 0)
		elapsed = 0;
	double average = elapsed > 0 ? (double)p->completed_in_run / elapsed : 0;
	char start[64], el[32], left[32];
	start_time(p->start_us, start, sizeof start);
	makeflow_monitor_duration(elapsed, el, sizeof el);
	field(out, "Status");
	if (p->ended) {
		fprintf(out, "finished: %s\n", end_word(p->end_status));
		field(out, "Time");
		fprintf(out, "start: %s, elapsed: %s\n", start, el);
		field(out, "Tasks/Minute");
		fprintf(out, "average: %0.2f\n", average * 60.0);
	} else {
		progress_bar(out, makeflow_monitor_fraction(rd));
		double current = txlog_reader_recent_rate(rd);
		if (current < 0)
			current = average;
		int64_t remaining = p->rules - p->complete;
		makeflow_monitor_duration(current > 0 ? (double)remaining / current : -1, left,
		                          sizeof left);
		field(out, "Time");
		fprintf(out, "start: %s, elapsed: %s, left: %s\n", start, el, left);
		field(out, "Tasks/Minute");
		fprintf(out, "current: %0.2f, average: %0.2f\n", current * 60.0, average * 60.0);
	}
	field(out, "Tasks");
	fprintf(out,
	        "waiting: %lld, running: %lld, complete: %lld, failed: %lld, aborted: %lld, "
	        "total: %lld\n",
	        (long long)p->waiting, (long long)p->running, (long long)p->complete,
	        (long long)p->failed, (long long)p->aborted, (long long)p->rules);
	failed_rules(out, rd);
}
