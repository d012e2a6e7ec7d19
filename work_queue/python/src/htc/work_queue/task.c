/* task.c: the Python Task type of htc.work_queue over struct work_queue_task: the specify_*
 * calls, the attributes read after a task comes back, and clone (ownership: _work_queue.c). */
#include "wq_py.h"

#include <errno.h>
#include <string.h>

#include "category.h"
#include "htc_error.h"

/* ---- Task -------------------------------------------------------------------------------- */

/* The task's C struct if the caller may change it; NULL with an exception otherwise. */
struct work_queue_task *task_writable(TaskObject *self)
{
	if (!self->t)
		return raise_code(-EINVAL, "task: Task.__init__ was not called"), NULL;
	if (self->detached)
		return raise_code(-EINVAL, "task: its queue was deleted while it was submitted"),
		       NULL;
	if (self->submitted)
		return raise_code(
		           -EBUSY,
		           "task %d: submitted; it belongs to the queue until wait() returns it",
		           self->t->taskid),
		       NULL;
	return self->t;
}

static struct work_queue_task *task_readable(TaskObject *self)
{
	if (!self->t)
		return raise_code(-EINVAL, "task: Task.__init__ was not called"), NULL;
	if (self->detached)
		return raise_code(-EINVAL, "task: its queue was deleted while it was submitted"),
		       NULL;
	return self->t;
}

/* Turns a setter's return code into None or an exception carrying work_queue_task_last_error. */
static PyObject *setter_result(struct work_queue_task *t, int rc, const char *what)
{
	if (rc < 0)
		return raise_code(rc, "%s: %s", what, work_queue_task_last_error(t));
	Py_RETURN_NONE;
}

static int Task_init(TaskObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"command", NULL};
	const char *command = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|z", kwlist, &command))
		return -1;
	if (self->t) {
		PyErr_SetString(PyExc_RuntimeError, "Task.__init__ called twice");
		return -1;
	}
	self->t = work_queue_task_create(NULL);
	if (command) {
		int rc = work_queue_task_specify_command(self->t, command);
		if (rc < 0) {
			raise_code(rc, "Task: %s", work_queue_task_last_error(self->t));
			return -1;
		}
	}
	return 0;
}

static void Task_dealloc(TaskObject *self)
{
	/* A submitted task is referenced by its queue, so it cannot be deallocated while
	 * submitted; a detached one was freed with its queue. */
	if (self->t && !self->submitted && !self->detached)
		work_queue_task_delete(self->t);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* cache=True/False, when given, sets or clears WORK_QUEUE_CACHE in *flags. */
static int apply_cache(PyObject *cache, int *flags)
{
	if (!cache || cache == Py_None)
		return 0;
	int b = PyObject_IsTrue(cache);
	if (b < 0)
		return -1;
	if (b)
		*flags |= WORK_QUEUE_CACHE;
	else
		*flags &= ~WORK_QUEUE_CACHE;
	return 0;
}

static PyObject *Task_specify_command(TaskObject *self, PyObject *args)
{
	const char *s;
	if (!PyArg_ParseTuple(args, "s", &s))
		return NULL;
	struct work_queue_task *t = task_writable(self);
	if (!t)
		return NULL;
	return setter_result(t, work_queue_task_specify_command(t, s), "specify_command");
}

/* specify_input_file / specify_output_file share this: DEFAULT_FLAGS is CACHE for inputs (as
 * CCTools), NOCACHE for outputs (the C library refuses CACHE on an output). */
static PyObject *task_file(TaskObject *self, PyObject *args, PyObject *kw, int type)
{
	static char *kwlist[] = {"local_name", "remote_name", "flags", "cache", NULL};
	const char *local, *remote = NULL;
	PyObject *flags_obj = Py_None, *cache = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zOO", kwlist, &local, &remote, &flags_obj,
	                                 &cache))
		return NULL;
	int flags = type == WORK_QUEUE_INPUT ? WORK_QUEUE_CACHE : WORK_QUEUE_NOCACHE;
	if (flags_obj != Py_None) {
		flags = (int)PyLong_AsLong(flags_obj);
		if (flags == -1 && PyErr_Occurred())
			return NULL;
	}
	if (apply_cache(cache, &flags) < 0)
		return NULL;
	if (!remote)
		remote = local;
	struct work_queue_task *t = task_writable(self);
	if (!t)
		return NULL;
	if (type == WORK_QUEUE_INPUT)
		return setter_result(t, work_queue_task_specify_input_file(t, local, remote, flags),
		                     "specify_input_file");
	return setter_result(t, work_queue_task_specify_output_file(t, local, remote, flags),
	                     "specify_output_file");
}

