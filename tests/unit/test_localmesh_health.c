/*
 * test_localmesh_health.c - what `weftctl up` and `status` report about a running local mesh
 * (cli/localmesh_health.h): config error lines as the validation webhook words them, which
 * entries fail, app problems from the supervisor's mesh.json, SYNCED from /debug/syncz; the
 * default state folder and process identity across exec (cli/localmesh_sys.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/localmesh_health.h"
#include "cli/localmesh_sys.h"

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("bad test JSON: %s", je.text);
    return j;
}

static void config_error_lines(void **state)
{
    (void)state;
    json_t *arr = parse(
        "[{\"file\": \"/m/vs.yaml\", \"line\": 15, \"column\": 15, \"resource\": "
        "\"VirtualService ns/bad\", \"field\": \"spec.http[0].route[0].weight\", \"message\": "
        "\"must be an integer\", \"kept_last_good\": false},"
        " {\"file\": \"/m/pa.yaml\", \"line\": 3, \"column\": 1, \"resource\": "
        "\"PeerAuthentication ns/default\", \"field\": \"spec.mtls.mode\", \"message\": \"STRICT "
        "is not enforced\", \"level\": \"warning\", \"code\": \"WFT0002\"},"
        " {\"file\": \"/m/dr.yaml\", \"line\": 9, \"column\": 7, \"resource\": "
        "\"DestinationRule ns/dr\", \"field\": \"spec.trafficPolicy.loadBalancer.consistentHash\","
        " \"message\": \"not implemented\", \"level\": \"warning\", \"code\": \"WFT0001\"},"
        " {\"file\": \"/m/x.json\", \"line\": 0, \"column\": 0, \"resource\": \"Gateway ns/g\","
        " \"field\": \"\", \"message\": \"bad\", \"level\": \"error\"}]");
    wf_strbuf b = WF_STRBUF_INIT;
    wf_lm_cfg_line(json_array_get(arr, 0), &b);
    assert_string_equal(wf_strbuf_cstr(&b), "/m/vs.yaml:15:15: VirtualService ns/bad: "
                                            "spec.http[0].route[0].weight: must be an integer");
    wf_lm_cfg_line(json_array_get(arr, 1), &b);
    assert_string_equal(wf_strbuf_cstr(&b),
                        "/m/pa.yaml:3:1: PeerAuthentication ns/default: spec.mtls.mode: STRICT is "
                        "not enforced [WFT0002]");
    wf_lm_cfg_line(json_array_get(arr, 3), &b);
    assert_string_equal(wf_strbuf_cstr(&b), "/m/x.json: Gateway ns/g: bad");
    /* pilot's warnings start with their field: said once */
    json_t *w = parse("{\"file\": \"/m/pa.yaml\", \"line\": 8, \"column\": 5, \"resource\": "
                      "\"PeerAuthentication ns/d\", \"field\": \"spec.mtls.mode\", \"message\": "
                      "\"spec.mtls.mode is not enforced by weft: x\", \"level\": \"warning\", "
                      "\"code\": \"WFT0002\"}");
    wf_lm_cfg_line(w, &b);
    assert_string_equal(wf_strbuf_cstr(&b), "/m/pa.yaml:8:5: PeerAuthentication ns/d: "
                                            "spec.mtls.mode is not enforced by weft: x [WFT0002]");
    json_decref(w);
    /* no level: an error; a warning fails only for an unenforced security control */
    assert_false(wf_lm_cfg_is_warning(json_array_get(arr, 0)));
    assert_true(wf_lm_cfg_fails(json_array_get(arr, 0)));
    assert_true(wf_lm_cfg_is_warning(json_array_get(arr, 1)));
    assert_true(wf_lm_cfg_fails(json_array_get(arr, 1)));
    assert_true(wf_lm_cfg_is_warning(json_array_get(arr, 2)));
    assert_false(wf_lm_cfg_fails(json_array_get(arr, 2)));
    assert_true(wf_lm_cfg_fails(json_array_get(arr, 3)));

    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    assert_int_equal(wf_lm_cfg_print(f, arr), 3);
    fclose(f);
    const char *rej = strstr(out, "pilot rejected 2 resources");
    const char *warn = strstr(out, "accepted with a warning: 2 fields");
    assert_non_null(rej);
    assert_non_null(warn);
    assert_true(rej < warn);
    assert_true(strstr(out, "  /m/vs.yaml:15:15:") < warn);
    assert_true(strstr(out, "  /m/dr.yaml:9:7:") > warn);
    free(out);
    json_decref(arr);

    out = NULL;
    f = open_memstream(&out, &len);
    json_t *empty = json_array();
    assert_int_equal(wf_lm_cfg_print(f, empty), 0);
    fclose(f);
    assert_int_equal(len, 0);
    free(out);
    json_decref(empty);
    wf_strbuf_free(&b);
}

