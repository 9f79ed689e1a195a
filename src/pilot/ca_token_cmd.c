/*
 * ca_token_cmd.c - `weft-pilot create-token SA [-n NS] [--ca-dir DIR] [--duration D]
 * [-o json]`: prints a CSR token (ca_token.h) for a service account, as `kubectl create token
 * SA -n NS --audience istio-ca` does for a projected token. Plain output is the token and a
 * newline; -o json is kubectl's TokenRequest object. Exit codes: 0 printed, 1 the key cannot
 * be read or made, 2 bad command line.
 */
#include "pilot/ca_token.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "core/timefmt.h"
#include "pilot/ca.h"
#include "pilot/pilot_ca.h"

static void token_usage(FILE *f)
{
    fprintf(f,
            "Usage: weft-pilot create-token SERVICE_ACCOUNT [-n NAMESPACE] [flags]\n"
            "\n"
            "Prints a token that authenticates SERVICE_ACCOUNT's CSRs to weft-pilot's CA\n"
            "(istio.v1.auth.IstioCertificateService, metadata \"authorization: Bearer TOKEN\"):\n"
            "an HS256 JWT with Kubernetes service-account claims and audience istio-ca, signed\n"
            "with the key in the CA directory (created when missing).\n"
            "\n"
            "Flags:\n"
            "  -n, --namespace NS     the service account's namespace (default \"default\")\n"
            "      --ca-dir DIR       weft-pilot's CA directory (default as weft-pilot's)\n"
            "      --duration D       lifetime: 12h, 30m, 90s or seconds (default 12h)\n"
            "  -o, --output json      kubectl's TokenRequest object instead of the token\n"
            "  -h, --help             show this help\n"
            "\n"
            "Exit codes: 0 printed, 1 the key cannot be read or made, 2 bad command line.\n");
}

static int parse_dur(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    int64_t mul = !*end || !strcmp(end, "s") ? 1
                  : !strcmp(end, "m")        ? 60
                  : !strcmp(end, "h")        ? 3600
                                             : -1;
    if (end == s || mul < 0 || v <= 0 || v > 10LL * 365 * 86400 / mul)
        return -1;
    *out = v * mul;
    return 0;
}

static int print_json(const char *tok, int64_t now, int64_t ttl)
{
    char ts[40];
    wf_timestamp_s(now + ttl, ts, sizeof ts);
    json_t *j = json_pack("{s:s,s:s,s:{s:[s],s:I},s:{s:s,s:s}}", "kind", "TokenRequest",
                          "apiVersion", "authentication.k8s.io/v1", "spec", "audiences",
                          WF_CA_TOKEN_AUDIENCE, "expirationSeconds", (json_int_t)ttl, "status",
                          "token", tok, "expirationTimestamp", ts);
    int rc = j && json_dumpf(j, stdout, JSON_INDENT(4)) == 0 ? 0 : 1;
    json_decref(j);
    printf("\n");
    return rc;
}

int wf_ca_token_cmd(int argc, char **argv)
{
    static const struct option longs[] = {{"namespace", required_argument, 0, 'n'},
                                          {"ca-dir", required_argument, 0, 'd'},
                                          {"duration", required_argument, 0, 't'},
                                          {"output", required_argument, 0, 'o'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *ns = "default", *dir = NULL;
    char def[4096], err[512];
    int64_t ttl = WF_CA_TOKEN_DEFAULT_TTL_S;
    bool json = false;
    int opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":n:o:h", longs, NULL)) != -1) {
        if (opt == 'h') {
            token_usage(stdout);
            return 0;
        } else if (opt == 'n') {
            ns = optarg;
        } else if (opt == 'd') {
            dir = optarg;
        } else if (opt == 't' && parse_dur(optarg, &ttl) == 0) {
        } else if (opt == 'o' && !strcmp(optarg, "json")) {
            json = true;
        } else {
            fprintf(stderr, "weft-pilot create-token: bad or missing value for %s\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "weft-pilot create-token: want exactly one SERVICE_ACCOUNT\n"
                        "Try 'weft-pilot create-token --help'.\n");
        return 2;
    }
    wf_ca_token_key key;
    if (!dir)
        dir = wf_pilot_ca_default_dir(def, sizeof def);
    if (wf_ca_make_dir(dir, err, sizeof err) != 0 ||
        wf_ca_token_key_load(dir, 1, &key, err, sizeof err) != 0) {
        fprintf(stderr, "weft-pilot create-token: %s\n", err);
        return 1;
    }
    int64_t now = (int64_t)time(NULL);
    char *tok = wf_ca_token_mint(&key, ns, argv[optind], now, ttl, err, sizeof err);
    OPENSSL_cleanse(&key, sizeof key);
    if (!tok) {
        fprintf(stderr, "weft-pilot create-token: %s\n", err);
        return 2;
    }
    int rc = json ? print_json(tok, now, ttl) : (printf("%s\n", tok), 0);
    free(tok);
    return rc;
}
