/* ts_net.h: connected stream pairs for tests of protocol code, on a libuv loop: a loopback TCP
 * connection (client and accepted end) and a socketpair(AF_UNIX) wrapped as two uv_tcp_t, so that
 * code written for TCP streams can be driven end to end without a port. */
#ifndef HTC_TS_NET_H
#define HTC_TS_NET_H

#include <uv.h>

/* A TCP connection over 127.0.0.1: *CLIENT connected to *SERVER, both malloc'd and initialised on
 * LOOP (the caller owns them: uv_close them with a callback that frees, or hand them to code that
 * takes them over). Runs LOOP until both ends exist; the listener is closed again. */
void ts_tcp_pair(uv_loop_t *loop, uv_tcp_t **client, uv_tcp_t **server);

/* The same over socketpair(AF_UNIX, SOCK_STREAM): no port, no listener, nothing run on LOOP. TCP
 * socket options (nodelay, keepalive) fail on these ends, which code under test must tolerate. */
void ts_socket_pair(uv_loop_t *loop, uv_tcp_t **a, uv_tcp_t **b);

#endif
