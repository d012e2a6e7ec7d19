/* _work_queue.c: the Python module htc.work_queue._work_queue over libwork_queue
 * (work_queue.h): the WorkQueue type, WorkQueueError and the module; the Task type is in
 * task.c. Every call goes to the C library; these files only convert arguments, results and
 * errors.
 *
 * Ownership: a Task owns its struct work_queue_task until it is submitted; from then on the
 * queue owns it, and the WorkQueue object keeps the Python Task alive in a dict by task id
 * until wait() (or a cancel) hands it back. When the WorkQueue is deleted, work_queue_delete
 * frees the tasks still inside, and their Python objects are detached (t == NULL): using them
 * raises WorkQueueError instead of touching freed memory. */
#include "wq_py.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "category.h"
#include "htc_error.h"

PyObject *WorkQueueError;
PyObject *namespace_type;       /* types.SimpleNamespace */
static PyObject *py_json_loads; /* json.loads */

/* ---- errors ------------------------------------------------------------------------------ */

/* Raises WorkQueueError(message) with .code = CODE (the C library's negative code). */
PyObject *raise_code(int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	PyObject *exc = PyObject_CallFunction(WorkQueueError, "s", msg);
	if (!exc)
		return NULL;
	PyObject *c = PyLong_FromLong(code);
	if (c) {
		PyObject_SetAttrString(exc, "code", c);
		Py_DECREF(c);
	}
	PyErr_SetObject(WorkQueueError, exc);
	Py_DECREF(exc);
	return NULL;
}

/* The C library says why work_queue_create_opts and work_queue_submit failed only on stderr
 * (warn()); it returns a code. To give that message to Python, a failed call is made once more
 * with file descriptor 2 sent to a temporary file, and the last line written there is kept
 * (without the "PROGRAM: " prefix). The first call's line was already printed as usual. */
struct capture {
	int saved;
	FILE *tmp;
};

static int capture_begin(struct capture *c)
{
	fflush(stderr);
	c->tmp = tmpfile();
	if (!c->tmp)
		return -1;
	c->saved = dup(2);
	if (c->saved < 0 || dup2(fileno(c->tmp), 2) < 0) {
		if (c->saved >= 0)
			close(c->saved);
		fclose(c->tmp);
		return -1;
	}
	return 0;
}

/* Restores stderr; BUF gets the last line written meanwhile ("" if none). */
static void capture_end(struct capture *c, char *buf, size_t len)
{
	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	buf[0] = 0;
	rewind(c->tmp);
	char line[2048];
	while (fgets(line, sizeof line, c->tmp)) {
		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		const char *m = strstr(line, ": ");
		m = m ? m + 2 : line;
		if (!strncmp(m, "warning: ", 9))
			m += 9;
		size_t n = strlen(m) < len - 1 ? strlen(m) : len - 1;
		memcpy(buf, m, n);
		buf[n] = 0;
	}
	fclose(c->tmp);
}

/* ---- WorkQueue --------------------------------------------------------------------------- */

typedef struct {
	PyObject_HEAD struct work_queue *q;
	PyObject *tasks; /* dict: task id -> Task, the tasks the queue owns */
	int busy;        /* inside wait() with the GIL released */
} QueueObject;

static struct work_queue *queue_get(QueueObject *self)
{
	if (!self->q)
		return raise_code(-EINVAL, "WorkQueue: not created"), NULL;
	if (self->busy)
		return raise_code(-EBUSY, "WorkQueue: in use by another thread (wait)"), NULL;
	return self->q;
}

/* Detaches every task still inside (their C structs go with the queue) and frees it. */
static void queue_destroy(QueueObject *self)
{
	if (self->tasks) {
		PyObject *k, *v;
		Py_ssize_t pos = 0;
		while (PyDict_Next(self->tasks, &pos, &k, &v))
			((TaskObject *)v)->detached = 1;
	}
	if (self->q) {
		struct work_queue *q = self->q;
		self->q = NULL;
		Py_BEGIN_ALLOW_THREADS work_queue_delete(q);
		Py_END_ALLOW_THREADS
	}
	Py_CLEAR(self->tasks);
}

