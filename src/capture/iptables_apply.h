/*
 * iptables_apply.h - installs and removes Istio's capture rules in the current network
 * namespace by running Debian's iptables tools (fork/exec, no shell).
 *
 * Install follows istio-iptables (tools/istio-iptables/pkg/capture/run.go executeCommands):
 * "iptables-restore --noflush" with the IPv4 restore text, "ip6tables-restore --noflush" with
 * the IPv6 one when IPv6 is on; TPROXY mode adds Istio's policy routing (tools/common/tproxy:
 * "ip -f inet rule add fwmark MARK lookup TABLE", "ip -f inet route add local default dev lo
 * table TABLE") and IPv6 adds ::6/128 to lo (configureIPv6Addresses).
 * Clean follows istio-clean-iptables (istio-iptables --cleanup-only: builder BuildCleanupV4/V6,
 * then BuildCleanupFromState): the plan's rules undone with "-D", then from iptables-save every
 * rule in a built-in chain that jumps to an ISTIO_* chain, then every ISTIO_* chain flushed
 * and deleted. Failures of single deletions are ignored (a clean namespace is fine; running
 * it twice is fine); afterwards no ISTIO_* chain may remain.
 *
 * Errors: functions return 0, or -1 with a message in err (the tool, its exit status and its
 * stderr). Tools are looked up in PATH (WEFT_IPTABLES_PREFIX, when set, is prepended to each
 * tool name, e.g. "/usr/sbin/").
 */
#ifndef WF_CAPTURE_IPTABLES_APPLY_H
#define WF_CAPTURE_IPTABLES_APPLY_H

#include <stdbool.h>
#include <stddef.h>

#include "capture/iptables.h"
#include "core/strbuf.h"

/* Runs argv[0] (PATH lookup) with stdin_text on its stdin (NULL: /dev/null); collects its
 * stdout into out (may be NULL) and stderr into errout (may be NULL). Returns the exit status
 * (0-255), or -1 when it could not be started (errno-style message in errout). */
int wf_ipt_exec(char *const argv[], const char *stdin_text, wf_strbuf *out, wf_strbuf *errout);

/* Whether any ISTIO_* chain exists in nat, mangle or raw for the family (ip6 = ip6tables).
 * Returns 1 yes, 0 no, -1 when iptables-save failed (err set). */
int wf_ipt_has_istio_chains(bool ip6, char *err, size_t errlen);

/* Installs the plan (see above). Returns 0 or -1. */
int wf_ipt_apply(const wf_ipt_plan *p, const wf_ipt_opts *o, char *err, size_t errlen);

/* Removes Istio's rules and chains for IPv4 and, when ip6tables works, IPv6. plan may be NULL
 * (then only the state-based pass runs). Returns 0, or -1 when ISTIO_* chains remain. */
int wf_ipt_clean(const wf_ipt_plan *p, const wf_ipt_opts *o, char *err, size_t errlen);

#endif
