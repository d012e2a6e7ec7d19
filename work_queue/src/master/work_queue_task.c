/* work_queue_task.c: the task object of the Work Queue master library: creation, the specify_*
 * setters with their checks (names, flags, ranges), cloning, deletion and result names. What
 * a setter refuses is refused before submission, with a reason the application can print. */
#include "work_queue.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker_name.h"
#include "htc_error.h"
#include "path.h"
#include "master_internal.h"
#include "task_names.h"
#include "wq_msg.h"
#include "wq_name.h"
#include "xalloc.h"

#include "vec.h"
#include "banned.h"

/* Limits of doc/work-queue-protocol.md section 2.4 that a setter can check at once. */
#define COMMAND_MAX   131071
#define CATEGORY_MAX  128
#define TAG_MAX       1024
#define URL_MAX       4096
#define LABEL_MAX     128
#define ENV_NAME_MAX  128
#define ENV_VALUE_MAX 4096
#define FILES_MAX     WQ_FILES_MAX
#define ENV_MAX       256

static int fail(struct work_queue_task *t, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct work_queue_task *t, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->last_error, sizeof t->last_error, fmt, ap);
	va_end(ap);
	return err;
}

static void ok(struct work_queue_task *t)
{
	t->last_error[0] = 0;
}

/* Replaces *DST by a copy of SRC (NULL clears). */
static void set_str(char **dst, const char *src)
{
	free(*dst);
	*dst = src ? xstrdup(src) : NULL;
}

struct work_queue_task *work_queue_task_create(const char *command)
{
	struct work_queue_task *t = xcalloc(1, sizeof *t);
	if (command)
		t->command_line = xstrdup(command);
	t->resources_requested = xmalloc(sizeof *t->resources_requested);
	rmsummary_init(t->resources_requested);
	t->result = WORK_QUEUE_RESULT_UNKNOWN;
	t->container_load_time = t->container_create_time = -1;
	t->container_run_time = t->container_delete_time = -1;
	t->memory_max = -1;
	t->memory_grown = -1;
	t->cores_grown = -1;
	t->cores_held_avg = -1;
	t->memory_held_avg = -1;
	return t;
}

static void file_free(struct work_queue_file *f)
{
	while (f) {
		struct work_queue_file *next = f->next;
		free(f->source);
		free(f->remote);
		free(f->data);
		free(f);
		f = next;
	}
}

static void summary_free(struct rmsummary *s)
{
	if (!s)
		return;
	rmsummary_clear(s);
	free(s);
}