static void Queue_dealloc(QueueObject *self)
{
	queue_destroy(self);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Queue_new(PyTypeObject *type, PyObject *Py_UNUSED(a), PyObject *Py_UNUSED(k))
{
	QueueObject *self = (QueueObject *)type->tp_alloc(type, 0);
	if (self)
		self->tasks = PyDict_New();
	if (self && !self->tasks)
		Py_CLEAR(self);
	return (PyObject *)self;
}

static int Queue_init(QueueObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {
	    "port", "name",          "shutdown", "transactions_log", "password_file",
	    "ssl",  "ssl_client_ca", "catalog",  "interface",        "port_file",
	    NULL};
	struct work_queue_opts o;
	work_queue_opts_init(&o);
	int port = WORK_QUEUE_DEFAULT_PORT, shutdown = 0;
	const char *name = NULL;
	PyObject *ssl = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|izpzzOzzzz", kwlist, &port, &name, &shutdown,
	                                 &o.txlog, &o.password_file, &ssl, &o.ssl_client_ca,
	                                 &o.catalog_hosts, &o.interface, &o.port_file))
		return -1;
	if (self->q) {
		PyErr_SetString(PyExc_RuntimeError, "WorkQueue.__init__ called twice");
		return -1;
	}
	o.port = port;
	o.project = name;
	if (ssl != Py_None) {
		if (!PyTuple_Check(ssl)) {
			PyErr_SetString(PyExc_TypeError,
			                "ssl must be a (key, cert) pair of file names (ssl=True, a "
			                "generated certificate, is not supported)");
			return -1;
		}
		if (!PyArg_ParseTuple(ssl, "ss;ssl must be a (key, cert) pair of file names",
		                      &o.ssl_key, &o.ssl_cert))
			return -1;
	}
	struct work_queue *q;
	int err;
	Py_BEGIN_ALLOW_THREADS q = work_queue_create_opts(&o);
	err = errno;
	Py_END_ALLOW_THREADS;
	char why[1024] = "";
	if (!q) {
		/* Once more, to catch the library's message (see capture_begin). */
		struct capture c;
		if (capture_begin(&c) == 0) {
			q = work_queue_create_opts(&o);
			if (!q)
				err = errno;
			capture_end(&c, why, sizeof why);
		}
	}
	if (!q) {
		if (why[0])
			raise_code(-err, "WorkQueue: %s", why);
		else
			raise_code(-err, "WorkQueue: cannot create the queue (port %d): %s", port,
			           strerror(err));
		return -1;
	}
	self->q = q;
	if (shutdown)
		work_queue_specify_shutdown(q, 1);
	return 0;
}

static PyObject *queue_rc(int rc, const char *what)
{
	if (rc < 0)
		return raise_code(rc, "%s: %s", what, htc_strerror(rc));
	Py_RETURN_NONE;
}

static PyObject *Queue_submit(QueueObject *self, PyObject *arg)
{
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	if (!PyObject_TypeCheck(arg, &TaskType)) {
		PyErr_SetString(PyExc_TypeError, "submit: a Task is expected");
		return NULL;
	}
	TaskObject *task = (TaskObject *)arg;
	struct work_queue_task *t = task_writable(task);
	if (!t)
		return NULL;
	int id = work_queue_submit(q, t);
	char why[1024] = "";
	if (id < 0) {
		/* Refused, T is unchanged: once more, to catch the library's message. */
		struct capture c;
		if (capture_begin(&c) == 0) {
			int again = work_queue_submit(q, t);
			capture_end(&c, why, sizeof why);
			id = again;
		}
	}
	if (id < 0) {
		const char *cmd = t->command_line ? t->command_line : "(no command)";
		return raise_code(id, "submit: task '%s': %s", cmd,
		                  why[0] ? why : htc_strerror(id));
	}
	PyObject *key = PyLong_FromLong(id);
	if (!key || PyDict_SetItem(self->tasks, key, arg) < 0) {
		/* The queue holds it already: take it back so nothing leaks or dangles. */
		Py_XDECREF(key);
		work_queue_cancel_by_taskid(q, id);
		return NULL;
	}
	Py_DECREF(key);
	task->submitted = 1;
	return PyLong_FromLong(id);
}

