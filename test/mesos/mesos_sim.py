#!/usr/bin/env python3
# mesos_sim.py: a Mesos master simulator for the tests of the mesos batch driver. It speaks the
# v1 Scheduler HTTP API (https://mesos.apache.org/documentation/latest/scheduler-http-api/,
# Mesos 1.11) on localhost, validates every call strictly (mesos_schema.py), offers the
# resources of simulated agents, runs launched tasks on this machine with /bin/sh -c in a
# sandbox directory, and has fault injection knobs under /sim/ for the tests. Every call
# received is appended to a log (one JSON object a line) that tests read.
#
# Usage: mesos_sim.py --port-file F --log F --work DIR [--agent NAME:cpus=C,mem=M,disk=D]...
#        [--heartbeat SECONDS] [--credential PRINCIPAL:SECRET] [--redirect-to HOST:PORT]
# --credential: every scheduler call must carry HTTP basic authentication with that principal and
# secret, and SUBSCRIBE's framework_info.principal must be that principal ("Authentication" of the
# document: an unauthenticated request is answered 401 with a WWW-Authenticate challenge, a
# framework whose principal differs is refused 403). --redirect-to: this master is not the
# leader: every scheduler call is answered "307 Temporary Redirect" with a Location header
# naming the leader's endpoint as "//HOST:PORT/api/v1/scheduler" (the document's "Master
# detection"); "self" names this simulator itself (a redirect loop).
# Knobs (POST, answer 200): /sim/drop-stream, /sim/stop-heartbeats, /sim/error?message=M,
# /sim/malformed, /sim/refuse?call=TYPE&status=N&body=TEXT (once), /sim/rescind,
# /sim/rescind-before-accept (the next ACCEPT meets rescinded offers: TASK_DROPPED),
# /sim/hold?n=N and /sim/release (the next N tasks stay in TASK_STAGING until released);
# GET /sim/state gives the frameworks and tasks as JSON.
import argparse
import base64
import http.server
import json
import os
import queue
import signal
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mesos_schema  # noqa: E402

TERMINAL = {"TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_LOST", "TASK_ERROR",
            "TASK_DROPPED", "TASK_GONE"}


class Agent:
    def __init__(self, spec):
        name, _, res = spec.partition(":")
        self.id = "agent-" + name
        self.hostname = name
        self.total = {"cpus": 1.0, "mem": 1024.0, "disk": 1024.0}
        for kv in res.split(","):
            if kv:
                k, _, v = kv.partition("=")
                self.total[k] = float(v)
        self.used = {k: 0.0 for k in self.total}
        self.offered = None  # offer id outstanding, or None
        self.filtered_until = 0.0

    def free(self):
        return {k: self.total[k] - self.used[k] for k in self.total}


class Task:
    def __init__(self, fw, info, agent, res):
        self.fw = fw
        self.id = info["task_id"]["value"]
        self.agent = agent
        self.res = res
        self.state = "TASK_STAGING"
        self.proc = None
        self.killed = False
        self.reason = None
        self.message = None
        self.limit_hit = None
        self.max_s = None


class Framework:
    def __init__(self, fid, info):
        self.id = fid
        self.info = info
        self.stream = None  # Stream, or None when disconnected
        self.tasks = {}
        self.unacked = {}  # uuid -> update json
        self.disconnected_at = None


class Stream:
    def __init__(self):
        self.id = str(uuid.uuid4())
        self.q = queue.Queue()
        self.closed = False


