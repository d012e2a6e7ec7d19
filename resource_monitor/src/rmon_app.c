/* rmon_app.c: the run of the resource_monitor program (see rmon_app.h): the output files, the
 * start of the command or the attach, the signals forwarded with a grace period before
 * SIGKILL, and the summary completed with what the options add. */
#include "rmon_app.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "atomic_file.h"
#include "buffer.h"
#include "debug.h"
#include "htc_error.h"
#include "path.h"
#include "rmon_attach.h"
#include "rmonitor.h"
#include "rmsummary.h"
#include "stringtools.h"
#include "vec.h"
#include "xalloc.h"

#include "banned.h"

/* Milliseconds between the signal forwarded to the tree and the SIGKILL that follows. */
#define KILL_GRACE_MS 1000

/* Everything the program keeps while the task runs. */
struct app {
	uv_loop_t *loop;
	struct rmonitor *m;
	uv_signal_t sig[3];
	uv_timer_t kill_timer;
	int got_signal; /* the signal the monitor received, 0 if none */
	int done;
	struct rmsummary result;
	struct rmon_attach *attach; /* --pid mode */
	char *summary_path, *series_path, *files_path;
	FILE *series;
};

static void close_handles(struct app *app)
{
	for (int i = 0; i < 3; i++)
		if (!uv_is_closing((uv_handle_t *)&app->sig[i]))
			uv_close((uv_handle_t *)&app->sig[i], NULL);
	if (!uv_is_closing((uv_handle_t *)&app->kill_timer))
		uv_close((uv_handle_t *)&app->kill_timer, NULL);
	if (app->attach)
		rmon_attach_close(app->attach);
}

static void on_ended(struct app *app, const struct rmsummary *s)
{
	rmsummary_copy(&app->result, s);
	app->done = 1;
	close_handles(app);
}

static void on_done(struct rmonitor *m, const struct rmsummary *s, void *arg)
{
	(void)m;
	on_ended(arg, s);
}

static void on_attach_done(const struct rmsummary *s, void *arg)
{
	on_ended(arg, s);
}

static void kill_timer_cb(uv_timer_t *t)
{
	struct app *app = t->data;
	debug(D_RMON, "grace period over: SIGKILL to the task");
	if (app->m)
		rmonitor_kill(app->m, SIGKILL);
	if (app->attach)
		rmon_attach_kill(app->attach);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct app *app = h->data;
	if (app->done)
		return;
	if (app->got_signal) {
		/* A second signal: no more grace. */
		kill_timer_cb(&app->kill_timer);
		return;
	}
	app->got_signal = signum;
	notice("received signal %d: stopping the task", signum);
	if (app->m)
		rmonitor_kill(app->m, signum);
	if (app->attach)
		rmon_attach_signal(app->attach, signum);
	uv_timer_start(&app->kill_timer, kill_timer_cb, KILL_GRACE_MS, 0);
}

/* Writes the list of opened files, one per line. */
static int write_files(const char *path, const char *const *files)
{
	struct buffer b;
	buffer_init(&b, 0);
	for (size_t i = 0; files && files[i]; i++) {
		buffer_putstring(&b, files[i]);
		buffer_putc(&b, '\n');
	}
	int rc = atomic_file_write(path, buffer_len(&b) ? buffer_tostring(&b) : "", buffer_len(&b),
	                           0644);
	buffer_free(&b);
	return rc;
}

/* W as one shell word: unchanged when it needs no quoting. */
static char *shell_word(const char *w)
{
	if (!*w)
		return xstrdup("''");
	for (const char *p = w; *p; p++)
		if (!strchr(
		        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%",
		        *p))
			return str_escape_shell(w);
	return xstrdup(w);
}

static char *hostname(void)
{
	char buf[256];
	if (gethostname(buf, sizeof buf) < 0)
		return xstrdup("unknown");
	buf[sizeof buf - 1] = 0;
	return xstrdup(buf);
}

/* The monitor's exit status for a finished task (doc/resource-monitor.md). */
static int exit_code(const struct rmsummary *s)
{
	switch (s->exit_type) {
	case RM_EXIT_NORMAL:
		return s->exit_status == 0 ? RMON_APP_EXIT_OK : RMON_APP_EXIT_COMMAND_FAILED;
	case RM_EXIT_SIGNAL: return RMON_APP_EXIT_COMMAND_FAILED;
	case RM_EXIT_LIMITS:
		for (int f = 0; f < RM_N_FIELDS; f++)
			if (f != RM_WALL_TIME && s->limits_exceeded[f] >= 0)
				return RMON_APP_EXIT_LIMITS;
		return s->limits_exceeded[RM_WALL_TIME] >= 0 ? RMON_APP_EXIT_WALL_TIME
		                                             : RMON_APP_EXIT_LIMITS;
	case RM_EXIT_NONE: return RMON_APP_EXIT_OK;
	}
	return RMON_APP_EXIT_COMMAND_FAILED;
}

