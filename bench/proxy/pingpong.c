/*
 * pingpong.c - one loopback TCP connection, 128-byte messages sent and received 200,000
 * times with write(2)/read(2), sendmsg(2)/read(2), write(2)/recv(2) and sendmsg(2)/recv(2):
 * whether the socket calls a proxy uses change its kernel cost (they did not here: see the
 * README). Build and run: cc -O2 bench/proxy/pingpong.c -o /tmp/pingpong && taskset -c 1
 * /tmp/pingpong
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int pair(int *c, int *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t al = sizeof(a);
    int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &al) != 0)
        return -1;
    *c = socket(AF_INET, SOCK_STREAM, 0);
    if (*c < 0 || connect(*c, (struct sockaddr *)&a, sizeof(a)) != 0)
        return -1;
    *s = accept(l, NULL, NULL);
    close(l);
    if (*s < 0)
        return -1;
    setsockopt(*c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(*s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return 0;
}

int main(void)
{
    static const char *const names[] = {"write + read", "sendmsg + read", "write + recv",
                                        "sendmsg + recv"};
    int c, s;
    if (pair(&c, &s) != 0) {
        perror("pingpong: loopback pair");
        return 1;
    }
    char buf[16384], msg[128];
    memset(msg, 'x', sizeof(msg));
    const int rounds = 200000;
    for (int mode = 0; mode < 4; mode++) {
        double t0 = now();
        for (int i = 0; i < rounds; i++) {
            ssize_t w;
            if (mode & 1) {
                struct iovec v = {msg, sizeof(msg)};
                struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
                w = sendmsg(c, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
            } else {
                w = write(c, msg, sizeof(msg));
            }
            ssize_t r = (mode & 2) ? recv(s, buf, sizeof(buf), 0) : read(s, buf, sizeof(buf));
            if (w != (ssize_t)sizeof(msg) || r != (ssize_t)sizeof(msg)) {
                fprintf(stderr, "pingpong: short transfer\n");
                return 1;
            }
        }
        printf("%-15s %.3f us per pair\n", names[mode], (now() - t0) / rounds * 1e6);
    }
    close(c);
    close(s);
    return 0;
}
