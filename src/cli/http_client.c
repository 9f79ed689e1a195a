/*
 * http_client.c - blocking HTTP/1.1 client for weftctl (see http_client.h).
 *
 * One request per connection with "Connection: close". The response is read until the peer
 * closes (or Content-Length / the last chunk is complete), all within one deadline. Bodies
 * may be identity, Content-Length or chunked.
 */
#include "cli/http_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining(int64_t deadline)
{
    int64_t r = deadline - now_ms();
    return r < 0 ? 0 : (int)r;
}

/* Splits "host:port" / "[v6]:port" into host and port (a number 1-65535). Returns 0 or -1. */
static int split_addr(const char *addr, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *colon;
    const char *hs = addr;
    size_t hl;
    if (addr[0] == '[') {
        const char *rb = strchr(addr, ']');
        if (!rb || rb[1] != ':')
            return -1;
        hs = addr + 1;
        hl = (size_t)(rb - hs);
        colon = rb + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon)
            return -1;
        hl = (size_t)(colon - addr);
    }
    size_t pl = strlen(colon + 1);
    if (hl == 0 || hl >= hcap || pl == 0 || pl >= pcap)
        return -1;
    char *end = NULL; /* a port number 1-65535, never a service name */
    unsigned long pn = strtoul(colon + 1, &end, 10);
    if (*end || colon[1] < '0' || colon[1] > '9' || pn == 0 || pn > 65535)
        return -1;
    memcpy(host, hs, hl);
    host[hl] = '\0';
    memcpy(port, colon + 1, pl + 1);
    return 0;
}

/* Non-blocking connect to one address within the deadline. Returns the fd or -1 (errno). */
static int connect_one(const struct addrinfo *ai, int64_t deadline)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return fd;
    if (errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int pr = poll(&p, 1, remaining(deadline));
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (pr == 0) {
        close(fd);
        errno = ETIMEDOUT;
        return -1;
    }
    if (pr < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
        int e = pr < 0 ? errno : (soerr ? soerr : errno);
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int dial(const char *addr, int64_t deadline, wf_strbuf *err)
{
    char host[256], port[16];
    if (split_addr(addr, host, sizeof host, port, sizeof port) != 0) {
        wf_strbuf_printf(
            err, "cannot connect to %s: invalid address (want host:port, port 1-65535)", addr);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int gr = getaddrinfo(host, port, &hints, &res);
    if (gr != 0) {
        wf_strbuf_printf(err, "cannot connect to %s: %s", addr, gai_strerror(gr));
        return -1;
    }
    int fd = -1, e = ECONNREFUSED;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = connect_one(ai, deadline);
        if (fd < 0)
            e = errno;
    }
    freeaddrinfo(res);
    if (fd < 0 && e == ETIMEDOUT)
        wf_strbuf_printf(err, "cannot connect to %s: connection timed out", addr);
    else if (fd < 0)
        wf_strbuf_printf(err, "cannot connect to %s: %s", addr, strerror(e));
    return fd;
}

static int send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, remaining(deadline)) <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
    }
    return 0;
}

/* The end of the headers ("\r\n\r\n" or "\n\n"), or NULL. *hlen gets the header bytes. */
static const char *header_end(const char *buf, size_t len, size_t *body_off)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (buf[i] == '\n' && buf[i + 1] == '\n') {
            *body_off = i + 2;
            return buf + i;
        }
        if (i + 3 < len && memcmp(buf + i, "\r\n\r\n", 4) == 0) {
            *body_off = i + 4;
            return buf + i;
        }
    }
    return NULL;
}

