/* helper_sim_workers.c: the load generator, a test instrument: N simulated workers (wq_sim.h) in
 * one process and one libuv loop, connected to a real master. It runs until the master dismisses
 * them all, --time passes, --tasks are done, or SIGINT/SIGTERM, then prints one JSON line of
 * counts (connected, tasks done, errors) and exits 0 (1 when none ever connected). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <uv.h>

#include "wq_auth.h"
#include "wq_sim.h"
#include "xalloc.h"
#include "banned.h"

static const char usage[] =
    "usage: helper_sim_workers [options] HOST:PORT\n"
    "  -n, --workers N        simulated workers (default 1)\n"
    "  -c, --cores N          cores per worker (default 4)\n"
    "  -d, --duration DIST    fixed:S, uniform:MEAN or exp:MEAN seconds (default fixed:0)\n"
    "  -a, --addrs K          spread the workers over 127.0.0.1 .. 127.0.0.K\n"
    "  -p, --password FILE    the master's password file\n"
    "  -q, --queue-max N      queued tasks offered (0: 2 x cores, -1: no queue)\n"
    "  -w, --connect-window S spread the connects over S seconds (default 0)\n"
    "  -r, --retry S          first backoff after a failed attempt (default 1; doubles to 60)\n"
    "  -t, --time S           stop after S seconds\n"
    "  -T, --tasks N          stop once N tasks are done\n"
    "  -o, --stdout TEXT      each task's stdout\n"
    "  -e, --exit-status N    each task's exit status (default 0)\n";

/* Writes HOST's first IPv4 address into IP; says why on stderr and returns -1 when it has none. */
static int resolve_ipv4(const char *host, char ip[INET_ADDRSTRLEN])
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	int r = getaddrinfo(host, NULL, &hints, &res);
	if (r != 0 || !res) {
		fprintf(stderr, "helper_sim_workers: cannot resolve %s to an IPv4 address: %s\n",
		        host, r ? gai_strerror(r) : "no address");
		return -1;
	}
	const struct sockaddr_in *sin = (const struct sockaddr_in *)res->ai_addr;
	inet_ntop(AF_INET, &sin->sin_addr, ip, INET_ADDRSTRLEN);
	freeaddrinfo(res);
	return 0;
}

struct run {
	struct wq_sim *sim;
	uv_timer_t check;
	uv_signal_t sigint, sigterm;
	uint64_t end_ms; /* 0: none */
	uint64_t tasks;  /* 0: none */
	int stopping;
	uint64_t stop_ms;
};

static void stop(struct run *r)
{
	if (r->stopping)
		return;
	r->stopping = 1;
	r->stop_ms = uv_now(r->check.loop);
	wq_sim_stop(r->sim);
}

static void on_check(uv_timer_t *t)
{
	struct run *r = t->data;
	struct wq_sim_stats st;
	wq_sim_get_stats(r->sim, &st);
	uint64_t now = uv_now(t->loop);
	if ((r->end_ms && now >= r->end_ms) || (r->tasks && st.tasks_done >= r->tasks))
		stop(r);
	bool all_ended = st.ended == st.workers;
	if (all_ended || (r->stopping && (st.active == 0 || now - r->stop_ms > 3000))) {
		uv_timer_stop(t);
		uv_signal_stop(&r->sigint);
		uv_signal_stop(&r->sigterm);
		uv_stop(t->loop);
	}
}

static void on_signal(uv_signal_t *s, int signum)
{
	(void)signum;
	stop(s->data);
}

static int parse_dist(const char *s, struct wq_sim_opts *o)
{
	const char *colon = strchr(s, ':');
	if (!colon)
		return -1;
	size_t n = (size_t)(colon - s);
	if (n == 5 && !strncmp(s, "fixed", 5))
		o->dist = WQ_SIM_FIXED;
	else if (n == 7 && !strncmp(s, "uniform", 7))
		o->dist = WQ_SIM_UNIFORM;
	else if (n == 3 && !strncmp(s, "exp", 3))
		o->dist = WQ_SIM_EXP;
	else
		return -1;
	char *end;
	o->mean = strtod(colon + 1, &end);
	return *end || o->mean < 0 ? -1 : 0;
}