static void strv_free(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void work_queue_task_delete(struct work_queue_task *t)
{
	if (!t)
		return;
	free(t->command_line);
	free(t->tag);
	free(t->category);
	file_free(t->inputs);
	file_free(t->outputs);
	task_names_free(t->file_names);
	strv_free(t->env_names, t->env_count);
	strv_free(t->env_values, t->env_count);
	strv_free(t->features, t->feature_count);
	free(t->container_image);
	free(t->container_archive);
	summary_free(t->resources_requested);
	summary_free(t->resources_allocated);
	summary_free(t->resources_measured);
	free(t->output);
	free(t->host);
	free(t->hostname);
	free(t->worker_id);
	free(t);
}

static struct work_queue_file *file_copy(const struct work_queue_file *f)
{
	struct work_queue_file *head = NULL, **tail = &head;
	for (; f; f = f->next) {
		struct work_queue_file *c = xmalloc(sizeof *c);
		*c = *f;
		c->source = f->source ? xstrdup(f->source) : NULL;
		c->remote = xstrdup(f->remote);
		c->data = NULL;
		if (f->data) {
			c->data = xmalloc(f->length ? f->length : 1);
			memcpy(c->data, f->data, f->length);
		}
		c->next = NULL;
		*tail = c;
		tail = &c->next;
	}
	return head;
}

static char **strv_copy(char *const *v, int n)
{
	if (!n)
		return NULL;
	char **c = xcalloc((size_t)n, sizeof *c);
	for (int i = 0; i < n; i++)
		c[i] = v[i] ? xstrdup(v[i]) : NULL;
	return c;
}

struct work_queue_task *work_queue_task_clone(const struct work_queue_task *t)
{
	struct work_queue_task *c = work_queue_task_create(t->command_line);
	set_str(&c->tag, t->tag);
	set_str(&c->category, t->category);
	c->priority = t->priority;
	c->max_retries = t->max_retries;
	c->running_time_max = t->running_time_max;
	c->end_time = t->end_time;
	c->inputs = file_copy(t->inputs);
	c->outputs = file_copy(t->outputs);
	c->env_count = t->env_count;
	c->env_names = strv_copy(t->env_names, t->env_count);
	c->env_values = strv_copy(t->env_values, t->env_count);
	c->feature_count = t->feature_count;
	c->features = strv_copy(t->features, t->feature_count);
	rmsummary_copy(c->resources_requested, t->resources_requested);
	set_str(&c->container_image, t->container_image);
	set_str(&c->container_archive, t->container_archive);
	c->container_mode = t->container_mode;
	c->memory_max = t->memory_max;
	return c;
}

int work_queue_task_specify_command(struct work_queue_task *t, const char *command)
{
	if (!command || !*command)
		return fail(t, -EINVAL, "the command is empty");
	size_t n = strlen(command);
	if (n > COMMAND_MAX)
		return fail(t, HTC_ETOOBIG, "the command is %zu bytes; the limit is %d", n,
		            COMMAND_MAX);
	set_str(&t->command_line, command);
	ok(t);
	return 0;
}

void master_task_drop_name_index(struct work_queue_task *t)
{
	task_names_free(t->file_names);
	t->file_names = NULL;
}

/* The index of T's file names, built from its lists when it has none yet (a clone, or a task
 * whose index was dropped when it was queued). */
static struct task_names *names_of(struct work_queue_task *t)
{
	if (t->file_names)
		return t->file_names;
	for (int dir = 0; dir < 2; dir++) {
		struct work_queue_file *f = dir == 0 ? t->inputs : t->outputs, *last = NULL;
		for (; f; f = f->next) {
			char *why = NULL;
			/* the names were checked when given: this only records them */
			task_names_add(&t->file_names, dir,
			               dir == 0 ? WQ_NAME_INPUT : WQ_NAME_OUTPUT, f->remote, &why);
			free(why);
			last = f;
		}
		task_names_set_last(t->file_names, dir, last);
	}
	return t->file_names;
}

/* Checks REMOTE for direction TYPE against the name rules and the names already given (rule 4:
 * unique, no name inside another, through the index: one lookup per '/' of REMOTE), and records
 * it; returns 0 or an error recorded in T. */
static int check_remote(struct work_queue_task *t, enum work_queue_file_type type,
                        const char *remote)
{
	const char *dir = type == WORK_QUEUE_INPUT ? "input" : "output";
	if (!remote || !*remote)
		return fail(t, -EINVAL, "the %s has no remote name", dir);
	int d = type == WORK_QUEUE_INPUT ? 0 : 1;
	names_of(t);
	if (task_names_count(t->file_names, d) >= FILES_MAX)
		return fail(t, HTC_ETOOBIG, "a task has at most %d %ss", FILES_MAX, dir);
	enum wq_name_kind kind = d == 0 ? WQ_NAME_INPUT : WQ_NAME_OUTPUT;
	char *why = NULL;
	int r = wq_name_check(kind, remote, &why);
	if (r == 0)
		r = task_names_add(&t->file_names, d, kind, remote, &why);
	if (r < 0) {
		fail(t, r, "%s", why ? why : "bad name");
		free(why);
		return r;
	}
	return 0;
}

static int check_flags(struct work_queue_task *t, enum work_queue_file_type type, int flags)
{
	const int known =
	    WORK_QUEUE_CACHE | WORK_QUEUE_WATCH | WORK_QUEUE_SUCCESS_ONLY | WORK_QUEUE_FAILURE_ONLY;
	if (flags & ~known)
		return fail(t, -EINVAL, "unknown file flags 0x%x", (unsigned)(flags & ~known));
	if (type == WORK_QUEUE_INPUT &&
	    (flags & (WORK_QUEUE_WATCH | WORK_QUEUE_SUCCESS_ONLY | WORK_QUEUE_FAILURE_ONLY)))
		return fail(t, -EINVAL,
		            "WATCH, SUCCESS_ONLY and FAILURE_ONLY apply to outputs only");
	if ((flags & WORK_QUEUE_SUCCESS_ONLY) && (flags & WORK_QUEUE_FAILURE_ONLY))
		return fail(t, -EINVAL,
		            "an output cannot be returned only on success and only on "
		            "failure");
	return 0;
}

static struct work_queue_file *add_file(struct work_queue_task *t, enum work_queue_file_type type,
                                        enum work_queue_file_kind kind, const char *source,
                                        const char *remote, int flags)
{
	struct work_queue_file *f = xcalloc(1, sizeof *f);
	f->type = type;
	f->kind = kind;
	f->source = source ? xstrdup(source) : NULL;
	f->remote = xstrdup(remote);
	f->flags = flags;
	/* appended after the last one the index keeps (check_remote made the index) */
	int d = type == WORK_QUEUE_INPUT ? 0 : 1;
	struct work_queue_file *last = task_names_last(names_of(t), d);
	if (last)
		last->next = f;
	else if (d == 0)
		t->inputs = f;
	else
		t->outputs = f;
	task_names_set_last(t->file_names, d, f);
	ok(t);
	return f;
}

static int specify_local(struct work_queue_task *t, enum work_queue_file_type type,
                         enum work_queue_file_kind kind, const char *local, const char *remote,
                         int flags)
{
	if (!local || !*local)
		return fail(t, -EINVAL, "the %s has no local path",
		            type == WORK_QUEUE_INPUT ? "input" : "output");
	int r = check_flags(t, type, flags);
	if (r == 0)
		r = check_remote(t, type, remote);
	if (r < 0)
		return r;
	add_file(t, type, kind, local, remote, flags);
	return 0;
}

int work_queue_task_specify_input_file(struct work_queue_task *t, const char *local,
                                       const char *remote, int flags)
{
	return specify_local(t, WORK_QUEUE_INPUT, WORK_QUEUE_FILE_LOCAL, local, remote, flags);
}

int work_queue_task_specify_output_file(struct work_queue_task *t, const char *local,
                                        const char *remote, int flags)
{
	if (flags & WORK_QUEUE_CACHE)
		return fail(t, -EINVAL, "outputs are never cached: CACHE is for inputs");
	return specify_local(t, WORK_QUEUE_OUTPUT, WORK_QUEUE_FILE_LOCAL, local, remote, flags);
}

int work_queue_task_specify_directory(struct work_queue_task *t, const char *local,
                                      const char *remote, enum work_queue_file_type type, int flags,
                                      int recursive)
{
	if (type != WORK_QUEUE_INPUT && type != WORK_QUEUE_OUTPUT)
		return fail(t, -EINVAL, "a directory is an input or an output");
	if (type == WORK_QUEUE_OUTPUT && (flags & WORK_QUEUE_WATCH))
		return fail(t, -EINVAL, "a directory cannot be watched");
	if (type == WORK_QUEUE_OUTPUT && (flags & WORK_QUEUE_CACHE))
		return fail(t, -EINVAL, "outputs are never cached: CACHE is for inputs");
	int r = specify_local(t, type, WORK_QUEUE_FILE_DIRECTORY, local, remote, flags);
	if (r < 0)
		return r;
	struct work_queue_file *f =
	    task_names_last(t->file_names, type == WORK_QUEUE_INPUT ? 0 : 1); /* just added */
	/* An input directory is always sent whole: its listing names it. */
	f->recursive = type == WORK_QUEUE_INPUT ? 1 : !!recursive;
	return 0;
}

int work_queue_task_specify_buffer(struct work_queue_task *t, const void *data, size_t length,
                                   const char *remote, int flags)
{
	if (!data && length)
		return fail(t, -EINVAL, "the buffer is NULL");
	int r = check_flags(t, WORK_QUEUE_INPUT, flags);
	if (r == 0)
		r = check_remote(t, WORK_QUEUE_INPUT, remote);
	if (r < 0)
		return r;
	struct work_queue_file *f =
	    add_file(t, WORK_QUEUE_INPUT, WORK_QUEUE_FILE_BUFFER, NULL, remote, flags);
	f->data = xmalloc(length ? length : 1);
	if (length)
		memcpy(f->data, data, length);
	f->length = length;
	return 0;
}

int work_queue_task_specify_url(struct work_queue_task *t, const char *url, const char *remote,
                                int flags)
{
	if (!url || !*url)
		return fail(t, -EINVAL, "the URL is empty");
	size_t n = strlen(url);
	if (n > URL_MAX)
		return fail(t, HTC_ETOOBIG, "the URL is %zu bytes; the limit is %d", n, URL_MAX);
	/* Workers fetch http and https only (protocol 5.5): a worker reading its own files for
	 * the master would leave its sandbox. */
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		return fail(t, -EINVAL, "URL \"%.200s\": only http and https URLs are fetched",
		            url);
	int r = check_flags(t, WORK_QUEUE_INPUT, flags);
	if (r == 0)
		r = check_remote(t, WORK_QUEUE_INPUT, remote);
	if (r < 0)
		return r;
	add_file(t, WORK_QUEUE_INPUT, WORK_QUEUE_FILE_URL, url, remote, flags);
	return 0;
}

static int set_resource(struct work_queue_task *t, int field, double v, const char *what)
{
	if (!isfinite(v) || v < 0)
		return fail(t, HTC_ERANGE, "%s must be a number >= 0 (got %g)", what, v);
	if (v > 9007199254740991.0)
		return fail(t, HTC_ERANGE, "%s %g is too large", what, v);
	t->resources_requested->v[field] = v;
	ok(t);
	return 0;
}

int work_queue_task_specify_cores(struct work_queue_task *t, double cores)
{
	/* The protocol carries cores with at most three decimals. */
	if (isfinite(cores) && cores > 0)
		cores = round(cores * 1000) / 1000;
	return set_resource(t, RM_CORES, cores, "cores");
}

int work_queue_task_specify_memory(struct work_queue_task *t, int64_t mb)
{
	return set_resource(t, RM_MEMORY, (double)mb, "memory");
}

int work_queue_task_specify_memory_max(struct work_queue_task *t, int64_t mb)
{
	if (mb < -1)
		return fail(t, -EINVAL, "memory_max %lld is below -1", (long long)mb);
	t->memory_max = mb;
	return 0;
}

int work_queue_task_specify_disk(struct work_queue_task *t, int64_t mb)
{
	return set_resource(t, RM_DISK, (double)mb, "disk");
}

int work_queue_task_specify_gpus(struct work_queue_task *t, int64_t gpus)
{
	return set_resource(t, RM_GPUS, (double)gpus, "gpus");
}

int work_queue_task_specify_resources(struct work_queue_task *t, const struct rmsummary *r)
{
	static const int fields[] = {RM_CORES, RM_MEMORY, RM_DISK, RM_GPUS};
	if (!r)
		return fail(t, -EINVAL, "no resources given");
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
		double v = r->v[fields[i]];
		if (v >= 0 && !isfinite(v))
			return fail(t, HTC_ERANGE, "%s is not a finite number",
			            rmsummary_field_name(fields[i]));
	}
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
		if (r->v[fields[i]] >= 0)
			set_resource(t, fields[i], r->v[fields[i]],
			             rmsummary_field_name(fields[i]));
	ok(t);
	return 0;
}

