/*
 * inject_iptables.h - the istio-init arguments of Istio's injection template
 * (manifests/charts/istio-control/istio-discovery/files/injection-template.yaml, REDIRECT, no
 * CNI; ../shared/reference/kubernetes.md §3.4): `istio-iptables -p 15001 -z 15006 -u 1337 -m
 * REDIRECT -i <cidrs> -x <cidrs> -b <ports> -d <ports> [-q <ports>] [-o <ports>] [-k <ifaces>]
 * [-c <ifaces>]`, from the pod's traffic.sidecar.istio.io annotations (validated beforehand with
 * analysis/an_annotations_util.h, as the injector does). Shared by the injector
 * (kube/inject_proxy.c) and the local mesh's --capture (cli/cmd_localmesh.c), which run it as
 * `weft-proxy istio-iptables` (capture/iptables_cmd.h). Strings are borrowed; no allocation.
 */
#ifndef WF_KUBE_INJECT_IPTABLES_H
#define WF_KUBE_INJECT_IPTABLES_H

#include <stddef.h>

typedef struct wf_inject_capture {
    const char *include_out_cidrs; /* -i: includeOutboundIPRanges; NULL = "*" */
    const char *exclude_out_cidrs; /* -x: excludeOutboundIPRanges; NULL = "" */
    const char *include_in_ports;  /* -b: includeInboundPorts; NULL = "*" */
    const char *exclude_in_ports;  /* -d: the whole list (wf_inject_exclude_inbound) */
    const char *include_out_ports; /* -q when set and not empty: includeOutboundPorts */
    const char *exclude_out_ports; /* -o when set and not empty: excludeOutboundPorts */
    const char *reroute_ifaces;    /* -k when set: istio.io/reroute-virtual-interfaces, else
                                      traffic.sidecar.istio.io/kubevirtInterfaces */
    const char *exclude_ifaces;    /* -c when set: excludeInterfaces */
} wf_inject_capture;

/* Fills argv with "istio-iptables" and its flags in the template's order, NULL-terminated.
 * Returns the number of entries, or -1 when cap is too small. */
int wf_inject_iptables_argv(const wf_inject_capture *c, const char **argv, size_t cap);

/* -d's value, the template's excludeInboundPort: "15090,15021", the status port unless it is 0
 * or user (excludeInboundPorts, may be NULL) lists it already, then user. */
void wf_inject_exclude_inbound(int status_port, const char *user, char *buf, size_t cap);

#endif
