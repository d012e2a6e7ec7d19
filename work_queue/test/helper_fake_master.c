/* helper_fake_master.c: a scripted fake Work Queue master for test/e2e/31-worker.sh, built from
 * the real connection, handshake (master side), message and transfer modules. It listens on a
 * free port, writes the port to a file, accepts the worker, plays one script (a task with a
 * cached and a per-task input, a bad name, a cancel, a drain, a dismiss, a shutdown, a memory
 * overrun, garbage...) and prints one line per check; it exits non-zero on any mismatch.
 *
 * Usage: helper_fake_master SCRIPT PORTFILE [PASSWORD_FILE]
 * Scripts: task badname cancel cancelsend drain dismiss shutdown exhaust garbage diskfull
 * aftertasks disconnect signal idle refuse seccomp seccompnet (these two run $HTC_SECCOMP_HELPER,
 * the resource monitor's helper_seccomp, under the worker's default or nonet profile). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "sha256.h"
#include "wq_auth.h"
#include "wq_conn.h"
#include "wq_handshake.h"
#include "wq_msg.h"
#include "wq_xfer.h"
#include "xalloc.h"

#include "banned.h"

static const char *script;
static int failures, checks;
static uv_loop_t *loop;
static uv_tcp_t server;
static struct wq_auth_key *key;
static char tmpdir[] = "/tmp/fake-master-XXXXXX";

struct peer {
	int n; /* connection number, from 1 */
	struct wq_conn *c;
	struct wq_handshake *h;
	struct wq_xfer_in *xin;
	struct wq_xfer_out *xout;
	bool active, reported, got_identity, got_capacity, closed;
	int step;
	char *out0, *stdout_text; /* received output 0 and stdout */
	size_t out0_len, stdout_len;
	uint32_t out0_xfer, stdout_xfer_id;
	char object[67];
	json_t *done_msg; /* task_done waiting for its transfers */
};

static int connections;
static bool finished;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s %d - ", ok ? "ok" : "not ok", ++checks);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	if (!ok)
		failures++;
}

static void done_all(void)
{
	if (finished)
		return;
	finished = true;
	uv_close((uv_handle_t *)&server, NULL);
}

static void send_json(struct peer *p, json_t *m)
{
	int r = wq_conn_send_msg(p->c, m);
	if (r != 0)
		check(false, "send %s: %d", json_string_value(json_object_get(m, "m")), r);
	json_decref(m);
}

static json_t *task_msg(int64_t id, const char *cmd, int64_t memory)
{
	return json_pack("{s:s,s:I,s:I,s:s,s:{s:i,s:I,s:i,s:i},s:[],s:[]}", "m", "task", "id",
	                 (json_int_t)id, "try", (json_int_t)1, "command", cmd, "resources", "cores",
	                 1, "memory", (json_int_t)memory, "disk", 5, "gpus", 0, "inputs",
	                 "outputs");
}

static void send_shutdown(struct peer *p)
{
	send_json(p, json_pack("{s:s,s:s}", "m", "shutdown", "reason", "script done"));
}

static const char *sget(json_t *m, const char *k)
{
	const char *v = json_string_value(json_object_get(m, k));
	return v ? v : "";
}

static int64_t iget(json_t *m, const char *k)
{
	return json_integer_value(json_object_get(m, k));
}

static void check_task_done(struct peer *p);

/* ---- transfers ------------------------------------------------------------------------------ */

static void send_json(struct peer *p, json_t *m);

static void resume_reading(uv_timer_t *t)
{
	struct peer *p = t->data;
	wq_conn_resume_reading(p->c);
	uv_close((uv_handle_t *)t, (uv_close_cb)free);
}

