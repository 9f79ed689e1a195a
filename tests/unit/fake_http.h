/*
 * fake_http.h - a tiny one-thread HTTP server for CLI unit tests (header-only, static
 * functions): it listens on 127.0.0.1:<ephemeral>, and for each of up to `count` connections
 * reads the request head, records its request line and answers with `response` verbatim
 * (NULL: closes without answering; "" with stall_ms: accepts and waits stall_ms).
 */
#ifndef WF_TEST_FAKE_HTTP_H
#define WF_TEST_FAKE_HTTP_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct fake_http {
    int lfd;
    int port;
    int count;
    const char *response;
    int stall_ms;
    char last_request[512];
    pthread_t thread;
} fake_http;

static void *fake_http_run(void *arg)
{
    fake_http *f = arg;
    for (int i = 0; i < f->count; i++) {
        int c = accept(f->lfd, NULL, NULL);
        if (c < 0)
            break;
        char buf[4096];
        size_t len = 0;
        while (len < sizeof buf - 1) {
            ssize_t n = recv(c, buf + len, sizeof buf - 1 - len, 0);
            if (n <= 0)
                break;
            len += (size_t)n;
            buf[len] = '\0';
            if (strstr(buf, "\r\n\r\n"))
                break;
        }
        buf[len] = '\0';
        char *eol = strstr(buf, "\r\n");
        if (eol)
            *eol = '\0';
        snprintf(f->last_request, sizeof f->last_request, "%.500s", buf);
        if (f->stall_ms)
            usleep((useconds_t)f->stall_ms * 1000);
        if (f->response) {
            size_t off = 0, rl = strlen(f->response);
            while (off < rl) {
                ssize_t n = send(c, f->response + off, rl - off, MSG_NOSIGNAL);
                if (n <= 0)
                    break;
                off += (size_t)n;
            }
        }
        close(c);
    }
    return NULL;
}

/* Starts the server; returns 0 or -1. */
static int fake_http_start(fake_http *f, const char *response, int count)
{
    memset(f, 0, sizeof *f);
    f->response = response;
    f->count = count;
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(f->lfd, 8) != 0 || getsockname(f->lfd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    f->port = ntohs(a.sin_port);
    return pthread_create(&f->thread, NULL, fake_http_run, f) == 0 ? 0 : -1;
}

static void fake_http_stop(fake_http *f)
{
    shutdown(f->lfd, SHUT_RDWR);
    pthread_join(f->thread, NULL);
    close(f->lfd);
}

#endif
