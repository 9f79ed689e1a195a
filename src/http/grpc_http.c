/*
 * grpc_http.c - gRPC-over-HTTP helpers (see grpc_http.h).
 */
#include "http/grpc_http.h"

#include <string.h>

bool wf_grpc_content_type(const char *ct, size_t len)
{
    static const char g[] = "application/grpc";
    const size_t n = sizeof g - 1;
    return ct && len >= n && memcmp(ct, g, n) == 0 && (len == n || ct[n] == '+');
}

int wf_grpc_http_to_status(int http_status)
{
    switch (http_status) {
    case 400:
        return 13; /* Internal */
    case 401:
        return 16; /* Unauthenticated */
    case 403:
        return 7; /* PermissionDenied */
    case 404:
        return 12; /* Unimplemented */
    case 429:
    case 502:
    case 503:
    case 504:
        return WF_GRPC_STATUS_UNAVAILABLE;
    default:
        return WF_GRPC_STATUS_UNKNOWN;
    }
}

bool wf_grpc_status_parse(const char *v, size_t len, int *code)
{
    if (!v || len == 0 || len > 9)
        return false;
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        n = n * 10 + (v[i] - '0');
    }
    *code = n;
    return true;
}

bool wf_grpc_timeout_parse(const char *v, size_t len, uint64_t *ms)
{
    if (!v || len < 2 || len > 9)
        return false;
    uint64_t n = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        n = n * 10 + (uint64_t)(v[i] - '0');
    }
    switch (v[len - 1]) {
    case 'H':
        *ms = n * 3600000u;
        return true;
    case 'M':
        *ms = n * 60000u;
        return true;
    case 'S':
        *ms = n * 1000u;
        return true;
    case 'm':
        *ms = n;
        return true;
    case 'u':
        *ms = (n + 999u) / 1000u;
        return true;
    case 'n':
        *ms = (n + 999999u) / 1000000u;
        return true;
    default:
        return false;
    }
}

size_t wf_grpc_timeout_format(uint64_t ms, char out[WF_GRPC_TIMEOUT_STR_MAX])
{
    static const char units[] = "mSMH";
    const char *unit = units;
    uint64_t t = ms;
    if (t > WF_GRPC_TIMEOUT_MAX_VALUE) {
        t /= 1000;
        unit++;
    }
    while (t > WF_GRPC_TIMEOUT_MAX_VALUE) {
        if (*unit == 'H') {
            t = WF_GRPC_TIMEOUT_MAX_VALUE;
        } else {
            t /= 60;
            unit++;
        }
    }
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + t % 10);
        t /= 10;
    } while (t);
    for (size_t i = 0; i < n; i++)
        out[i] = digits[n - 1 - i];
    out[n++] = *unit;
    out[n] = '\0';
    return n;
}

size_t wf_grpc_message_percent(const char *body, size_t len, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)body[i];
        bool esc = c < ' ' || c >= '~' || c == '%';
        if (o + (esc ? 3 : 1) >= cap) {
            if (cap)
                out[0] = '\0';
            return (size_t)-1;
        }
        if (esc) {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        } else {
            out[o++] = (char)c;
        }
    }
    if (o >= cap)
        return (size_t)-1;
    out[o] = '\0';
    return o;
}