/* Sets *DST to S after checking it is 1..MAX bytes with no control character. */
static int set_label(struct work_queue_task *t, char **dst, const char *s, size_t max,
                     const char *what)
{
	if (!s || !*s)
		return fail(t, -EINVAL, "the %s is empty", what);
	size_t n = strlen(s);
	if (n > max)
		return fail(t, HTC_ETOOBIG, "the %s is %zu bytes; the limit is %zu", what, n, max);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return fail(t, -EINVAL, "the %s contains a control character", what);
	set_str(dst, s);
	ok(t);
	return 0;
}

int work_queue_task_specify_category(struct work_queue_task *t, const char *category)
{
	return set_label(t, &t->category, category, CATEGORY_MAX, "category");
}

int work_queue_task_specify_tag(struct work_queue_task *t, const char *tag)
{
	return set_label(t, &t->tag, tag, TAG_MAX, "tag");
}

int work_queue_task_specify_priority(struct work_queue_task *t, double priority)
{
	if (!isfinite(priority))
		return fail(t, HTC_ERANGE, "the priority must be a finite number");
	t->priority = priority;
	ok(t);
	return 0;
}

int work_queue_task_specify_max_retries(struct work_queue_task *t, int retries)
{
	if (retries < 0)
		return fail(t, HTC_ERANGE, "max retries must be >= 0 (got %d)", retries);
	t->max_retries = retries;
	ok(t);
	return 0;
}

