/*
 * localmesh_tokens.h - the service-account token of every proxy of the local mesh, as
 * Kubernetes projects one into each pod for Istio's sidecar (the `istio-token` volume:
 * audience istio-ca, expirationSeconds 43200, mounted at /var/run/secrets/tokens/istio-token;
 * security.md §1.6 steps 3-4) and pilot-agent sends it as the Bearer token of its CSR.
 *
 *   STATE/tokens/<pod>.<ns>/istio-token   (folders 0700, the file 0600)
 *
 * The token is for the pod's identity: its namespace and the service account of its workload
 * (spec.template.spec.serviceAccountName, "default" when unset, as Kubernetes assigns; the
 * ingress gateway we add runs as istio-ingressgateway-service-account). It is minted with the
 * mesh CA's token key (pilot/ca_token.h) in STATE/ca, the --ca-dir `up` gives weft-pilot: the
 * key is made here the way pilot makes it (wf_ca_make_dir, then wf_ca_token_key_load with
 * create; the key file is linked into place, so whichever of weftctl and pilot comes first
 * makes it and the other reads that one). weftctl writes the tokens before pilot starts.
 *
 * Tokens live as long as Kubernetes' (12 h); as the kubelet refreshes a projected token once
 * 80 % of its life has passed, the supervisor of `weftctl up` writes fresh ones every 9.6 h
 * (wf_lm_tokens_refresh; the proxies read the file at every CSR). They are removed by
 * `weftctl down` and replaced on every `up`.
 */
#ifndef WF_CLI_LOCALMESH_TOKENS_H
#define WF_CLI_LOCALMESH_TOKENS_H

#include <stdint.h>

#include "cli/localmesh_plan.h"
#include "core/strbuf.h"

#define WF_LM_TOKENS_DIR "tokens"
#define WF_LM_TOKEN_FILE "istio-token"
#define WF_LM_DEFAULT_SA "default"

/* The service account a pod runs as: its workload's, else "default". */
const char *wf_lm_pod_sa(const wf_lm_pod *pod);

/* Removes the old tokens, then writes one token (valid from now_s) for every pod with a proxy
 * that is started (pod->token set). Returns 0, or -1 with err naming the file. */
int wf_lm_tokens_write(const wf_lm_plan *p, int64_t now_s, wf_strbuf *err);

/* The kubelet's refresh point of a projected token: 80 % of its lifetime. */
#define WF_LM_TOKEN_REFRESH_PCT 80

/* Writes a fresh token (valid from now_s) over each existing one, each file replaced at once
 * (a proxy reading it sees the old or the new token). Returns 0, or -1 with err naming the
 * file. */
int wf_lm_tokens_refresh(const wf_lm_plan *p, int64_t now_s, wf_strbuf *err);

/* Removes STATE/tokens and everything in it (a missing folder is fine). Returns 0, or -1 with
 * err naming what could not be removed. */
int wf_lm_tokens_remove(const char *state, wf_strbuf *err);

#endif
