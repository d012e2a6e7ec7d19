/* fuzz_k8s_yaml.c: libFuzzer target for the kubeconfig YAML reader (k8s_yaml.h): any bytes are
 * parsed; a tree that comes back is dumped, or an error names the file and line. Built and run
 * by test/fuzz.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "k8s_yaml.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *err = NULL;
	json_t *j = k8s_yaml_parse((const char *)data, size, "fuzz", &err);
	if (j) {
		char *s = json_dumps(j, 0);
		free(s);
		json_decref(j);
	} else if (!err || strncmp(err, "fuzz", 4) != 0) {
		abort(); /* every refusal names the document */
	}
	free(err);
	return 0;
}