static int recv_begin(struct wq_xfer_in *i, const struct wq_xfer_incoming *in,
                      struct wq_xfer_dest *dest, struct wq_xfer_refusal *r, void *user)
{
	(void)i;
	(void)r;
	struct peer *p = user;
	static char path[256]; /* copied by the receiver */
	snprintf(path, sizeof path, "%s/in.%u", tmpdir, in->id);
	dest->tmp_path = path;
	if (!strcmp(script, "cancelsend") && in->target->kind == WQ_TARGET_OUTPUT) {
		/* the output is on its way: cancel the task, and read nothing for 300 ms, so
		 * that the worker's send is still open (held by flow control) when the cancel
		 * arrives */
		wq_conn_pause_reading(p->c);
		send_json(p, json_pack("{s:s,s:i,s:i,s:s}", "m", "task_cancel", "id", 1, "try", 1,
		                       "reason", "test"));
		uv_timer_t *t = xmalloc(sizeof *t);
		uv_timer_init(loop, t);
		t->data = p;
		uv_timer_start(t, resume_reading, 300, 0);
	}
	return 0;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = xmalloc(1 << 20);
	*len = fread(buf, 1, (1 << 20) - 1, f);
	buf[*len] = 0;
	fclose(f);
	return buf;
}

static void recv_end(struct wq_xfer_in *i, const struct wq_xfer_incoming *in, int status,
                     const char *text, void *user)
{
	(void)i;
	struct peer *p = user;
	char path[256];
	snprintf(path, sizeof path, "%s/in.%u", tmpdir, in->id);
	if (!strcmp(script, "cancelsend") && in->target->kind == WQ_TARGET_OUTPUT) {
		check(status == -ECANCELED && text && strstr(text, "task cancelled"),
		      "the output's send was aborted by the worker (status %d: %s)", status,
		      text ? text : "");
		p->step |= 1;
		if (p->step == 3)
			send_shutdown(p);
		return;
	}
	if (status != 0) {
		check(false, "transfer %u received: status %d %s", in->id, status,
		      text ? text : "");
		return;
	}
	size_t len = 0;
	char *data = slurp(path, &len);
	unlink(path);
	if (in->target->kind == WQ_TARGET_STDOUT) {
		p->stdout_text = data;
		p->stdout_len = len;
		p->stdout_xfer_id = in->id;
	} else if (in->target->kind == WQ_TARGET_OUTPUT && in->target->index == 0) {
		p->out0 = data;
		p->out0_len = len;
		p->out0_xfer = in->id;
	} else {
		free(data);
	}
	check_task_done(p);
}

static const struct wq_xfer_in_callbacks in_cb = {recv_begin, recv_end};

static void sent(struct wq_xfer_out *o, const struct wq_xfer_sent *r, void *user)
{
	(void)o;
	struct peer *p = user;
	const char *what = r->tag;
	if (!strcmp(what, "big object")) {
		/* the worker has --disk 10: refused, and the connection goes on */
		check(r->outcome == WQ_XFER_REFUSED && r->code == WQ_XERR_DISK_FULL,
		      "a 20 MB object is refused disk_full (outcome %d code %d: %s)", r->outcome,
		      (int)r->code, r->text);
		send_json(p, task_msg(1, "true", 10));
		json_t *t = task_msg(2, "true", 10);
		json_object_set_new(json_object_get(t, "resources"), "disk", json_integer(50));
		send_json(p, t);
		return;
	}
	check(r->outcome == WQ_XFER_SENT, "%s sent (outcome %d %s)", what, r->outcome, r->text);
	if (!strcmp(what, "object") && !strcmp(script, "task")) {
		/* the task: a cached input, a per-task buffer input, an output and stdout */
		json_t *t =
		    task_msg(1, "wc -c < ref.fa; cat in.txt; tr ACGT TGCA < ref.fa > out.txt", 100);
		json_object_set_new(t, "inputs",
		                    json_pack("[{s:s,s:s,s:s},{s:s,s:s}]", "name", "ref.fa", "from",
		                              "cache", "object", p->object, "name", "in.txt",
		                              "from", "task"));
		json_object_set_new(t, "outputs",
		                    json_pack("[{s:s,s:s}]", "name", "out.txt", "when", "always"));
		send_json(p, t);
		json_t *target = wq_xfer_target_input(1, 1);
		wq_xfer_send_buffer(p->xout, "hello\n", 6, target, 0, "per-task input", NULL);
		json_decref(target);
	}
}

static void peer_error(struct wq_xfer_out *o, uint32_t id, enum wq_xfer_error_code code,
                       const char *text, void *user)
{
	(void)o;
	(void)user;
	check(false, "worker refused transfer %u: %d %s", id, (int)code, text);
}

