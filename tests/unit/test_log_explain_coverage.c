/*
 * test_log_explain_coverage.c - `weftctl log explain` knows every response code details value
 * and reset reason weft-proxy can log (issue 15 item 9: fault_filter_abort was missing; this
 * catches the whole class):
 *  - every HTTP/1 codec error's details (h1_error_details over all h1_error values);
 *  - every upstream reset reason (wp_reset_reason_string), alone and inside
 *    upstream_reset_before_response_started{...} / upstream_reset_after_response_started{...};
 *  - every details string literal weft-proxy's sources pass to a local reply (conn.c's
 *    stream_local_reply, the router's wp_router_local_reply) or
 *    assign to a stream's details (src/proxy, read at test time: ctest runs unit tests in the
 *    source tree), macros resolved through their #define.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/log_explain.h"
#include "http/h1_parser.h"
#include "proxy/filters/http/router.h"
#include "proxy/http/conn.h"
#include "proxy/server/server.h"

static void test_codec_error_details(void **state)
{
    (void)state;
    int missing = 0;
    for (int e = H1_OK + 1; e < H1_ERR_COUNT_; e++) {
        const char *d = h1_error_details((h1_error)e);
        if (!wf_lx_find_detail(d)) {
            print_error("log explain does not know details \"%s\" (h1 error %s)\n", d,
                        h1_error_name((h1_error)e));
            missing++;
        }
    }
    assert_int_equal(missing, 0);
}

static void test_reset_reasons(void **state)
{
    (void)state;
    for (int r = WP_RESET_LOCAL_CONNECTION_FAILURE; r < WP_RESET_COUNT_; r++) {
        char reason[96], detail[160];
        snprintf(reason, sizeof reason, "%s", wp_reset_reason_string(r));
        for (char *p = reason; *p; p++)
            if (*p == ' ')
                *p = '_'; /* as the router writes it into details */
        if (!wf_lx_find_reset(reason))
            fail_msg("log explain does not know reset reason \"%s\"", reason);
        snprintf(detail, sizeof detail, "upstream_reset_before_response_started{%s}", reason);
        assert_non_null(wf_lx_find_detail(detail));
        snprintf(detail, sizeof detail, "upstream_reset_after_response_started{%s}", reason);
        assert_non_null(wf_lx_find_detail(detail));
    }
}

/* ---- details literals in src/proxy ---- */

typedef struct src_set {
    char *text[256];
    char name[256][96];
    size_t n;
} src_set;

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    return b;
}

/* Every .c and .h below dir (the proxy's layers are folders), named by their path under
 * src/proxy. */
static void load_dir(src_set *s, const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d); /* ctest runs unit tests in the source tree */
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[320];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            load_dir(s, path);
            continue;
        }
        size_t l = strlen(e->d_name);
        if (l < 3 || (strcmp(e->d_name + l - 2, ".c") != 0 && strcmp(e->d_name + l - 2, ".h")))
            continue;
        assert_true(s->n < 256);
        snprintf(s->name[s->n], sizeof s->name[0], "%.95s", path + strlen("src/proxy/"));
        s->text[s->n++] = read_file(path);
    }
    closedir(d);
}

static void load_sources(src_set *s)
{
    load_dir(s, "src/proxy");
}

/* The string literal of `#define name "value"` in the sources, into out; false if none. */
static bool resolve_macro(const src_set *s, const char *name, char *out, size_t cap)
{
    char pat[128];
    snprintf(pat, sizeof pat, "#define %s \"", name);
    for (size_t i = 0; i < s->n; i++) {
        const char *p = strstr(s->text[i], pat);
        if (p) {
            p += strlen(pat);
            snprintf(out, cap, "%.*s", (int)strcspn(p, "\""), p);
            return true;
        }
    }
    return false;
}

/* The text of argument k (0-based) of the call whose '(' is at open; "" when absent. */
static void call_arg(const char *open, int k, char *out, size_t cap)
{
    int depth = 0, arg = 0;
    const char *start = open + 1;
    out[0] = '\0';
    for (const char *p = open; *p; p++) {
        if (*p == '"') { /* skip a string literal */
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1])
                    p++;
            continue;
        }
        if (*p == '(')
            depth++;
        else if (*p == ')' && --depth == 0) {
            if (arg == k)
                snprintf(out, cap, "%.*s", (int)(p - start), start);
            return;
        } else if (*p == ',' && depth == 1) {
            if (arg == k) {
                snprintf(out, cap, "%.*s", (int)(p - start), start);
                return;
            }
            arg++;
            start = p + 1;
        }
    }
}

/* A details expression: a literal or a macro naming one gives the value; anything else
 * (a buffer, a function call) is covered by the walks above. */
static bool details_value(const src_set *s, const char *expr, char *out, size_t cap)
{
    while (*expr == ' ' || *expr == '\n' || *expr == '\t')
        expr++;
    if (*expr == '"') {
        snprintf(out, cap, "%.*s", (int)strcspn(expr + 1, "\""), expr + 1);
        return true;
    }
    char name[96];
    size_t n = strspn(expr, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789");
    if (n == 0 || n >= sizeof name)
        return false;
    snprintf(name, sizeof name, "%.*s", (int)n, expr);
    if (!resolve_macro(s, name, out, cap))
        fail_msg("details macro %s has no string #define in src/proxy", name);
    return true;
}

static void check(const char *file, const char *value, size_t *checked, int *missing)
{
    if (!wf_lx_find_detail(value)) {
        print_error("%s: log explain does not know details \"%s\"\n", file, value);
        (*missing)++;
    }
    (*checked)++;
}

static void test_proxy_details_literals(void **state)
{
    (void)state;
    src_set s = {0};
    load_sources(&s);
    size_t checked = 0;
    int missing = 0;
    for (size_t i = 0; i < s.n; i++) {
        const char *t = s.text[i];
        /* the connection manager's local replies (conn.c) and the router's (router.c,
         * router_retry.c: through the connection manager's callbacks) */
        static const char *const fns[] = {"stream_local_reply(", "wp_router_local_reply("};
        for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
            for (const char *p = t; (p = strstr(p, fns[k])) != NULL; p++) {
                bool decl = p >= t + 5 && strncmp(p - 5, "void ", 5) == 0;
                char arg[512], v[128];
                call_arg(p + strlen(fns[k]) - 1, 3, arg, sizeof arg);
                if (!decl && details_value(&s, arg, v, sizeof v))
                    check(s.name[i], v, &checked, &missing);
            }
        }
        for (const char *p = t; (p = strstr(p, "details = ")) != NULL; p++) {
            char v[128];
            if (p > t && (p[-1] == '.' || p[-1] == '>') &&
                details_value(&s, p + strlen("details = "), v, sizeof v))
                check(s.name[i], v, &checked, &missing);
        }
    }
    assert_int_equal(missing, 0);
    /* the scan found the proxy's local replies (route_not_found, cluster_not_found,
     * fault_filter_abort, no_healthy_upstream, ...): it cannot pass by finding nothing */
    assert_true(checked >= 15);
    for (size_t i = 0; i < s.n; i++)
        free(s.text[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec_error_details),
        cmocka_unit_test(test_reset_reasons),
        cmocka_unit_test(test_proxy_details_literals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