class Master:
    def __init__(self, args):
        self.lock = threading.RLock()
        self.agents = [Agent(a) for a in (args.agent or ["a1:cpus=4,mem=4096,disk=4096"])]
        self.frameworks = {}
        self.offers = {}  # offer id -> (framework, agent, resources)
        self.heartbeat = args.heartbeat
        self.heartbeats_on = True
        self.refuse = {}  # call type -> (status, body)
        self.hold = 0  # this many new tasks stay in TASK_STAGING
        self.rescind_next = False  # the next ACCEPT finds its offers rescinded
        self.held = []
        self.work = args.work
        self.log = open(args.log, "a", buffering=1)
        self.seq = 0

    # ---- helpers ----
    def log_call(self, call, status, stream_id, text=""):
        rec = {"t": time.time(), "status": status, "stream_id": stream_id, "call": call}
        if text:
            rec["answer"] = text
        self.log.write(json.dumps(rec) + "\n")

    def next_id(self, what):
        self.seq += 1
        return "%s-%d" % (what, self.seq)

    def send(self, fw, event):
        if fw.stream and not fw.stream.closed:
            fw.stream.q.put(event)

    # "Events" > "UPDATE": status with task_id, agent_id, state, source, reason, message and a
    # uuid the framework must ACKNOWLEDGE ("Calls" > "ACKNOWLEDGE"); resent until acknowledged
    def update(self, task, state, reason=None, message=None, source="SOURCE_EXECUTOR"):
        task.state = state
        u = base64.b64encode(uuid.uuid4().bytes).decode()
        status = {"task_id": {"value": task.id}, "agent_id": {"value": task.agent.id},
                  "state": state, "source": source, "uuid": u, "timestamp": time.time()}
        if reason:
            status["reason"] = reason
        if message:
            status["message"] = message
        ev = {"type": "UPDATE", "update": {"status": status}}
        task.fw.unacked[u] = ev
        self.send(task.fw, ev)

    def release(self, task):
        for k, v in task.res.items():
            task.agent.used[k] -= v

    # ---- offers (the allocator: one outstanding offer per agent) ----
    # "Events" > "OFFERS": offers with id, framework_id, agent_id, hostname and scalar
    # resources; "Events" > "RESCIND": the offer_id of an offer no longer valid
    def allocate(self):
        with self.lock:
            now = time.time()
            for fw in self.frameworks.values():
                if not fw.stream or fw.stream.closed:
                    continue
                for a in self.agents:
                    if a.offered or a.filtered_until > now:
                        continue
                    free = a.free()
                    if free["cpus"] < 0.01 or free["mem"] < 1:
                        continue
                    oid = self.next_id("offer")
                    a.offered = oid
                    self.offers[oid] = (fw, a, free)
                    res = [{"name": k, "type": "SCALAR", "scalar": {"value": v}, "role": "*"}
                           for k, v in sorted(free.items())]
                    self.send(fw, {"type": "OFFERS", "offers": {"offers": [{
                        "id": {"value": oid}, "framework_id": {"value": fw.id},
                        "agent_id": {"value": a.id}, "hostname": a.hostname,
                        "resources": res}]}})
                break  # one framework at a time gets the agents

    def drop_offers(self, fw, rescind):
        for oid, (ofw, a, _) in list(self.offers.items()):
            if ofw is fw:
                del self.offers[oid]
                a.offered = None
                if rescind:
                    self.send(fw, {"type": "RESCIND", "rescind": {"offer_id": {"value": oid}}})

    # ---- tasks ----
    def launch(self, fw, info, agent):
        res = {}
        for r in info.get("resources", []):
            if r.get("type") == "SCALAR" and "scalar" in r:
                res[r["name"]] = res.get(r["name"], 0.0) + r["scalar"]["value"]
        t = Task(fw, info, agent, res)
        fw.tasks[t.id] = t
        for k, v in res.items():
            agent.used[k] = agent.used.get(k, 0.0) + v
        cmd = info.get("command", {})
        sandbox = os.path.join(self.work, "sandboxes", fw.id, t.id)
        os.makedirs(sandbox, exist_ok=True)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "MESOS_SANDBOX": sandbox,
               "MESOS_TASK_ID": t.id, "MESOS_AGENT_ENDPOINT": "127.0.0.1:5051",
               "HOME": os.environ.get("HOME", "/")}
        for v in cmd.get("environment", {}).get("variables", []):
            env[v["name"]] = v.get("value", "")
        if cmd.get("shell", True):
            argv = ["/bin/sh", "-c", cmd.get("value", "")]
        else:
            argv = [cmd.get("value", "")] + cmd.get("arguments", [])[1:]
        t.argv, t.env, t.sandbox = argv, env, sandbox
        # mesos.proto TaskInfo.max_completion_time: counted from the task's start by the agent
        mct = info.get("max_completion_time")
        t.max_s = mct["nanoseconds"] / 1e9 if mct else None
        if self.hold > 0:  # the agent is slow to start it (fetching, say): it stays STAGING
            self.hold -= 1
            self.held.append(t)
            return
        self.start(t)

    def start(self, t):
        argv, env, sandbox = t.argv, t.env, t.sandbox
        self.update(t, "TASK_STARTING")
        try:
            out = open(os.path.join(sandbox, "stdout"), "wb")
            err = open(os.path.join(sandbox, "stderr"), "wb")
            t.proc = subprocess.Popen(argv, cwd=sandbox, env=env, stdout=out, stderr=err,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
            out.close()
            err.close()
        except OSError as e:
            self.release(t)
            self.update(t, "TASK_FAILED", "REASON_EXECUTOR_TERMINATED",
                        "Failed to launch: %s" % e)
            return
        self.update(t, "TASK_RUNNING")
        threading.Thread(target=self.watch, args=(t,), daemon=True).start()

    def rss_mb(self, pgid):
        total = 0
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % p) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[2]) != pgid:
                    continue
                total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError, ValueError):
                continue
        return total / (1024 * 1024)

    def watch(self, t):
        limit = t.res.get("mem")
        began = time.monotonic()
        while True:
            try:
                rc = t.proc.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                pass
            if limit and self.rss_mb(t.proc.pid) > limit:
                t.limit_hit = "memory"
                os.killpg(t.proc.pid, signal.SIGKILL)
            elif t.max_s is not None and time.monotonic() - began > t.max_s and not t.limit_hit:
                t.limit_hit = "time"
                os.killpg(t.proc.pid, signal.SIGKILL)
        with self.lock:
            self.release(t)
            if t.state in TERMINAL:
                return
            if t.limit_hit == "time":
                self.update(t, "TASK_FAILED", "REASON_MAX_COMPLETION_TIME_REACHED",
                            "Task exceeded its maximum completion time of %g seconds" % t.max_s,
                            "SOURCE_AGENT")
            elif t.limit_hit:
                self.update(t, "TASK_FAILED", "REASON_CONTAINER_LIMITATION_MEMORY",
                            "Memory limit exceeded: Requested: %dMB" % int(limit),
                            "SOURCE_AGENT")
            elif t.killed:
                self.update(t, "TASK_KILLED", None, "Command terminated with signal Killed")
            elif rc == 0:
                self.update(t, "TASK_FINISHED", None, "Command exited with status 0")
            elif rc < 0:
                self.update(t, "TASK_FAILED", "REASON_COMMAND_EXECUTOR_FAILED",
                            "Command terminated with signal %s" % signal.Signals(-rc).name)
            else:
                self.update(t, "TASK_FAILED", "REASON_COMMAND_EXECUTOR_FAILED",
                            "Command exited with status %d" % rc)
        self.allocate()

    def kill(self, t):
        if t.state in TERMINAL:
            return
        t.killed = True
        if t.proc is None:  # never started (held)
            self.release(t)
            self.update(t, "TASK_KILLED", "REASON_TASK_KILLED_DURING_LAUNCH",
                        "Killed before it started")
            return
        if t.proc:
            try:
                os.killpg(t.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def teardown(self, fw):
        for t in fw.tasks.values():
            self.kill(t)
        self.drop_offers(fw, False)
        if fw.stream:
            fw.stream.closed = True
            fw.stream.q.put(None)
        self.frameworks.pop(fw.id, None)

    # ---- calls ----
    # "Calls": every call but SUBSCRIBE carries the Mesos-Stream-Id header of the current
    # subscription ("Stream ID") and is answered 202 Accepted, or 4xx with a message
    def call(self, call, stream_id):
        """Returns (status, text) of a non-SUBSCRIBE call."""
        t = call["type"]
        fw = self.frameworks.get(call["framework_id"]["value"])
        if not fw or not fw.stream or fw.stream.closed:
            return 403, "Framework is not subscribed"
        if stream_id is None:
            return 400, "All non-subscribe calls should include the 'Mesos-Stream-Id' header"
        if stream_id != fw.stream.id:
            return 400, ("The stream ID '%s' included in this request didn't match the stream "
                         "ID currently associated with framework ID %s" % (stream_id, fw.id))
        if t in self.refuse:
            st, body = self.refuse.pop(t)
            return st, body
        if t == "TEARDOWN":
            self.teardown(fw)
        elif t == "ACCEPT":
            a = call["accept"]
            if self.rescind_next:  # the offers were rescinded just before the ACCEPT came
                self.rescind_next = False
                self.drop_offers(fw, True)
            ops = a.get("operations", [])
            offers = [o["value"] for o in a["offer_ids"]]
            for oid in offers:
                if oid not in self.offers or self.offers[oid][0] is not fw:
                    # the master drops the operations on an invalid offer: TASK_DROPPED
                    for op in ops:
                        for ti in op["launch"]["task_infos"]:
                            self.send(fw, {"type": "UPDATE", "update": {"status": {
                                "task_id": ti["task_id"], "state": "TASK_DROPPED",
                                "source": "SOURCE_MASTER", "reason": "REASON_INVALID_OFFERS",
                                "message": "Offer %s is no longer valid" % oid}}})
                    return 202, ""
            agent = self.offers[offers[0]][1]
            free = dict(self.offers[offers[0]][2])
            for oid in offers:
                _, a2, _ = self.offers.pop(oid)
                a2.offered = None
            for op in ops:
                for ti in op["launch"]["task_infos"]:
                    if ti["agent_id"]["value"] != agent.id:
                        return 202, ""
                    need = {}
                    for r in ti.get("resources", []):
                        need[r["name"]] = need.get(r["name"], 0) + r.get("scalar", {}).get(
                            "value", 0)
                    if any(need.get(k, 0) > free.get(k, 0) + 1e-9 for k in need) or \
                            ti["task_id"]["value"] in fw.tasks:
                        self.send(fw, {"type": "UPDATE", "update": {"status": {
                            "task_id": ti["task_id"], "state": "TASK_ERROR",
                            "source": "SOURCE_MASTER", "reason": "REASON_TASK_INVALID",
                            "message": "Task uses more resources than offered or its id "
                                       "is in use"}}})
                        continue
                    for k in need:
                        free[k] = free.get(k, 0) - need[k]
                    self.launch(fw, ti, agent)
            refuse = a.get("filters", {}).get("refuse_seconds", 5.0)
            agent.filtered_until = max(agent.filtered_until, time.time() + refuse) \
                if not ops else agent.filtered_until
        elif t == "DECLINE":
            d = call["decline"]
            refuse = d.get("filters", {}).get("refuse_seconds", 5.0)
            for o in d["offer_ids"]:
                if o["value"] in self.offers:
                    _, a, _ = self.offers.pop(o["value"])
                    a.offered = None
                    a.filtered_until = time.time() + refuse
        elif t == "REVIVE":
            for a in self.agents:
                a.filtered_until = 0
        elif t == "KILL":
            tid = call["kill"]["task_id"]["value"]
            task = fw.tasks.get(tid)
            if task:
                self.kill(task)
            else:
                self.send(fw, {"type": "UPDATE", "update": {"status": {
                    "task_id": {"value": tid}, "state": "TASK_LOST",
                    "source": "SOURCE_MASTER", "reason": "REASON_RECONCILIATION",
                    "message": "Attempted to kill an unknown task"}}})
        elif t == "ACKNOWLEDGE":
            u = call["acknowledge"]["uuid"]
            if u not in fw.unacked:
                return 400, "Unknown status update uuid %s" % u
            del fw.unacked[u]
        elif t == "RECONCILE":
            refs = call["reconcile"].get("tasks", [])
            if not refs:
                refs = [{"task_id": {"value": k}} for k, v in fw.tasks.items()
                        if v.state not in TERMINAL]
            for r in refs:
                tid = r["task_id"]["value"]
                task = fw.tasks.get(tid)
                st = {"task_id": {"value": tid}, "source": "SOURCE_MASTER",
                      "reason": "REASON_RECONCILIATION"}
                if task:
                    st["state"] = task.state
                    st["agent_id"] = {"value": task.agent.id}
                else:
                    st["state"] = "TASK_LOST"
                    st["message"] = "Reconciliation: task is unknown"
                self.send(fw, {"type": "UPDATE", "update": {"status": st}})
        return 202, ""

    # "Calls" > "SUBSCRIBE" and "Events" > "SUBSCRIBED" (framework_id,
    # heartbeat_interval_seconds); "Disconnections" / "Master detection" for failover: the
    # framework keeps its tasks for failover_timeout and re-subscribes with its id
    def subscribe(self, call):
        info = call["subscribe"]["framework_info"]
        fid = info.get("id", {}).get("value")
        if "framework_id" in call and call["framework_id"].get("value") != fid:
            return None, (400, "'framework_id' differs from 'subscribe.framework_info.id'")
        fw = self.frameworks.get(fid) if fid else None
        if fw is None:
            fid = fid or str(uuid.uuid4()) + "-0000"
            fw = Framework(fid, info)
            self.frameworks[fid] = fw
        elif fw.stream and not fw.stream.closed:
            fw.stream.closed = True  # failover: the old connection is closed
            fw.stream.q.put(None)
        fw.info = info
        fw.disconnected_at = None
        fw.stream = Stream()
        fw.stream.q.put({"type": "SUBSCRIBED", "subscribed": {
            "framework_id": {"value": fid}, "heartbeat_interval_seconds": self.heartbeat}})
        for ev in list(fw.unacked.values()):  # status updates are retried until acknowledged
            fw.stream.q.put(ev)
        return fw, None

    def disconnected(self, fw, stream):
        with self.lock:
            if fw.stream is not stream:
                return
            stream.closed = True
            fw.disconnected_at = time.time()
            self.drop_offers(fw, False)

    def expire(self):
        with self.lock:
            now = time.time()
            for fw in list(self.frameworks.values()):
                if fw.disconnected_at is None:
                    continue
                if now - fw.disconnected_at >= fw.info.get("failover_timeout", 0):
                    self.teardown(fw)


M = None


# "Events": RecordIO, each event is its length in decimal, a newline and the JSON
def record(ev):
    data = json.dumps(ev).encode()
    return str(len(data)).encode() + b"\n" + data


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def answer(self, status, text, ctype="text/plain"):
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/sim/state":
            with M.lock:
                st = {fid: {"connected": bool(fw.stream and not fw.stream.closed),
                        "staging": sum(1 for t in fw.tasks.values()
                                       if t.state == "TASK_STAGING"),
                            "tasks": {k: t.state for k, t in fw.tasks.items()},
                            "running": sum(1 for t in fw.tasks.values()
                                           if t.state not in TERMINAL)}
                      for fid, fw in M.frameworks.items()}
            self.answer(200, json.dumps(st), "application/json")
        else:
            self.answer(404, "Not Found")

    def knob(self):
        u = urllib.parse.urlparse(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        with M.lock:
            fws = [fw for fw in M.frameworks.values() if fw.stream and not fw.stream.closed]
            if u.path == "/sim/drop-stream":
                for fw in fws:
                    fw.stream.q.put("drop")
            elif u.path == "/sim/stop-heartbeats":
                M.heartbeats_on = False
            elif u.path == "/sim/error":
                for fw in fws:
                    M.send(fw, {"type": "ERROR", "error": {"message": q.get("message", "")}})
            elif u.path == "/sim/malformed":
                for fw in fws:
                    fw.stream.q.put("malformed")
            elif u.path == "/sim/refuse":
                M.refuse[q["call"]] = (int(q.get("status", "400")), q.get("body", ""))
            elif u.path == "/sim/hold":
                M.hold = int(q.get("n", "1"))
            elif u.path == "/sim/release":
                M.hold = 0
                for t in M.held:
                    if t.state not in TERMINAL:
                        M.start(t)
                M.held = []
            elif u.path == "/sim/rescind-before-accept":
                M.rescind_next = True
            elif u.path == "/sim/rescind":
                for fw in fws:
                    M.drop_offers(fw, True)
            else:
                return self.answer(404, "no such knob")
        self.answer(200, "ok")

    def redirect(self, leader):
        self.send_response(307)
        self.send_header("Location", "//%s/api/v1/scheduler" % leader)
        self.send_header("Content-Length", "0")
        self.end_headers()

    # "Authentication": HTTP basic authentication with the framework's principal and secret
    def authenticated(self):
        if not ARGS.credential:
            return True
        got = self.headers.get("Authorization", "")
        want = "Basic " + base64.b64encode(ARGS.credential.encode()).decode()
        if got == want:
            return True
        body = b"Unauthorized"
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="mesos"')
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return False

    def do_POST(self):
        if self.path.startswith("/sim/"):
            return self.knob()
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        if self.path != "/api/v1/scheduler":
            return self.answer(404, "Not Found")
        if ARGS.redirect_to:
            leader = ARGS.redirect_to
            if leader == "self":  # a loop, for the test of the driver's limit
                leader = "127.0.0.1:%d" % self.server.server_address[1]
            with M.lock:
                M.log_call(None, 307, None, leader)
            return self.redirect(leader)
        if not self.authenticated():
            with M.lock:
                M.log_call(None, 401, None, "Unauthorized")
            return
        ctype = self.headers.get("Content-Type", "")
        if ctype.split(";")[0].strip() != "application/json":
            return self.answer(415, "Expecting 'Content-Type' of application/json or "
                                    "application/x-protobuf")
        try:
            call = json.loads(raw)
        except ValueError as e:
            M.log_call(None, 400, None, str(e))
            return self.answer(400, "Failed to parse body into JSON: %s" % e)
        err = mesos_schema.check_call(call)
        sid = self.headers.get("Mesos-Stream-Id")
        if err:
            with M.lock:
                M.log_call(call, 400, sid, err)
            return self.answer(400, err)
        if call["type"] != "SUBSCRIBE":
            with M.lock:
                st, text = M.call(call, sid)
                M.log_call(call, st, sid, text)
            self.answer(st, text)
            M.allocate()
            return
        if sid is not None:
            return self.answer(400, "Expecting 'Mesos-Stream-Id' header to be absent in "
                                    "SUBSCRIBE")
        accept = self.headers.get("Accept", "application/json")
        if "application/json" not in accept and "*/*" not in accept:
            return self.answer(406, "Expecting 'Accept' to allow application/json")
        principal = call["subscribe"]["framework_info"].get("principal")
        if ARGS.credential and principal != ARGS.credential.split(":", 1)[0]:
            text = "Framework principal '%s' does not match authenticated principal" % principal
            with M.lock:
                M.log_call(call, 403, None, text)
            return self.answer(403, text)
        with M.lock:
            if "SUBSCRIBE" in M.refuse:
                st, body = M.refuse.pop("SUBSCRIBE")
                M.log_call(call, st, None, body)
                return self.answer(st, body)
            fw, bad = M.subscribe(call)
            M.log_call(call, bad[0] if bad else 200, None, bad[1] if bad else "")
            if bad:
                return self.answer(*bad)
            stream = fw.stream
        self.stream(fw, stream)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        self.wfile.flush()

    def stream(self, fw, stream):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Mesos-Stream-Id", stream.id)
        self.end_headers()
        threading.Thread(target=M.allocate, daemon=True).start()
        last_beat = time.time()
        try:
            while True:
                wait = max(0.01, M.heartbeat - (time.time() - last_beat))
                try:
                    ev = stream.q.get(timeout=wait)
                except queue.Empty:
                    ev = "beat"
                if ev is None or stream.closed:
                    self.chunk(b"")
                    break
                if ev == "drop":
                    break
                if ev == "malformed":
                    self.chunk(b"12x\n{\"type\"")
                    continue
                if ev == "beat":  # "Events" > "HEARTBEAT", every heartbeat_interval_seconds
                    last_beat = time.time()
                    if M.heartbeats_on:
                        self.chunk(record({"type": "HEARTBEAT"}))
                    continue
                self.chunk(record(ev))
        except OSError:
            pass
        M.disconnected(fw, stream)
        self.close_connection = True


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


ARGS = None


def main():
    global M, ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--agent", action="append")
    p.add_argument("--heartbeat", type=float, default=1.0)
    p.add_argument("--credential")
    p.add_argument("--redirect-to")
    args = p.parse_args()
    ARGS = args
    M = Master(args)
    srv = Server(("127.0.0.1", 0), Handler)

    def ticker():
        while True:
            time.sleep(0.2)
            M.expire()
            M.allocate()
    threading.Thread(target=ticker, daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, args.port_file)

    def stop(*_):
        with M.lock:
            for fw in list(M.frameworks.values()):
                for t in fw.tasks.values():
                    M.kill(t)
        os._exit(0)
    signal.signal(signal.SIGTERM, stop)
    srv.serve_forever()


if __name__ == "__main__":
    main()
