/* k8s_yaml.h: reads a YAML document (a kubeconfig) into a jansson tree with our own parser of
 * the YAML kubeconfig files are written in (block and one-line flow collections, plain, quoted
 * and block scalars): mappings become objects, sequences arrays, scalars strings (plain
 * `null`, `~` and the empty value become JSON null, plain `true`/`false` booleans). Anchors,
 * aliases, tags, and flow or quoted values spanning lines are refused. */
#ifndef HTC_K8S_YAML_H
#define HTC_K8S_YAML_H

#include <stddef.h>

#include <jansson.h>

#define K8S_YAML_MAX_BYTES (4 * 1024 * 1024) /* cap of a file read */
#define K8S_YAML_MAX_DEPTH 64

/* Parses the first document of TEXT (LEN bytes); NAME names it in errors. Returns the tree
 * (new reference; an empty document gives an empty object), or NULL with *ERR (caller frees):
 * "NAME:LINE: PROBLEM". */
json_t *k8s_yaml_parse(const char *text, size_t len, const char *name, char **err);

/* Reads the whole file PATH (at most CAP bytes) into *TEXT (NUL-terminated, caller frees),
 * *LEN its length. 0, -errno, or HTC_ETOOBIG when it is larger than CAP. */
int k8s_read_file(const char *path, size_t cap, char **text, size_t *len);

/* Reads and parses the file PATH. NULL with *ERR: "PATH: ..." for a file that cannot be read
 * or is larger than K8S_YAML_MAX_BYTES, or the parse error. */
json_t *k8s_yaml_load(const char *path, char **err);

#endif
