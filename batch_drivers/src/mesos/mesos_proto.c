/* mesos_proto.c: call bodies, offer matching, task ids and state mapping of mesos_proto.h,
 * following the message definitions of the v1 scheduler.proto and mesos.proto (Scheduler HTTP
 * API document, "Calls" and "Events"). */
#include "mesos_proto.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "stringtools.h"
#include "xalloc.h"

#include "banned.h"

json_t *mesos_id(const char *v)
{
	return json_pack("{s:s}", "value", v);
}

json_t *mesos_call_new(const char *type, const char *fid)
{
	json_t *c = json_pack("{s:s}", "type", type);
	if (fid)
		json_object_set_new(c, "framework_id", mesos_id(fid));
	return c;
}

json_t *mesos_call_subscribe(const char *name, const char *user, const char *fid,
                             double failover_timeout)
{
	json_t *info = json_pack("{s:s, s:s, s:f, s:[s]}", "user", user, "name", name,
	                         "failover_timeout", failover_timeout, "roles", "*");
	json_object_set_new(info, "capabilities", json_pack("[{s:s}]", "type", "MULTI_ROLE"));
	if (fid)
		json_object_set_new(info, "id", mesos_id(fid));
	json_t *c = mesos_call_new("SUBSCRIBE", fid);
	json_object_set_new(c, "subscribe", json_pack("{s:o}", "framework_info", info));
	return c;
}

int mesos_offer_resources(const json_t *offer, struct mesos_res *out)
{
	memset(out, 0, sizeof *out);
	json_t *res = json_object_get(offer, "resources");
	if (!json_is_string(json_object_get(json_object_get(offer, "id"), "value")) ||
	    !json_is_string(json_object_get(json_object_get(offer, "agent_id"), "value")) ||
	    !json_is_array(res))
		return -EINVAL;
	size_t i;
	json_t *r;
	json_array_foreach(res, i, r)
	{
		const char *name = json_string_value(json_object_get(r, "name"));
		const char *type = json_string_value(json_object_get(r, "type"));
		json_t *v = json_object_get(json_object_get(r, "scalar"), "value");
		if (!name || !type || strcmp(type, "SCALAR") != 0 || !json_is_number(v))
			continue;
		double x = json_number_value(v);
		if (x < 0)
			continue;
		if (strcmp(name, "cpus") == 0)
			out->cpus += x;
		else if (strcmp(name, "mem") == 0)
			out->mem += x;
		else if (strcmp(name, "disk") == 0)
			out->disk += x;
	}
	return 0;
}

void mesos_job_need(const struct batch_resources *r, double default_mem, double default_disk,
                    struct mesos_res *out)
{
	out->cpus = r->cores > 0 ? (double)r->cores : 1;
	out->mem = r->memory_mb > 0 ? (double)r->memory_mb : default_mem;
	out->disk = r->disk_mb > 0 ? (double)r->disk_mb : default_disk;
}

int mesos_fits(const struct mesos_res *need, const struct mesos_res *have)
{
	const double eps = 1e-6;
	return need->cpus <= have->cpus + eps && need->mem <= have->mem + eps &&
	       need->disk <= have->disk + eps;
}

void mesos_take(struct mesos_res *have, const struct mesos_res *need)
{
	have->cpus -= need->cpus;
	have->mem -= need->mem;
	have->disk -= need->disk;
}

static json_t *scalar(const char *name, double v)
{
	return json_pack("{s:s, s:s, s:{s:f}}", "name", name, "type", "SCALAR", "scalar", "value",
	                 v);
}

json_t *mesos_resources_json(const struct mesos_res *need)
{
	json_t *a = json_array();
	json_array_append_new(a, scalar("cpus", need->cpus));
	json_array_append_new(a, scalar("mem", need->mem));
	if (need->disk > 0)
		json_array_append_new(a, scalar("disk", need->disk));
	return a;
}

static void put_quoted(struct buffer *b, const char *s)
{
	char *q = str_escape_shell(s);
	buffer_putstring(b, q);
	free(q);
}