static void close_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {{"workers", 1, 0, 'n'},
	                                      {"cores", 1, 0, 'c'},
	                                      {"duration", 1, 0, 'd'},
	                                      {"addrs", 1, 0, 'a'},
	                                      {"password", 1, 0, 'p'},
	                                      {"queue-max", 1, 0, 'q'},
	                                      {"time", 1, 0, 't'},
	                                      {"tasks", 1, 0, 'T'},
	                                      {"stdout", 1, 0, 'o'},
	                                      {"exit-status", 1, 0, 'e'},
	                                      {"connect-window", 1, 0, 'w'},
	                                      {"retry", 1, 0, 'r'},
	                                      {0, 0, 0, 0}};
	struct wq_sim_opts o = {0};
	o.workers = 1;
	const char *pwfile = NULL;
	double seconds = 0;
	long long tasks = 0;
	int c;
	while ((c = getopt_long(argc, argv, "n:c:d:a:p:q:t:T:o:e:w:r:", longs, NULL)) != -1) {
		switch (c) {
		case 'n': o.workers = atoi(optarg); break;
		case 'c': o.cores = atoi(optarg); break;
		case 'd':
			if (parse_dist(optarg, &o) < 0) {
				fprintf(stderr, "helper_sim_workers: bad duration %s\n", optarg);
				return 2;
			}
			break;
		case 'a': o.addrs = atoi(optarg); break;
		case 'p': pwfile = optarg; break;
		case 'q': o.queue_max = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'T': tasks = atoll(optarg); break;
		case 'o': o.stdout_text = optarg; break;
		case 'e': o.exit_status = atoi(optarg); break;
		case 'w': o.connect_window = atof(optarg); break;
		case 'r': o.retry = atof(optarg); break;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		fputs(usage, stderr);
		return 2;
	}
	char *hostport = xstrdup(argv[optind]);
	char *colon = strrchr(hostport, ':');
	if (!colon) {
		fputs(usage, stderr);
		return 2;
	}
	*colon = 0;
	char *end = NULL;
	long port = strtol(colon + 1, &end, 10);
	if (!*(colon + 1) || *end || port < 1 || port > 65535) {
		fprintf(stderr, "helper_sim_workers: bad port in %s\n", argv[optind]);
		return 2;
	}
	/* the simulated workers connect to an IPv4 address: a name is resolved once, here */
	char ip[INET_ADDRSTRLEN];
	if (resolve_ipv4(hostport, ip) != 0)
		return 2;
	o.host = ip;
	o.port = (int)port;
	struct wq_auth_key *key = NULL;
	if (pwfile) {
		char *why = NULL;
		key = wq_auth_key_load(pwfile, &why);
		if (!key) {
			fprintf(stderr, "helper_sim_workers: %s\n", why ? why : pwfile);
			return 2;
		}
		o.key = key;
	}
	/* one descriptor per worker, and a few for the loop */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct run r = {0};
	r.sim = wq_sim_create(&loop, &o);
	if (!r.sim) {
		fprintf(stderr, "helper_sim_workers: bad options\n");
		return 2;
	}
	uv_timer_init(&loop, &r.check);
	r.check.data = &r;
	uv_timer_start(&r.check, on_check, 50, 50);
	r.end_ms = seconds > 0 ? uv_now(&loop) + (uint64_t)(seconds * 1000) : 0;
	r.tasks = tasks > 0 ? (uint64_t)tasks : 0;
	uv_signal_init(&loop, &r.sigint);
	uv_signal_init(&loop, &r.sigterm);
	r.sigint.data = r.sigterm.data = &r;
	uv_signal_start(&r.sigint, on_signal, SIGINT);
	uv_signal_start(&r.sigterm, on_signal, SIGTERM);
	uv_run(&loop, UV_RUN_DEFAULT);
	struct wq_sim_stats st;
	wq_sim_get_stats(r.sim, &st);
	char *json = wq_sim_stats_json(r.sim);
	printf("%s\n", json);
	fflush(stdout);
	free(json);
	wq_sim_delete(r.sim);
	uv_walk(&loop, close_walk, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	wq_auth_key_delete(key);
	free(hostport);
	return st.ever_active > 0 ? 0 : 1;
}
