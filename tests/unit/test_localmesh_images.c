/*
 * test_localmesh_images.c - image map entries that run a program as its image would
 * (weftArgs: false in weft-local.yaml, cli/localmesh_images.c and plan_app): nothing added by
 * weftctl, the manifest container's `command` replacing the mapped command and its `args`
 * following it, $(VAR) expanded from the container's env and the POD_* variables, env values
 * expanded from the entries before them; the default (weftArgs: true) unchanged; the errors
 * naming file, line, column and field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/localmesh_plan.h"
#include "harness.h"

#define DIR "/m"

/* A third-party REST server (json-server) as the book's catalog would be deployed. */
#define NS                                                                                         \
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: istioinaction\n"                          \
    "  labels: {istio-injection: enabled}\n"

#define IMAGES(extra)                                                                              \
    "---\napiVersion: weft.dev/v1\nkind: LocalImages\nmetadata: {name: local}\nimages:\n"          \
    "  thirdparty/json-server:\n"                                                                  \
    "    command: [node, ./node_modules/json-server/lib/cli/bin.js]\n" extra                       \
    "  \"*\": {command: [weft-app]}\n"

#define INVENTORY(inject, container)                                                               \
    "---\napiVersion: apps/v1\nkind: Deployment\n"                                                 \
    "metadata: {name: inventory, namespace: istioinaction}\n"                                      \
    "spec:\n  selector: {matchLabels: {app: inventory}}\n  template:\n"                            \
    "    metadata:\n      labels: {app: inventory, sidecar.istio.io/inject: \"" inject "\"}\n"     \
    "    spec:\n      containers:\n      - name: inventory\n"                                      \
    "        image: thirdparty/json-server:0.17\n"                                                 \
    "        ports: [{containerPort: 3000, name: http}]\n" container

typedef struct fixture {
    wf_store *store;
    wf_lm_plan *plan;
    wf_strbuf err;
} fixture;

static int plan(fixture *f, const char *yaml)
{
    wf_lm_opts o = {.dir = DIR,
                    .state = DIR "/.weft",
                    .bin_dir = "/nonexistent-bin",
                    .env_app = "/opt/weft/weft-app"};
    memset(f, 0, sizeof *f);
    f->store = wf_test_load_store(NULL, yaml, NULL);
    return wf_lm_plan_from_store(&o, f->store, &f->plan, &f->err);
}

static void plan_ok(fixture *f, const char *yaml)
{
    if (plan(f, yaml) != 0)
        fail_msg("plan failed: %s", wf_strbuf_cstr(&f->err));
}

static void plan_fails(const char *yaml, const char *want)
{
    fixture f;
    assert_int_equal(plan(&f, yaml), -1);
    assert_null(f.plan);
    if (!strstr(wf_strbuf_cstr(&f.err), want))
        fail_msg("error \"%s\" lacks \"%s\"", wf_strbuf_cstr(&f.err), want);
    wf_strbuf_free(&f.err);
    wf_store_free(f.store);
}

static void done(fixture *f)
{
    wf_lm_plan_free(f->plan);
    wf_store_free(f->store);
    wf_strbuf_free(&f->err);
}

/* The app process of the inventory pod. */
static const wf_lm_proc *inventory_app(const wf_lm_plan *p, const wf_lm_pod **pod)
{
    for (size_t i = 0; i < p->nprocs; i++) {
        const wf_lm_proc *proc = &p->procs[i];
        if (proc->kind == WF_LM_APP && strcmp(p->pods[proc->pod].owner, "inventory") == 0) {
            *pod = &p->pods[proc->pod];
            return proc;
        }
    }
    fail_msg("no inventory app");
    return NULL;
}

/* argv joined with single spaces. */
static void expect_argv(const wf_lm_proc *proc, const char *want)
{
    char got[2048] = "";
    for (size_t i = 0; proc->argv[i]; i++) {
        if (i)
            strncat(got, " ", sizeof got - strlen(got) - 1);
        strncat(got, proc->argv[i], sizeof got - strlen(got) - 1);
    }
    if (strcmp(got, want) != 0)
        fail_msg("argv \"%s\", want \"%s\"", got, want);
}

static const char *env_of(const wf_lm_proc *proc, const char *key)
{
    size_t n = strlen(key);
    const char *found = NULL;
    for (size_t i = 0; i < proc->nenv; i++)
        if (strncmp(proc->env[i], key, n) == 0 && proc->env[i][n] == '=')
            found = proc->env[i] + n + 1;
    return found;
}

static void no_weft_args_runs_the_mapped_command_alone(void **state)
{
    fixture f;
    plan_ok(&f, NS IMAGES("    weftArgs: false\n") INVENTORY("true", ""));
    const wf_lm_pod *pod;
    const wf_lm_proc *app = inventory_app(f.plan, &pod);
    /* argv[0] from PATH, a relative argument untouched (relative to DIR, the working folder) */
    expect_argv(app, "node ./node_modules/json-server/lib/cli/bin.js");
    /* where it must listen: the pod localhost beside its sidecar */
    assert_true(pod->sidecar);
    assert_string_equal(env_of(app, "POD_LOCALHOST"), pod->localhost);
    done(&f);
}