char *mesos_task_command(const struct batch_job_spec *spec, const char *cwd)
{
	struct buffer b;
	buffer_init(&b, 0);
	buffer_putstring(&b, "cd ");
	put_quoted(&b, cwd);
	buffer_putstring(&b,
	                 " || exit 126\n"
	                 "t=\n"
	                 "if [ -n \"$MESOS_SANDBOX\" ] && mkdir -p \"$MESOS_SANDBOX/tmp\"; then\n"
	                 "  t=\"$MESOS_SANDBOX/tmp\"; export TMPDIR=\"$t\"\n"
	                 "fi\n"
	                 "/bin/sh -c ");
	put_quoted(&b, spec->command);
	buffer_putstring(&b, " </dev/null\nrc=$?\n"
	                     "[ -n \"$t\" ] && rm -rf \"$t\"\n"
	                     "exit \"$rc\"\n");
	return buffer_steal(&b, NULL);
}

static void add_var(json_t *vars, const char *name, size_t nlen, const char *value)
{
	json_t *n = json_stringn(name, nlen);
	json_array_append_new(vars, json_pack("{s:o, s:s}", "name", n, "value", value));
}

json_t *mesos_task_info(const struct batch_job_spec *spec, const char *task_id,
                        const char *agent_id, const struct mesos_res *need, const char *cwd)
{
	json_t *vars = json_array();
	char num[32];
	const struct batch_resources *r = &spec->resources;
	if (r->cores > 0) {
		snprintf(num, sizeof num, "%lld", (long long)r->cores);
		add_var(vars, "CORES", 5, num);
	}
	if (r->memory_mb > 0) {
		snprintf(num, sizeof num, "%lld", (long long)r->memory_mb);
		add_var(vars, "MEMORY", 6, num);
	}
	if (r->disk_mb > 0) {
		snprintf(num, sizeof num, "%lld", (long long)r->disk_mb);
		add_var(vars, "DISK", 4, num);
	}
	for (const char *const *e = spec->env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (eq && eq > *e)
			add_var(vars, *e, (size_t)(eq - *e), eq + 1);
	}
	char *cmd = mesos_task_command(spec, cwd);
	json_t *ti =
	    json_pack("{s:s, s:o, s:o, s:o, s:{s:b, s:s, s:{s:o}}}", "name",
	              spec->tag && *spec->tag ? spec->tag : task_id, "task_id", mesos_id(task_id),
	              "agent_id", mesos_id(agent_id), "resources", mesos_resources_json(need),
	              "command", "shell", 1, "value", cmd, "environment", "variables", vars);
	free(cmd);
	/* mesos.proto TaskInfo.max_completion_time (a DurationInfo): the agent fails a task still
	 * running after it with REASON_MAX_COMPLETION_TIME_REACHED */
	if (r->wall_time_s > 0)
		json_object_set_new(
		    ti, "max_completion_time",
		    json_pack("{s:I}", "nanoseconds", (json_int_t)r->wall_time_s * 1000000000));
	return ti;
}

void mesos_task_id(const char *run, long long n, char out[MESOS_TASK_ID_LEN])
{
	snprintf(out, MESOS_TASK_ID_LEN, "%s%s-%lld", CLUSTER_JOB_PREFIX, run, n);
}

int mesos_task_of_run(const char *task_id, const char *run)
{
	size_t pl = strlen(CLUSTER_JOB_PREFIX), rl = strlen(run);
	return strncmp(task_id, CLUSTER_JOB_PREFIX, pl) == 0 &&
	       strncmp(task_id + pl, run, rl) == 0 && task_id[pl + rl] == '-';
}