static PyObject *Task_specify_input_file(TaskObject *self, PyObject *args, PyObject *kw)
{
	return task_file(self, args, kw, WORK_QUEUE_INPUT);
}

static PyObject *Task_specify_output_file(TaskObject *self, PyObject *args, PyObject *kw)
{
	return task_file(self, args, kw, WORK_QUEUE_OUTPUT);
}

static PyObject *Task_specify_directory(TaskObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"local_name", "remote_name", "type", "flags",
	                         "recursive",  "cache",       NULL};
	const char *local, *remote = NULL;
	int type = WORK_QUEUE_INPUT, flags = WORK_QUEUE_NOCACHE, recursive = 0;
	PyObject *cache = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|ziipO", kwlist, &local, &remote, &type,
	                                 &flags, &recursive, &cache))
		return NULL;
	if (apply_cache(cache, &flags) < 0)
		return NULL;
	if (!remote)
		remote = local;
	struct work_queue_task *t = task_writable(self);
	if (!t)
		return NULL;
	return setter_result(
	    t, work_queue_task_specify_directory(t, local, remote, type, flags, recursive),
	    "specify_directory");
}

static PyObject *Task_specify_buffer(TaskObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"buffer", "remote_name", "flags", "cache", NULL};
	Py_buffer buf;
	const char *remote;
	int flags = WORK_QUEUE_NOCACHE;
	PyObject *cache = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s*s|iO", kwlist, &buf, &remote, &flags, &cache))
		return NULL;
	PyObject *r = NULL;
	struct work_queue_task *t;
	if (apply_cache(cache, &flags) == 0 && (t = task_writable(self)))
		r = setter_result(
		    t, work_queue_task_specify_buffer(t, buf.buf, (size_t)buf.len, remote, flags),
		    "specify_buffer");
	PyBuffer_Release(&buf);
	return r;
}

static PyObject *Task_specify_url(TaskObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"url", "remote_name", "type", "flags", "cache", NULL};
	const char *url, *remote;
	int type = WORK_QUEUE_INPUT, flags = WORK_QUEUE_NOCACHE;
	PyObject *cache = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|iiO", kwlist, &url, &remote, &type, &flags,
	                                 &cache))
		return NULL;
	if (type != WORK_QUEUE_INPUT)
		return raise_code(-EINVAL, "specify_url: a URL can only be an input");
	if (apply_cache(cache, &flags) < 0)
		return NULL;
	struct work_queue_task *t = task_writable(self);
	if (!t)
		return NULL;
	return setter_result(t, work_queue_task_specify_url(t, url, remote, flags), "specify_url");
}

