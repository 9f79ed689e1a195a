/*
 * test_ui_static.c - pilot/ui_static: the web view's files from a temporary UI folder: index at
 * /ui and /ui/, content types, 404 for what is missing, path safety (traversal, percent-encoded
 * dots, hidden files, absolute paths, a symbolic link out of the folder), 503 naming a missing
 * folder or node_modules and scripts/setup; the folder's resolution (flag, environment,
 * <exe dir>/../ui, <exe dir>/../share/weft/ui).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pilot/ui_static.h"

typedef struct tdir {
    char path[64];
} tdir;

static void tdir_make(tdir *d)
{
    snprintf(d->path, sizeof d->path, "/tmp/wf-ui-XXXXXX");
    assert_non_null(mkdtemp(d->path));
}

static void tdir_rm(const tdir *d)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", d->path);
    assert_int_equal(system(cmd), 0);
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void mkdir_in(const char *dir, const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(mkdir(p, 0755), 0);
}

/* A UI folder: index.html, app.js, style.css, node_modules/lib/lib.js, img.png. */
static void make_ui(tdir *d)
{
    tdir_make(d);
    put(d->path, "index.html", "<!DOCTYPE html><title>weft</title>\n");
    put(d->path, "app.js", "export const x = 1;\n");
    put(d->path, "style.css", "body{}\n");
    put(d->path, "img.png", "\x89PNG");
    mkdir_in(d->path, "node_modules");
    mkdir_in(d->path, "node_modules/lib");
    put(d->path, "node_modules/lib/lib.js", "window.lib = 1;\n");
}

typedef struct got {
    int status;
    const char *ctype, *location;
    char body[1024];
} got;

static got serve_from(const char *dir, const char *origin, const char *path)
{
    wf_debug_reply r = {.status = 0, .ctype = NULL, .body = WF_STRBUF_INIT, .location = NULL};
    wf_ui_static_serve(dir, origin, path, &r);
    got g = {.status = r.status, .ctype = r.ctype, .location = r.location};
    snprintf(g.body, sizeof g.body, "%s", wf_strbuf_cstr(&r.body));
    wf_strbuf_free(&r.body);
    return g;
}

static got serve(const char *dir, const char *path)
{
    return serve_from(dir, NULL, path);
}

static void test_index_and_files(void **state)
{
    (void)state;
    tdir d;
    make_ui(&d);
    got g = serve(d.path, "/ui/");
    assert_int_equal(g.status, 200);
    assert_string_equal(g.ctype, "text/html; charset=utf-8");
    assert_non_null(strstr(g.body, "<title>weft</title>"));
    g = serve(d.path, "/ui"); /* to /ui/, where the page's relative links resolve */
    assert_int_equal(g.status, 301);
    assert_string_equal(g.location, "/ui/");
    g = serve(d.path, "/ui/app.js");
    assert_int_equal(g.status, 200);
    assert_string_equal(g.ctype, "text/javascript; charset=utf-8");
    assert_string_equal(g.body, "export const x = 1;\n");
    assert_string_equal(serve(d.path, "/ui/style.css").ctype, "text/css; charset=utf-8");
    assert_string_equal(serve(d.path, "/ui/img.png").ctype, "image/png");
    g = serve(d.path, "/ui/node_modules/lib/lib.js");
    assert_int_equal(g.status, 200);
    assert_string_equal(g.body, "window.lib = 1;\n");
    assert_int_equal(serve(d.path, "/ui/missing.js").status, 404);
    assert_int_equal(serve(d.path, "/ui/node_modules").status, 404); /* a folder */
    /* the view's API paths are routes of their own, never files */
    put(d.path, "api", "not served\n");
    assert_int_equal(serve(d.path, "/ui/api").status, 404);
    assert_int_equal(serve(d.path, "/ui/api/nothing").status, 404);
    tdir_rm(&d);
}

static void test_content_types(void **state)
{
    (void)state;
    assert_string_equal(wf_ui_content_type("a.mjs"), "text/javascript; charset=utf-8");
    assert_string_equal(wf_ui_content_type("a.json"), "application/json");
    assert_string_equal(wf_ui_content_type("x/a.js.map"), "application/json");
    assert_string_equal(wf_ui_content_type("a.svg"), "image/svg+xml");
    assert_string_equal(wf_ui_content_type("A.HTML"), "text/html; charset=utf-8");
    assert_string_equal(wf_ui_content_type("x.d/README"), "application/octet-stream");
    assert_string_equal(wf_ui_content_type("bin"), "application/octet-stream");
}

static void test_path_safety(void **state)
{
    (void)state;
    static const char *const bad[] = {"..",       "../etc/passwd", "a/../../x", "a/./b",
                                      ".",        "/etc/passwd",   "a//b",      "a/",
                                      "%2e%2e/x", "%2E%2E%2Fx",    "a%00b",     ".git/config",
                                      "a\\..\\b", "a\nb",          ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (wf_ui_path_safe(bad[i]))
            fail_msg("\"%s\" taken as safe", bad[i]);
    }
    assert_true(wf_ui_path_safe("index.html"));
    assert_true(wf_ui_path_safe("node_modules/cytoscape/dist/cytoscape.esm.min.mjs"));
    assert_true(wf_ui_path_safe("a..b/c.d"));
    tdir d;
    make_ui(&d);
    assert_int_equal(serve(d.path, "/ui/../etc/passwd").status, 400);
    assert_int_equal(serve(d.path, "/ui/%2e%2e/%2e%2e/etc/passwd").status, 400);
    assert_int_equal(serve(d.path, "/ui//etc/passwd").status, 400);
    /* a symbolic link out of the folder is refused */
    char link[128];
    snprintf(link, sizeof link, "%s/out", d.path);
    assert_int_equal(symlink("/etc", link), 0);
    got g = serve(d.path, "/ui/out/hostname");
    assert_int_equal(g.status, 403);
    tdir_rm(&d);
}

