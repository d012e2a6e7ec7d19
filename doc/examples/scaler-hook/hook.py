#!/usr/bin/env python3
# hook.py: an example --scaler-hook for work_queue_factory (doc/work-queue-factory.md, "The
# scaler hook"). It reads the status document on stdin and asks for one worker per 4 waiting or
# running tasks, at least one while anything is left, and none when the queue is empty. Whatever
# goes wrong here (an exception, a bad answer) is logged by the factory, which keeps its pool.
import json
import math
import sys

doc = json.load(sys.stdin)
tasks = doc["tasks_waiting"] + doc["tasks_running"]
want = math.ceil(tasks / 4)
limit = doc["factory"]["max_workers"]
print(json.dumps({"workers": min(want, limit), "next_in": 2}))
