/* k8s_config.h: where a Kubernetes API server is and how to authenticate to it, from a
 * kubeconfig file or from a pod's service-account credentials (doc/kubernetes.md, section 1).
 * Every error names the file it comes from. */
#ifndef HTC_K8S_CONFIG_H
#define HTC_K8S_CONFIG_H

#include <stdbool.h>

#include <jansson.h>

#define K8S_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct k8s_config {
	char *source;     /* the kubeconfig's path, or "in-cluster service account (DIR)" */
	char *context;    /* the context used (NULL in cluster) */
	char *user;       /* the user entry's name (NULL in cluster) */
	char *server;     /* e.g. https://127.0.0.1:6443, without a trailing '/' */
	char *namespace;  /* the context's namespace, default "default" */
	bool insecure;    /* insecure-skip-tls-verify: no server verification */
	char *ca_file;    /* a CA bundle file, or NULL */
	char *ca_pem;     /* a CA bundle itself (certificate-authority-data), or NULL */
	char *token;      /* a bearer token, or NULL */
	char *token_file; /* a file holding the token, re-read on each request, or NULL */
	char *cert_file, *key_file; /* client certificate and key files, or NULL */
	char *cert_pem, *key_pem;   /* client certificate and key themselves, or NULL */
};

/* Reads kubeconfig PATH and takes the context CONTEXT (NULL: current-context). NULL with *ERR
 * (caller frees) naming PATH: a YAML error with its line, a missing context/cluster/user, a
 * field of the wrong type, bad base64, a user with exec / auth-provider / basic auth. */
struct k8s_config *k8s_config_from_kubeconfig(const char *path, const char *context, char **err);

/* In-cluster credentials: KUBERNETES_SERVICE_HOST and _PORT from the environment, the token,
 * ca.crt and namespace files of DIR (NULL: K8S_SA_DIR). NULL with *ERR when the variables or
 * the token file are missing. */
struct k8s_config *k8s_config_in_cluster(const char *dir, char **err);

/* The credentials a program uses: KUBECONFIG_PATH when not NULL; else in-cluster when
 * KUBERNETES_SERVICE_HOST is set and DIR's token exists; else the first file of $KUBECONFIG,
 * else $HOME/.kube/config. CONTEXT as above. NULL with *ERR. */
struct k8s_config *k8s_config_load(const char *kubeconfig_path, const char *context, char **err);

void k8s_config_delete(struct k8s_config *c);

#endif