static void test_missing_is_503_naming_setup(void **state)
{
    (void)state;
    got g = serve("/nonexistent/weft-ui", "/ui/");
    assert_int_equal(g.status, 503);
    assert_non_null(strstr(g.body, "/nonexistent/weft-ui"));
    assert_non_null(strstr(g.body, "run scripts/setup"));
    assert_int_equal(serve(NULL, "/ui/app.js").status, 503);
    tdir d;
    make_ui(&d);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s/node_modules", d.path);
    assert_int_equal(system(cmd), 0);
    g = serve(d.path, "/ui/app.js");
    assert_int_equal(g.status, 503);
    assert_non_null(strstr(g.body, "node_modules is missing"));
    assert_non_null(strstr(g.body, "scripts/setup"));
    tdir_rm(&d);
}

/* A FIFO in the folder is refused at once (403), never opened blocking (pilot's loop would
 * hang in open()); alarm() fails the test instead of hanging it. */
static void test_fifo_refused_without_blocking(void **state)
{
    (void)state;
    tdir d;
    make_ui(&d);
    char p[256];
    snprintf(p, sizeof p, "%s/fifo.js", d.path);
    assert_int_equal(mkfifo(p, 0644), 0);
    alarm(5);
    got g = serve(d.path, "/ui/fifo.js");
    alarm(0);
    assert_int_equal(g.status, 403);
    assert_non_null(strstr(g.body, "not a regular file"));
    tdir_rm(&d);
}

/* A folder given explicitly (--uiDir, $WEFT_UI_DIR) that does not exist names the flag, not
 * scripts/setup; a file given as the folder is "not a folder"; wf_ui_dir_problem is NULL for a
 * ready folder (pilot logs its text as a WARN at start). */
static void test_explicit_dir_messages(void **state)
{
    (void)state;
    got g = serve_from("/nonexistent/x", "--uiDir", "/ui/");
    assert_int_equal(g.status, 503);
    assert_non_null(strstr(g.body, "--uiDir /nonexistent/x: no such folder"));
    assert_null(strstr(g.body, "scripts/setup"));
    tdir d;
    make_ui(&d);
    char f[256], buf[512];
    snprintf(f, sizeof f, "%s/app.js", d.path);
    g = serve_from(f, "--uiDir", "/ui/");
    assert_int_equal(g.status, 503);
    assert_non_null(strstr(g.body, "not a folder"));
    assert_null(strstr(g.body, "is missing"));
    g = serve(f, "/ui/");
    assert_non_null(strstr(g.body, "not a folder"));
    assert_null(wf_ui_dir_problem(d.path, "--uiDir", buf, sizeof buf));
    assert_non_null(wf_ui_dir_problem("/nonexistent/x", "$WEFT_UI_DIR", buf, sizeof buf));
    assert_non_null(strstr(buf, "$WEFT_UI_DIR /nonexistent/x: no such folder"));
    tdir_rm(&d);
}

static void test_dir_resolution(void **state)
{
    (void)state;
    char out[512], want[512];
    assert_string_equal(wf_ui_dir_resolve("/flag/ui", "/env/ui", "/x/bin/p", out, sizeof out),
                        "/flag/ui");
    assert_string_equal(wf_ui_dir_resolve(NULL, "/env/ui", "/x/bin/p", out, sizeof out), "/env/ui");
    assert_string_equal(wf_ui_dir_resolve("", "", "/x/bin/p", out, sizeof out), "/x/ui");
    /* <exe dir>/../ui when it exists, else <exe dir>/../share/weft/ui when that exists */
    tdir d;
    tdir_make(&d);
    mkdir_in(d.path, "bin");
    put(d.path, "bin/prog", "");
    mkdir_in(d.path, "share");
    mkdir_in(d.path, "share/weft");
    mkdir_in(d.path, "share/weft/ui");
    char exe[128], real[256];
    snprintf(exe, sizeof exe, "%s/bin/prog", d.path);
    assert_non_null(realpath(d.path, real));
    snprintf(want, sizeof want, "%s/share/weft/ui", real);
    assert_string_equal(wf_ui_dir_resolve(NULL, NULL, exe, out, sizeof out), want);
    mkdir_in(d.path, "ui");
    snprintf(want, sizeof want, "%s/ui", real);
    assert_string_equal(wf_ui_dir_resolve(NULL, NULL, exe, out, sizeof out), want);
    tdir_rm(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_and_files),
        cmocka_unit_test(test_content_types),
        cmocka_unit_test(test_path_safety),
        cmocka_unit_test(test_missing_is_503_naming_setup),
        cmocka_unit_test(test_fifo_refused_without_blocking),
        cmocka_unit_test(test_explicit_dir_messages),
        cmocka_unit_test(test_dir_resolution),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