static void app_problems(void **state)
{
    (void)state;
    char buf[300];
    json_t *ok = parse("{\"kind\": \"app\", \"state\": \"running\", \"restarts\": 0, "
                       "\"startedAt\": 1000}");
    assert_null(wf_lm_app_problem(ok, buf, sizeof buf));
    assert_false(wf_lm_app_settled(ok, 1500)); /* running for 0.5 s: not yet */
    assert_true(wf_lm_app_settled(ok, 2000));
    json_t *missing = parse("{\"kind\": \"app\", \"state\": \"restarting\", \"restarts\": 2, "
                            "\"lastExit\": \"command not found: nope\"}");
    assert_string_equal(wf_lm_app_problem(missing, buf, sizeof buf),
                        "cannot start: command not found: nope (restarted 2 times)");
    assert_true(wf_lm_app_settled(missing, 0)); /* failed: nothing to wait for */
    json_t *starting = parse("{\"kind\": \"app\", \"state\": \"starting\", \"restarts\": 0}");
    assert_false(wf_lm_app_settled(starting, 5000));
    assert_null(wf_lm_app_problem(starting, buf, sizeof buf)); /* nothing known yet */
    json_t *flaky = parse("{\"kind\": \"app\", \"state\": \"running\", \"restarts\": 1, "
                          "\"startedAt\": 1, \"lastExit\": \"exited with status 1\"}");
    assert_string_equal(wf_lm_app_problem(flaky, buf, sizeof buf),
                        "restarted 1 time, last: exited with status 1");
    json_decref(ok);
    json_decref(missing);
    json_decref(starting);
    json_decref(flaky);
}

static void proxies_synced(void **state)
{
    (void)state;
    json_t *syncz = parse(
        "[{\"proxy\": \"a.ns\", \"connected\": true, \"cluster_status\": \"SYNCED\", "
        "\"listener_status\": \"SYNCED\", \"route_status\": \"IGNORED\", \"endpoint_status\": "
        "\"SYNCED\"},"
        " {\"proxy\": \"b.ns\", \"connected\": false, \"cluster_status\": \"SYNCED\"},"
        " {\"proxy\": \"b.ns\", \"connected\": true, \"cluster_status\": \"SYNCED\", "
        "\"listener_status\": \"ERROR\", \"listener_error\": \"cannot bind 127.11.0.3:80\", "
        "\"listener_since_s\": 1, "
        "\"route_status\": \"STALE\"},"
        " {\"proxy\": \"c.ns\", \"connected\": false, \"cluster_status\": \"SYNCED\"}]");
    wf_strbuf why = WF_STRBUF_INIT;
    assert_true(wf_lm_proxy_synced(syncz, "a.ns", &why, NULL));
    assert_string_equal(wf_strbuf_cstr(&why), "");
    bool nacked = true;
    assert_false(wf_lm_proxy_synced(syncz, "b.ns", &why, &nacked)); /* the connected stream */
    assert_false(nacked); /* in ERROR for 1 s: could be a moment */
    assert_string_equal(wf_strbuf_cstr(&why), "LDS ERROR: cannot bind 127.11.0.3:80, RDS STALE");
    json_object_set_new(json_array_get(syncz, 2), "listener_since_s", json_integer(2));
    assert_false(wf_lm_proxy_synced(syncz, "b.ns", &why, &nacked));
    assert_true(nacked);
    assert_false(wf_lm_proxy_synced(syncz, "c.ns", &why, &nacked));
    assert_false(nacked);
    assert_string_equal(wf_strbuf_cstr(&why), "not connected to pilot");
    assert_false(wf_lm_proxy_synced(syncz, "d.ns", &why, NULL));
    assert_string_equal(wf_strbuf_cstr(&why), "never connected to pilot");
    wf_strbuf_free(&why);
    json_decref(syncz);
}

static void restore(const char *name, char *old)
{
    if (old)
        setenv(name, old, 1);
    else
        unsetenv(name);
    free(old);
}

static char *saved(const char *name)
{
    const char *v = getenv(name);
    return v ? strdup(v) : NULL;
}