static const struct wq_xfer_out_callbacks out_cb = {.sent = sent, .peer_error = peer_error};

/* The task script's task_done, checked once the transfers it names have been stored (the
 * receiver finishes them off the loop, so task_done can be processed first). */
static void check_task_done(struct peer *p)
{
	json_t *m = p->done_msg;
	if (!m)
		return;
	uint32_t ox = (uint32_t)iget(json_array_get(json_object_get(m, "outputs"), 0), "xfer");
	uint32_t sx = (uint32_t)iget(json_object_get(m, "stdout"), "xfer");
	if ((ox && ox != p->out0_xfer) || (sx && sx != p->stdout_xfer_id))
		return; /* not yet */
	p->done_msg = NULL;
	check(!strcmp(sget(m, "outcome"), "exited") && iget(m, "exit_status") == 0,
	      "task_done exited 0 (outcome %s)", sget(m, "outcome"));
	check(p->out0 && p->out0_len == 5 && !memcmp(p->out0, "TGCA\n", 5),
	      "output out.txt is TGCA\\n (%zu bytes)", p->out0_len);
	check(p->stdout_text && !strcmp(p->stdout_text, "5\nhello\n"),
	      "stdout is \"5\\nhello\\n\" (got \"%s\")",
	      p->stdout_text ? p->stdout_text : "(none)");
	check(ox != 0 && ox == p->out0_xfer, "task_done names the output transfer %u", ox);
	check(sx != 0 && sx == p->stdout_xfer_id, "task_done names the stdout transfer %u", sx);
	json_decref(m);
	send_shutdown(p);
}

/* ---- scripts ----------------------------------------------------------------------------------
 */

/* Script disconnect: the connection is closed from the loop's next turn, outside the message
 * callback of the connection being closed. */
static uv_timer_t drop_timer;
static struct peer *drop_peer;

static void on_drop(uv_timer_t *t)
{
	uv_close((uv_handle_t *)t, NULL);
	if (drop_peer && !drop_peer->closed)
		wq_conn_close_now(drop_peer->c);
}

static void start_script(struct peer *p)
{
	if (!strcmp(script, "task")) {
		char hex[SHA256_HEX_SIZE];
		sha256_buffer("ACGT\n", 5, hex);
		snprintf(p->object, sizeof p->object, "F-%s", hex);
		json_t *target = wq_xfer_target_object(p->object, WQ_KEEP_RUN);
		wq_xfer_send_buffer(p->xout, "ACGT\n", 5, target, 0, "object", NULL);
		json_decref(target);
	} else if (!strcmp(script, "badname")) {
		json_t *t = task_msg(1, "true", 10);
		json_object_set_new(t, "inputs",
		                    json_pack("[{s:s,s:s}]", "name", "../x", "from", "task"));
		send_json(p, t);
	} else if (!strcmp(script, "cancel") || !strcmp(script, "drain")) {
		send_json(
		    p,
		    task_msg(1, !strcmp(script, "cancel") ? "sleep 30" : "sleep 1; echo hi", 10));
	} else if (!strcmp(script, "cancelsend")) {
		/* a 200 MB output, cancelled while it is being sent back */
		json_t *t = task_msg(1, "head -c 200000000 /dev/zero > big.out", 10);
		json_object_set_new(json_object_get(t, "resources"), "disk", json_integer(400));
		json_object_set_new(t, "outputs",
		                    json_pack("[{s:s,s:s}]", "name", "big.out", "when", "always"));
		send_json(p, t);
	} else if (!strcmp(script, "dismiss")) {
		if (p->n == 1)
			send_json(p, json_pack("{s:s,s:s,s:i}", "m", "dismiss", "reason", "test",
			                       "retry_after", 1));
		else
			send_shutdown(p);
	} else if (!strcmp(script, "shutdown")) {
		send_shutdown(p);
	} else if (!strcmp(script, "exhaust")) {
		send_json(
		    p, task_msg(1, "x=$(head -c 300000000 /dev/zero | tr '\\0' a); sleep 5", 30));
	} else if (!strcmp(script, "garbage")) {
		if (p->n == 1) {
			static const char junk[] = "{\"m\": this is not json";
			wq_conn_send_msg_bytes(p->c, junk, sizeof junk - 1);
		} else {
			send_shutdown(p);
		}
	} else if (!strcmp(script, "diskfull")) {
		size_t big = 20u << 20;
		char *buf = xcalloc(1, big);
		char hex[SHA256_HEX_SIZE];
		sha256_buffer(buf, big, hex);
		snprintf(p->object, sizeof p->object, "F-%s", hex);
		json_t *target = wq_xfer_target_object(p->object, WQ_KEEP_RUN);
		wq_xfer_send_buffer(p->xout, buf, big, target, 0, "big object", NULL);
		json_decref(target);
		free(buf);
	} else if (!strcmp(script, "aftertasks")) {
		send_json(p, task_msg(1, "echo one", 10));
	} else if (!strcmp(script, "disconnect")) {
		/* the master goes away without a word (as a master process that exits) */
		drop_peer = p;
		uv_timer_init(loop, &drop_timer);
		uv_timer_start(&drop_timer, on_drop, 0, 0);
	} else if (!strcmp(script, "signal")) {
		/* the test sends SIGTERM to the worker once the task runs */
		send_json(p, task_msg(1, "sleep 2; echo late", 10));
	} else if (!strcmp(script, "seccomp") || !strcmp(script, "seccompnet")) {
		const char *h = getenv("HTC_SECCOMP_HELPER");
		char *cmd = xasprintf("%s %s", h ? h : "helper_seccomp",
		                      !strcmp(script, "seccomp") ? "denied" : "net");
		send_json(p, task_msg(1, cmd, 500));
		free(cmd);
	} else if (!strcmp(script, "idle") || !strcmp(script, "refuse")) {
		/* nothing: the worker ends by itself */
	} else {
		check(false, "unknown script %s", script);
		done_all();
	}
}

