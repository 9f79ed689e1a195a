/*
 * http_client.h - a small blocking HTTP/1.1 client for weftctl: GET/POST to weft-pilot's
 * monitoring server (15014) and to a proxy's admin API (15000). One request per connection
 * (Connection: close), with a total timeout, responses bounded in size.
 *
 * Ownership: the body is malloc'd (NUL-terminated for convenience) and freed by the caller.
 */
#ifndef WF_CLI_HTTP_CLIENT_H
#define WF_CLI_HTTP_CLIENT_H

#include <stddef.h>

#include "core/strbuf.h"

#define WF_HTTP_MAX_BODY (64u * 1024u * 1024u) /* bytes */

typedef struct wf_http_resp {
    int status;  /* HTTP status code */
    char *body;  /* malloc'd, NUL-terminated; the caller frees */
    size_t len;  /* body bytes */
    char *content_type; /* malloc'd, NULL when absent */
} wf_http_resp;

/* method "GET"/"POST" to addr ("ip:port", "[v6]:port" or "host:port") and path (with its
 * query). timeout_ms bounds connect + request + response. Returns 0 with *out filled (any
 * status), or -1 with err set to what failed, naming the address: "cannot connect to
 * 127.0.0.1:15014: Connection refused", "127.0.0.1:15000 did not answer within 5000 ms",
 * "response from ... is larger than 64 MiB", "malformed response from ...". */
int wf_http_request(const char *method, const char *addr, const char *path, long timeout_ms,
                    wf_http_resp *out, wf_strbuf *err);
void wf_http_resp_free(wf_http_resp *r);

#endif
