/* slurm_script.c: the job script and sbatch command of the slurm driver (slurm_script.h). */
#include "slurm_script.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "stringtools.h"
#include "banned.h"

static void put_quoted(struct buffer *b, const char *s)
{
	char *q = str_escape_shell(s);
	buffer_putstring(b, q);
	free(q);
}

static void put_comment(struct buffer *b, const char *s)
{
	for (const char *p = s; *p; p++)
		buffer_putc(b, *p == '\n' || *p == '\r' ? ' ' : *p);
}

char *slurm_script_text(const struct batch_job_spec *spec, const char *cwd, const char *rc_path)
{
	struct buffer b;
	buffer_init(&b, 0);
	buffer_putstring(&b, "#!/bin/sh\n");
	if (spec->tag) {
		buffer_putstring(&b, "# ");
		put_comment(&b, spec->tag);
		buffer_putc(&b, '\n');
	}
	buffer_putstring(&b, "cd ");
	put_quoted(&b, cwd);
	buffer_putstring(&b, " || exit 1\n");
	const struct batch_resources *r = &spec->resources;
	if (r->cores > 0)
		buffer_printf(&b, "export CORES=%" PRId64 "\n", r->cores);
	if (r->memory_mb > 0)
		buffer_printf(&b, "export MEMORY=%" PRId64 "\n", r->memory_mb);
	if (r->disk_mb > 0)
		buffer_printf(&b, "export DISK=%" PRId64 "\n", r->disk_mb);
	for (const char *const *e = spec->env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		buffer_printf(&b, "export %.*s=", (int)(eq - *e), *e);
		put_quoted(&b, eq + 1);
		buffer_putc(&b, '\n');
	}
	buffer_putstring(&b, "/bin/sh -c ");
	put_quoted(&b, spec->command);
	buffer_putstring(&b, " </dev/null\nrc=$?\n");
	char *tmp = NULL;
	{
		struct buffer t;
		buffer_init(&t, 0);
		buffer_printf(&t, "%s.tmp", rc_path);
		tmp = buffer_steal(&t, NULL);
	}
	buffer_putstring(&b, "echo \"$rc\" >");
	put_quoted(&b, tmp);
	buffer_putstring(&b, " && mv -f ");
	put_quoted(&b, tmp);
	buffer_putc(&b, ' ');
	put_quoted(&b, rc_path);
	buffer_putstring(&b, "\nexit \"$rc\"\n");
	free(tmp);
	return buffer_steal(&b, NULL);
}

char *slurm_sbatch_command(const struct slurm_submit_opts *o, const struct batch_job_spec *spec,
                           const char *job_name, const char *cwd, const char *out_path,
                           const char *script_path)
{
	struct buffer b;
	buffer_init(&b, 0);
	buffer_putstring(&b, "exec sbatch --parsable --job-name=");
	put_quoted(&b, job_name);
	buffer_putstring(&b, " --chdir=");
	put_quoted(&b, cwd);
	buffer_putstring(&b, " --output=");
	put_quoted(&b, out_path);
	const struct batch_resources *r = &spec->resources;
	if (!o->safe_submit) {
		buffer_printf(&b, " -N 1 -n 1 -c %" PRId64, r->cores > 0 ? r->cores : 1);
		if (r->memory_mb > 0 && !o->ignore_memory)
			buffer_printf(&b, " --mem=%" PRId64 "M", r->memory_mb);
		if (r->wall_time_s > 0)
			buffer_printf(&b, " --time=%" PRId64, (r->wall_time_s + 59) / 60);
		if (r->gpus > 0)
			buffer_printf(&b, " --gpus=%" PRId64, r->gpus);
	}
	if (o->tmp && *o->tmp) {
		buffer_putstring(&b, " --tmp=");
		put_quoted(&b, o->tmp);
	}
	if (spec->batch_options && *spec->batch_options) {
		buffer_putc(&b, ' ');
		put_comment(&b, spec->batch_options);
	}
	buffer_putc(&b, ' ');
	put_quoted(&b, script_path);
	return buffer_steal(&b, NULL);
}
