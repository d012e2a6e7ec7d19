/* helper_k8s_probe.c: drives the Kubernetes client against a real API server for the e2e
 * suite 60-k8s.sh: creates busybox pods, follows them with one watch to Succeeded or Failed,
 * prints each pod's phase, exit code and reason, deletes them; lists, gets and deletes pods.
 * Errors go to stderr as the client wrote them; the exit status is 1 on any error. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "k8s_client.h"
#include "k8s_config.h"
#include "k8s_pods.h"
#include "k8s_watch.h"
#include "timeutil.h"
#include "xalloc.h"

#include "banned.h"

#define MAX_PODS 256

static volatile int stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: helper_k8s_probe [--kubeconfig F] [--context C] [--namespace NS]\n"
	    "         [--in-cluster SA-DIR] [--retry-ms MS] [--give-up-ms MS] COMMAND ...\n"
	    "  run [--image I] [--memory M] [--deadline S] [--label VALUE] NAME=SHELL-COMMAND...\n"
	    "  list [--selector S]\n"
	    "  get NAME\n"
	    "  delete NAME\n"
	    "  watch --selector S --from RV --count N   (prints each event until N)\n");
}

struct pod {
	char *name;
	bool done;
};

struct run {
	struct pod pods[MAX_PODS];
	int n, left;
};

static void report(struct run *r, json_t *pod)
{
	const char *name =
	    json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
	if (!name)
		return;
	for (int i = 0; i < r->n; i++) {
		if (r->pods[i].done || strcmp(r->pods[i].name, name) != 0)
			continue;
		struct k8s_pod_result res;
		k8s_pod_result(pod, "main", &res);
		if (!res.finished && !res.stuck)
			return;
		printf("%s phase=%s exit=%d reason=%s oom=%d deadline=%d stuck=%d\n", name,
		       k8s_pod_phase_name(res.phase), res.exit_code,
		       res.stuck       ? res.waiting
		       : res.reason[0] ? res.reason
		                       : "-",
		       res.oom, res.deadline, res.stuck);
		if (res.stuck)
			printf("%s message=%s\n", name, res.message);
		fflush(stdout);
		r->pods[i].done = true;
		r->left--;
	}
}

static bool on_event(enum k8s_watch_event ev, json_t *obj, void *arg)
{
	struct run *r = arg;
	if (ev == K8S_WATCH_RELISTED) {
		size_t i;
		json_t *p;
		json_array_foreach(obj, i, p) report(r, p);
	} else if (ev != K8S_WATCH_DELETED) {
		report(r, obj);
	}
	return r->left > 0;
}

static json_t *pod_spec(const char *name, const char *cmd, const char *image, const char *memory,
                        long deadline, const char *label)
{
	json_t *c = json_pack("{s:s,s:s,s:s,s:[s,s,s]}", "name", "main", "image", image,
	                      "imagePullPolicy", "Never", "command", "sh", "-c", cmd);
	if (memory)
		json_object_set_new(c, "resources",
		                    json_pack("{s:{s:s},s:{s:s}}", "limits", "memory", memory,
		                              "requests", "memory", memory));
	json_t *spec = json_pack("{s:s,s:i,s:[o]}", "restartPolicy", "Never",
	                         "terminationGracePeriodSeconds", 1, "containers", c);
	if (deadline > 0)
		json_object_set_new(spec, "activeDeadlineSeconds", json_integer(deadline));
	return json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:o}", "apiVersion", "v1", "kind", "Pod",
	                 "metadata", "name", name, "labels", "htc-probe", label, "spec", spec);
}

static int cmd_run(struct k8s_client *k, const char *ns, long give_up, int argc, char **argv)
{
	const char *image = "busybox:local", *memory = NULL;
	char *label = xasprintf("p%ld", (long)getpid());
	long deadline = 0;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i += 2) {
		if (i + 1 >= argc) {
			usage();
			return 2;
		}
		if (strcmp(argv[i], "--image") == 0)
			image = argv[i + 1];
		else if (strcmp(argv[i], "--memory") == 0)
			memory = argv[i + 1];
		else if (strcmp(argv[i], "--deadline") == 0)
			deadline = strtol(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--label") == 0) {
			free(label);
			label = xstrdup(argv[i + 1]);
		} else {
			usage();
			return 2;
		}
	}
	struct run *r = xcalloc(1, sizeof *r);
	int rc = 0;
	char *err = NULL;
	int64_t t0 = time_monotonic_us();
	for (; i < argc && r->n < MAX_PODS; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq) {
			usage();
			rc = 2;
			goto out;
		}
		char *name = xstrndup(argv[i], (size_t)(eq - argv[i]));
		json_t *pod = pod_spec(name, eq + 1, image, memory, deadline, label);
		int e = k8s_pod_create(k, ns, pod, NULL, &err);
		json_decref(pod);
		if (e < 0) {
			fprintf(stderr, "probe: %s\n", err);
			free(err);
			free(name);
			rc = 1;
			goto out;
		}
		printf("created %s\n", name);
		fflush(stdout);
		r->pods[r->n++].name = name;
	}
	r->left = r->n;
	char *sel = xasprintf("htc-probe=%s", label);
	struct k8s_watch_options wo = {
	    .ns = ns, .selector = sel, .give_up_ms = give_up, .stop = &stop_flag};
	struct k8s_watch_stats st;
	int e = k8s_watch_run(k, &wo, on_event, r, &st, &err);
	free(sel);
	if (e < 0) {
		fprintf(stderr, "probe: %s\n", err);
		free(err);
		rc = 1;
	}
	printf("watch streams=%d resumed=%d relisted=%d seconds=%.1f\n", st.streams, st.resumed,
	       st.relisted, (time_monotonic_us() - t0) / 1e6);
out:
	for (int j = 0; j < r->n; j++) {
		if (k8s_pod_delete(k, ns, r->pods[j].name, 0, &err) < 0) {
			fprintf(stderr, "probe: %s\n", err);
			free(err);
			rc = 1;
		}
		free(r->pods[j].name);
	}
	free(r);
	free(label);
	return rc;
}

struct counter {
	int left;
};

static bool print_event(enum k8s_watch_event ev, json_t *obj, void *arg)
{
	struct counter *c = arg;
	static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "RELISTED"};
	if (ev == K8S_WATCH_RELISTED) {
		printf("RELISTED %zu\n", json_array_size(obj));
	} else {
		struct k8s_pod_result res;
		k8s_pod_result(obj, NULL, &res);
		printf("%s %s %s\n", names[ev],
		       json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")),
		       k8s_pod_phase_name(res.phase));
	}
	fflush(stdout);
	return --c->left > 0;
}

static int cmd_watch(struct k8s_client *k, const char *ns, long give_up, int argc, char **argv)
{
	const char *sel = NULL, *from = NULL;
	struct counter c = {1};
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--selector") == 0)
			sel = argv[i + 1];
		else if (strcmp(argv[i], "--from") == 0)
			from = argv[i + 1];
		else if (strcmp(argv[i], "--count") == 0)
			c.left = atoi(argv[i + 1]);
	}
	struct k8s_watch_options wo = {.ns = ns,
	                               .selector = sel,
	                               .resource_version = from,
	                               .give_up_ms = give_up,
	                               .stop = &stop_flag};
	struct k8s_watch_stats st;
	char *err = NULL;
	int e = k8s_watch_run(k, &wo, print_event, &c, &st, &err);
	printf("watch streams=%d resumed=%d relisted=%d\n", st.streams, st.resumed, st.relisted);
	if (e < 0) {
		fprintf(stderr, "probe: %s\n", err);
		free(err);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"kubeconfig", required_argument, NULL, 'k'},
	                                     {"context", required_argument, NULL, 'c'},
	                                     {"namespace", required_argument, NULL, 'n'},
	                                     {"retry-ms", required_argument, NULL, 'r'},
	                                     {"give-up-ms", required_argument, NULL, 'g'},
	                                     {"in-cluster", required_argument, NULL, 'i'},
	                                     {NULL, 0, NULL, 0}};
	const char *kubeconfig = NULL, *context = NULL, *ns = NULL, *sa_dir = NULL;
	struct k8s_client_options co = {0};
	long give_up = 0;
	int o;
	while ((o = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (o) {
		case 'k': kubeconfig = optarg; break;
		case 'c': context = optarg; break;
		case 'n': ns = optarg; break;
		case 'r': co.retry_ms = strtol(optarg, NULL, 10); break;
		case 'g': give_up = strtol(optarg, NULL, 10); break;
		case 'i': sa_dir = optarg; break;
		default: usage(); return 2;
		}
	}
	if (optind >= argc) {
		usage();
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	char *err = NULL;
	struct k8s_config *cfg = sa_dir ? k8s_config_in_cluster(sa_dir, &err)
	                                : k8s_config_load(kubeconfig, context, &err);
	if (!cfg) {
		fprintf(stderr, "probe: %s\n", err);
		free(err);
		return 1;
	}
	if (!ns)
		ns = cfg->namespace;
	char *nsc = xstrdup(ns);
	struct k8s_client *k = k8s_client_create(cfg, &co);
	int rc = 0;
	const char *cmd = argv[optind];
	int cargc = argc - optind;
	char **cargv = argv + optind;
	if (strcmp(cmd, "run") == 0) {
		rc = cmd_run(k, nsc, give_up, cargc, cargv);
	} else if (strcmp(cmd, "watch") == 0) {
		rc = cmd_watch(k, nsc, give_up, cargc, cargv);
	} else if (strcmp(cmd, "list") == 0) {
		const char *sel =
		    cargc >= 3 && strcmp(cargv[1], "--selector") == 0 ? cargv[2] : NULL;
		json_t *items = NULL;
		char *rv = NULL;
		if (k8s_pod_list(k, nsc, sel, &items, &rv, &err) < 0) {
			fprintf(stderr, "probe: %s\n", err);
			rc = 1;
		} else {
			printf("%zu pods rv=%s\n", json_array_size(items), rv ? rv : "-");
		}
		json_decref(items);
		free(rv);
	} else if ((strcmp(cmd, "get") == 0 || strcmp(cmd, "delete") == 0) && cargc == 2) {
		json_t *pod = NULL;
		int e = strcmp(cmd, "get") == 0 ? k8s_pod_get(k, nsc, cargv[1], &pod, &err)
		                                : k8s_pod_delete(k, nsc, cargv[1], 0, &err);
		if (e < 0) {
			fprintf(stderr, "probe: %s\n", err);
			rc = 1;
		} else if (pod) {
			struct k8s_pod_result res;
			k8s_pod_result(pod, NULL, &res);
			printf("%s phase=%s\n", cargv[1], k8s_pod_phase_name(res.phase));
		}
		json_decref(pod);
	} else {
		usage();
		rc = 2;
	}
	free(err);
	free(nsc);
	k8s_client_delete(k);
	return rc;
}
