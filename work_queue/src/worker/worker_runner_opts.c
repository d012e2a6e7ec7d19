/* worker_runner_opts.c: parses the container runner's arguments (the words worker_docker_argv
 * writes after "--container-run") into struct worker_runner_opts. See worker_runner_opts.h. */
#include "worker_runner_opts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "htc_error.h"
#include "path.h"
#include "xalloc.h"

#include "banned.h"

void worker_runner_opts_clear(struct worker_runner_opts *o)
{
	for (size_t i = 0; i < o->n_binds; i++)
		free(o->binds[i]);
	free(o->binds);
	memset(o, 0, sizeof *o);
}

/* One argument A with its value V. */
static int parse_one(struct worker_runner_opts *o, const char *a, const char *v, char *err,
                     size_t errlen)
{
	if (strcmp(a, "--socket") == 0) {
		o->socket = v;
	} else if (strcmp(a, "--image") == 0) {
		o->image = v;
	} else if (strcmp(a, "--shared") == 0) {
		o->shared = v;
	} else if (strcmp(a, "--agent") == 0) {
		if (strchr(v, '/'))
			return cli_error(err, errlen, "--agent %s: a socket name, not a path", v);
		o->agent = v;
	} else if (strcmp(a, "--load") == 0) {
		o->load = v;
	} else if (strcmp(a, "--key") == 0) {
		o->key = v;
	} else if (strcmp(a, "--state") == 0) {
		o->state = v;
	} else if (strcmp(a, "--owner") == 0) {
		o->owner = v;
	} else if (strcmp(a, "--workdir") == 0) {
		o->workdir = v;
	} else if (strcmp(a, "--ahead") == 0) {
		if (!path_is_absolute(v))
			return cli_error(err, errlen, "--ahead %s: not an absolute path", v);
		o->ahead = v;
	} else if (strcmp(a, "--bind") == 0 || strcmp(a, "--bind-ro") == 0) {
		if (!path_is_absolute(v))
			return cli_error(err, errlen, "%s %s: not an absolute path", a, v);
		o->binds[o->n_binds++] = xasprintf("%s:%s%s", v, v, a[6] ? ":ro" : "");
	} else {
		return cli_error(err, errlen, "unknown option %s", a);
	}
	return 0;
}

int worker_runner_opts_parse(int argc, char *argv[], struct worker_runner_opts *o, char *err,
                             size_t errlen)
{
	memset(o, 0, sizeof *o);
	/* every bind takes two words, so there are fewer than ARGC of them */
	o->binds = xcalloc((size_t)argc, sizeof *o->binds);
	int i = 2, r = 0;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "--nest") == 0) {
			o->nest = true;
			continue;
		}
		if (strcmp(a, "--shared-image") == 0) {
			o->shared_image = true;
			continue;
		}
		if (i + 1 >= argc) {
			r = cli_error(err, errlen, "%s: needs a value", a);
			goto out;
		}
		r = parse_one(o, a, argv[++i], err, errlen);
		if (r < 0)
			goto out;
	}
	if ((o->load || o->shared_image) && (!o->state || !o->owner)) {
		r = cli_error(err, errlen, "--load and --shared-image need --state and --owner");
		goto out;
	}
	if (o->agent && (!o->shared || !o->state)) {
		r = cli_error(err, errlen, "--agent needs --shared and --state");
		goto out;
	}
	if (o->ahead && (o->shared || o->shared_image)) {
		r = cli_error(err, errlen,
		              "--ahead makes a task's own container, not a shared one");
		goto out;
	}
	if (o->load && !o->key) {
		r = cli_error(err, errlen, "--load needs --key");
		goto out;
	}
	if ((!o->image && !o->load) || !o->workdir || i >= argc) {
		r = cli_error(err, errlen,
		              "usage: --container-run [--socket S] --image IMG [--shared ID "
		              "[--agent NAME]] [--ahead DIR] [--nest] "
		              "--workdir DIR [--bind DIR] [--bind-ro DIR] -- CMD...");
		goto out;
	}
	o->cmd = argv + i;
	o->n_cmd = argc - i;
out:
	if (r < 0)
		worker_runner_opts_clear(o);
	return r;
}
