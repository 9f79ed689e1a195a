/*
 * listen_addr.h - the listen addresses weft-pilot's flags take (istiod's --grpcAddr,
 * --monitoringAddr style: "ip:port", "[ipv6]:port", ":port").
 */
#ifndef WF_PILOT_LISTEN_ADDR_H
#define WF_PILOT_LISTEN_ADDR_H

#include <stddef.h>

/* Parses "ip:port", "[ipv6]:port" or ":port" (all interfaces, 0.0.0.0) into ip (cap bytes)
 * and port 0..65535. Returns 0 or -1. */
int wf_pilot_parse_addr(const char *s, char *ip, size_t cap, int *port);

#endif
