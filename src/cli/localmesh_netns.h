/*
 * localmesh_netns.h - the local mesh's pod network in network namespaces (`weftctl up
 * --pod-network netns`, docs/local-mesh.md "Pods in network namespaces"): what a kind node
 * gives its pods, on one machine and as root.
 *
 * Topology (the names all start with the mesh's prefix "weft-<HASH>-", HASH 12 hex digits of
 * the state folder's absolute path, so that `down` finds them from the state folder alone,
 * even when the supervisor died):
 *
 *   host namespace (where weftctl runs; pilot stays here on 127.0.0.1 as in explicit mode)
 *     weft<HASH8>  veth, 10.10.255.254/16: the host's only change, one link and the
 *                  connected route 10.10.0.0/16 over it (no forwarding, no firewall rule)
 *        |
 *   weft-<HASH>-node   the "node": bridge br0 10.10.0.1/16; host0 (the host link's peer) and
 *                      vp<N> (each pod's veth peer) are its ports (layer 2 only)
 *        |
 *   weft-<HASH>-<pod>.<ns>   each pod: lo up, eth0 with the pod IP 10.10.x.y/16, default
 *                            route via 10.10.0.1; its processes run here (nsenter --net)
 *
 * Pod IPs follow the pod's index in the plan as in explicit mode (the gateway first):
 * 10.10.(i/253).(2+i%253), so the same manifests give the same addresses. Pods reach pilot
 * at 10.10.255.254:15012 (the supervisor forwards it to 127.0.0.1:15012); the host reaches
 * the pods (weftctl's admin and status probes, the node-port forwarder) over the host link.
 *
 * The namespace and link operations run iproute2's `ip` (fork/exec, PATH); every failure is
 * reported as "ip ARGS: what ip said". Errors: -1 with err filled. No state between calls.
 */
#ifndef WF_CLI_LOCALMESH_NETNS_H
#define WF_CLI_LOCALMESH_NETNS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"

#define WF_LM_NETNS_CIDR    "10.10.0.0/16"  /* the book's kind cluster's pod network */
#define WF_LM_NETNS_GW      "10.10.0.1"     /* the node's bridge: the pods' default route */
#define WF_LM_NETNS_HOST_IP "10.10.255.254" /* the host's end of the host link */
#define WF_LM_NETNS_PLEN    16
/* the Services' clusterIPs (kubeadm's and kind's default --service-cluster-ip-range), which
 * weft-pilot hands out as the API server would (model/cluster_ip.h) */
#define WF_LM_NETNS_SERVICE_CIDR "10.96.0.0/12"
#define WF_LM_NETNS_RUN_DIR      "/run/netns" /* where `ip netns add` puts named namespaces */
#define WF_LM_NETNS_FILE         "netns"      /* STATE/netns: what up created (for down) */
#define WF_LM_CAPTURE_UID        1337         /* Istio's proxy uid and gid (istio-iptables -u) */

/* The names of a mesh's namespaces and links, from its absolute state folder. */
typedef struct wf_lm_netns_names {
    char hash[13];      /* 12 hex digits (FNV-1a 64 of the state path, low 48 bits) */
    char prefix[24];    /* "weft-<hash>-": every namespace of the mesh starts with it */
    char node[32];      /* "weft-<hash>-node" */
    char host_link[16]; /* "weft<first 8 of hash>" (IFNAMSIZ) */
} wf_lm_netns_names;

void wf_lm_netns_names_of(const char *state, wf_lm_netns_names *out);

/* The namespace of pod name in namespace ns: "<prefix><name>.<ns>". Returns 0, or -1 when it
 * does not fit cap or is not a valid file name (a '/', or "." / ".."). */
int wf_lm_netns_pod_name(const wf_lm_netns_names *n, const char *name, const char *ns, char *out,
                         size_t cap);

/* The pod IP of the i-th pod (0-based, i < 253*250): 10.10.(i/253).(2+i%253). buf >= 16. */
void wf_lm_netns_pod_ip(size_t i, char *buf);

/* Whether this process may build the pod network: root (CAP_NET_ADMIN) and `ip` on PATH.
 * Returns true, or false with why filled ("needs root (CAP_NET_ADMIN...)"). */
bool wf_lm_netns_possible(wf_strbuf *why);

/* One pod of the pod network: its namespace, its IP, its veth peer's index. */
typedef struct wf_lm_netns_pod {
    const char *netns; /* from wf_lm_netns_pod_name */
    const char *ip;    /* 10.10.x.y */
} wf_lm_netns_pod;

/* Whether an earlier run of this state folder left a namespace with a process still inside
 * (its pod would be cut off and out of `down`'s reach): 0 when not, else -1 with err naming
 * the namespace and a PID and saying to run `weftctl down --state STATE` first. */
int wf_lm_netns_check_leftovers(const char *state, wf_strbuf *err);

/* Build the node namespace, the host link and every pod's namespace (state: absolute). Writes
 * STATE/netns (the prefix and host link) first. Anything left from an earlier run of the same
 * state folder is removed before; refused (nothing changed) while a process still runs in one
 * of those namespaces. On failure, what was made is removed again and err names the
 * failed operation. Returns 0 or -1. */
int wf_lm_netns_up(const char *state, const wf_lm_netns_pod *pods, size_t npods, wf_strbuf *err);

/* Run argv (NULL-terminated; argv[0] looked up in PATH) inside namespace netns and wait: the
 * capture step (`weft-proxy istio-iptables ...`). Returns 0, or -1 with err naming the command
 * and its output. */
int wf_lm_netns_run(const char *netns, const char *const *argv, wf_strbuf *err);

/* Write value to /proc/sys/<key path> as seen inside namespace netns (the per-namespace
 * sysctls under net/: "net/ipv4/ip_unprivileged_port_start"). 0, or -1 with err. */
int wf_lm_netns_sysctl(const char *netns, const char *key, const char *value, wf_strbuf *err);

/* Whether uid (and gid uid) can open path for reading (a child process switches to it and
 * tries): 0, or -1 with err naming the path and why ("... permission denied: a folder on the way
 * is not open to uid 1337; choose --state elsewhere"). */
int wf_lm_netns_uid_can_read(int uid, const char *path, wf_strbuf *err);

/* Remove every namespace whose name starts with the mesh's prefix (listed in /run/netns) and
 * the host link, and STATE/netns. Processes still inside (stop those mesh.json lists first,
 * gracefully) are killed with SIGKILL: a process the supervisor started but did not record
 * would keep its namespace alive out of everyone's reach. *removed (may
 * be NULL) gets the number of namespaces and links removed. Returns 0, or -1 with err naming
 * what could not be removed (the others are still removed). */
int wf_lm_netns_down(const char *state, size_t *removed, wf_strbuf *err);

/* Namespaces of the mesh that exist now (names under /run/netns with the prefix). */
size_t wf_lm_netns_count(const char *state);

#endif
