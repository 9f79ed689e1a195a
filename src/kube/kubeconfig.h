/*
 * kubeconfig.h - where the Kubernetes API server is and how to authenticate to it: a kubeconfig
 * file (client-go's clientcmd) or the in-cluster configuration (client-go's rest.InClusterConfig).
 *
 * Behaviour followed (../shared/reference/kubernetes.md §1.8; kubernetes.io "Organizing Cluster
 * Access Using kubeconfig Files" and the kubeconfig v1 reference):
 *  - `KUBECONFIG` may list several files separated by ':'; they are merged so that the first file
 *    to set `current-context`, or to define a named cluster, user or context, wins; entries are
 *    never merged field-wise. Files in the list that do not exist are skipped (as clientcmd does);
 *    without KUBECONFIG the file is `$HOME/.kube/config`.
 *  - the context is the `--context` override when given, else `current-context`; it names a
 *    cluster (`server`, `certificate-authority` | `certificate-authority-data`,
 *    `insecure-skip-tls-verify`, `tls-server-name`) and a user (`token` | `tokenFile`,
 *    `client-certificate` | `client-certificate-data`, `client-key` | `client-key-data`); the
 *    `-data` form wins over the file form, as in client-go. Relative file paths are resolved
 *    against the directory of the kubeconfig file that names them.
 *  - `insecure-skip-tls-verify: true` together with a certificate authority is refused, as
 *    clientcmd's validation does ("specifying a root certificates file with the insecure flag
 *    is not allowed").
 *  - the namespace is the context's `namespace`, else "default".
 *  - `tokenFile` (and the in-cluster token) is kept as a path, as client-go's BearerTokenFile,
 *    and read by wf_kube_config_token (kube/client.h caches it as client-go does), so rotated
 *    projected tokens work;
 *    a static `token` wins over `tokenFile` (client-go: "token" takes precedence).
 *  - not supported, and refused with an error naming the field (never ignored silently):
 *    `exec`, `auth-provider`, `username`/`password`, `proxy-url`.
 *  - in cluster: `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` must both be set (else
 *    "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT
 *    must be defined", client-go's ErrNotInCluster); server `https://HOST:PORT` (an IPv6 host in
 *    brackets); token file `<root>/var/run/secrets/kubernetes.io/serviceaccount/token` (must be
 *    readable now), CA `…/ca.crt`, namespace `…/namespace` (default "default" when absent).
 *
 * Errors name the file, the line where known, the field and why:
 *   "kubeconfig /x:12: users[0].user.client-key-data: not base64".
 * Memory: a wf_kube_config owns all its strings; free with wf_kube_config_free.
 */
#ifndef WF_KUBE_KUBECONFIG_H
#define WF_KUBE_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"

typedef struct wf_kube_config {
    char *server;          /* "https://host:port[/prefix]" or "http://…", no trailing '/' */
    char *ca_pem;          /* PEM bundle to verify the server with, or NULL (system roots) */
    size_t ca_len;         /* bytes of ca_pem */
    bool insecure;         /* insecure-skip-tls-verify */
    char *tls_server_name; /* name to verify instead of the server's host, or NULL */
    char *cert_pem;        /* client certificate PEM, or NULL */
    size_t cert_len;
    char *key_pem; /* client key PEM, or NULL (set whenever cert_pem is) */
    size_t key_len;
    char *token;      /* static bearer token, or NULL */
    char *token_file; /* bearer token file, re-read on use, or NULL */
    char *ns;         /* default namespace, never NULL */
    char *context;    /* the context used; "" in cluster */
    char *origin;     /* the file(s) it came from, or "in-cluster" */
} wf_kube_config;

/* Loads the kubeconfig: paths is a ':'-separated list (NULL = $KUBECONFIG, else
 * $HOME/.kube/config); context overrides current-context (NULL or "" = none). Returns 0 with
 * *out, or -1 with the reason in err (no file found, a parse error, a missing or invalid field,
 * out of memory). */
int wf_kubeconfig_load(const char *paths, const char *context, wf_kube_config **out,
                       wf_strbuf *err);

/* The same for the text of one file named file (used for relative paths and messages). */
int wf_kubeconfig_parse(const char *file, const char *text, size_t len, const char *context,
                        wf_kube_config **out, wf_strbuf *err);

/* In-cluster configuration from host and port (KUBERNETES_SERVICE_HOST/_PORT; NULL or "" = not
 * in cluster) and the service-account files under root (NULL or "" = "/"; tests point it at a
 * folder). Returns 0 with *out or -1 with err. */
int wf_kube_incluster(const char *root, const char *host, const char *port, wf_kube_config **out,
                      wf_strbuf *err);
/* wf_kube_incluster with the two environment variables. */
int wf_kube_incluster_env(const char *root, wf_kube_config **out, wf_strbuf *err);

/* The bearer token to send now: the static token, else the token file's content (read now,
 * surrounding white space trimmed), else NULL (no token). Returns 0 with *token (malloc'ed, or
 * NULL), or -1 with err when the token file cannot be read. */
int wf_kube_config_token(const wf_kube_config *c, char **token, wf_strbuf *err);

void wf_kube_config_free(wf_kube_config *c);

/* Reads a whole file (at most 16 MiB) into a malloc'ed NUL-terminated buffer. Returns 0, or -1
 * with errno set. */
int wf_kube_read_file(const char *path, char **buf, size_t *len);

#endif