/* The Python Task for T, which the queue has just given back. */
static PyObject *queue_return(QueueObject *self, struct work_queue_task *t)
{
	if (!t)
		Py_RETURN_NONE;
	PyObject *key = PyLong_FromLong(t->taskid);
	if (!key)
		return NULL;
	PyObject *task = PyDict_GetItemWithError(self->tasks, key);
	if (!task) {
		Py_DECREF(key);
		if (!PyErr_Occurred())
			raise_code(-ENOENT, "wait: task %d returned by the library is unknown",
			           t->taskid);
		return NULL;
	}
	Py_INCREF(task);
	PyDict_DelItem(self->tasks, key);
	Py_DECREF(key);
	((TaskObject *)task)->submitted = 0;
	return task;
}

/* Waits in slices of at most WAIT_SLICE seconds so that a signal (Ctrl-C) is seen between
 * them: its Python handler runs, and an exception it raises ends the wait. WAITFORTASK keeps its
 * meaning: None at once when the queue is empty, else until a task is done. */
#define WAIT_SLICE 0.5

static PyObject *queue_wait(QueueObject *self, const char *tag, int with_tag, double timeout)
{
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	int forever = timeout < 0;
	double deadline = 0;
	if (!forever) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		deadline = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + timeout;
	}
	struct work_queue_task *t = NULL;
	for (;;) {
		double slice = WAIT_SLICE;
		if (forever) {
			if (work_queue_empty(q))
				break;
		} else {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			double left = deadline - ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
			if (left < slice)
				slice = left > 0 ? left : 0;
		}
		self->busy = 1;
		Py_BEGIN_ALLOW_THREADS if (with_tag) t = work_queue_wait_for_tag(q, tag, slice);
		else t = work_queue_wait(q, slice);
		Py_END_ALLOW_THREADS self->busy = 0;
		if (t || (!forever && slice < WAIT_SLICE))
			break;
		if (PyErr_CheckSignals() < 0)
			return NULL;
	}
	return queue_return(self, t);
}

static PyObject *Queue_wait(QueueObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"timeout", NULL};
	double timeout = WORK_QUEUE_WAITFORTASK;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|d", kwlist, &timeout))
		return NULL;
	return queue_wait(self, NULL, 0, timeout);
}

static PyObject *Queue_wait_for_tag(QueueObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"tag", "timeout", NULL};
	const char *tag;
	double timeout = WORK_QUEUE_WAITFORTASK;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "z|d", kwlist, &tag, &timeout))
		return NULL;
	return queue_wait(self, tag, 1, timeout);
}

static PyObject *Queue_empty(QueueObject *self, PyObject *Py_UNUSED(ignored))
{
	struct work_queue *q = queue_get(self);
	return q ? PyBool_FromLong(work_queue_empty(q)) : NULL;
}

static PyObject *Queue_hungry(QueueObject *self, PyObject *Py_UNUSED(ignored))
{
	struct work_queue *q = queue_get(self);
	return q ? PyLong_FromLong(work_queue_hungry(q)) : NULL;
}

static PyObject *Queue_cancel_by_taskid(QueueObject *self, PyObject *arg)
{
	struct work_queue *q = queue_get(self);
	long id = PyLong_AsLong(arg);
	if (!q || (id == -1 && PyErr_Occurred()))
		return NULL;
	return queue_return(self, work_queue_cancel_by_taskid(q, (int)id));
}

