/*
 * test_kube_expand.c - Kubernetes' $(VAR_NAME) expansion (model/kube_expand.h), case by case
 * as the kubelet's expansion package expands a container's command, args and env values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/kube_expand.h"

static const char *const VARS[] = {"POD_LOCALHOST=127.11.0.3", "PORT=3000",
                                   "EMPTY=", "PORT=3001" /* set again: the later wins */};

static void expands_as_kubernetes(void **state)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"--host", "--host"},
        {"$(POD_LOCALHOST)", "127.11.0.3"},
        {"http://$(POD_LOCALHOST):$(PORT)/x", "http://127.11.0.3:3001/x"},
        {"[$(EMPTY)]", "[]"},
        {"$(MISSING)", "$(MISSING)"}, /* unresolved: unchanged */
        {"a$(MISSING)b$(PORT)", "a$(MISSING)b3001"},
        {"$$(PORT)", "$(PORT)"}, /* escaped: never expanded */
        {"$$$(PORT)", "$3001"},
        {"$$", "$"},
        {"cost: 5$", "cost: 5$"},     /* a trailing operator stays */
        {"$PORT", "$PORT"},           /* not a reference */
        {"$(PORT", "$(PORT"},         /* no closer */
        {"$($(PORT))", "$($(PORT))"}, /* the name is "$(PORT": unresolved */
        {"$()", "$()"},
        {"$(POD_LOCALHOST)$(POD_LOCALHOST)", "127.11.0.3127.11.0.3"},
    };
    wf_arena a;
    wf_arena_init(&a);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = wf_kube_expand(&a, cases[i].in, VARS, sizeof VARS / sizeof VARS[0]);
        assert_non_null(got);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("%s: got \"%s\", want \"%s\"", cases[i].in, got, cases[i].want);
    }
    /* nothing to expand: the input itself, no copy */
    const char *plain = "--port";
    assert_ptr_equal(wf_kube_expand(&a, plain, VARS, 4), plain);
    assert_string_equal(wf_kube_expand(&a, "$(PORT)", NULL, 0), "$(PORT)");
    wf_arena_destroy(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(expands_as_kubernetes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
