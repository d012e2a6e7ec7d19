/* cluster_run.c: run ids and the job names that carry them (cluster_run.h). */
#include "cluster_run.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "stringtools.h"
#include "banned.h"

int cluster_run_id_valid(const char *s)
{
	if (!s || strlen(s) != CLUSTER_RUN_ID_LEN)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

int cluster_run_id_from_env(const char *const *env, char out[CLUSTER_RUN_ID_LEN + 1])
{
	static const char var[] = "HTC_RUN_ID=";
	for (const char *const *e = env; e && *e; e++)
		if (str_has_prefix(*e, var) && cluster_run_id_valid(*e + sizeof var - 1)) {
			memcpy(out, *e + sizeof var - 1, CLUSTER_RUN_ID_LEN + 1);
			return 0;
		}
	return -ENOENT;
}

int cluster_run_id_random(char out[CLUSTER_RUN_ID_LEN + 1])
{
	unsigned char b[CLUSTER_RUN_ID_LEN / 2];
	size_t got = 0;
	while (got < sizeof b) {
		ssize_t r = getrandom(b + got, sizeof b - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		got += (size_t)r;
	}
	str_hex_encode(b, sizeof b, out);
	return 0;
}

void cluster_job_name(const char *id, char out[CLUSTER_JOB_NAME_LEN])
{
	snprintf(out, CLUSTER_JOB_NAME_LEN, "%s%.32s", CLUSTER_JOB_PREFIX, id);
}

int cluster_job_name_run(const char *name, char out[CLUSTER_RUN_ID_LEN + 1])
{
	if (!name || !str_has_prefix(name, CLUSTER_JOB_PREFIX))
		return -EINVAL;
	const char *id = name + sizeof CLUSTER_JOB_PREFIX - 1;
	if (!cluster_run_id_valid(id))
		return -EINVAL;
	memcpy(out, id, CLUSTER_RUN_ID_LEN + 1);
	return 0;
}
