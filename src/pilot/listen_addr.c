/*
 * listen_addr.c - see listen_addr.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pilot/listen_addr.h"

int wf_pilot_parse_addr(const char *s, char *ip, size_t cap, int *port)
{
    const char *colon = s ? strrchr(s, ':') : NULL;
    if (!colon || !colon[1]) {
        return -1;
    }
    const char *h = s;
    size_t hl = (size_t)(colon - s);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p < 0 || p > 65535 || hl + 1 > cap) {
        return -1;
    }
    if (hl == 0) {
        snprintf(ip, cap, "0.0.0.0");
    } else {
        memcpy(ip, h, hl);
        ip[hl] = '\0';
    }
    *port = (int)p;
    return 0;
}
