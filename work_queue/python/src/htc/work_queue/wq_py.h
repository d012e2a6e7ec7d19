/* wq_py.h: what the two files of the htc.work_queue extension share: the Task type
 * (task.c) that the WorkQueue type (_work_queue.c) submits and returns, the WorkQueueError
 * exception, and the conversions both use. See _work_queue.c for who owns what. */
#ifndef HTC_WQ_PY_H
#define HTC_WQ_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "rmsummary.h"
#include "work_queue.h"

typedef struct {
	PyObject_HEAD struct work_queue_task *t;
	int submitted; /* owned by a queue */
	int detached;  /* its queue was deleted while it was inside: t is gone */
} TaskObject;

extern PyTypeObject TaskType;
extern PyObject *WorkQueueError;
extern PyObject *namespace_type; /* types.SimpleNamespace */

/* Raises WorkQueueError(message) with .code = CODE (the C library's negative code); NULL. */
PyObject *raise_code(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The task's C struct if the caller may change it; NULL with an exception otherwise. */
struct work_queue_task *task_writable(TaskObject *self);
/* A dict of cores/memory/disk/gpus/... into R; 0, or -1 with an exception naming WHAT. */
int dict_to_rmsummary(PyObject *d, struct rmsummary *r, const char *what);

#endif