/* Whether the JSON array A holds the string S. */
static bool array_has(json_t *a, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) if (json_is_string(v) &&
	                                !strcmp(json_string_value(v), s)) return true;
	return false;
}

/* The seccomp scripts: task 1 tried refused calls (every one failed with EPERM, so it exited
 * 0) and the summary names each; task 2 is ordinary work, which runs with nothing refused. */
static void check_seccomp_done(struct peer *p, json_t *m)
{
	static const char *const denied[] = {
	    "mount",   "umount2", "init_module", "delete_module",   "kexec_load",
	    "setns",   "unshare", "bpf",         "perf_event_open", "keyctl",
	    "add_key", "reboot",  "swapon",      "settimeofday",    "clock_settime",
	    "acct",    "syslog",  "userfaultfd", "ptrace",          "open_by_handle_at",
	    "clone",   NULL};
	json_t *list = json_object_get(json_object_get(m, "summary"), "seccomp_denied");
	int64_t id = iget(m, "id");
	bool exited0 = !strcmp(sget(m, "outcome"), "exited") && iget(m, "exit_status") == 0;
	if (id == 2) {
		check(exited0 && !list, "ordinary work exits 0 with nothing refused (outcome %s)",
		      sget(m, "outcome"));
		send_shutdown(p);
		return;
	}
	check(exited0, "task 1 exited 0: every refused call failed with EPERM (outcome %s)",
	      sget(m, "outcome"));
	if (!strcmp(script, "seccompnet")) {
		check(json_array_size(list) == 1 && array_has(list, "socket"),
		      "seccomp_denied is [\"socket\"]");
		send_shutdown(p);
		return;
	}
	for (int i = 0; denied[i]; i++)
		check(array_has(list, denied[i]), "seccomp_denied names %s", denied[i]);
	send_json(p, task_msg(2,
	                      "printf 'int f(void) { return 1; }\\n' > a.c && cc -c a.c && "
	                      "test -s a.o && python3 -c 'import json; print(json.dumps(1))' && "
	                      "seq 1 1000 | sort -rn | head -1 | grep -qx 1000",
	                      500));
}