/* The value of header name in the header block [hdr, end), copied (malloc'd), or NULL. */
static char *header_value(const char *hdr, const char *end, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = hdr; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        if ((size_t)(le - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (v < le && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = le;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
                ve--;
            return strndup(v, (size_t)(ve - v));
        }
        p = eol ? eol + 1 : end;
    }
    return NULL;
}

/* Decodes a chunked body in place. Returns the decoded length, or -1 when incomplete/bad. */
static long dechunk(char *b, size_t len)
{
    size_t in = 0, out = 0;
    for (;;) {
        char *eol = memchr(b + in, '\n', len - in);
        if (!eol)
            return -1;
        char *endp = NULL;
        unsigned long n = strtoul(b + in, &endp, 16);
        if (endp == b + in)
            return -1;
        in = (size_t)(eol - b) + 1;
        if (n == 0)
            return (long)out;
        if (n > len - in)
            return -1;
        memmove(b + out, b + in, n);
        out += n;
        in += n;
        if (in < len && b[in] == '\r')
            in++;
        if (in < len && b[in] == '\n')
            in++;
    }
}

typedef struct rbuf {
    char *data;
    size_t len, cap;
} rbuf;

/* Whether the buffered response is complete by Content-Length or the last chunk (a server
 * that keeps the connection open despite "Connection: close" is not waited for). */
static bool complete(const rbuf *rb)
{
    size_t body_off = 0;
    const char *he = header_end(rb->data, rb->len, &body_off);
    if (!he)
        return false;
    const char *hdr = memchr(rb->data, '\n', rb->len);
    char *cl = header_value(hdr, he + 1, "Content-Length");
    char *te = header_value(hdr, he + 1, "Transfer-Encoding");
    bool done = false;
    if (te && strcasecmp(te, "chunked") == 0)
        done = rb->len - body_off >= 5 && memcmp(rb->data + rb->len - 5, "0\r\n\r\n", 5) == 0 &&
               (rb->len - body_off == 5 || rb->data[rb->len - 6] == '\n');
    else if (cl)
        done = rb->len - body_off >= strtoul(cl, NULL, 10);
    free(cl);
    free(te);
    return done;
}

/* Reads until EOF or until the response is complete. Returns 0, -1 (errno), -2 (too big). */
static int read_response(int fd, rbuf *rb, int64_t deadline)
{
    for (;;) {
        if (rb->len + 65536 + 1 > rb->cap) {
            size_t ncap = rb->cap ? rb->cap * 2 : 131072;
            if (ncap > WF_HTTP_MAX_BODY + 65536 * 2)
                ncap = WF_HTTP_MAX_BODY + 65536 * 2;
            if (rb->len + 65536 + 1 > ncap)
                return -2;
            char *n = realloc(rb->data, ncap);
            if (!n) {
                errno = ENOMEM;
                return -1;
            }
            rb->data = n;
            rb->cap = ncap;
        }
        ssize_t n = recv(fd, rb->data + rb->len, rb->cap - rb->len - 1, 0);
        if (n > 0) {
            rb->len += (size_t)n;
            rb->data[rb->len] = '\0';
            if (complete(rb))
                return 0;
            continue;
        }
        if (n == 0)
            return 0;
        if (errno != EAGAIN && errno != EINTR)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, remaining(deadline)) <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
    }
}

/* Parses the raw response into out. Returns 0 or -1. */
static int parse_response(rbuf *rb, wf_http_resp *out)
{
    size_t body_off = 0;
    const char *he = header_end(rb->data, rb->len, &body_off);
    int status = 0;
    if (!he || sscanf(rb->data, "HTTP/%*d.%*d %d", &status) != 1 || status < 100)
        return -1;
    const char *hdr = memchr(rb->data, '\n', rb->len);
    char *te = header_value(hdr, he + 1, "Transfer-Encoding");
    char *cl = header_value(hdr, he + 1, "Content-Length");
    out->content_type = header_value(hdr, he + 1, "Content-Type");
    size_t blen = rb->len - body_off;
    memmove(rb->data, rb->data + body_off, blen);
    long dl = (long)blen;
    if (te && strcasecmp(te, "chunked") == 0)
        dl = dechunk(rb->data, blen);
    else if (cl && strtoul(cl, NULL, 10) < blen)
        dl = (long)strtoul(cl, NULL, 10);
    free(te);
    free(cl);
    if (dl < 0)
        return -1;
    rb->data[dl] = '\0';
    out->status = status;
    out->body = rb->data;
    out->len = (size_t)dl;
    rb->data = NULL;
    return 0;
}

int wf_http_request(const char *method, const char *addr, const char *path, long timeout_ms,
                    wf_http_resp *out, wf_strbuf *err)
{
    memset(out, 0, sizeof *out);
    int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 5000);
    int fd = dial(addr, deadline, err);
    if (fd < 0)
        return -1;
    char *req = NULL;
    int rl = asprintf(&req,
                      "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: weftctl\r\nAccept: */*\r\n"
                      "Content-Length: 0\r\nConnection: close\r\n\r\n",
                      method, path, addr);
    rbuf rb = {0};
    int rc = rl < 0 ? -1 : send_all(fd, req, (size_t)rl, deadline);
    int rr = rc == 0 ? read_response(fd, &rb, deadline) : -1;
    int e = errno;
    free(req);
    close(fd);
    if (rr == -2)
        wf_strbuf_printf(err, "response from %s is larger than 64 MiB", addr);
    else if (rr != 0 && e == ETIMEDOUT)
        wf_strbuf_printf(err, "%s did not answer within %ld ms", addr, timeout_ms);
    else if (rr != 0)
        wf_strbuf_printf(err, "request to %s failed: %s", addr, strerror(e));
    else if (rb.len == 0)
        wf_strbuf_printf(err, "%s closed the connection without answering", addr);
    else if (parse_response(&rb, out) != 0) {
        wf_strbuf_printf(err, "malformed response from %s", addr);
        free(out->content_type);
        out->content_type = NULL;
        rr = -1;
    }
    if (rr == 0 && rb.len == 0)
        rr = -1;
    free(rb.data);
    return rr == 0 ? 0 : -1;
}

void wf_http_resp_free(wf_http_resp *r)
{
    if (!r)
        return;
    free(r->body);
    free(r->content_type);
    r->body = NULL;
    r->content_type = NULL;
    r->len = 0;
}