/* Checks that the summary can be written next to TEMPLATE before anything runs, and opens the
 * time series. */
static int open_outputs(struct app *app, const struct resource_monitor_opts *o, char *err,
                        size_t errlen)
{
	char *template =
	    o->template ? xstrdup(o->template) : xasprintf("resource-pid-%d", (int)getpid());
	char *dir = path_dirname(template);
	int rc = 0;
	struct stat st;
	app->summary_path = xasprintf("%s.summary", template);
	app->series_path = xasprintf("%s.series", template);
	app->files_path = xasprintf("%s.files", template);
	if (access(dir, W_OK | X_OK) < 0) {
		rc = -errno;
		snprintf(err, errlen, "-O %s: cannot write in directory %s: %s", template, dir,
		         strerror(errno));
	} else if (stat(app->summary_path, &st) == 0 && S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		snprintf(err, errlen, "-O %s: %s is a directory", template, app->summary_path);
	} else if (o->time_series) {
		app->series = fopen(app->series_path, "w");
		if (!app->series) {
			rc = -errno;
			snprintf(err, errlen, "--with-time-series: cannot create %s: %s",
			         app->series_path, strerror(errno));
		} else {
			setvbuf(app->series, NULL, _IOLBF, 0);
		}
	}
	free(dir);
	free(template);
	return rc;
}

/* Starts the command, or attaches to the process of --pid. */
static int start(struct app *app, const struct resource_monitor_opts *o, char *err, size_t errlen)
{
	if (o->attach_pid) {
		if (app->series)
			rmonitor_series_header(app->series);
		struct rmon_attach_spec spec = {
		    .pid = o->attach_pid,
		    .limits = &o->limits,
		    .enforce = o->have_limits && !o->measure_only,
		    .interval_s = o->interval,
		    .time_series = app->series,
		    .measure_dirs = (const char *const *)o->measure_dirs,
		    .report_files = o->report_files,
		    .done = on_attach_done,
		    .done_arg = app,
		};
		app->attach = rmon_attach_start(app->loop, &spec, err, errlen);
		return app->attach ? 0 : -ESRCH;
	}
	if (o->cgroups != RMONITOR_CGROUPS_OFF) {
		/* Groups left by monitors that were killed with SIGKILL. */
		int removed = rmonitor_cleanup_stale(NULL);
		if (removed > 0)
			debug(D_RMON, "removed %d stale cgroups", removed);
	}
	struct rmonitor_spec spec;
	rmonitor_spec_init(&spec);
	spec.argv = o->cmd;
	rmsummary_copy(&spec.limits, &o->limits);
	spec.measure_only = o->measure_only;
	spec.cpuset = o->cpuset;
	spec.seccomp_profile = o->seccomp;
	spec.interval_s = o->interval;
	spec.measure_dirs = (const char *const *)o->measure_dirs;
	spec.time_series = app->series;
	spec.report_files = o->report_files;
	spec.cgroups = o->cgroups;
	int rc = 0;
	app->m = rmonitor_start(app->loop, &spec, on_done, app, &rc);
	rmsummary_clear(&spec.limits);
	if (!app->m) {
		if (rc == HTC_EUNSUP && o->cgroups == RMONITOR_CGROUPS_REQUIRED)
			snprintf(err, errlen, "--cgroups=required: cgroups cannot be used here");
		else
			snprintf(err, errlen, "cannot start '%s': %s", o->cmd[0], htc_strerror(rc));
		return rc < 0 ? rc : HTC_EUNSUP;
	}
	debug(D_RMON, "started pid %d (%s)", (int)rmonitor_pid(app->m),
	      rmonitor_uses_cgroups(app->m) ? "cgroup" : "/proc sampling");
	return 0;
}