static void on_script_message(struct peer *p, json_t *m, const char *name)
{
	char *dump = json_dumps(m, JSON_COMPACT);
	printf("# < %.300s\n", dump ? dump : name);
	fflush(stdout);
	free(dump);
	if (!strcmp(name, "bye")) {
		check(true, "bye received: %s", sget(m, "reason"));
		return;
	}
	if (!strcmp(script, "task")) {
		if (!strcmp(name, "task_running")) {
			check(iget(m, "id") == 1, "task_running for task 1");
		} else if (!strcmp(name, "task_done")) {
			p->done_msg = json_incref(m);
			check_task_done(p);
		}
	} else if (!strcmp(script, "badname")) {
		if (!strcmp(name, "task_refused")) {
			check(!strcmp(sget(m, "code"), "bad_name") &&
			          !strcmp(sget(m, "text"),
			                  "input name \"../x\": \"..\" is not allowed"),
			      "task_refused bad_name: %s", sget(m, "text"));
			send_json(p, task_msg(2, "echo still here", 10));
		} else if (!strcmp(name, "task_done")) {
			check(iget(m, "id") == 2 && !strcmp(sget(m, "outcome"), "exited"),
			      "the next task runs (task %lld %s)", (long long)iget(m, "id"),
			      sget(m, "outcome"));
			send_shutdown(p);
		}
	} else if (!strcmp(script, "cancel")) {
		if (!strcmp(name, "task_running")) {
			send_json(p, json_pack("{s:s,s:i,s:i,s:s}", "m", "task_cancel", "id", 1,
			                       "try", 1, "reason", "test"));
		} else if (!strcmp(name, "task_cancelled")) {
			bool known = json_is_true(json_object_get(m, "known"));
			if (p->step == 0) {
				check(iget(m, "id") == 1 && known,
				      "task_cancelled {id 1, known true}");
				p->step = 1;
				send_json(p, json_pack("{s:s,s:i,s:i,s:s}", "m", "task_cancel",
				                       "id", 99, "try", 1, "reason", "unknown"));
			} else if (p->step == 1) {
				check(iget(m, "id") == 99 && !known,
				      "task_cancelled {id 99, known false}");
				p->step = 2;
				send_shutdown(p);
			} else {
				check(false, "a second task_cancelled for one cancel");
			}
		} else if (!strcmp(name, "task_done")) {
			check(false, "task_done after a cancel");
		}
	} else if (!strcmp(script, "cancelsend")) {
		if (!strcmp(name, "task_cancelled")) {
			check(iget(m, "id") == 1 && json_is_true(json_object_get(m, "known")),
			      "task_cancelled {id 1, known true} while its output was being sent");
			p->step |= 2;
			if (p->step == 3)
				send_shutdown(p);
		} else if (!strcmp(name, "task_done")) {
			check(false, "task_done after a cancel");
		}
	} else if (!strcmp(script, "drain")) {
		if (!strcmp(name, "task_running")) {
			send_json(p, json_pack("{s:s,s:s}", "m", "drain", "reason", "test"));
		} else if (!strcmp(name, "draining")) {
			check(true, "draining received");
			send_json(p, task_msg(2, "true", 10));
		} else if (!strcmp(name, "task_refused")) {
			check(iget(m, "id") == 2 && !strcmp(sget(m, "code"), "draining"),
			      "task 2 refused: %s", sget(m, "code"));
		} else if (!strcmp(name, "task_done")) {
			check(iget(m, "id") == 1 && !strcmp(sget(m, "outcome"), "exited"),
			      "task 1 finished while draining");
		}
	} else if (!strcmp(script, "exhaust")) {
		if (!strcmp(name, "task_done")) {
			json_t *ex = json_object_get(m, "exhausted");
			bool mem = false;
			size_t i;
			json_t *v;
			json_array_foreach(ex, i, v) mem |= !strcmp(json_string_value(v), "memory");
			check(!strcmp(sget(m, "outcome"), "exhausted") && mem,
			      "task_done exhausted memory (outcome %s)", sget(m, "outcome"));
			send_shutdown(p);
		}
	} else if (!strcmp(script, "diskfull")) {
		if (!strcmp(name, "task_refused")) {
			check(iget(m, "id") == 2 && !strcmp(sget(m, "code"), "disk_full"),
			      "task 2 (disk 50 MB) refused: %s %s", sget(m, "code"),
			      sget(m, "text"));
			p->step++;
		} else if (!strcmp(name, "task_done")) {
			check(iget(m, "id") == 1 && !strcmp(sget(m, "outcome"), "exited"),
			      "task 1 (disk 5 MB) still runs");
			p->step++;
		}
		if (p->step == 2) {
			p->step = 3;
			send_shutdown(p);
		}
	} else if (!strcmp(script, "signal")) {
		if (!strcmp(name, "draining")) {
			check(p->step == 0, "draining after SIGTERM, before task_done");
			p->step = 1;
		} else if (!strcmp(name, "task_done")) {
			check(p->step == 1 && !strcmp(sget(m, "outcome"), "exited"),
			      "the running task finished and was reported");
		}
	} else if (!strcmp(script, "aftertasks")) {
		if (!strcmp(name, "task_done"))
			check(!strcmp(sget(m, "outcome"), "exited"), "single task done");
		else if (!strcmp(name, "draining"))
			check(true, "draining after the single task");
	} else if (!strcmp(script, "seccomp") || !strcmp(script, "seccompnet")) {
		if (!strcmp(name, "task_done"))
			check_seccomp_done(p, m);
	} else if (!strcmp(script, "garbage") && !strcmp(name, "error")) {
		check(!strcmp(sget(m, "code"), "proto"), "the worker answered error %s: %s",
		      sget(m, "code"), sget(m, "text"));
	}
}