static void default_state_folder(void **state)
{
    (void)state;
    char *old_xdg = saved("XDG_STATE_HOME"), *old_home = saved("HOME");
    char tmpl[] = "/tmp/weft-state-test-XXXXXX";
    char *base = mkdtemp(tmpl);
    assert_non_null(base);
    char xdg[300], home[300], want[400];
    snprintf(xdg, sizeof xdg, "%s/xdg", base);
    snprintf(home, sizeof home, "%s/home", base);
    wf_strbuf err = WF_STRBUF_INIT;

    setenv("XDG_STATE_HOME", xdg, 1);
    char *a = wf_lm_default_state("/srv/my mesh/catalog", &err);
    assert_non_null(a);
    snprintf(want, sizeof want, "%s/weft/catalog-", xdg);
    assert_memory_equal(a, want, strlen(want));
    assert_int_equal(strlen(a), strlen(want) + 12); /* 12 hex digits */
    struct stat st;
    snprintf(want, sizeof want, "%s/weft", xdg);
    assert_int_equal(stat(want, &st), 0); /* up to weft/ is created, the mesh's folder not */
    assert_int_not_equal(stat(a, &st), 0);
    char *again = wf_lm_default_state("/srv/my mesh/catalog", &err);
    assert_string_equal(a, again); /* deterministic: status and down find it */
    char *other = wf_lm_default_state("/elsewhere/catalog", &err);
    assert_string_not_equal(a, other); /* two folders named alike do not share state */
    char *odd = wf_lm_default_state("/srv/a b:c", &err);
    assert_non_null(strstr(odd, "/weft/a_b_c-"));
    char *root = wf_lm_default_state("/", &err);
    assert_non_null(strstr(root, "/weft/root-"));

    /* a relative XDG_STATE_HOME is ignored (XDG spec): HOME/.local/state */
    setenv("XDG_STATE_HOME", "relative/state", 1);
    setenv("HOME", home, 1);
    char *h = wf_lm_default_state("/srv/catalog", &err);
    snprintf(want, sizeof want, "%s/.local/state/weft/catalog-", home);
    assert_memory_equal(h, want, strlen(want));

    /* neither usable: /tmp/weft-<uid>, mode 0700 */
    unsetenv("XDG_STATE_HOME");
    unsetenv("HOME");
    char *t = wf_lm_default_state("/srv/catalog", &err);
    snprintf(want, sizeof want, "/tmp/weft-%u/catalog-", (unsigned)getuid());
    assert_non_null(t);
    assert_memory_equal(t, want, strlen(want));
    want[strlen(want) - strlen("/catalog-")] = 0;
    assert_int_equal(lstat(want, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 077, 0);
    free(a);
    free(again);
    free(other);
    free(odd);
    free(root);
    free(h);
    free(t);
    wf_strbuf_free(&err);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    assert_int_equal(system(cmd), 0);
    restore("XDG_STATE_HOME", old_xdg);
    restore("HOME", old_home);
}

static void tmp_state_refused_when_others_may_write(void **state)
{
    (void)state;
    char *old_xdg = saved("XDG_STATE_HOME"), *old_home = saved("HOME");
    unsetenv("XDG_STATE_HOME");
    unsetenv("HOME");
    char path[64];
    snprintf(path, sizeof path, "/tmp/weft-%u", (unsigned)getuid());
    struct stat st;
    bool existed = stat(path, &st) == 0;
    mode_t mode = existed ? st.st_mode & 07777 : 0700;
    if (!existed)
        assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(chmod(path, 0777), 0);
    wf_strbuf err = WF_STRBUF_INIT;
    assert_null(wf_lm_default_state("/srv/catalog", &err));
    assert_non_null(strstr(wf_strbuf_cstr(&err), "not a folder of yours that only you can write"));
    assert_int_equal(chmod(path, mode), 0);
    if (!existed)
        rmdir(path);
    wf_strbuf_free(&err);
    restore("XDG_STATE_HOME", old_xdg);
    restore("HOME", old_home);
}

/* (pid, start ticks) names a process across exec; another start time is another process. */
static void process_identity_across_exec(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        usleep(100 * 1000);
        execlp("sleep", "sleep", "5", (char *)NULL);
        _exit(127);
    }
    unsigned long long ticks = wf_lm_pid_start_ticks(pid);
    assert_true(ticks > 0);
    usleep(400 * 1000); /* now it runs sleep: its command line no longer names this test */
    assert_true(wf_lm_pid_is(pid, ticks, "test_localmesh_health"));
    assert_int_equal(wf_lm_pid_start_ticks(pid), ticks);
    assert_false(wf_lm_pid_is(pid, ticks + 1, NULL));
    assert_false(wf_lm_pid_alive(pid, "test_localmesh_health")); /* the old check's miss */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_false(wf_lm_pid_is(pid, ticks, NULL));
    assert_int_equal(wf_lm_pid_start_ticks(getpid()) > 0, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_error_lines),
        cmocka_unit_test(app_problems),
        cmocka_unit_test(proxies_synced),
        cmocka_unit_test(default_state_folder),
        cmocka_unit_test(tmp_state_refused_when_others_may_write),
        cmocka_unit_test(process_identity_across_exec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
