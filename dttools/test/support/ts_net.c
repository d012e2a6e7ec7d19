/* ts_net.c: connected stream pairs for tests (see ts_net.h). The TCP pair listens on an
 * ephemeral port of 127.0.0.1 for one connection and closes the listener once it is accepted. */
#include "ts_net.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ts_loop.h"
#include "xalloc.h"
#include "banned.h"

struct pairing {
	uv_loop_t *loop;
	uv_tcp_t *listener;
	uv_tcp_t *accepted;
	uv_connect_t creq;
	bool connected;
};

static void on_connection(uv_stream_t *server, int status)
{
	struct pairing *p = server->data;
	assert_int_equal(status, 0);
	if (p->accepted)
		return;
	p->accepted = xmalloc(sizeof *p->accepted);
	uv_tcp_init(p->loop, p->accepted);
	assert_int_equal(uv_accept(server, (uv_stream_t *)p->accepted), 0);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct pairing *p = req->data;
	assert_int_equal(status, 0);
	p->connected = true;
}

static bool paired(void *arg)
{
	struct pairing *p = arg;
	return p->connected && p->accepted;
}

void ts_tcp_pair(uv_loop_t *loop, uv_tcp_t **client, uv_tcp_t **server)
{
	struct pairing p = {.loop = loop};
	p.listener = xmalloc(sizeof *p.listener);
	uv_tcp_init(loop, p.listener);
	p.listener->data = &p;
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	assert_int_equal(uv_tcp_bind(p.listener, (struct sockaddr *)&a, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *)p.listener, 1, on_connection), 0);
	struct sockaddr_storage ss;
	int n = sizeof ss;
	assert_int_equal(uv_tcp_getsockname(p.listener, (struct sockaddr *)&ss, &n), 0);
	uv_tcp_t *c = xmalloc(sizeof *c);
	uv_tcp_init(loop, c);
	p.creq.data = &p;
	assert_int_equal(uv_tcp_connect(&p.creq, c, (struct sockaddr *)&ss, on_connect), 0);
	assert_true(ts_run_until(loop, paired, &p, TS_WAIT_MS));
	uv_close((uv_handle_t *)p.listener, (uv_close_cb)free);
	*client = c;
	*server = p.accepted;
}

void ts_socket_pair(uv_loop_t *loop, uv_tcp_t **a, uv_tcp_t **b)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		fail_msg("socketpair: %s", strerror(errno));
	uv_tcp_t *ends[2];
	for (int i = 0; i < 2; i++) {
		ends[i] = xmalloc(sizeof *ends[i]);
		assert_int_equal(uv_tcp_init(loop, ends[i]), 0);
		assert_int_equal(uv_tcp_open(ends[i], sv[i]), 0);
	}
	*a = ends[0];
	*b = ends[1];
}
