/*
 * tcp_blast.c - the load of bench/run_tcp.sh: one process that is both ends of a TCP proxy.
 * It listens on SINK_PORT (the proxy's upstream), opens CONNS connections to PROXY_PORT and
 * writes MIB MiB on each (64 KiB writes), then shuts its write side; the sink reads and drops
 * what arrives and closes a connection at its end of stream. Prints "bytes=<received by the
 * sink> seconds=<wall time>" and exits 0 when every byte arrived, 1 otherwise.
 * One thread, epoll, non-blocking sockets. Build: cc -O2 -o tcp_blast bench/proxy/tcp_blast.c
 * Usage: tcp_blast PROXY_PORT SINK_PORT CONNS MIB
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXC 1024

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct sockaddr_in loopback(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(0x7f000001);
    return a;
}

/* per fd: bytes left to send (sender), or -1 for a sink connection */
static long long left[65536];

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: tcp_blast PROXY_PORT SINK_PORT CONNS MIB\n");
        return 2;
    }
    int pport = atoi(argv[1]), sport = atoi(argv[2]), conns = atoi(argv[3]);
    long long per = atoll(argv[4]) * 1024 * 1024;
    if (conns < 1 || conns > MAXC || per < 1)
        return 2;
    static char buf[1 << 16];
    memset(buf, 'x', sizeof buf);
    int one = 1, ep = epoll_create1(0);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = loopback(sport);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(l, 1024) != 0) {
        perror("sink");
        return 1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = l};
    epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
    struct sockaddr_in pa = loopback(pport);
    for (int i = 0; i < conns; i++) {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (c < 0 || c >= 65536 ||
            (connect(c, (struct sockaddr *)&pa, sizeof pa) != 0 && errno != EINPROGRESS)) {
            perror("connect");
            return 1;
        }
        left[c] = per;
        ev = (struct epoll_event){.events = EPOLLOUT, .data.fd = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
    }
    long long got = 0, want = per * conns;
    int senders = conns, sinks_open = 0, sinks_seen = 0;
    double t0 = now();
    struct epoll_event evs[256];
    while ((senders > 0 || sinks_open > 0 || sinks_seen < conns) && now() - t0 < 300) {
        int n = epoll_wait(ep, evs, 256, 1000);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == l) {
                int c;
                while ((c = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    left[c] = -1;
                    sinks_open++;
                    sinks_seen++;
                    ev = (struct epoll_event){.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
                }
                continue;
            }
            if (left[fd] < 0) { /* sink: read and drop */
                for (;;) {
                    ssize_t r = read(fd, buf, sizeof buf);
                    if (r > 0) {
                        got += r;
                        continue;
                    }
                    if (r < 0 && errno == EAGAIN)
                        break;
                    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                    close(fd);
                    sinks_open--;
                    break;
                }
                continue;
            }
            if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
                fprintf(stderr, "tcp_blast: sender connection failed\n");
                return 1;
            }
            while (left[fd] > 0) {
                size_t k = left[fd] < (long long)sizeof buf ? (size_t)left[fd] : sizeof buf;
                ssize_t w = write(fd, buf, k);
                if (w < 0)
                    break;
                left[fd] -= w;
            }
            if (left[fd] == 0) {
                shutdown(fd, SHUT_WR);
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                left[fd] = -2; /* done; closed at exit (the proxy passes the end of stream on) */
                senders--;
            }
        }
    }
    double dt = now() - t0;
    printf("bytes=%lld seconds=%.3f\n", got, dt);
    return got == want ? 0 : 1;
}