/* ---- connection ------------------------------------------------------------------------------ */

static void on_message(struct wq_conn *c, json_t *msg, const char *name, const uint8_t *raw,
                       size_t len, void *user)
{
	(void)c;
	struct peer *p = user;
	if (p->h && wq_handshake_message(p->h, msg, name, raw, len))
		return;
	if (!p->active)
		return;
	if (p->xin && wq_xfer_in_message(p->xin, msg, name))
		return;
	if (!strcmp(name, "xfer_error")) {
		wq_xfer_out_message(p->xout, msg, name);
		return;
	}
	if (!p->reported) {
		if (!strcmp(name, "identity")) {
			struct wq_identity *id = NULL;
			char *why = NULL;
			check(wq_msg_identity_parse(msg, &id, &why) == 0, "identity is valid%s%s",
			      why ? ": " : "", why ? why : "");
			if (id && !strcmp(script, "aftertasks"))
				check(id->max_tasks == 1, "identity max_tasks is 1 (got %lld)",
				      (long long)id->max_tasks);
			wq_identity_free(id);
			free(why);
			p->got_identity = true;
		} else if (!strcmp(name, "capacity")) {
			struct wq_capacity *cap = NULL;
			char *why = NULL;
			check(p->got_identity && wq_msg_capacity_parse(msg, &cap, &why) == 0,
			      "capacity after identity%s%s", why ? ": " : "", why ? why : "");
			wq_capacity_free(cap);
			free(why);
			p->got_capacity = true;
		} else if (!strcmp(name, "cache_have")) {
			if (json_is_true(json_object_get(msg, "last"))) {
				check(p->got_capacity,
				      "cache_have last after capacity (connection %d)", p->n);
				p->reported = true;
				start_script(p);
			}
		}
		return;
	}
	on_script_message(p, msg, name);
}

static void on_data(struct wq_conn *c, uint32_t xfer, const uint8_t *b, size_t len, void *user)
{
	(void)c;
	struct peer *p = user;
	if (p->h && wq_handshake_data(p->h, xfer))
		return;
	if (p->xin)
		wq_xfer_in_data(p->xin, xfer, b, len);
}

static void on_writable(struct wq_conn *c, void *user)
{
	(void)c;
	struct peer *p = user;
	if (p->xout)
		wq_xfer_out_writable(p->xout);
}

