/*
 * test_log.c - component loggers: line layout, tags, runtime levels, --component-log-level
 * parsing, the /logging listing, truncation and non-interleaving.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/log.h"

static int pipefd[2];

/* 2023-11-14T22:13:20.123456Z */
static int64_t fixed_clock(void)
{
    return INT64_C(1700000000123456);
}

static int setup(void **state)
{
    (void)state;
    if (pipe(pipefd) != 0)
        return -1;
    fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    if (fcntl(pipefd[1], F_SETPIPE_SZ, 1 << 20) < (1 << 20))
        return -1;
    wf_log_init(pipefd[1], WF_LOG_INFO, fixed_clock);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    wf_log_init(2, WF_LOG_INFO, NULL);
    close(pipefd[0]);
    close(pipefd[1]);
    return 0;
}

/* Everything written so far (caller frees). */
static char *drain(void)
{
    wf_strbuf b = WF_STRBUF_INIT;
    char tmp[8192];
    ssize_t n;
    while ((n = read(pipefd[0], tmp, sizeof tmp)) > 0)
        wf_strbuf_append(&b, tmp, (size_t)n);
    wf_strbuf_putc(&b, '\0');
    b.len--;
    return wf_strbuf_take(&b);
}

static long tid(void)
{
    return (long)syscall(SYS_gettid);
}

static void test_line_layout(void **state)
{
    (void)state;
    int line = __LINE__ + 1;
    WF_LOG(WF_LC_router, WF_LOG_INFO, "cluster '%s' has %d hosts", "x", 3);
    char *got = drain();
    char want[512];
    snprintf(want, sizeof want,
             "2023-11-14T22:13:20.123456Z\tinfo\tenvoy router test_log.c:%d\t"
             "cluster 'x' has 3 hosts\tthread=%ld\n",
             line, tid());
    assert_string_equal(got, want);
    free(got);
}

static void test_level_names_in_lines(void **state)
{
    (void)state;
    wf_log_set_all(WF_LOG_TRACE);
    WF_LOG(WF_LC_misc, WF_LOG_WARN, "w");
    WF_LOG(WF_LC_misc, WF_LOG_CRITICAL, "c");
    WF_LOG(WF_LC_misc, WF_LOG_TRACE, "t");
    char *got = drain();
    assert_non_null(strstr(got, "Z\twarning\tenvoy misc "));
    assert_non_null(strstr(got, "Z\tcritical\tenvoy misc "));
    assert_non_null(strstr(got, "Z\ttrace\tenvoy misc "));
    free(got);
}

static void test_conn_and_stream_tags(void **state)
{
    (void)state;
    int line = __LINE__ + 1;
    WF_CONN_LOG(WF_LC_connection, WF_LOG_INFO, 123, "closing socket: %d", 1);
    WF_STREAM_LOG(WF_LC_http, WF_LOG_ERROR, 123, 456, "request end stream");
    char *got = drain();
    char want[1024];
    snprintf(want, sizeof want,
             "2023-11-14T22:13:20.123456Z\tinfo\tenvoy connection test_log.c:%d\t"
             "[Tags: \"ConnectionId\":\"123\"] closing socket: 1\tthread=%ld\n"
             "2023-11-14T22:13:20.123456Z\terror\tenvoy http test_log.c:%d\t"
             "[Tags: \"ConnectionId\":\"123\",\"StreamId\":\"456\"] request end stream"
             "\tthread=%ld\n",
             line, tid(), line + 1, tid());
    assert_string_equal(got, want);
    free(got);
}

static int evaluated;
static int side_effect(void)
{
    return ++evaluated;
}

static void test_runtime_levels(void **state)
{
    (void)state;
    evaluated = 0;
    WF_LOG(WF_LC_router, WF_LOG_DEBUG, "off %d", side_effect());
    assert_int_equal(evaluated, 0); /* arguments not evaluated below the level */
    char *got = drain();
    assert_string_equal(got, "");
    free(got);

    wf_log_set_level(WF_LC_router, WF_LOG_DEBUG);
    assert_true(wf_log_enabled(WF_LC_router, WF_LOG_DEBUG));
    assert_false(wf_log_enabled(WF_LC_http, WF_LOG_DEBUG));
    WF_LOG(WF_LC_router, WF_LOG_DEBUG, "on %d", side_effect());
    WF_LOG(WF_LC_http, WF_LOG_DEBUG, "still off");
    assert_int_equal(evaluated, 1);
    got = drain();
    assert_non_null(strstr(got, "\tdebug\tenvoy router "));
    assert_non_null(strstr(got, "\ton 1\t"));
    assert_null(strstr(got, "still off"));
    free(got);

    wf_log_set_all(WF_LOG_OFF);
    WF_LOG(WF_LC_router, WF_LOG_CRITICAL, "nothing");
    got = drain();
    assert_string_equal(got, "");
    free(got);
    assert_int_equal(wf_log_get_level(WF_LC_admin), WF_LOG_OFF);
}