static PyObject *Queue_cancel_by_tasktag(QueueObject *self, PyObject *arg)
{
	struct work_queue *q = queue_get(self);
	const char *tag = PyUnicode_AsUTF8(arg);
	if (!q || !tag)
		return NULL;
	return queue_return(self, work_queue_cancel_by_tasktag(q, tag));
}

static PyObject *Queue_get_port(QueueObject *self, void *Py_UNUSED(c))
{
	struct work_queue *q = queue_get(self);
	return q ? PyLong_FromLong(work_queue_port(q)) : NULL;
}

#define STAT(f, conv) conv(s.f), #f
static PyObject *Queue_get_stats(QueueObject *self, void *Py_UNUSED(c))
{
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	struct work_queue_stats s;
	work_queue_get_stats(q, &s);
	PyObject *kw = Py_BuildValue(
	    "{sisisisisLsLsLsisisisisLsLsLsLsLsLsisLsLsLsdsdsLsLsLsLsLsLsL}", "workers_connected",
	    s.workers_connected, "workers_init", s.workers_init, "workers_idle", s.workers_idle,
	    "workers_busy", s.workers_busy, "workers_joined", (long long)s.workers_joined,
	    "workers_removed", (long long)s.workers_removed, "workers_lost",
	    (long long)s.workers_lost, "tasks_waiting", s.tasks_waiting, "tasks_on_workers",
	    s.tasks_on_workers, "tasks_running", s.tasks_running, "tasks_with_results",
	    s.tasks_with_results, "tasks_submitted", (long long)s.tasks_submitted,
	    "tasks_dispatched", (long long)s.tasks_dispatched, "tasks_done",
	    (long long)s.tasks_done, "tasks_failed", (long long)s.tasks_failed, "tasks_cancelled",
	    (long long)s.tasks_cancelled, "tasks_exhausted_attempts",
	    (long long)s.tasks_exhausted_attempts, "tasks_queued_on_workers",
	    s.tasks_queued_on_workers, "time_when_started", (long long)s.time_when_started,
	    "bytes_sent", (long long)s.bytes_sent, "bytes_received", (long long)s.bytes_received,
	    "total_cores", s.total_cores, "committed_cores", s.committed_cores, "total_memory",
	    (long long)s.total_memory, "committed_memory", (long long)s.committed_memory,
	    "total_disk", (long long)s.total_disk, "committed_disk", (long long)s.committed_disk,
	    "total_gpus", (long long)s.total_gpus, "committed_gpus", (long long)s.committed_gpus,
	    "objects_taken", (long long)s.objects_taken);
	if (!kw)
		return NULL;
	PyObject *empty = PyTuple_New(0);
	PyObject *ns = empty ? PyObject_Call(namespace_type, empty, kw) : NULL;
	Py_XDECREF(empty);
	Py_DECREF(kw);
	return ns;
}

static PyObject *Queue_status(QueueObject *self, PyObject *arg)
{
	struct work_queue *q = queue_get(self);
	const char *what = PyUnicode_AsUTF8(arg);
	if (!q || !what)
		return NULL;
	json_t *j = work_queue_status(q, what);
	if (!j)
		return raise_code(
		    -EINVAL, "status: unknown document '%s' (master, workers, tasks, categories)",
		    what);
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!text)
		return PyErr_NoMemory();
	PyObject *r = PyObject_CallFunction(py_json_loads, "s", text);
	free(text);
	return r;
}