/* Adds to the summary what the options say about the task. */
static void complete_summary(struct app *app, const struct resource_monitor_opts *o)
{
	struct rmsummary *s = &app->result;
	if (app->got_signal && s->exit_type != RM_EXIT_LIMITS) {
		s->exit_type = RM_EXIT_SIGNAL;
		s->signal = app->got_signal;
	}
	if (!s->host)
		s->host = hostname();
	if (o->sh) {
		/* The shell text is what the user wrote: report it rather than sh -c '...'. */
		free(s->command);
		s->command = xstrdup(o->sh);
	} else if (!s->command && o->cmd) {
		char **q = xcalloc((size_t)o->n_args + 1, sizeof *q);
		for (int i = 0; i < o->n_args; i++)
			q[i] = shell_word(o->cmd[i]);
		s->command = str_join(q, " ");
		str_free_argv(q);
	}
	if (o->category) {
		free(s->category);
		s->category = xstrdup(o->category);
	}
	if (o->task_id) {
		free(s->task_id);
		s->task_id = xstrdup(o->task_id);
	}
	VEC_RESIZE(s->extra_keys, s->n_extra + o->n_extra);
	VEC_RESIZE(s->extra_values, s->n_extra + o->n_extra);
	for (size_t i = 0; i < o->n_extra; i++) {
		s->extra_keys[s->n_extra] = xstrdup(o->extra_keys[i]);
		s->extra_values[s->n_extra] = xstrdup(o->extra_values[i]);
		s->n_extra++;
	}
}

/* Writes the summary and the list of files, closes the series; returns the exit status. */
static int write_outputs(struct app *app, const struct resource_monitor_opts *o)
{
	struct rmsummary *s = &app->result;
	const char *const *files = NULL;
	if (o->report_files)
		files = app->m ? rmonitor_files(app->m) : rmon_attach_files(app->attach);
	int status = exit_code(s);
	char *json = rmsummary_to_json(s, o->pprint, o->compact);
	size_t len = strlen(json);
	char *text = xasprintf("%s%s", json, (len && json[len - 1] == '\n') ? "" : "\n");
	int rc = atomic_file_write(app->summary_path, text, strlen(text), 0644);
	if (rc < 0) {
		fprintf(stderr, "resource_monitor: cannot write %s: %s\n", app->summary_path,
		        htc_strerror(rc));
		status = RMON_APP_EXIT_MONITOR_ERROR;
	}
	if (o->report_files) {
		rc = write_files(app->files_path, files);
		if (rc < 0) {
			fprintf(stderr, "resource_monitor: cannot write %s: %s\n", app->files_path,
			        htc_strerror(rc));
			status = RMON_APP_EXIT_MONITOR_ERROR;
		}
	}
	if (app->series) {
		int closed = fclose(app->series);
		app->series = NULL;
		if (closed != 0) {
			fprintf(stderr, "resource_monitor: cannot write %s: %s\n", app->series_path,
			        strerror(errno));
			status = RMON_APP_EXIT_MONITOR_ERROR;
		}
	}
	debug(D_RMON, "summary written to %s; exit status %d", app->summary_path, status);
	if (app->got_signal && status != RMON_APP_EXIT_MONITOR_ERROR)
		status = 128 + app->got_signal;
	free(text);
	free(json);
	return status;
}

int rmon_app_run(const struct resource_monitor_opts *o, char *err, size_t errlen)
{
	struct app app;
	memset(&app, 0, sizeof app);
	rmsummary_init(&app.result);
	int status = open_outputs(&app, o, err, errlen);
	if (status < 0)
		goto out;
	app.loop = uv_default_loop();
	static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++) {
		uv_signal_init(app.loop, &app.sig[i]);
		app.sig[i].data = &app;
		uv_signal_start(&app.sig[i], on_signal, sigs[i]);
	}
	uv_timer_init(app.loop, &app.kill_timer);
	app.kill_timer.data = &app;
	status = start(&app, o, err, errlen);
	if (status < 0) {
		close_handles(&app);
	} else {
		uv_run(app.loop, UV_RUN_DEFAULT);
		if (!app.done) {
			status = HTC_EPROTO;
			snprintf(err, errlen,
			         "internal error: the event loop stopped before the task ended");
		} else {
			complete_summary(&app, o);
			status = write_outputs(&app, o);
		}
	}
	rmonitor_delete(app.m);
	uv_run(app.loop, UV_RUN_NOWAIT);
	rmon_attach_delete(app.attach);
	uv_loop_close(app.loop);
out:
	if (app.series)
		fclose(app.series);
	rmsummary_clear(&app.result);
	free(app.summary_path);
	free(app.series_path);
	free(app.files_path);
	return status;
}