static void on_closed(struct wq_conn *c, enum wq_conn_end why, const char *text, void *user)
{
	(void)c;
	struct peer *p = user;
	if (p->h && !wq_handshake_finished(p->h))
		wq_handshake_closed(p->h, why, text);
	printf("# connection %d closed: %s: %s\n", p->n, wq_conn_end_name(why), text);
	fflush(stdout);
	p->closed = true;
	wq_xfer_out_delete(p->xout);
	wq_xfer_in_delete(p->xin);
	p->xout = NULL;
	p->xin = NULL;
	wq_handshake_delete(p->h);
	p->h = NULL;
	wq_conn_delete(p->c);
	free(p->out0);
	free(p->stdout_text);
	json_decref(p->done_msg);
	bool again =
	    (!strcmp(script, "dismiss") || !strcmp(script, "garbage")) && p->n == 1 && p->active;
	free(p);
	if (!again)
		done_all();
}

static const struct wq_conn_callbacks cbs = {on_message, on_data, on_writable, on_closed};

static void hs_done(struct wq_handshake *h, const struct wq_hs_result *r, void *user)
{
	struct peer *p = user;
	printf("# handshake %d: %s %s %s\n", p->n, wq_hs_outcome_name(r->outcome), r->code,
	       r->text);
	fflush(stdout);
	wq_handshake_delete(h);
	p->h = NULL;
	if (!strcmp(script, "refuse")) {
		/* the worker has the wrong password: refused for good */
		check(r->outcome == WQ_HS_PERMANENT && !strcmp(r->code, "auth"),
		      "the worker is refused: %s %s", wq_hs_outcome_name(r->outcome), r->code);
		return;
	}
	if (r->outcome != WQ_HS_OK)
		return;
	p->active = true;
	wq_conn_set_keepalive(p->c, 30000, 120000);
	p->xin = wq_xfer_in_create(loop, p->c, true, r->caps, &in_cb, p);
	p->xout = wq_xfer_out_create(loop, p->c, (r->caps & WQ_CAP_ZLIB) != 0, &out_cb, p);
}

static void on_connection(uv_stream_t *srv, int status)
{
	if (status < 0 || finished)
		return;
	uv_tcp_t *tcp = xmalloc(sizeof *tcp);
	uv_tcp_init(loop, tcp);
	if (uv_accept(srv, (uv_stream_t *)tcp) != 0) {
		uv_close((uv_handle_t *)tcp, (uv_close_cb)free);
		return;
	}
	struct peer *p = xcalloc(1, sizeof *p);
	p->n = ++connections;
	p->c = wq_conn_create(tcp, "wq: worker", &cbs, p);
	if (!p->c) {
		free(p);
		return;
	}
	struct wq_hs_config cfg = {
	    .master = true,
	    .key = key,
	    .software = "htc fake",
	    .id = "c0ffee00112233445566778899aabbcc",
	    .project = "demo",
	    .caps = WQ_CAPS_ALL,
	    .keepalive_interval = 30,
	    .keepalive_timeout = 120,
	};
	char *err = NULL;
	p->h = wq_handshake_start(loop, p->c, &cfg, hs_done, p, &err);
	if (!p->h) {
		check(false, "handshake start: %s", err ? err : "?");
		free(err);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "not ok - the script did not finish within 40 s\n";
	if (write(1, m, sizeof m - 1) < 0)
		_exit(1);
	_exit(1);
}

int main(int argc, char *argv[])
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SCRIPT PORTFILE [PASSWORD_FILE]\n", argv[0]);
		return 2;
	}
	script = argv[1];
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm(40);
	if (argc > 3) {
		char *why = NULL;
		key = wq_auth_key_load(argv[3], &why);
		if (!key) {
			fprintf(stderr, "%s\n", why ? why : "bad password file");
			return 2;
		}
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	loop = uv_default_loop();
	uv_tcp_init(loop, &server);
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	if (uv_tcp_bind(&server, (const struct sockaddr *)&a, 0) != 0 ||
	    uv_listen((uv_stream_t *)&server, 8, on_connection) != 0) {
		perror("listen");
		return 2;
	}
	struct sockaddr_storage ss;
	int len = sizeof ss;
	uv_tcp_getsockname(&server, (struct sockaddr *)&ss, &len);
	int port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0 || rename(tmp, argv[2]) != 0) {
		perror(argv[2]);
		return 2;
	}
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	rmdir(tmpdir);
	wq_auth_key_delete(key);
	if (checks == 0)
		check(false, "no check was made");
	printf("# %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
