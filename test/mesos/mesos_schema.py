# mesos_schema.py: the shapes of the v1 scheduler calls the simulator accepts, written from the
# Scheduler HTTP API document (https://mesos.apache.org/documentation/latest/scheduler-http-api/,
# Mesos 1.11, the last release) and the v1 scheduler.proto / mesos.proto field lists it links to.
# Every call is checked against these shapes: a missing required field or a field the shape does
# not name is refused with 400, as the master refuses a body it cannot turn into a Call.

# A shape is a dict FIELD -> (required, kind); kind is str, bool, "num", a nested shape, or
# [shape] for a repeated field.

ID = {"value": (True, str)}  # mesos.proto: FrameworkID, AgentID, OfferID, TaskID

SCALAR = {"value": (True, "num")}
RESOURCE = {  # mesos.proto: Resource (only the parts a framework launching commands uses)
    "name": (True, str),
    "type": (True, str),
    "scalar": (False, SCALAR),
    "role": (False, str),
    "allocation_info": (False, {"role": (False, str)}),
}
VARIABLE = {"name": (True, str), "value": (False, str), "type": (False, str)}
COMMAND = {  # mesos.proto: CommandInfo
    "value": (False, str),
    "shell": (False, bool),
    "arguments": (False, [str]),
    "user": (False, str),
    "environment": (False, {"variables": (False, [VARIABLE])}),
}
LABEL = {"key": (True, str), "value": (False, str)}
TASK_INFO = {  # mesos.proto: TaskInfo
    "name": (True, str),
    "task_id": (True, ID),
    "agent_id": (True, ID),
    "resources": (False, [RESOURCE]),
    "command": (False, COMMAND),
    "labels": (False, {"labels": (False, [LABEL])}),
    # mesos.proto: TaskInfo.max_completion_time, a DurationInfo (int64 nanoseconds)
    "max_completion_time": (False, {"nanoseconds": (True, "num")}),
}
FILTERS = {"refuse_seconds": (False, "num")}  # mesos.proto: Filters
OPERATION = {  # mesos.proto: Offer.Operation (LAUNCH only)
    "type": (True, str),
    "launch": (False, {"task_infos": (True, [TASK_INFO])}),
}
FRAMEWORK_INFO = {  # mesos.proto: FrameworkInfo
    "user": (True, str),
    "name": (True, str),
    "id": (False, ID),
    "failover_timeout": (False, "num"),
    "checkpoint": (False, bool),
    "role": (False, str),
    "roles": (False, [str]),
    "hostname": (False, str),
    "principal": (False, str),
    "capabilities": (False, [{"type": (True, str)}]),
    "labels": (False, {"labels": (False, [LABEL])}),
}
TASK_REF = {"task_id": (True, ID), "agent_id": (False, ID)}

# scheduler.proto: Call, one sub-message per type. The comment of each names the section of
# the Scheduler HTTP API document (https://mesos.apache.org/documentation/latest/scheduler-http-api/)
# that defines it.
CALLS = {
    # "Calls" > "SUBSCRIBE": framework_info with user and name; id when re-subscribing
    "SUBSCRIBE": ("subscribe", {"framework_info": (True, FRAMEWORK_INFO)}),
    # "Calls" > "TEARDOWN": only type and framework_id
    "TEARDOWN": (None, None),
    # "Calls" > "ACCEPT": offer_ids, operations (LAUNCH with task_infos), filters
    "ACCEPT": ("accept", {"offer_ids": (True, [ID]), "operations": (False, [OPERATION]),
                          "filters": (False, FILTERS)}),
    # "Calls" > "DECLINE": offer_ids and filters.refuse_seconds
    "DECLINE": ("decline", {"offer_ids": (True, [ID]), "filters": (False, FILTERS)}),
    # "Calls" > "REVIVE": removes the filters; the revive message itself is optional
    "REVIVE": ("revive", {"roles": (False, [str])}),
    # "Calls" > "KILL": task_id, agent_id optional
    "KILL": ("kill", {"task_id": (True, ID), "agent_id": (False, ID)}),
    # "Calls" > "ACKNOWLEDGE": agent_id, task_id and the uuid of the update (base64 bytes)
    "ACKNOWLEDGE": ("acknowledge", {"agent_id": (True, ID), "task_id": (True, ID),
                                    "uuid": (True, str)}),
    # "Calls" > "RECONCILE": tasks (task_id, agent_id); an empty list asks for every task
    "RECONCILE": ("reconcile", {"tasks": (False, [TASK_REF])}),
}


def _kind_ok(v, kind):
    if kind is str:
        return isinstance(v, str)
    if kind is bool:
        return isinstance(v, bool)
    if kind == "num":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return False


def check(obj, shape, path):
    """Returns None, or the reason OBJ does not have SHAPE (PATH names it)."""
    if not isinstance(obj, dict):
        return "'%s' is not an object" % path
    for k in obj:
        if k not in shape:
            return "Unknown field '%s' in '%s'" % (k, path)
    for k, (required, kind) in shape.items():
        where = "%s.%s" % (path, k) if path else k
        if k not in obj:
            if required:
                return "Expecting '%s' to be present" % where
            continue
        v = obj[k]
        if isinstance(kind, list):
            if not isinstance(v, list):
                return "'%s' is not an array" % where
            for i, item in enumerate(v):
                sub = kind[0]
                if isinstance(sub, dict):
                    err = check(item, sub, "%s[%d]" % (where, i))
                    if err:
                        return err
                elif not _kind_ok(item, sub):
                    return "'%s[%d]' has the wrong type" % (where, i)
        elif isinstance(kind, dict):
            err = check(v, kind, where)
            if err:
                return err
        elif not _kind_ok(v, kind):
            return "'%s' has the wrong type" % where
    return None


def check_call(call):
    """Validates a Call body; returns None or the master's 400 text."""
    if not isinstance(call, dict):
        return "Failed to parse body into Call protobuf: not an object"
    t = call.get("type")
    if not isinstance(t, str) or t not in CALLS:
        return "Failed to validate scheduler::Call: Expecting 'type' to be present" \
            if t is None else "Failed to parse body into Call protobuf: unknown type '%s'" % t
    field, shape = CALLS[t]
    allowed = {"type", "framework_id"}
    if field:
        allowed.add(field)
    for k in call:
        if k not in allowed:
            return "Failed to parse body into Call protobuf: Unknown field '%s'" % k
    if t != "SUBSCRIBE":
        if "framework_id" not in call:
            return "Failed to validate scheduler::Call: Expecting 'framework_id' to be present"
        err = check(call["framework_id"], ID, "framework_id")
        if err:
            return "Failed to validate scheduler::Call: " + err
    if field:
        if field not in call and t != "REVIVE":  # Call.revive is optional
            return "Failed to validate scheduler::Call: Expecting '%s' to be present" % field
        err = check(call.get(field, {}), shape, field)
        if err:
            return "Failed to validate scheduler::Call: " + err
    if t == "ACCEPT":
        for op in call["accept"].get("operations", []):
            if op["type"] != "LAUNCH" or "launch" not in op:
                return "Failed to validate scheduler::Call: this master launches only " \
                    "LAUNCH operations with 'launch' set"
    return None
