"""htc.work_queue: Python bindings for the Work Queue master library (libwork_queue).

Everything is done by the C library; see doc/work-queue-python.md.

    from htc.work_queue import WorkQueue, Task
    q = WorkQueue(port=0)
    t = Task("echo hello"); q.submit(t)
    while not q.empty():
        t = q.wait(5)
"""
from ._work_queue import *  # noqa: F401,F403
from ._work_queue import Task, WorkQueue, WorkQueueError  # noqa: F401

__all__ = [n for n in dir() if n.startswith("WORK_QUEUE_")] + ["Task", "WorkQueue", "WorkQueueError"]