int work_queue_task_specify_running_time_max(struct work_queue_task *t, double seconds)
{
	if (!isfinite(seconds) || seconds < 0)
		return fail(t, HTC_ERANGE, "the running time limit must be >= 0 seconds");
	t->running_time_max = seconds;
	ok(t);
	return 0;
}

int work_queue_task_specify_end_time(struct work_queue_task *t, double epoch_seconds)
{
	if (!isfinite(epoch_seconds) || epoch_seconds < 0)
		return fail(t, HTC_ERANGE, "the end time must be >= 0 seconds since the epoch");
	t->end_time = epoch_seconds;
	ok(t);
	return 0;
}

static int env_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > ENV_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
		if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
			return 0;
	}
	return 1;
}

int work_queue_task_specify_environment_variable(struct work_queue_task *t, const char *name,
                                                 const char *value)
{
	if (!name || !env_name_ok(name))
		return fail(t, -EINVAL, "environment variable name \"%.200s\" is not a valid name",
		            name ? name : "");
	if (value && strlen(value) > ENV_VALUE_MAX)
		return fail(t, HTC_ETOOBIG, "environment variable %s: the value is over %d bytes",
		            name, ENV_VALUE_MAX);
	for (int i = 0; i < t->env_count; i++)
		if (strcmp(t->env_names[i], name) == 0) {
			set_str(&t->env_values[i], value);
			ok(t);
			return 0;
		}
	if (t->env_count >= ENV_MAX)
		return fail(t, HTC_ETOOBIG, "a task has at most %d environment variables", ENV_MAX);
	VEC_RESIZE(t->env_names, (size_t)t->env_count + 1);
	VEC_RESIZE(t->env_values, (size_t)t->env_count + 1);
	t->env_names[t->env_count] = xstrdup(name);
	t->env_values[t->env_count] = value ? xstrdup(value) : NULL;
	t->env_count++;
	ok(t);
	return 0;
}

