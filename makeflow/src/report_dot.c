/* report_dot.c: DOT output of a DAG and rendering through Graphviz. `dot` is run as a child
 * process (never through a shell) with its standard input and output on files, and its
 * standard error kept in a file so that a failure is reported with dot's own words. */
#include "report_dot.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "path.h"
#include "xalloc.h"

#include "banned.h"

extern char **environ;

/* Writes S as a DOT double-quoted string. */
static void dot_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		if (*s == '\n') {
			fputs("\\n", out);
			continue;
		}
		fputc(*s, out);
	}
	fputc('"', out);
}

void report_dot_write(FILE *out, const struct dag *d)
{
	fprintf(out, "digraph workflow {\n\trankdir=TB;\n");
	fprintf(out, "\tnode [shape=ellipse, fontsize=10];\n");
	int i = 0;
	for (struct dag_file *f = d->files; f; f = f->hh.next, i++) {
		f->state = i; /* a temporary id for the DOT name */
		fprintf(out, "\tF%d [label=", i);
		dot_string(out, f->name);
		if (f->is_source)
			fprintf(out, ", style=filled, fillcolor=\"#dddddd\"");
		else if (f->is_final_output)
			fprintf(out, ", style=filled, fillcolor=\"#cce5ff\"");
		fprintf(out, "];\n");
	}
	for (int k = 0; k < d->nnodes; k++) {
		struct dag_node *n = d->nodes[k];
		char label[96];
		snprintf(label, sizeof label, "%.80s", n->command ? n->command : "");
		fprintf(out, "\tN%d [shape=box, label=", n->id);
		dot_string(out, label);
		fprintf(out, "];\n");
		for (int j = 0; j < n->ninputs; j++)
			fprintf(out, "\tF%d -> N%d;\n", n->inputs[j].file->state, n->id);
		for (int j = 0; j < n->noutputs; j++)
			fprintf(out, "\tN%d -> F%d;\n", n->id, n->outputs[j].file->state);
	}
	fprintf(out, "}\n");
}

void report_dot_write_rules(FILE *out, const struct dag *d, const char *const *fills,
                            const char *const *titles)
{
	fprintf(out, "digraph workflow {\n\trankdir=TB;\n");
	fprintf(out, "\tnode [shape=box, style=filled, fontsize=10, fillcolor=white];\n");
	for (int k = 0; k < d->nnodes; k++) {
		const struct dag_node *n = d->nodes[k];
		char label[80];
		snprintf(label, sizeof label, "%d: %.40s", n->id, n->command ? n->command : "");
		fprintf(out, "\tN%d [label=", n->id);
		dot_string(out, label);
		if (titles && titles[k]) {
			fprintf(out, ", tooltip=");
			dot_string(out, titles[k]);
		}
		if (fills && fills[k])
			fprintf(out, ", fillcolor=\"%s\"", fills[k]);
		fprintf(out, "];\n");
		for (int j = 0; j < n->nparents; j++)
			fprintf(out, "\tN%d -> N%d;\n", n->parents[j]->id, n->id);
	}
	fprintf(out, "}\n");
}

char *report_dot_find(void)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	char *copy = xstrdup(path);
	char *found = NULL;
	for (char *dir = copy, *next; dir && !found; dir = next) {
		next = strchr(dir, ':');
		if (next)
			*next++ = 0;
		char *cand = path_join(*dir ? dir : ".", "dot");
		struct stat st;
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
			found = cand;
		else
			free(cand);
	}
	free(copy);
	return found;
}

/* The first line of the file PATH into OUT (LEN bytes), "" when none. */
static void first_line(const char *path, char *out, size_t len)
{
	out[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

int report_dot_render(const char *in, const char *format, const char *out, char *err, size_t errlen)
{
	char *dot = report_dot_find();
	if (!dot) {
		snprintf(err, errlen,
		         "Graphviz's dot is not on the PATH (Debian: apt-get install graphviz); "
		         "-D dot writes the graph for it");
		return -1;
	}
	char *errpath = xasprintf("%s.dot-stderr", out);
	char *tflag = xasprintf("-T%s", format);
	char *argv[] = {dot, tflag, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	int rc = posix_spawn(&pid, dot, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	int ret = -1;
	if (rc != 0) {
		snprintf(err, errlen, "cannot run %s: %s", dot, strerror(rc));
	} else {
		int st = 0;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			ret = 0;
		} else {
			char line[256];
			first_line(errpath, line, sizeof line);
			if (WIFEXITED(st))
				snprintf(err, errlen, "%s -T%s failed (exit status %d)%s%s", dot,
				         format, WEXITSTATUS(st), line[0] ? ": " : "", line);
			else
				snprintf(err, errlen, "%s -T%s was killed by signal %d", dot,
				         format, WTERMSIG(st));
		}
	}
	unlink(errpath);
	free(errpath);
	free(tflag);
	free(dot);
	return ret;
}
