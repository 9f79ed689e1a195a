/*
 * fuzz_access_log.c - libFuzzer target for the access-log format compiler
 * (proxy/access_log/access_log.h): Envoy substitution format strings (text_format /
 * text_format_source) and typed json_format dictionaries.
 *
 * Input: byte 0 selects the kind (bit 0: json_format, else a text format; bit 1: the *_at
 * variant naming a configuration path). For a text format the rest is the format string
 * (up to its first NUL, as a JSON string would carry it); for json_format the rest is the
 * dictionary's JSON text. A compiled format is rendered for a finished request (headers,
 * trailers, addresses, flags, times set) and for an empty stream info; a JSON line must
 * parse as one JSON object followed by "\n". A compile error always has a message; a text
 * format (or json_format) compiled with and without a configuration path gets the same
 * verdict; for a text format the error with the path is "<path>: " and the error without it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"
#include "proxy/access_log/access_log.h"
#include "proxy/stream_info/stream_info.h"

#define S(lit)                                                                                     \
    {                                                                                              \
        lit, sizeof(lit) - 1                                                                       \
    }

static void render(const wp_access_log_format *f, const wp_stream_info *si)
{
    wf_strbuf out = WF_STRBUF_INIT;
    wp_alf_render(f, si, &out);
    if (!wf_strbuf_failed(&out) && wp_alf_is_json(f)) {
        json_error_t je;
        if (out.len == 0 || wf_strbuf_cstr(&out)[out.len - 1] != '\n')
            abort();
        json_t *j = json_loadb(wf_strbuf_cstr(&out), out.len - 1, 0, &je);
        if (!json_is_object(j))
            abort();
        json_decref(j);
    }
    wf_strbuf_free(&out);
}

static void render_both(const wp_access_log_format *f)
{
    h1_header req_h[] = {
        {S("Host"), S("reviews.default.svc.cluster.local:9080")},
        {S("User-Agent"), S("curl/8.5.0")},
        {S("X-Request-Id"), S("0f6f2d6e-1c2a-4b7a-9b7e-\xc3\xa9\xff\x01")},
        {S("content-type"), S("application/grpc")},
        {S("x-empty"), S("")},
    };
    h1_message req = {.method = S("POST"),
                      .target = S("/pkg.Svc/Call?q=\"1\""),
                      .version_minor = 1,
                      .headers = req_h,
                      .nheaders = 5};
    h1_header resp_h[] = {{S("x-envoy-upstream-service-time"), S("12")},
                          {S("grpc-status"), S("14")}};
    h1_header trl[] = {{S("grpc-status"), S("x")}, {S("grpc-message"), S("a\tb")}};
    wp_stream_info si = {.connection_id = 7,
                         .stream_id = 9,
                         .start_time_us = 1764970200123456,
                         .start_ns = 1000,
                         .last_rx_ns = 2000000,
                         .first_upstream_tx_ns = 3000000,
                         .last_upstream_tx_ns = 4000000,
                         .first_upstream_rx_ns = 5000000,
                         .last_upstream_rx_ns = 6000000,
                         .first_downstream_tx_ns = 7000000,
                         .last_downstream_tx_ns = 8000000,
                         .end_ns = 9000000,
                         .request = &req,
                         .protocol = "HTTP/1.1",
                         .response_headers = resp_h,
                         .nresponse_headers = 2,
                         .response_trailers = trl,
                         .nresponse_trailers = 2,
                         .response_code = 503,
                         .details = "upstream_reset_before_response_started{connection_failure}",
                         .transport_failure_reason = "delayed connect error: 111",
                         .bytes_received = 5,
                         .bytes_sent = 91,
                         .route_name = "default",
                         .upstream_cluster = "outbound|9080||r",
                         .upstream_cluster_stat = "outbound|9080||r",
                         .upstream_host = "10.0.0.1:9080",
                         .upstream_local = "10.0.0.2:40000",
                         .downstream_local = "10.0.0.2:15001",
                         .downstream_remote = "10.0.0.3:50000",
                         .downstream_direct_remote = "10.0.0.3:50000",
                         .server_name = "istio-envoy",
                         .attempt_count = 2,
                         .upstream_connection_id = 3};
    wp_si_set_flag(&si, WP_RF_UH);
    wp_si_set_flag(&si, WP_RF_UT);
    render(f, &si);
    wp_stream_info empty = {0};
    render(f, &empty);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool json = data[0] & 1, at = data[0] & 2;
    const char *path = at ? "static_resources.listeners[0].access_log[0].log_format" : NULL;
    wf_strbuf err = WF_STRBUF_INIT;
    wp_access_log_format *f = NULL;
    if (json) {
        json_error_t je;
        json_t *j = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, &je);
        if (!j) {
            wf_strbuf_free(&err);
            return 0;
        }
        f = at ? wp_alf_compile_json_at(j, path, &err) : wp_alf_compile_json(j, &err);
        if (at) { /* the same verdict without the path */
            wp_access_log_format *g = wp_alf_compile_json(j, NULL);
            if (!f != !g)
                abort();
            wp_alf_free(g);
        }
        json_decref(j);
    } else {
        char *fmt = malloc(size);
        if (!fmt)
            abort();
        memcpy(fmt, data + 1, size - 1);
        fmt[size - 1] = '\0';
        /* the _at variant: the same verdict, its error the plain one after "<at>: " */
        wf_strbuf plain = WF_STRBUF_INIT;
        wp_access_log_format *g = at ? wp_alf_compile_text(fmt, &plain) : NULL;
        f = at ? wp_alf_compile_text_at(fmt, path, &err) : wp_alf_compile_text(fmt, &err);
        if (at) {
            size_t pl = strlen(path);
            if (!f != !g ||
                (!f && (err.len != pl + 2 + plain.len || memcmp(err.data, path, pl) != 0 ||
                        memcmp(err.data + pl, ": ", 2) != 0 ||
                        memcmp(err.data + pl + 2, plain.data, plain.len) != 0)))
                abort();
        }
        wp_alf_free(g);
        wf_strbuf_free(&plain);
        free(fmt);
    }
    if (f) {
        if (wp_alf_is_json(f) != json)
            abort();
        render_both(f);
        wp_alf_free(f);
    } else if (err.len == 0) {
        abort();
    }
    wf_strbuf_free(&err);
    return 0;
}