int work_queue_task_specify_feature(struct work_queue_task *t, const char *name)
{
	char *copy = NULL;
	int r = set_label(t, &copy, name, LABEL_MAX, "feature");
	if (r < 0)
		return r;
	for (int i = 0; i < t->feature_count; i++)
		if (strcmp(t->features[i], copy) == 0) {
			free(copy);
			return 0;
		}
	VEC_RESIZE(t->features, (size_t)t->feature_count + 1);
	t->features[t->feature_count++] = copy;
	return 0;
}

/* The feature that sends T to workers that run containers. */
static void require_containers(struct work_queue_task *t)
{
	for (int i = 0; i < t->feature_count; i++)
		if (strcmp(t->features[i], WORK_QUEUE_CONTAINERS_FEATURE) == 0)
			return;
	VEC_RESIZE(t->features, (size_t)t->feature_count + 1);
	t->features[t->feature_count++] = xstrdup(WORK_QUEUE_CONTAINERS_FEATURE);
}

static int check_mode(struct work_queue_task *t, int mode)
{
	if (mode != WORK_QUEUE_CONTAINER_TASK && mode != WORK_QUEUE_CONTAINER_SHARED)
		return fail(t, -EINVAL, "container mode %d: expected TASK or SHARED", mode);
	if (t->container_image || t->container_archive)
		return fail(t, -EEXIST, "the task already names its container");
	return 0;
}

