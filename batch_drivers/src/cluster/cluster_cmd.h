/* cluster_cmd.h: runs a scheduler's command-line tool (sbatch, squeue, scancel...) for a
 * cluster driver, either on the driver's libuv loop (the loop goes on while the tool runs; the
 * callback gets its exit status and what it wrote) or synchronously with a time limit (for
 * destroy and start-up, when the loop may not run again). What the tool writes is kept up to
 * CLUSTER_CMD_OUTPUT_CAP bytes per stream; beyond that the command counts as failed. */
#ifndef HTC_CLUSTER_CMD_H
#define HTC_CLUSTER_CMD_H

#include <stdint.h>
#include <uv.h>

#define CLUSTER_CMD_OUTPUT_CAP (64u << 20)

struct cluster_cmd_result {
	int exit_status;  /* the tool's exit status, or -1 when it did not exit normally */
	int term_signal;  /* the signal that ended it, or 0 */
	const char *out;  /* what it wrote on stdout (NUL-terminated, may be "") */
	const char *err;  /* on stderr */
	const char *fail; /* NULL, or why the tool could not be run / was cut short */
};

typedef void (*cluster_cmd_fn)(const struct cluster_cmd_result *r, void *arg);

/* Runs ARGV (argv[0] looked up in PATH) on LOOP with stdin from /dev/null, or from STDIN_TEXT
 * when not NULL; CB is called once, from the loop, when the tool has exited and its output is
 * read (also when it could not be started: then fail is set). Returns 0 (CB will be called) or
 * a negative error (CB will not be). A command still running after TIMEOUT_MS (> 0) is killed
 * and reported with fail set. */
int cluster_cmd_run(uv_loop_t *loop, char *const *argv, const char *stdin_text, int64_t timeout_ms,
                    cluster_cmd_fn cb, void *arg);

/* Runs ARGV to its end without a loop, killing it after TIMEOUT_MS; fills R (its strings are
 * owned by the caller: free out, err with cluster_cmd_result_free). Returns 0 when the tool
 * ran (whatever its status), or a negative error with r->fail set. */
int cluster_cmd_run_sync(char *const *argv, int64_t timeout_ms, struct cluster_cmd_result *r);
void cluster_cmd_result_free(struct cluster_cmd_result *r);

#define CLUSTER_CMD_LINE 301
/* The first line of TEXT (at most CLUSTER_CMD_LINE - 1 bytes, trimmed) written into LINE, for
 * messages; "" when empty. Returns LINE. */
const char *cluster_cmd_first_line(const char *text, char line[CLUSTER_CMD_LINE]);

#endif
