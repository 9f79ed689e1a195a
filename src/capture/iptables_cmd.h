/*
 * iptables_cmd.h - `weft-proxy istio-iptables` and `weft-proxy istio-clean-iptables`, the
 * commands `pilot-agent istio-iptables` / `istio-clean-iptables` (istio-init) with Istio's
 * flag names (tools/istio-iptables/pkg/cmd/root.go), their environment variables (each flag's
 * name upper-cased with '-' as '_', plus ISTIO_META_DNS_CAPTURE, INVALID_DROP,
 * ISTIO_DUAL_STACK, ENVOY_USER, ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR,
 * ISTIO_OUTBOUND_OWNER_GROUPS[_EXCLUDE]) and its defaults (config.DefaultConfig).
 *
 * argv[0] is the subcommand name. Output: --dry-run prints the iptables-restore input on
 * stdout (IPv4, then IPv6 when on; "# iptables-restore --noflush" comment lines head each) and
 * touches nothing; DRY_RUN_FILE_PATH, as in Istio, also receives the commands Istio's dry run
 * records (the golden-file shape). Messages go to stderr.
 * Exit codes: 0 done, 1 failed to apply/clean (or existing ISTIO_* chains without
 * --reconcile), 2 bad flags or environment (the message names the flag and the value).
 */
#ifndef WF_CAPTURE_IPTABLES_CMD_H
#define WF_CAPTURE_IPTABLES_CMD_H

int wf_istio_iptables_main(int argc, char **argv);
int wf_istio_clean_iptables_main(int argc, char **argv);

#endif