int work_queue_task_specify_container(struct work_queue_task *t, const char *image, int mode)
{
	int r = check_mode(t, mode);
	if (r < 0)
		return r;
	if (!docker_image_name_ok(image))
		return fail(t, -EINVAL,
		            "container image \"%s\": expected an image name (1-%d letters, digits "
		            "and . _ - / : @, starting with a letter or digit)",
		            image ? image : "", DOCKER_IMAGE_NAME_MAX);
	set_str(&t->container_image, image);
	t->container_mode = mode;
	require_containers(t);
	ok(t);
	return 0;
}

int work_queue_task_specify_container_archive(struct work_queue_task *t, const char *archive,
                                              const char *remote, int mode)
{
	int r = check_mode(t, mode);
	if (r < 0)
		return r;
	if (!archive || !*archive)
		return fail(t, -EINVAL, "the container image archive has no local path");
	char *base = path_basename(archive);
	char *name = remote ? xstrdup(remote) : xasprintf("htc-image-%s", base);
	free(base);
	r = work_queue_task_specify_input_file(t, archive, name, WORK_QUEUE_CACHE);
	if (r == 0) {
		t->container_archive = name;
		t->container_mode = mode;
		require_containers(t);
	} else {
		free(name);
	}
	return r;
}

const char *work_queue_task_last_error(const struct work_queue_task *t)
{
	return t->last_error;
}

const char *work_queue_result_str(int result)
{
	static const char *const names[] = {
	    [WORK_QUEUE_RESULT_SUCCESS] = "SUCCESS",
	    [WORK_QUEUE_RESULT_INPUT_MISSING] = "INPUT_MISSING",
	    [WORK_QUEUE_RESULT_OUTPUT_MISSING] = "OUTPUT_MISSING",
	    [WORK_QUEUE_RESULT_STDOUT_MISSING] = "STDOUT_MISSING",
	    [WORK_QUEUE_RESULT_SIGNAL] = "SIGNAL",
	    [WORK_QUEUE_RESULT_RESOURCE_EXHAUSTION] = "RESOURCE_EXHAUSTION",
	    [WORK_QUEUE_RESULT_TASK_TIMEOUT] = "TASK_TIMEOUT",
	    [WORK_QUEUE_RESULT_MAX_RETRIES] = "MAX_RETRIES",
	    [WORK_QUEUE_RESULT_TASK_MAX_RUN_TIME] = "TASK_MAX_RUN_TIME",
	    [WORK_QUEUE_RESULT_DISK_ALLOC_FULL] = "DISK_ALLOC_FULL",
	    [WORK_QUEUE_RESULT_INVALID_TASK] = "INVALID_TASK",
	    [WORK_QUEUE_RESULT_SANDBOX_ERROR] = "SANDBOX_ERROR",
	    [WORK_QUEUE_RESULT_CANCELLED] = "CANCELLED",
	};
	if (result < 0 || (size_t)result >= sizeof names / sizeof *names || !names[result])
		return "UNKNOWN";
	return names[result];
}