/* One-argument setters: a macro per argument type keeps each a single line of table. */
#define TASK_SETTER_D(name)                                                                        \
	static PyObject *Task_##name(TaskObject *self, PyObject *arg)                              \
	{                                                                                          \
		double v = PyFloat_AsDouble(arg);                                                  \
		if (v == -1.0 && PyErr_Occurred())                                                 \
			return NULL;                                                               \
		struct work_queue_task *t = task_writable(self);                                   \
		if (!t)                                                                            \
			return NULL;                                                               \
		return setter_result(t, work_queue_task_##name(t, v), #name);                      \
	}
#define TASK_SETTER_L(name, ctype)                                                                 \
	static PyObject *Task_##name(TaskObject *self, PyObject *arg)                              \
	{                                                                                          \
		long long v = PyLong_AsLongLong(arg);                                              \
		if (v == -1 && PyErr_Occurred())                                                   \
			return NULL;                                                               \
		struct work_queue_task *t = task_writable(self);                                   \
		if (!t)                                                                            \
			return NULL;                                                               \
		return setter_result(t, work_queue_task_##name(t, (ctype)v), #name);               \
	}
#define TASK_SETTER_S(name)                                                                        \
	static PyObject *Task_##name(TaskObject *self, PyObject *arg)                              \
	{                                                                                          \
		const char *s = PyUnicode_AsUTF8(arg);                                             \
		if (!s)                                                                            \
			return NULL;                                                               \
		struct work_queue_task *t = task_writable(self);                                   \
		if (!t)                                                                            \
			return NULL;                                                               \
		return setter_result(t, work_queue_task_##name(t, s), #name);                      \
	}

TASK_SETTER_D(specify_cores)
TASK_SETTER_L(specify_memory, int64_t)
TASK_SETTER_L(specify_memory_max, int64_t)
TASK_SETTER_L(specify_disk, int64_t)
TASK_SETTER_L(specify_gpus, int64_t)
TASK_SETTER_S(specify_category)
TASK_SETTER_S(specify_tag)
TASK_SETTER_D(specify_priority)
TASK_SETTER_L(specify_max_retries, int)
TASK_SETTER_D(specify_running_time_max)
TASK_SETTER_D(specify_end_time)
TASK_SETTER_S(specify_feature)

static PyObject *Task_specify_environment_variable(TaskObject *self, PyObject *args)
{
	const char *name, *value = NULL;
	if (!PyArg_ParseTuple(args, "s|z", &name, &value))
		return NULL;
	struct work_queue_task *t = task_writable(self);
	if (!t)
		return NULL;
	return setter_result(t, work_queue_task_specify_environment_variable(t, name, value),
	                     "specify_environment_variable");
}

/* A dict {"cores": 2, "memory": 1024, ...} into R (initialised); unknown names raise. */
int dict_to_rmsummary(PyObject *d, struct rmsummary *r, const char *what)
{
	if (!PyDict_Check(d)) {
		PyErr_Format(PyExc_TypeError, "%s: a dict of resources is expected", what);
		return -1;
	}
	PyObject *k, *v;
	Py_ssize_t pos = 0;
	while (PyDict_Next(d, &pos, &k, &v)) {
		const char *name = PyUnicode_AsUTF8(k);
		if (!name)
			return -1;
		int f = rmsummary_field_lookup(name);
		if (f < 0) {
			raise_code(-EINVAL, "%s: unknown resource '%s'", what, name);
			return -1;
		}
		double x = PyFloat_AsDouble(v);
		if (x == -1.0 && PyErr_Occurred())
			return -1;
		r->v[f] = x;
	}
	return 0;
}

static PyObject *Task_specify_resources(TaskObject *self, PyObject *arg)
{
	struct rmsummary r;
	rmsummary_init(&r);
	if (dict_to_rmsummary(arg, &r, "specify_resources") < 0)
		return NULL;
	struct work_queue_task *t = task_writable(self);
	if (!t)
		return NULL;
	return setter_result(t, work_queue_task_specify_resources(t, &r), "specify_resources");
}

static PyObject *Task_clone(TaskObject *self, PyObject *Py_UNUSED(ignored))
{
	struct work_queue_task *t = task_readable(self);
	if (!t)
		return NULL;
	TaskObject *c = PyObject_New(TaskObject, &TaskType);
	if (!c)
		return NULL;
	c->t = work_queue_task_clone(t);
	c->submitted = 0;
	c->detached = 0;
	return (PyObject *)c;
}

/* ---- Task attributes --------------------------------------------------------------------- */

static PyObject *str_or_none(const char *s)
{
	if (!s)
		Py_RETURN_NONE;
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* A SimpleNamespace of every resource field of R (-1 = unset), or None for NULL. */
static PyObject *rmsummary_to_namespace(const struct rmsummary *r)
{
	if (!r)
		Py_RETURN_NONE;
	PyObject *kw = PyDict_New();
	if (!kw)
		return NULL;
	for (int f = 0; f < RM_N_FIELDS; f++) {
		const char *name = rmsummary_field_name(f);
		PyObject *v = PyFloat_FromDouble(r->v[f]);
		if (!name || !v || PyDict_SetItemString(kw, name, v) < 0) {
			Py_XDECREF(v);
			Py_DECREF(kw);
			return NULL;
		}
		Py_DECREF(v);
	}
	PyObject *empty = PyTuple_New(0);
	PyObject *ns = empty ? PyObject_Call(namespace_type, empty, kw) : NULL;
	Py_XDECREF(empty);
	Py_DECREF(kw);
	return ns;
}

enum task_attr {
	A_ID,
	A_COMMAND,
	A_TAG,
	A_CATEGORY,
	A_PRIORITY,
	A_MAX_RETRIES,
	A_RESULT,
	A_RESULT_STR,
	A_RETURN_STATUS,
	A_OUTPUT,
	A_HOST,
	A_HOSTNAME,
	A_WORKER_ID,
	A_TRY_COUNT,
	A_EXHAUSTED,
	A_FAST_ABORTS,
	A_REQUESTED,
	A_ALLOCATED,
	A_MEASURED,
	A_T_SUBMITTED,
	A_T_COMMIT_START,
	A_T_COMMIT_END,
	A_T_RETRIEVAL,
	A_T_DONE,
	A_T_EXEC_LAST,
	A_T_EXEC_ALL,
	A_BYTES_SENT,
	A_BYTES_RECEIVED,
	A_MEMORY_GROWN,
	A_CORES_GROWN,
	A_MEMORY_HELD_AVG,
	A_CORES_HELD_AVG,
	A_MEMORY_GROW_STEPS,
	A_ALLOCATION_COMPUTED,
};

static PyObject *Task_get(TaskObject *self, void *closure)
{
	struct work_queue_task *t = task_readable(self);
	if (!t)
		return NULL;
	switch ((enum task_attr)(intptr_t)closure) {
	case A_ID: return PyLong_FromLong(t->taskid);
	case A_COMMAND: return str_or_none(t->command_line);
	case A_TAG: return str_or_none(t->tag);
	case A_CATEGORY: return str_or_none(t->category);
	case A_PRIORITY: return PyFloat_FromDouble(t->priority);
	case A_MAX_RETRIES: return PyLong_FromLong(t->max_retries);
	case A_RESULT: return PyLong_FromLong(t->result);
	case A_RESULT_STR: return PyUnicode_FromString(work_queue_result_str(t->result));
	case A_RETURN_STATUS: return PyLong_FromLong(t->return_status);
	case A_OUTPUT: return str_or_none(t->output);
	case A_HOST: return str_or_none(t->host);
	case A_HOSTNAME: return str_or_none(t->hostname);
	case A_WORKER_ID: return str_or_none(t->worker_id);
	case A_TRY_COUNT: return PyLong_FromLong(t->try_count);
	case A_EXHAUSTED: return PyLong_FromLong(t->exhausted_attempts);
	case A_FAST_ABORTS: return PyLong_FromLong(t->fast_aborts);
	case A_REQUESTED: return rmsummary_to_namespace(t->resources_requested);
	case A_ALLOCATED: return rmsummary_to_namespace(t->resources_allocated);
	case A_MEASURED: return rmsummary_to_namespace(t->resources_measured);
	case A_T_SUBMITTED: return PyLong_FromLongLong(t->time_when_submitted);
	case A_T_COMMIT_START: return PyLong_FromLongLong(t->time_when_commit_start);
	case A_T_COMMIT_END: return PyLong_FromLongLong(t->time_when_commit_end);
	case A_T_RETRIEVAL: return PyLong_FromLongLong(t->time_when_retrieval);
	case A_T_DONE: return PyLong_FromLongLong(t->time_when_done);
	case A_T_EXEC_LAST: return PyLong_FromLongLong(t->time_workers_execute_last);
	case A_T_EXEC_ALL: return PyLong_FromLongLong(t->time_workers_execute_all);
	case A_BYTES_SENT: return PyLong_FromLongLong(t->bytes_sent);
	case A_BYTES_RECEIVED: return PyLong_FromLongLong(t->bytes_received);
	case A_MEMORY_GROWN: return PyLong_FromLongLong(t->memory_grown);
	case A_CORES_GROWN: return PyFloat_FromDouble(t->cores_grown);
	case A_MEMORY_HELD_AVG: return PyFloat_FromDouble(t->memory_held_avg);
	case A_CORES_HELD_AVG: return PyFloat_FromDouble(t->cores_held_avg);
	case A_MEMORY_GROW_STEPS: return PyLong_FromLong(t->memory_grow_steps);
	case A_ALLOCATION_COMPUTED: return PyBool_FromLong(t->allocation_computed);
	}
	Py_RETURN_NONE;
}

#define GET(name, attr, doc)                                                                       \
	{                                                                                          \
		name, (getter)Task_get, NULL, doc, (void *)(intptr_t)(attr)                        \
	}
static PyGetSetDef Task_getset[] = {
    GET("id", A_ID, "task id given by submit (0 before)"),
    GET("taskid", A_ID, "same as id"),
    GET("command", A_COMMAND, "the command line"),
    GET("tag", A_TAG, NULL),
    GET("category", A_CATEGORY, NULL),
    GET("priority", A_PRIORITY, NULL),
    GET("max_retries", A_MAX_RETRIES, NULL),
    GET("result", A_RESULT, "how the task ended: a WORK_QUEUE_RESULT_* value"),
    GET("result_str", A_RESULT_STR, "the name of result (\"SUCCESS\", ...)"),
    GET("return_status", A_RETURN_STATUS, "exit code of the command"),
    GET("output", A_OUTPUT, "captured stdout and stderr"),
    GET("std_output", A_OUTPUT, "same as output"),
    GET("host", A_HOST, "worker address:port"),
    GET("hostname", A_HOSTNAME, NULL),
    GET("worker_id", A_WORKER_ID, NULL),
    GET("try_count", A_TRY_COUNT, NULL),
    GET("total_submissions", A_TRY_COUNT, "same as try_count"),
    GET("exhausted_attempts", A_EXHAUSTED, NULL),
    GET("fast_aborts", A_FAST_ABORTS, NULL),
    GET("resources_requested", A_REQUESTED, NULL),
    GET("resources_allocated", A_ALLOCATED, NULL),
    GET("resources_measured", A_MEASURED, NULL),
    GET("time_when_submitted", A_T_SUBMITTED, "microseconds since the epoch"),
    GET("time_when_commit_start", A_T_COMMIT_START, NULL),
    GET("time_when_commit_end", A_T_COMMIT_END, NULL),
    GET("time_when_retrieval", A_T_RETRIEVAL, NULL),
    GET("time_when_done", A_T_DONE, NULL),
    GET("time_workers_execute_last", A_T_EXEC_LAST, "microseconds"),
    GET("time_workers_execute_all", A_T_EXEC_ALL, "microseconds"),
    GET("bytes_sent", A_BYTES_SENT, NULL),
    GET("bytes_received", A_BYTES_RECEIVED, NULL),
    GET("memory_grown", A_MEMORY_GROWN, "largest memory limit (MB) a worker grew it to, -1 never"),
    GET("memory_grow_steps", A_MEMORY_GROW_STEPS, "times a worker grew its memory limit"),
    GET("cores_grown", A_CORES_GROWN, "largest CPU quota (cores) a worker lent it, -1 never"),
    GET("memory_held_avg", A_MEMORY_HELD_AVG,
        "time-average memory (MB) held while a worker grew or shrank it, -1 never"),
    GET("cores_held_avg", A_CORES_HELD_AVG,
        "time-average CPU quota (cores) held while a worker lent it cores, -1 never"),
    GET("allocation_computed", A_ALLOCATION_COMPUTED,
        "the last try ran at its category's computed allocation"),
    {NULL, NULL, NULL, NULL, NULL},
};

#define M_KW(name)                                                                                 \
	{                                                                                          \
#name, (PyCFunction)(void (*)(void))Task_##name, METH_VARARGS | METH_KEYWORDS,     \
		    NULL                                                                           \
	}
#define M_O(name)                                                                                  \
	{                                                                                          \
#name, (PyCFunction)Task_##name, METH_O, NULL                                      \
	}
static PyMethodDef Task_methods[] = {
    {"specify_command", (PyCFunction)Task_specify_command, METH_VARARGS, NULL},
    M_KW(specify_input_file),
    M_KW(specify_output_file),
    M_KW(specify_directory),
    M_KW(specify_buffer),
    M_KW(specify_url),
    M_O(specify_cores),
    M_O(specify_memory),
    M_O(specify_memory_max),
    M_O(specify_disk),
    M_O(specify_gpus),
    M_O(specify_resources),
    M_O(specify_category),
    M_O(specify_tag),
    M_O(specify_priority),
    M_O(specify_max_retries),
    M_O(specify_running_time_max),
    M_O(specify_end_time),
    M_O(specify_feature),
    {"specify_environment_variable", (PyCFunction)Task_specify_environment_variable, METH_VARARGS,
     NULL},
    {"clone", (PyCFunction)Task_clone, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject TaskType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "htc.work_queue.Task",
    .tp_basicsize = sizeof(TaskObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Task(command): a command to run on a worker, with its files and resources.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Task_init,
    .tp_dealloc = (destructor)Task_dealloc,
    .tp_methods = Task_methods,
    .tp_getset = Task_getset,
};