static void args_follow_with_pod_variables_expanded(void **state)
{
    static const char *const yaml = NS IMAGES("    weftArgs: false\n") INVENTORY(
        "true", "        env:\n        - {name: DB, value: db.json}\n"
                "        - {name: DB_COPY, value: \"copy-of-$(DB)\"}\n"
                "        - {name: LATER, value: \"$(LATE)\"}\n"
                "        - {name: LATE, value: x}\n"
                "        args: [\"$(DB_COPY)\", --host, \"$(POD_LOCALHOST)\", --port, \"3000\",\n"
                "               \"$$(POD_LOCALHOST)\", \"$(UNSET)\"]\n");
    fixture f;
    plan_ok(&f, yaml);
    const wf_lm_pod *pod;
    const wf_lm_proc *app = inventory_app(f.plan, &pod);
    char want[512];
    snprintf(want, sizeof want,
             "node ./node_modules/json-server/lib/cli/bin.js copy-of-db.json --host %s --port "
             "3000 $(POD_LOCALHOST) $(UNSET)",
             pod->localhost);
    expect_argv(app, want);
    /* an env value sees only the entries before it, as the kubelet expands it */
    assert_string_equal(env_of(app, "DB_COPY"), "copy-of-db.json");
    assert_string_equal(env_of(app, "LATER"), "$(LATE)");
    done(&f);

    /* without a sidecar the app listens on the pod IP, which POD_LOCALHOST then names */
    plan_ok(&f, NS IMAGES("    weftArgs: false\n")
                    INVENTORY("false", "        args: [--host, \"$(POD_LOCALHOST)\"]\n"));
    app = inventory_app(f.plan, &pod);
    assert_false(pod->sidecar);
    snprintf(want, sizeof want, "node ./node_modules/json-server/lib/cli/bin.js --host %s",
             pod->ip);
    expect_argv(app, want);
    done(&f);
}

static void command_replaces_the_mapped_command(void **state)
{
    fixture f;
    plan_ok(&f, NS IMAGES("    weftArgs: false\n")
                    INVENTORY("true", "        command: [./bin/serve, \"--pod=$(POD_NAME)\"]\n"
                                      "        args: [--port, \"3000\"]\n"));
    const wf_lm_pod *pod;
    const wf_lm_proc *app = inventory_app(f.plan, &pod);
    char want[512];
    snprintf(want, sizeof want, DIR "/./bin/serve --pod=%s --port 3000", pod->name);
    expect_argv(app, want);
    done(&f);
    /* an empty command is no command (the image's entrypoint runs) */
    plan_ok(&f, NS IMAGES("    weftArgs: false\n")
                    INVENTORY("true", "        command: []\n        args: [db.json]\n"));
    expect_argv(inventory_app(f.plan, &pod),
                "node ./node_modules/json-server/lib/cli/bin.js db.json");
    done(&f);
}

static void weft_args_default_adds_listen_and_pod(void **state)
{
    /* the default, and `weftArgs: true`: --listen and --pod added, command and args unused */
#define STANDIN(extra)                                                                             \
    NS "---\napiVersion: weft.dev/v1\nkind: LocalImages\nimages:\n"                                \
       "  thirdparty/json-server:\n    command: [weft-app, --name, inventory]\n" extra INVENTORY(  \
           "true", "        command: [/bin/false]\n        args: [--nope]\n")
    static const char *const yamls[] = {STANDIN(""), STANDIN("    weftArgs: true\n")};
#undef STANDIN
    for (size_t i = 0; i < 2; i++) {
        fixture f;
        plan_ok(&f, yamls[i]);
        const wf_lm_pod *pod;
        const wf_lm_proc *app = inventory_app(f.plan, &pod);
        char want[512];
        snprintf(want, sizeof want, "/opt/weft/weft-app --name inventory --listen %s:3000 --pod %s",
                 pod->localhost, pod->name);
        expect_argv(app, want);
        done(&f);
    }
}

static void errors_name_file_line_and_field(void **state)
{
    plan_fails(NS IMAGES("    weftArgs: maybe\n") INVENTORY("true", ""),
               "t.yaml:13:15: LocalImages local: images.thirdparty/json-server.weftArgs: want "
               "true (add --listen and --pod) or false");
    plan_fails(NS IMAGES("    weftArgs: \"false\"\n") INVENTORY("true", ""),
               "t.yaml:13:15: LocalImages local: images.thirdparty/json-server.weftArgs: want "
               "true");
    plan_fails(NS IMAGES("    weftArgs: false\n")
                   INVENTORY("true", "        args: [--port, 3000]\n"),
               "t.yaml:29:24: Deployment istioinaction/inventory: container inventory: args[1]: "
               "want a string, not integer (the API server refuses it: quote it)");
    plan_fails(NS IMAGES("    weftArgs: false\n")
                   INVENTORY("true", "        command: /bin/serve\n"),
               "t.yaml:29:18: Deployment istioinaction/inventory: container inventory: command: "
               "want a list of strings");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_weft_args_runs_the_mapped_command_alone),
        cmocka_unit_test(args_follow_with_pod_variables_expanded),
        cmocka_unit_test(command_replaces_the_mapped_command),
        cmocka_unit_test(weft_args_default_adds_listen_and_pod),
        cmocka_unit_test(errors_name_file_line_and_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