enum mesos_phase mesos_state_phase(const char *state)
{
	static const char *const waiting[] = {"TASK_STAGING", "TASK_STARTING"};
	static const char *const ended[] = {
	    "TASK_FINISHED", "TASK_FAILED",      "TASK_KILLED", "TASK_LOST",
	    "TASK_ERROR",    "TASK_DROPPED",     "TASK_GONE",   "TASK_GONE_BY_OPERATOR",
	    "TASK_UNKNOWN",  "TASK_UNREACHABLE",
	};
	if (!state)
		return MESOS_PHASE_UNKNOWN;
	for (size_t i = 0; i < sizeof waiting / sizeof *waiting; i++)
		if (strcmp(state, waiting[i]) == 0)
			return MESOS_PHASE_WAITING;
	if (strcmp(state, "TASK_RUNNING") == 0 || strcmp(state, "TASK_KILLING") == 0)
		return MESOS_PHASE_RUNNING;
	for (size_t i = 0; i < sizeof ended / sizeof *ended; i++)
		if (strcmp(state, ended[i]) == 0)
			return MESOS_PHASE_ENDED;
	return MESOS_PHASE_UNKNOWN;
}

/* The signal named NAME ("Killed", "SIGKILL", "KILL", or a number), or 0. */
static int signal_named(const char *name)
{
	static const struct {
		const char *a, *b;
		int sig;
	} sigs[] = {
	    {"KILL", "Killed", SIGKILL},
	    {"TERM", "Terminated", SIGTERM},
	    {"SEGV", "Segmentation fault", SIGSEGV},
	    {"ABRT", "Aborted", SIGABRT},
	    {"INT", "Interrupt", SIGINT},
	    {"HUP", "Hangup", SIGHUP},
	    {"BUS", "Bus error", SIGBUS},
	    {"FPE", "Floating point exception", SIGFPE},
	    {"PIPE", "Broken pipe", SIGPIPE},
	    {"XCPU", "CPU time limit exceeded", SIGXCPU},
	};
	if (strncmp(name, "SIG", 3) == 0)
		name += 3;
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		if (strcmp(name, sigs[i].a) == 0 ||
		    strncmp(name, sigs[i].b, strlen(sigs[i].b)) == 0)
			return sigs[i].sig;
	int n = atoi(name);
	return n > 0 && n < 65 ? n : 0;
}

static int exhaustion(const char *reason)
{
	if (!reason)
		return 0;
	if (strcmp(reason, "REASON_CONTAINER_LIMITATION_MEMORY") == 0 ||
	    strcmp(reason, "REASON_CONTAINER_LIMITATION") == 0)
		return BATCH_EXHAUSTED_MEMORY;
	if (strcmp(reason, "REASON_CONTAINER_LIMITATION_DISK") == 0)
		return BATCH_EXHAUSTED_DISK;
	if (strcmp(reason, "REASON_MAX_COMPLETION_TIME_REACHED") == 0)
		return BATCH_EXHAUSTED_WALL_TIME;
	return 0;
}

char *mesos_result_from_status(const char *state, const char *reason, const char *message,
                               struct batch_result *r)
{
	r->exited_normally = 0;
	r->exit_code = -1;
	r->signal = 0;
	r->exhausted = exhaustion(reason);
	if (strcmp(state, "TASK_FINISHED") == 0) {
		r->exited_normally = 1;
		r->exit_code = 0;
		return NULL;
	}
	if (strcmp(state, "TASK_FAILED") == 0 && message && !r->exhausted) {
		int code;
		char sig[64];
		if (sscanf(message, "Command exited with status %d", &code) == 1 && code >= 0 &&
		    code <= 255) {
			r->exited_normally = 1;
			r->exit_code = code;
			return NULL;
		}
		if (sscanf(message, "Command terminated with signal %63[^\n]", sig) == 1 &&
		    signal_named(sig)) {
			r->signal = signal_named(sig);
			return NULL;
		}
	}
	if (r->exhausted)
		r->signal = SIGKILL;
	int has_msg = message && *message;
	return xasprintf("mesos: task %s%s%s%s%s%s", state, reason ? " (" : "",
	                 reason ? reason : "", reason ? ")" : "", has_msg ? ": " : "",
	                 has_msg ? message : "");
}