/* Queue methods that take one value and return 0 or a negative code. */
#define Q_INT(name)                                                                                \
	static PyObject *Queue_##name(QueueObject *self, PyObject *arg)                            \
	{                                                                                          \
		struct work_queue *q = queue_get(self);                                            \
		long v = PyLong_AsLong(arg);                                                       \
		if (!q || (v == -1 && PyErr_Occurred()))                                           \
			return NULL;                                                               \
		return queue_rc(work_queue_##name(q, (int)v), #name);                              \
	}
#define Q_DBL(name)                                                                                \
	static PyObject *Queue_##name(QueueObject *self, PyObject *arg)                            \
	{                                                                                          \
		struct work_queue *q = queue_get(self);                                            \
		double v = PyFloat_AsDouble(arg);                                                  \
		if (!q || (v == -1.0 && PyErr_Occurred()))                                         \
			return NULL;                                                               \
		return queue_rc(work_queue_##name(q, v), #name);                                   \
	}
#define Q_STR(name)                                                                                \
	static PyObject *Queue_##name(QueueObject *self, PyObject *arg)                            \
	{                                                                                          \
		struct work_queue *q = queue_get(self);                                            \
		const char *v = PyUnicode_AsUTF8(arg);                                             \
		if (!q || !v)                                                                      \
			return NULL;                                                               \
		int rc = work_queue_##name(q, v);                                                  \
		if (rc < 0)                                                                        \
			return raise_code(rc, "%s: %s: %s", #name, v, htc_strerror(rc));           \
		Py_RETURN_NONE;                                                                    \
	}

Q_INT(specify_keepalive_interval)
Q_INT(specify_keepalive_timeout)
Q_DBL(activate_fast_abort)
Q_DBL(specify_full_worker_timeout)
Q_STR(specify_name)
Q_STR(specify_catalog_servers)
Q_STR(specify_password_file)
Q_STR(block_host)
Q_STR(unblock_host)

static PyObject *Queue_specify_algorithm(QueueObject *self, PyObject *arg)
{
	struct work_queue *q = queue_get(self);
	long v = PyLong_AsLong(arg);
	if (!q || (v == -1 && PyErr_Occurred()))
		return NULL;
	return queue_rc(work_queue_specify_algorithm(q, (enum work_queue_schedule)v),
	                "specify_algorithm");
}

static PyObject *Queue_drain_worker(QueueObject *self, PyObject *arg)
{
	struct work_queue *q = queue_get(self);
	const char *v = PyUnicode_AsUTF8(arg);
	if (!q || !v)
		return NULL;
	int n = work_queue_drain_worker(q, v);
	if (n < 0)
		return raise_code(n, "drain_worker: %s: %s", v, htc_strerror(n));
	return PyLong_FromLong(n);
}

static PyObject *Queue_unblock_all(QueueObject *self, PyObject *Py_UNUSED(ignored))
{
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	work_queue_unblock_all(q);
	Py_RETURN_NONE;
}

static PyObject *Queue_block_host_with_timeout(QueueObject *self, PyObject *args)
{
	const char *host;
	double seconds;
	if (!PyArg_ParseTuple(args, "sd", &host, &seconds))
		return NULL;
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	int rc = work_queue_block_host_with_timeout(q, host, seconds);
	if (rc < 0)
		return raise_code(rc, "block_host_with_timeout: %s: %s", host, htc_strerror(rc));
	Py_RETURN_NONE;
}

static PyObject *Queue_activate_fast_abort_category(QueueObject *self, PyObject *args)
{
	const char *cat;
	double m;
	if (!PyArg_ParseTuple(args, "zd", &cat, &m))
		return NULL;
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	return queue_rc(work_queue_activate_fast_abort_category(q, cat, m),
	                "activate_fast_abort_category");
}

static PyObject *Queue_specify_prefetch(QueueObject *self, PyObject *args)
{
	int per_worker;
	double max_seconds = 1.0;
	if (!PyArg_ParseTuple(args, "i|d", &per_worker, &max_seconds))
		return NULL;
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	return queue_rc(work_queue_specify_prefetch(q, per_worker, max_seconds),
	                "specify_prefetch");
}

static PyObject *Queue_specify_prefetch_containers(QueueObject *self, PyObject *args)
{
	double max_seconds;
	if (!PyArg_ParseTuple(args, "d", &max_seconds))
		return NULL;
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	return queue_rc(work_queue_specify_prefetch_containers(q, max_seconds),
	                "specify_prefetch_containers");
}

static PyObject *Queue_specify_sync_outputs(QueueObject *self, PyObject *arg)
{
	struct work_queue *q = queue_get(self);
	int b = PyObject_IsTrue(arg);
	if (!q || b < 0)
		return NULL;
	work_queue_specify_sync_outputs(q, b);
	Py_RETURN_NONE;
}

/* Category setters: (category, value); category None is "default". */
static PyObject *Queue_specify_category_mode(QueueObject *self, PyObject *args)
{
	const char *cat;
	int mode;
	if (!PyArg_ParseTuple(args, "zi", &cat, &mode))
		return NULL;
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	int rc = work_queue_specify_category_mode(q, cat, mode);
	if (rc < 0)
		return raise_code(rc, "specify_category_mode: %s: mode %d: %s",
		                  cat ? cat : "default", mode, htc_strerror(rc));
	Py_RETURN_NONE;
}

static PyObject *category_resources(QueueObject *self, PyObject *args, int is_max)
{
	const char *cat;
	PyObject *d;
	const char *what =
	    is_max ? "specify_category_max_resources" : "specify_category_min_resources";
	if (!PyArg_ParseTuple(args, "zO", &cat, &d))
		return NULL;
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	struct rmsummary r;
	rmsummary_init(&r);
	if (dict_to_rmsummary(d, &r, what) < 0)
		return NULL;
	int rc = is_max ? work_queue_specify_category_max_resources(q, cat, &r)
	                : work_queue_specify_category_min_resources(q, cat, &r);
	if (rc < 0)
		return raise_code(rc, "%s: %s: %s", what, cat ? cat : "default", htc_strerror(rc));
	Py_RETURN_NONE;
}

static PyObject *Queue_specify_category_max_resources(QueueObject *self, PyObject *args)
{
	return category_resources(self, args, 1);
}

static PyObject *Queue_specify_category_min_resources(QueueObject *self, PyObject *args)
{
	return category_resources(self, args, 0);
}

static PyObject *Queue_specify_category_max_concurrent(QueueObject *self, PyObject *args)
{
	const char *cat;
	int n;
	if (!PyArg_ParseTuple(args, "zi", &cat, &n))
		return NULL;
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	return queue_rc(work_queue_specify_category_max_concurrent(q, cat, n),
	                "specify_category_max_concurrent");
}

static PyObject *Queue_specify_category_update_interval(QueueObject *self, PyObject *args)
{
	const char *cat;
	int n;
	if (!PyArg_ParseTuple(args, "zi", &cat, &n))
		return NULL;
	struct work_queue *q = queue_get(self);
	if (!q)
		return NULL;
	return queue_rc(work_queue_specify_category_update_interval(q, cat, n),
	                "specify_category_update_interval");
}

static PyObject *Queue_close(QueueObject *self, PyObject *Py_UNUSED(ignored))
{
	if (self->busy)
		return raise_code(-EBUSY, "WorkQueue: in use by another thread (wait)");
	queue_destroy(self);
	self->tasks = PyDict_New();
	if (!self->tasks)
		return NULL;
	Py_RETURN_NONE;
}

#define QM_O(name)                                                                                 \
	{                                                                                          \
#name, (PyCFunction)Queue_##name, METH_O, NULL                                     \
	}
#define QM_V(name)                                                                                 \
	{                                                                                          \
#name, (PyCFunction)Queue_##name, METH_VARARGS, NULL                               \
	}
#define QM_N(name)                                                                                 \
	{                                                                                          \
#name, (PyCFunction)Queue_##name, METH_NOARGS, NULL                                \
	}
#define QM_KW(name)                                                                                \
	{                                                                                          \
#name, (PyCFunction)(void (*)(void))Queue_##name, METH_VARARGS | METH_KEYWORDS,    \
		    NULL                                                                           \
	}
static PyMethodDef Queue_methods[] = {
    QM_O(submit),
    QM_KW(wait),
    QM_KW(wait_for_tag),
    QM_N(empty),
    QM_N(hungry),
    QM_O(cancel_by_taskid),
    QM_O(cancel_by_tasktag),
    QM_O(status),
    QM_O(specify_keepalive_interval),
    QM_O(specify_keepalive_timeout),
    QM_O(specify_algorithm),
    QM_O(specify_name),
    QM_O(specify_catalog_servers),
    QM_O(specify_password_file),
    QM_O(activate_fast_abort),
    QM_V(activate_fast_abort_category),
    QM_O(block_host),
    QM_V(block_host_with_timeout),
    QM_O(unblock_host),
    QM_N(unblock_all),
    QM_O(drain_worker),
    QM_O(specify_sync_outputs),
    QM_O(specify_full_worker_timeout),
    QM_V(specify_prefetch),
    QM_V(specify_prefetch_containers),
    QM_V(specify_category_mode),
    QM_V(specify_category_max_resources),
    QM_V(specify_category_min_resources),
    QM_V(specify_category_max_concurrent),
    QM_V(specify_category_update_interval),
    QM_N(close),
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Queue_getset[] = {
    {"port", (getter)Queue_get_port, NULL, "the port listened on", NULL},
    {"stats", (getter)Queue_get_stats, NULL, "counters (work_queue_get_stats)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject QueueType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "htc.work_queue.WorkQueue",
    .tp_basicsize = sizeof(QueueObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "WorkQueue(port=..., name=...): a master that sends tasks to workers.",
    .tp_new = Queue_new,
    .tp_init = (initproc)Queue_init,
    .tp_dealloc = (destructor)Queue_dealloc,
    .tp_methods = Queue_methods,
    .tp_getset = Queue_getset,
};

/* ---- module ------------------------------------------------------------------------------ */

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "htc.work_queue._work_queue",
    "C extension over libwork_queue; import htc.work_queue instead.",
    -1,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
};

struct constant {
	const char *name;
	long value;
};

static const struct constant constants[] = {
    {"WORK_QUEUE_DEFAULT_PORT", WORK_QUEUE_DEFAULT_PORT},
    {"WORK_QUEUE_RANDOM_PORT", 0},
    {"WORK_QUEUE_WAITFORTASK", WORK_QUEUE_WAITFORTASK},
    {"WORK_QUEUE_INPUT", WORK_QUEUE_INPUT},
    {"WORK_QUEUE_OUTPUT", WORK_QUEUE_OUTPUT},
    {"WORK_QUEUE_NOCACHE", WORK_QUEUE_NOCACHE},
    {"WORK_QUEUE_CACHE", WORK_QUEUE_CACHE},
    {"WORK_QUEUE_WATCH", WORK_QUEUE_WATCH},
    {"WORK_QUEUE_SUCCESS_ONLY", WORK_QUEUE_SUCCESS_ONLY},
    {"WORK_QUEUE_FAILURE_ONLY", WORK_QUEUE_FAILURE_ONLY},
    {"WORK_QUEUE_RESULT_UNKNOWN", WORK_QUEUE_RESULT_UNKNOWN},
    {"WORK_QUEUE_RESULT_SUCCESS", WORK_QUEUE_RESULT_SUCCESS},
    {"WORK_QUEUE_RESULT_INPUT_MISSING", WORK_QUEUE_RESULT_INPUT_MISSING},
    {"WORK_QUEUE_RESULT_OUTPUT_MISSING", WORK_QUEUE_RESULT_OUTPUT_MISSING},
    {"WORK_QUEUE_RESULT_STDOUT_MISSING", WORK_QUEUE_RESULT_STDOUT_MISSING},
    {"WORK_QUEUE_RESULT_SIGNAL", WORK_QUEUE_RESULT_SIGNAL},
    {"WORK_QUEUE_RESULT_RESOURCE_EXHAUSTION", WORK_QUEUE_RESULT_RESOURCE_EXHAUSTION},
    {"WORK_QUEUE_RESULT_TASK_TIMEOUT", WORK_QUEUE_RESULT_TASK_TIMEOUT},
    {"WORK_QUEUE_RESULT_MAX_RETRIES", WORK_QUEUE_RESULT_MAX_RETRIES},
    {"WORK_QUEUE_RESULT_TASK_MAX_RUN_TIME", WORK_QUEUE_RESULT_TASK_MAX_RUN_TIME},
    {"WORK_QUEUE_RESULT_DISK_ALLOC_FULL", WORK_QUEUE_RESULT_DISK_ALLOC_FULL},
    {"WORK_QUEUE_RESULT_INVALID_TASK", WORK_QUEUE_RESULT_INVALID_TASK},
    {"WORK_QUEUE_RESULT_SANDBOX_ERROR", WORK_QUEUE_RESULT_SANDBOX_ERROR},
    {"WORK_QUEUE_RESULT_CANCELLED", WORK_QUEUE_RESULT_CANCELLED},
    {"WORK_QUEUE_SCHEDULE_FCFS", WORK_QUEUE_SCHEDULE_FCFS},
    {"WORK_QUEUE_SCHEDULE_FILES", WORK_QUEUE_SCHEDULE_FILES},
    {"WORK_QUEUE_SCHEDULE_TIME", WORK_QUEUE_SCHEDULE_TIME},
    {"WORK_QUEUE_SCHEDULE_WORST", WORK_QUEUE_SCHEDULE_WORST},
    {"WORK_QUEUE_SCHEDULE_RAND", WORK_QUEUE_SCHEDULE_RAND},
    {"WORK_QUEUE_ALLOCATION_MODE_FIXED", CATEGORY_MODE_FIXED},
    {"WORK_QUEUE_ALLOCATION_MODE_MAX", CATEGORY_MODE_MAX},
    {"WORK_QUEUE_ALLOCATION_MODE_MIN_WASTE", CATEGORY_MODE_MIN_WASTE},
    {"WORK_QUEUE_ALLOCATION_MODE_MAX_THROUGHPUT", CATEGORY_MODE_MAX_THROUGHPUT},
    {"WORK_QUEUE_ALLOCATION_MODE_WARMUP", CATEGORY_MODE_WARMUP},
    {NULL, 0},
};

PyMODINIT_FUNC PyInit__work_queue(void)
{
	PyObject *types = PyImport_ImportModule("types");
	if (!types)
		return NULL;
	namespace_type = PyObject_GetAttrString(types, "SimpleNamespace");
	Py_DECREF(types);
	if (!namespace_type)
		return NULL;
	PyObject *json = PyImport_ImportModule("json");
	if (!json)
		return NULL;
	py_json_loads = PyObject_GetAttrString(json, "loads");
	Py_DECREF(json);
	if (!py_json_loads)
		return NULL;
	if (PyType_Ready(&TaskType) < 0 || PyType_Ready(&QueueType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	WorkQueueError = PyErr_NewExceptionWithDoc(
	    "htc.work_queue.WorkQueueError",
	    "An error of the Work Queue C library; .code is its negative error code.", NULL, NULL);
	if (!WorkQueueError || PyModule_AddObject(m, "WorkQueueError", WorkQueueError) < 0)
		goto fail;
	Py_INCREF(WorkQueueError);
	for (const struct constant *c = constants; c->name; c++) {
		PyObject *v = PyLong_FromLong(c->value);
		if (!v || PyDict_SetItemString(QueueType.tp_dict, c->name, v) < 0 ||
		    PyModule_AddObject(m, c->name, v) < 0) {
			Py_XDECREF(v);
			goto fail;
		}
	}
	PyType_Modified(&QueueType);
	Py_INCREF(&TaskType);
	if (PyModule_AddObject(m, "Task", (PyObject *)&TaskType) < 0)
		goto fail;
	Py_INCREF(&QueueType);
	if (PyModule_AddObject(m, "WorkQueue", (PyObject *)&QueueType) < 0)
		goto fail;
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