static void test_level_and_comp_names(void **state)
{
    (void)state;
    assert_int_equal(wf_log_level_from_name("warning", 7), WF_LOG_WARN);
    assert_int_equal(wf_log_level_from_name("warn", 4), WF_LOG_WARN);
    assert_int_equal(wf_log_level_from_name("critical", 8), WF_LOG_CRITICAL);
    assert_int_equal(wf_log_level_from_name("off", 3), WF_LOG_OFF);
    assert_int_equal(wf_log_level_from_name("DEBUG", 5), -1);
    assert_int_equal(wf_log_level_from_name("debugx", 6), -1);
    assert_string_equal(wf_log_level_name(WF_LOG_WARN), "warning");
    assert_string_equal(wf_log_level_name(WF_LOG_OFF), "off");
    assert_int_equal(wf_log_comp_from_name("conn_handler", 12), WF_LC_conn_handler);
    assert_int_equal(wf_log_comp_from_name("http1", 5), -1);
    assert_string_equal(wf_log_comp_name(WF_LC_health_checker), "health_checker");
}

static void test_component_spec(void **state)
{
    (void)state;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wf_log_apply_component_levels("http:debug,router:trace,misc:warn", &err), 0);
    assert_int_equal(wf_log_get_level(WF_LC_http), WF_LOG_DEBUG);
    assert_int_equal(wf_log_get_level(WF_LC_router), WF_LOG_TRACE);
    assert_int_equal(wf_log_get_level(WF_LC_misc), WF_LOG_WARN);
    assert_int_equal(wf_log_get_level(WF_LC_upstream), WF_LOG_INFO);
    assert_int_equal(wf_log_apply_component_levels("", &err), 0);

    /* all-or-nothing: a bad item later in the list changes nothing */
    assert_int_equal(wf_log_apply_component_levels("upstream:error,foo:debug", &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err), "invalid component specified 'foo'");
    assert_int_equal(wf_log_get_level(WF_LC_upstream), WF_LOG_INFO);

    wf_strbuf_reset(&err);
    assert_int_equal(wf_log_apply_component_levels("http:loud", &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err), "invalid log level specified 'loud'");
    assert_int_equal(wf_log_get_level(WF_LC_http), WF_LOG_DEBUG);

    wf_strbuf_reset(&err);
    assert_int_equal(wf_log_apply_component_levels("http", &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err), "component log level not correctly specified 'http'");

    wf_strbuf_reset(&err);
    assert_int_equal(wf_log_apply_component_levels("http:debug:x", &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err),
                        "component log level not correctly specified 'http:debug:x'");

    wf_strbuf_reset(&err);
    assert_int_equal(wf_log_apply_component_levels("http:debug,", &err), -1);
    wf_strbuf_free(&err);
}

static void test_listing(void **state)
{
    (void)state;
    wf_log_set_level(WF_LC_rbac, WF_LOG_DEBUG);
    wf_log_set_level(WF_LC_golang, WF_LOG_OFF);
    wf_strbuf out = WF_STRBUF_INIT;
    wf_log_list(&out);
    const char *s = wf_strbuf_cstr(&out);
    assert_true(strncmp(s,
                        "active loggers:\n  admin: info\n  alternate_protocols_cache: info\n"
                        "  aws: info\n  assert: info\n",
                        strlen("active loggers:\n  admin: info\n  alternate_protocols_cache: "
                               "info\n  aws: info\n  assert: info\n")) == 0);
    assert_non_null(strstr(s, "\n  rbac: debug\n"));
    assert_non_null(strstr(s, "\n  ext_proc: info\n  rocketmq: info\n")); /* Envoy's order */
    size_t lines = 0;
    for (const char *p = s; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, WF_LC_COUNT + 1);
    size_t n = strlen(s);
    assert_string_equal(s + n - strlen("  golang: off\n"), "  golang: off\n");
    wf_strbuf_free(&out);
}

static void test_truncation(void **state)
{
    (void)state;
    char *big = malloc(10000);
    assert_non_null(big);
    memset(big, 'x', 9999);
    big[9999] = '\0';
    WF_LOG(WF_LC_main, WF_LOG_INFO, "%s", big);
    free(big);
    char *got = drain();
    size_t n = strlen(got);
    assert_true(n <= WF_LOG_LINE_MAX);
    assert_true(n > WF_LOG_LINE_MAX - 40);
    char tail[64];
    snprintf(tail, sizeof tail, "xxx...\tthread=%ld\n", tid());
    assert_string_equal(got + n - strlen(tail), tail);
    assert_int_equal(strchr(got, '\n') - got, (long)n - 1); /* exactly one line */
    free(got);
}

#define NTHREADS 4
#define NLINES   40 /* 4 x 40 x ~3.1 KB fits the 1 MiB pipe: no reader needed */

static void *writer(void *arg)
{
    char msg[3000];
    memset(msg, 'a' + (int)(intptr_t)arg, sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    for (int i = 0; i < NLINES; i++)
        WF_LOG(WF_LC_pool, WF_LOG_INFO, "%s", msg);
    return NULL;
}

static void test_lines_never_interleave(void **state)
{
    (void)state;
    pthread_t th[NTHREADS];
    for (intptr_t i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, writer, (void *)i), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    char *got = drain();
    int count = 0;
    for (char *line = got; *line;) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        char *msg = strstr(line, "\t");
        msg = strstr(msg + 1, "\t");
        msg = strstr(msg + 1, "\t") + 1; /* message starts after the 3rd tab */
        char c = msg[0];
        for (int k = 0; k < 2999; k++)
            assert_int_equal(msg[k], c);
        assert_int_equal(msg[2999], '\t');
        count++;
        line = nl + 1;
    }
    assert_int_equal(count, NTHREADS * NLINES);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_line_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_level_names_in_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_and_stream_tags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runtime_levels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_level_and_comp_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_component_spec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lines_never_interleave, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
