/* work_queue_factory_main.c: the work_queue_factory program. It keeps Work Queue workers running
 * on a batch system (the batch drivers of this project; -T local here) for one master (HOST PORT)
 * or for the masters of a project (-M, through the catalog): every period it reads the demand
 * (tasks waiting and running), starts the workers it lacks within --min-workers/--max-workers
 * and --workers-per-cycle, and lets idle workers leave by their own idle timeout. Options:
 * work_queue_factory_opts; the run: wq_factory_run. */
#include <signal.h>
#include <stdio.h>

#include "cli.h"
#include "debug.h"
#include "work_queue_factory_opts.h"
#include "wq_factory_run.h"

#include "banned.h"

int main(int argc, char **argv)
{
	debug_config_program("work_queue_factory");
	signal(SIGPIPE, SIG_IGN); /* a --scaler-hook that does not read its input */
	struct work_queue_factory_opts o;
	char err[1024] = "";
	int r = work_queue_factory_opts_parse(argc, argv, &o, err, sizeof err);
	if (r == CLI_EXIT)
		return 0;
	if (r < 0)
		fatal("%s", err);
	if (wq_factory_run(&o, err, sizeof err) < 0)
		fatal("%s", err);
	work_queue_factory_opts_clear(&o);
	return 0;
}
