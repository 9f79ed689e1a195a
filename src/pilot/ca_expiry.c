/*
 * ca_expiry.c - the mesh CA's certificates near their end. See ca_expiry.h.
 */
#include "pilot/ca_expiry.h"

#include <stdio.h>
#include <time.h>

#include "core/timefmt.h"

bool wf_ca_cert_expiring(int64_t not_before_s, int64_t not_after_s, int64_t now_s, int pct)
{
    int64_t life = not_after_s - not_before_s;
    if (life <= 0 || now_s >= not_after_s)
        return true;
    /* GetWaitTime: grace = life * pct / 100; expiring once now >= NotAfter - grace */
    return now_s >= not_after_s - life * pct / 100;
}

/* "N days" for a span of s seconds, or "N hours"/"N seconds" under a day (short test CAs). */
static const char *span(int64_t s, char *buf, size_t cap)
{
    if (s < 0)
        s = -s;
    if (s >= 86400)
        snprintf(buf, cap, "%lld days", (long long)(s / 86400));
    else if (s >= 3600)
        snprintf(buf, cap, "%lld hours", (long long)(s / 3600));
    else
        snprintf(buf, cap, "%lld seconds", (long long)s);
    return buf;
}

static bool check_one(const wf_ca *ca, const char *which, int64_t nb, int64_t na, int64_t now_s,
                      wf_ca_expiry *e)
{
    if (!wf_ca_cert_expiring(nb, na, now_s, WF_CA_GRACE_PERIOD_PERCENTILE))
        return false;
    bool self = wf_ca_self_signed(ca);
    char when[40], left[32], life[32];
    *e =
        (wf_ca_expiry){.which = which, .not_before_s = nb, .not_after_s = na, .left_s = na - now_s};
    wf_timestamp_s(na, when, sizeof when);
    span(na - now_s, left, sizeof left);
    span(na - nb, life, sizeof life);
    const char *rule = self ? "Istio's CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE rule"
                            : "weft applies Istio's self-signed root rule to a plug-in CA";
    const char *todo = self ? "weft-pilot re-issues a self-signed root with the same key when it "
                              "starts (istiod rotates it hourly): restart weft-pilot"
                            : "replace the Secret istio-system/cacerts (keep the old root in "
                              "root-cert.pem during the transition)";
    if (na <= now_s)
        snprintf(e->message, sizeof e->message,
                 "CA %s (%s from %s) expired %s ago (NotAfter %s); %s", which,
                 self ? "self-signed root" : "plug-in CA", wf_ca_where(ca), left, when, todo);
    else
        snprintf(e->message, sizeof e->message,
                 "CA %s (%s from %s) expires in %s (NotAfter %s): less than %d%% of its lifetime "
                 "of %s is left (%s); %s",
                 which, self ? "self-signed root" : "plug-in CA", wf_ca_where(ca), left, when,
                 WF_CA_GRACE_PERIOD_PERCENTILE, life, rule, todo);
    return true;
}

size_t wf_ca_expiry_check(const wf_ca *ca, int64_t now_s, wf_ca_expiry out[2])
{
    size_t n = 0;
    if (!ca)
        return 0;
    if (check_one(ca, "root certificate", wf_ca_root_not_before(ca), wf_ca_root_not_after(ca),
                  now_s, &out[n]))
        n++;
    if (!wf_ca_self_signed(ca) && check_one(ca, "signing certificate", wf_ca_signing_not_before(ca),
                                            wf_ca_signing_not_after(ca), now_s, &out[n]))
        n++;
    return n;
}
