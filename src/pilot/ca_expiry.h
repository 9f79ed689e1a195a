/*
 * ca_expiry.h - is the mesh CA's root or signing certificate about to expire? (issue 17
 * item 6: a certificate about to expire is visible before it breaks).
 *
 * Rule: istiod's self-signed root rotator (security/pkg/pki/ca/selfsignedcarootcertrotator.go
 * with certutil.GetWaitTime) treats the root as expiring once less than
 * CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE (default 20) percent of its lifetime
 * (NotAfter - NotBefore) is left, and then rotates it (hourly). weft re-issues such a root
 * only when weft-pilot starts (pilot/ca.h wf_ca_load_dir), so a running pilot warns at that
 * same point. istiod has no such check for a plug-in CA (cacerts); weft applies the
 * same 20 %-of-lifetime rule to a plug-in root and signing (intermediate) certificate, its own
 * choice, and says so in the message. A certificate already past NotAfter is reported as
 * expired.
 *
 * Input: the CA (pilot/ca.h) and the wall clock in seconds. Output: up to two findings
 * (root first, then the signing certificate when it is not the root), each with a message
 * line; no allocation, no state.
 */
#ifndef WF_PILOT_CA_EXPIRY_H
#define WF_PILOT_CA_EXPIRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pilot/ca.h"

#define WF_CA_GRACE_PERIOD_PERCENTILE 20 /* Istio's CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_... */

typedef struct wf_ca_expiry {
    const char *which; /* "root certificate", "signing certificate" */
    int64_t not_before_s, not_after_s;
    int64_t left_s; /* NotAfter - now (negative: expired) */
    char message[512];
} wf_ca_expiry;

/* True when at most pct percent of [not_before, not_after] is left at now (or it is over). */
bool wf_ca_cert_expiring(int64_t not_before_s, int64_t not_after_s, int64_t now_s, int pct);

/* The findings for ca at now_s into out (room for 2); returns how many (0: none). Message:
 * "CA <which> (<self-signed root|plug-in CA> from <where>) expires in N days (NotAfter
 * <RFC 3339>): less than 20% of its lifetime of D days is left; <what to do>" or "... expired
 * N days ago (NotAfter ...)". */
size_t wf_ca_expiry_check(const wf_ca *ca, int64_t now_s, wf_ca_expiry out[2]);

#endif
