/*
 * fuzz_bootstrap.c - libFuzzer target for the Envoy v3 bootstrap loader (proxy/bootstrap/bootstrap.h):
 * the input is the bootstrap's JSON text, parsed as wp_bootstrap_load_file parses a file
 * (duplicate keys rejected) and decoded by wp_bootstrap_load.
 *
 * Besides crashes, leaks and undefined behaviour it checks the loader's contract: a rejected
 * bootstrap always says why (a message in err), an accepted one says nothing. And the
 * normalized copy an accepted snapshot keeps (wp_config.bootstrap, snake_case) loads again to
 * the same normalized copy: the xDS client composes every update on top of it (xds_compose.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "proxy/bootstrap/bootstrap.h"
#include "proxy/config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return 0;
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wp_bootstrap_load(root, "fuzz.json", &err);
    json_decref(root);
    if (c ? err.len != 0 : err.len == 0)
        abort();
    if (c) {
        wp_config *again = wp_bootstrap_load(c->bootstrap, "fuzz.json", &err);
        if (!again || !json_equal(again->bootstrap, c->bootstrap))
            abort();
        wp_config_unref(again);
        wp_config_unref(c);
    }
    wf_strbuf_free(&err);
    return 0;
}
