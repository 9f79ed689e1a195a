/*
 * test_loader.c - the model: YAML/JSON loading (multi-document, kind: List, directories),
 * positions, scalar typing, merge keys, typed decoding, store lookups, synthetic pods, the
 * default namespace, and the limits and error reports on bad input (DESIGN.md "Untrusted
 * input is bounded"; istioctl's "Error(s) adding files").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/store.h"

/* ---- helpers ---- */

static void print_errors(const wf_store *s)
{
    for (size_t i = 0; i < wf_store_error_count(s); i++) {
        const wf_load_error *e = wf_store_error(s, i);
        print_error("  %s:%u:%u: %s\n", e->file, e->line, e->col, e->message);
    }
}

static wf_store *load(const char *name, const char *text, bool json, int want_errors)
{
    wf_store *s = wf_store_new();
    assert_non_null(s);
    int got = wf_store_load_buffer(s, name, text, strlen(text), json);
    if (got != want_errors) {
        print_errors(s);
        fail_msg("%s: %d load errors, want %d", name, got, want_errors);
    }
    return s;
}

static wf_store *load_final(const char *text, const char *default_ns)
{
    wf_store *s = load("t.yaml", text, false, 0);
    assert_int_equal(wf_store_finalize(s, default_ns, true), 0);
    return s;
}

/* The only load error of a store that failed on one buffer. */
static const wf_load_error *only_error(const wf_store *s)
{
    assert_int_equal(wf_store_error_count(s), 1);
    assert_int_equal(wf_store_failed_files(s), 1);
    return wf_store_error(s, 0);
}

static void expect_error(const char *text, size_t len, bool json, uint32_t line, uint32_t col,
                         const char *needle)
{
    wf_store *s = wf_store_new();
    assert_non_null(s);
    assert_int_equal(wf_store_load_buffer(s, "bad.yaml", text, len, json), 1);
    const wf_load_error *e = only_error(s);
    assert_string_equal(e->file, "bad.yaml");
    if (!strstr(e->message, needle))
        fail_msg("message \"%s\" lacks \"%s\"", e->message, needle);
    if (e->line != line || e->col != col)
        fail_msg("\"%s\" at %u:%u, want %u:%u", e->message, e->line, e->col, line, col);
    assert_int_equal(wf_store_finalize(s, "default", true), 0);
    wf_store_free(s);
}

/* expect_error on a string literal (which may hold NUL bytes). */
#define EXPECT_ERROR(lit, json, line, col, needle)                                                 \
    expect_error((lit), sizeof(lit) - 1, (json), (line), (col), (needle))

static const wf_resource *find(const wf_store *s, wf_kind k, const char *ns, const char *name)
{
    const wf_resource *r = wf_store_find(s, k, ns, name);
    if (!r)
        fail_msg("no %s %s/%s", wf_kind_name(k), ns, name);
    return r;
}

static double cpu_seconds(void)
{
    return (double)clock() / CLOCKS_PER_SEC;
}

/* ---- documents ---- */

static void test_multi_document(void **state)
{
    const char *y = "# leading comment\n"
                    "apiVersion: v1\n"
                    "kind: Service\n"
                    "metadata: {name: a}\n"
                    "---\n"
                    "apiVersion: v1\n"
                    "kind: Pod\n"
                    "metadata: {name: b, namespace: x}\n"
                    "...\n"
                    "---\n"
                    "# comment-only document\n"
                    "---\n"
                    "\n"
                    "apiVersion: networking.istio.io/v1\n"
                    "kind: VirtualService\n"
                    "metadata: {name: c}\n"
                    "---\n"
                    "just: a map without apiVersion\n"
                    "--- [not, a, map]\n"
                    "---\n"
                    "apiVersion: example.com/v1\n"
                    "kind: Widget\n"
                    "metadata: {name: d}\n";
    wf_store *s = load("multi.yaml", y, false, 2);
    /* a document must be an object with apiVersion and kind (istioctl's file store) */
    assert_int_equal(wf_store_error(s, 0)->line, 18);
    assert_int_equal(wf_store_error(s, 0)->col, 1);
    assert_string_equal(wf_store_error(s, 0)->message,
                        "unable to parse resource with no group, version and kind");
    assert_int_equal(wf_store_error(s, 1)->line, 19);
    assert_int_equal(wf_store_error(s, 1)->col, 5);
    assert_non_null(strstr(wf_store_error(s, 1)->message, "not a list"));
    assert_int_equal(wf_store_count(s), 4); /* the others are kept */
    const wf_resource *r0 = wf_store_at(s, 0), *r1 = wf_store_at(s, 1);
    const wf_resource *r2 = wf_store_at(s, 2), *r3 = wf_store_at(s, 3);
    assert_int_equal(r0->kind, WF_KIND_SERVICE);
    assert_string_equal(r0->name, "a");
    assert_string_equal(r0->file, "multi.yaml");
    assert_int_equal(r0->line, 1); /* first document: line 1, as Istio counts */
    assert_int_equal(r1->kind, WF_KIND_POD);
    assert_string_equal(r1->ns, "x");
    assert_int_equal(r1->line, 6); /* the line after its "---" */
    assert_int_equal(r2->kind, WF_KIND_VIRTUALSERVICE);
    assert_int_equal(r2->line, 13);
    assert_int_equal(r3->kind, WF_KIND_OTHER); /* unknown kinds are kept, never an error */
    assert_string_equal(r3->kind_name, "Widget");
    assert_false(r0->json);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(wf_store_at(s, i)->index, i);
    wf_store_free(s);
}

static void test_empty_inputs(void **state)
{
    wf_store *s = load("e.yaml", "", false, 0);
    assert_int_equal(wf_store_count(s), 0);
    assert_int_equal(wf_store_load_buffer(s, "c.yaml", "# only\n---\n...\n", 15, false), 0);
    assert_int_equal(wf_store_load_buffer(s, "n.json", "null", 4, true), 0);
    assert_int_equal(wf_store_count(s), 0);
    assert_int_equal(wf_store_error_count(s), 0);
    /* a scalar document is not an object */
    assert_int_equal(wf_store_load_buffer(s, "s.json", "\"text\"", 6, true), 1);
    assert_non_null(strstr(wf_store_error(s, 0)->message, "must be an object"));
    wf_store_free(s);
}

static void test_kind_list(void **state)
{
    const char *y = "apiVersion: v1\n"
                    "kind: List\n"
                    "items:\n"
                    "- apiVersion: v1\n"
                    "  kind: Service\n"
                    "  metadata: {name: a}\n"
                    "- apiVersion: apps/v1\n"
                    "  kind: Deployment\n"
                    "  metadata: {name: b, namespace: x}\n"
                    "- apiVersion: v1\n"
                    "  kind: List\n"
                    "  items:\n"
                    "  - {apiVersion: v1, kind: Namespace, metadata: {name: nested}}\n";
    wf_store *s = load("list.yaml", y, false, 0);
    assert_int_equal(wf_store_count(s), 3);
    assert_int_equal(wf_store_at(s, 0)->kind, WF_KIND_SERVICE);
    assert_int_equal(wf_store_at(s, 0)->line, 4); /* the item's own line */
    assert_int_equal(wf_store_at(s, 1)->kind, WF_KIND_DEPLOYMENT);
    assert_int_equal(wf_store_at(s, 1)->line, 7);
    assert_string_equal(wf_store_at(s, 2)->name, "nested"); /* nested lists are read */
    assert_int_equal(wf_store_at(s, 2)->line, 13);
    wf_store_free(s);
    /* a List whose items are not all objects is an error, and none of it is read */
    s = load("l2.yaml",
             "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace}\n- 42\n",
             false, 1);
    assert_int_equal(wf_store_error(s, 0)->line, 5);
    assert_int_equal(wf_store_error(s, 0)->col, 3);
    assert_non_null(strstr(wf_store_error(s, 0)->message, "malformed items field"));
    assert_int_equal(wf_store_load_buffer(s, "l3.yaml", "kind: List\nitems: {a: b}\n", 24, false),
                     1);
    assert_int_equal(wf_store_count(s), 0);
    wf_store_free(s);

    const char *j =
        "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": ["
        "{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"a\"}},"
        "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"n\"}}]}";
    s = load("list.json", j, true, 0);
    assert_int_equal(wf_store_count(s), 2);
    assert_true(wf_store_at(s, 0)->json);
    assert_int_equal(wf_store_at(s, 0)->line, 0);
    assert_int_equal(wf_store_at(s, 1)->kind, WF_KIND_NAMESPACE);
    wf_store_free(s);
}

static void test_json_input(void **state)
{
    const char *j =
        "{\"apiVersion\": \"v1\", \"kind\": \"Service\",\n"
        " \"metadata\": {\"name\": \"r\", \"namespace\": \"shop\", \"labels\": {\"app\": \"r\"}},\n"
        " \"spec\": {\"ports\": [{\"port\": 9080, \"targetPort\": \"http\"},\n"
        "                    {\"port\": 80, \"targetPort\": 8080, \"name\": \"web\"}],\n"
        "          \"clusterIP\": \"None\", \"flag\": true, \"nothing\": null}}";
    wf_store *s = load("svc.json", j, true, 0);
    assert_int_equal(wf_store_finalize(s, "default", true), 0);
    const wf_resource *r = find(s, WF_KIND_SERVICE, "shop", "r");
    assert_true(r->json);
    assert_int_equal(r->line, 0);
    assert_string_equal(wf_kvs_get(&r->labels, "app"), "r");
    const wf_node *port = wf_node_path(r->spec, "ports.0.port");
    assert_non_null(port);
    assert_int_equal(port->line, 0);
    assert_false(port->quoted); /* JSON numbers are not strings */
    assert_string_equal(wf_node_kind_name(port), "integer");
    assert_true(wf_map_get(r->metadata, "name")->quoted);
    assert_string_equal(wf_node_kind_name(wf_map_get(r->spec, "flag")), "boolean");
    assert_int_equal(wf_map_get(r->spec, "nothing")->type, WF_NODE_NULL);
    const wf_service *sv = r->t.service;
    assert_int_equal(sv->nports, 2);
    assert_int_equal(sv->ports[0].port, 9080);
    assert_string_equal(sv->ports[0].target_name, "http");
    assert_int_equal(sv->ports[1].target_port, 8080);
    assert_null(sv->ports[1].target_name);
    wf_store_free(s);
}

/* ---- directories ---- */

typedef struct skipped {
    char paths[8][512];
    size_t n;
} skipped;

static void on_skipped(const char *path, void *arg)
{
    skipped *sk = arg;
    if (sk->n < 8)
        snprintf(sk->paths[sk->n++], sizeof(sk->paths[0]), "%s", path);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void doc_text(char *buf, size_t cap, const char *kind, const char *name)
{
    snprintf(buf, cap, "apiVersion: v1\nkind: %s\nmetadata: {name: %s}\n", kind, name);
}

static void test_directory(void **state)
{
    char root[] = "/tmp/weft-test-loader-XXXXXX";
    assert_non_null(mkdtemp(root));
    char sub[600], sub2[700], doc[256];
    snprintf(sub, sizeof(sub), "%s/sub", root);
    snprintf(sub2, sizeof(sub2), "%s/sub/deeper", root);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(mkdir(sub2, 0755), 0);
    doc_text(doc, sizeof(doc), "Service", "b");
    write_file(root, "b.yaml", doc);
    doc_text(doc, sizeof(doc), "Service", "a");
    write_file(root, "a.yml", doc);
    write_file(root, "c.json",
               "{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"c\"}}");
    write_file(root, "notes.txt", "apiVersion: v1\nkind: Service\nmetadata: {name: txt}\n");
    write_file(root, "yaml", "not loaded: no extension\n");
    doc_text(doc, sizeof(doc), "Pod", "d");
    write_file(sub, "d.yaml", doc);
    doc_text(doc, sizeof(doc), "Pod", "e");
    write_file(sub2, "e.yml", doc);
    write_file(sub2, "broken.yaml", "a: [\n");

    wf_store *s = wf_store_new();
    skipped sk = {0};
    assert_int_equal(wf_store_load_path(s, root, on_skipped, &sk), 1);
    /* sorted walk: a.yml b.yaml c.json sub/d.yaml sub/deeper/e.yml */
    const char *want[] = {"a", "b", "c", "d", "e"};
    assert_int_equal(wf_store_count(s), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(wf_store_at(s, i)->name, want[i]);
    assert_true(wf_store_at(s, 2)->json);
    assert_non_null(strstr(wf_store_at(s, 4)->file, "/sub/deeper/e.yml"));
    assert_int_equal(sk.n, 2);
    assert_non_null(strstr(sk.paths[0], "notes.txt"));
    assert_non_null(strstr(sk.paths[1], "/yaml"));
    const wf_load_error *e = only_error(s);
    assert_non_null(strstr(e->file, "/sub/deeper/broken.yaml"));
    assert_int_equal(e->line, 1);

    /* a single file with another extension is skipped; a missing path is an error */
    char path[1024];
    snprintf(path, sizeof(path), "%s/notes.txt", root);
    sk.n = 0;
    assert_int_equal(wf_store_load_path(s, path, on_skipped, &sk), 0);
    assert_int_equal(sk.n, 1);
    snprintf(path, sizeof(path), "%s/missing.yaml", root);
    assert_int_equal(wf_store_load_path(s, path, on_skipped, &sk), 1);
    assert_int_equal(wf_store_error_count(s), 2);
    assert_non_null(strstr(wf_store_error(s, 1)->message, "No such file"));
    wf_store_free(s);

    char cmd[1100];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* A FIFO in a walked directory is reported, never opened (it would block forever). */
static void test_directory_fifo(void **state)
{
    char root[] = "/tmp/weft-test-loader-XXXXXX";
    assert_non_null(mkdtemp(root));
    char path[600], doc[256];
    snprintf(path, sizeof(path), "%s/pipe.yaml", root);
    assert_int_equal(mkfifo(path, 0600), 0);
    doc_text(doc, sizeof(doc), "Service", "z");
    write_file(root, "z.yaml", doc);
    wf_store *s = wf_store_new();
    assert_int_equal(wf_store_load_path(s, root, NULL, NULL), 1);
    const wf_load_error *e = only_error(s);
    assert_string_equal(e->file, path);
    assert_string_equal(e->message, "not a regular file");
    assert_int_equal(wf_store_count(s), 1);
    wf_store_free(s);
    assert_int_equal(unlink(path), 0);
    snprintf(path, sizeof(path), "%s/z.yaml", root);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(root), 0);
}

/* ---- positions and scalars ---- */

static void test_positions(void **state)
{
    const char *y = "apiVersion: v1\n"
                    "kind: Service\n"
                    "metadata:\n"
                    "  name: reviews\n"
                    "spec:\n"
                    "  ports:\n"
                    "  - name: http\n"
                    "    port:   9080\n"
                    "  - {name: b, port: 81}\n"
                    "  selector:\n"
                    "    app:\n"
                    "      \"quoted\"\n";
    wf_store *s = load_final(y, NULL);
    const wf_resource *r = wf_store_at(s, 0);
    const wf_map_entry *e = wf_map_entry_get(r->metadata, "name");
    assert_int_equal(e->key_line, 4);
    assert_int_equal(e->key_col, 3);
    assert_int_equal(e->value->line, 4);
    assert_int_equal(e->value->col, 9);
    const wf_node *ports = wf_map_get(r->spec, "ports");
    assert_int_equal(ports->line, 7);
    assert_int_equal(ports->col, 3);
    const wf_node *p0 = wf_seq_at(ports, 0);
    assert_int_equal(p0->line, 7); /* a block mapping starts at its first key */
    assert_int_equal(p0->col, 5);
    e = wf_map_entry_get(p0, "port");
    assert_int_equal(e->key_line, 8);
    assert_int_equal(e->key_col, 5);
    assert_int_equal(e->value->col, 13);
    const wf_node *p1 = wf_seq_at(ports, 1);
    assert_int_equal(p1->line, 9);
    assert_int_equal(p1->col, 5); /* the "{" */
    e = wf_map_entry_get(p1, "port");
    assert_int_equal(e->key_line, 9);
    assert_int_equal(e->key_col, 15);
    assert_int_equal(e->value->col, 21);
    const wf_node *app = wf_node_path(r->spec, "selector.app");
    assert_int_equal(app->line, 12);
    assert_int_equal(app->col, 7);
    assert_true(app->quoted);
    /* typed views keep their nodes */
    assert_ptr_equal(r->t.service->ports[1].node, p1);
    wf_store_free(s);
}

static void test_scalars(void **state)
{
    const char *y = "int: 80\n"
                    "str: \"80\"\n"
                    "single: '80'\n"
                    "tagged: !!str 80\n"
                    "hex: 0x1F\n"
                    "oct: 0o17\n"
                    "neg: -5\n"
                    "float: 1.5\n"
                    "bool: true\n"
                    "yes: yes\n"
                    "qbool: \"true\"\n"
                    "tilde: ~\n"
                    "nul: null\n"
                    "empty:\n"
                    "qempty: \"\"\n"
                    "text: hello world\n"
                    "literal: |\n"
                    "  two\n"
                    "  lines\n"
                    "folded: >-\n"
                    "  one\n"
                    "  line\n"
                    "big: 99999999999999999999\n";
    wf_store *s = wf_store_new();
    wf_arena *a = wf_store_arena(s);
    (void)a;
    /* parse through a resource so the document is kept */
    char buf[1024];
    snprintf(buf, sizeof(buf), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\ndata:\n");
    size_t off = strlen(buf);
    for (const char *p = y; *p;) { /* indent the map under data: */
        const char *nl = strchr(p, '\n');
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, "  %.*s\n", (int)(nl - p), p);
        p = nl + 1;
    }
    assert_int_equal(wf_store_load_buffer(s, "s.yaml", buf, off, false), 0);
    const wf_node *d = wf_map_get(wf_store_at(s, 0)->root, "data");
    int64_t v;
    bool b;
    assert_true(wf_node_int(wf_map_get(d, "int"), &v));
    assert_int_equal(v, 80);
    assert_string_equal(wf_node_kind_name(wf_map_get(d, "int")), "integer");
    for (const char *const *k = (const char *const[]){"str", "single", "tagged", "qbool", NULL}; *k;
         k++) {
        const wf_node *n = wf_map_get(d, *k);
        assert_true(n->quoted);
        assert_false(wf_node_int(n, &v));
        assert_false(wf_node_bool(n, &b));
        assert_true(wf_node_is_string(n));
        assert_string_equal(wf_node_kind_name(n), "string");
    }
    assert_string_equal(wf_map_str(d, "str"), "80");
    assert_true(wf_node_int(wf_map_get(d, "hex"), &v));
    assert_int_equal(v, 31);
    assert_true(wf_node_int(wf_map_get(d, "oct"), &v));
    assert_int_equal(v, 15);
    assert_true(wf_node_int(wf_map_get(d, "neg"), &v));
    assert_int_equal(v, -5);
    assert_false(wf_node_int(wf_map_get(d, "float"), &v));
    assert_string_equal(wf_node_kind_name(wf_map_get(d, "float")), "number");
    assert_false(wf_node_int(wf_map_get(d, "big"), &v)); /* overflows int64 */
    assert_true(wf_node_bool(wf_map_get(d, "bool"), &b) && b);
    assert_true(wf_node_bool(wf_map_get(d, "yes"), &b) && b);
    assert_string_equal(wf_node_kind_name(wf_map_get(d, "bool")), "boolean");
    for (const char *const *k = (const char *const[]){"tilde", "nul", "empty", NULL}; *k; k++) {
        assert_int_equal(wf_map_get(d, *k)->type, WF_NODE_NULL);
        assert_null(wf_map_str(d, *k));
        assert_string_equal(wf_node_kind_name(wf_map_get(d, *k)), "null");
    }
    const wf_node *qe = wf_map_get(d, "qempty");
    assert_int_equal(qe->type, WF_NODE_SCALAR);
    assert_int_equal(qe->len, 0);
    assert_string_equal(qe->u.str, "");
    assert_false(wf_map_get(d, "text")->quoted);
    assert_true(wf_node_is_string(wf_map_get(d, "text")));
    assert_string_equal(wf_map_str(d, "literal"), "two\nlines\n");
    assert_true(wf_map_get(d, "literal")->quoted); /* block scalars are strings */
    assert_string_equal(wf_map_str(d, "folded"), "one line");
    wf_store_free(s);
}

static void test_merge_keys(void **state)
{
    const char *y = "apiVersion: v1\n"
                    "kind: ConfigMap\n"
                    "metadata: {name: m}\n"
                    "base: &base {a: 1, b: 2}\n"
                    "more: &more {b: 20, c: 30}\n"
                    "one:\n"
                    "  <<: *base\n"
                    "  b: explicit\n"
                    "list:\n"
                    "  <<: [*base, *more]\n"
                    "quoted:\n"
                    "  \"<<\": *base\n"
                    "scalar:\n"
                    "  <<: 5\n"
                    "  x: 1\n";
    wf_store *s = load("m.yaml", y, false, 0);
    const wf_node *root = wf_store_at(s, 0)->root;
    const wf_node *one = wf_map_get(root, "one");
    assert_int_equal(one->len, 2);
    assert_string_equal(wf_map_str(one, "a"), "1");
    assert_string_equal(wf_map_str(one, "b"), "explicit"); /* explicit keys win */
    const wf_node *list = wf_map_get(root, "list");
    assert_int_equal(list->len, 3);
    assert_string_equal(wf_map_str(list, "b"), "2"); /* the first merged map wins */
    assert_string_equal(wf_map_str(list, "c"), "30");
    const wf_node *quoted = wf_map_get(root, "quoted");
    assert_int_equal(quoted->len, 1); /* a quoted "<<" is an ordinary key */
    assert_int_equal(wf_map_get(quoted, "<<")->type, WF_NODE_MAP);
    const wf_node *scalar = wf_map_get(root, "scalar");
    assert_int_equal(scalar->len, 1); /* merging a scalar adds nothing */
    /* aliases share the anchored node */
    assert_ptr_equal(wf_map_get(root, "base")->u.entries[0].value, wf_map_get(one, "a"));
    wf_store_free(s);
}

static void test_anchors(void **state)
{
    const char *y = "apiVersion: v1\n"
                    "kind: ConfigMap\n"
                    "metadata: {name: m}\n"
                    "a: &x first\n"
                    "b: *x\n"
                    "c: &x [second]\n"
                    "d: *x\n";
    wf_store *s = load("a.yaml", y, false, 0);
    const wf_node *root = wf_store_at(s, 0)->root;
    assert_string_equal(wf_map_str(root, "b"), "first");
    assert_int_equal(wf_map_get(root, "d")->type, WF_NODE_SEQ); /* redefinition: latest wins */
    wf_store_free(s);
    /* anchors do not cross documents */
    EXPECT_ERROR("apiVersion: v1\nkind: ConfigMap\ndata: {a: &x one}\n---\nb: *x\n", false, 5, 4,
                 "unknown anchor 'x'");
}

/* ---- typed decoding ---- */

static void test_decode_service(void **state)
{
    const char *y = "apiVersion: v1\n"
                    "kind: Service\n"
                    "metadata: {name: reviews, namespace: shop}\n"
                    "spec:\n"
                    "  selector: {app: reviews}\n"
                    "  ports:\n"
                    "  - {name: http, port: 9080, targetPort: http-web, appProtocol: http}\n"
                    "  - {port: 81, targetPort: 8081, protocol: UDP, nodePort: 30081}\n"
                    "  - {port: 82}\n"
                    "  - {port: 83, targetPort: \"8083\"}\n"
                    "---\n"
                    "apiVersion: v1\n"
                    "kind: Service\n"
                    "metadata: {name: ext, namespace: shop}\n"
                    "spec: {type: ExternalName, externalName: api.example.com}\n";
    wf_store *s = load_final(y, NULL);
    const wf_service *sv = find(s, WF_KIND_SERVICE, "shop", "reviews")->t.service;
    assert_string_equal(sv->type, "ClusterIP");
    assert_true(sv->has_selector);
    assert_string_equal(wf_kvs_get(&sv->selector, "app"), "reviews");
    assert_int_equal(sv->nports, 4);
    assert_string_equal(sv->ports[0].name, "http");
    assert_int_equal(sv->ports[0].port, 9080);
    assert_string_equal(sv->ports[0].protocol, "TCP");
    assert_string_equal(sv->ports[0].target_name, "http-web");
    assert_string_equal(sv->ports[0].app_protocol, "http");
    assert_null(sv->ports[1].name);
    assert_int_equal(sv->ports[1].target_port, 8081);
    assert_string_equal(sv->ports[1].protocol, "UDP");
    assert_int_equal(sv->ports[1].node_port, 30081);
    assert_int_equal(sv->ports[2].port, 82);
    assert_int_equal(sv->ports[2].target_port, 82); /* targetPort defaults to port */
    assert_null(sv->ports[2].target_name);
    assert_string_equal(sv->ports[3].target_name, "8083"); /* a quoted targetPort is a name */
    const wf_service *ext = find(s, WF_KIND_SERVICE, "shop", "ext")->t.service;
    assert_string_equal(ext->type, "ExternalName");
    assert_string_equal(ext->external_name, "api.example.com");
    assert_false(ext->has_selector);
    assert_int_equal(ext->nports, 0);
    wf_store_free(s);
    /* a quoted port fails as Kubernetes' strict decoding does; a quoted targetPort is a
     * name (IntOrString) */
    EXPECT_ERROR("apiVersion: v1\nkind: Service\nspec:\n  ports:\n  - port: \"82\"\n", false, 5, 11,
                 "spec.ports[0].port: cannot unmarshal string into a value of type int32");
}

static void test_decode_deployment(void **state)
{
    const char *y = "apiVersion: apps/v1\n"
                    "kind: Deployment\n"
                    "metadata: {name: web, namespace: shop}\n"
                    "spec:\n"
                    "  replicas: 3\n"
                    "  selector:\n"
                    "    matchLabels: {app: web}\n"
                    "  template:\n"
                    "    metadata:\n"
                    "      labels: {app: web, version: v1}\n"
                    "      annotations: {sidecar.istio.io/inject: \"false\"}\n"
                    "    spec:\n"
                    "      serviceAccountName: web-sa\n"
                    "      securityContext: {runAsUser: 1000}\n"
                    "      containers:\n"
                    "      - name: app\n"
                    "        image: web:1\n"
                    "        ports: [{containerPort: 8080, name: http}, {containerPort: 9090}]\n"
                    "        securityContext: {runAsUser: 1337}\n"
                    "      initContainers:\n"
                    "      - {name: init, image: busybox}\n"
                    "---\n"
                    "apiVersion: apps/v1\n"
                    "kind: StatefulSet\n"
                    "metadata: {name: db, namespace: shop}\n"
                    "spec: {template: {spec: {serviceAccount: old-style}}}\n";
    wf_store *s = load_final(y, NULL);
    const wf_workload *w = find(s, WF_KIND_DEPLOYMENT, "shop", "web")->t.workload;
    assert_int_equal(w->replicas, 3);
    assert_non_null(w->selector);
    assert_string_equal(wf_node_path(w->selector, "matchLabels.app")->u.str, "web");
    assert_string_equal(wf_kvs_get(&w->template_labels, "version"), "v1");
    assert_string_equal(wf_kvs_get(&w->template_annotations, "sidecar.istio.io/inject"), "false");
    assert_string_equal(w->spec.service_account, "web-sa");
    assert_int_equal(w->spec.run_as_user, 1000);
    assert_int_equal(w->spec.ncontainers, 1);
    assert_string_equal(w->spec.containers[0].name, "app");
    assert_string_equal(w->spec.containers[0].image, "web:1");
    assert_int_equal(w->spec.containers[0].run_as_user, 1337);
    assert_int_equal(w->spec.containers[0].nports, 2);
    assert_int_equal(w->spec.containers[0].ports[0].container_port, 8080);
    assert_string_equal(w->spec.containers[0].ports[0].name, "http");
    assert_null(w->spec.containers[0].ports[1].name);
    assert_int_equal(w->spec.ninit, 1);
    assert_int_equal(w->spec.init_containers[0].run_as_user, -1);
    const wf_workload *ss = find(s, WF_KIND_STATEFULSET, "shop", "db")->t.workload;
    assert_int_equal(ss->replicas, -1);
    assert_null(ss->selector);
    assert_string_equal(ss->spec.service_account, "old-style");
    assert_int_equal(ss->spec.ncontainers, 0);
    wf_store_free(s);
}

static void test_decode_virtualservice(void **state)
{
    const char *y = "apiVersion: networking.istio.io/v1beta1\n"
                    "kind: VirtualService\n"
                    "metadata: {name: reviews, namespace: shop}\n"
                    "spec:\n"
                    "  hosts: [reviews, reviews.example.com]\n"
                    "  gateways: [mesh, shop/gw]\n"
                    "  exportTo: [\".\"]\n"
                    "  http:\n"
                    "  - name: canary\n"
                    "    match: [{headers: {end-user: {exact: jason}}}]\n"
                    "    route:\n"
                    "    - destination: {host: reviews, subset: v2, port: {number: 9080}}\n"
                    "      weight: 80\n"
                    "    - destination: {host: reviews, subset: v3}\n"
                    "      weight: 20\n"
                    "    mirror: {host: shadow, subset: s}\n"
                    "    timeout: 3s\n"
                    "  - route:\n"
                    "    - destination: {host: reviews}\n"
                    "    mirrors:\n"
                    "    - destination: {host: m1}\n"
                    "    - destination: {host: m2, port: {number: 81}}\n"
                    "  tcp:\n"
                    "  - route: [{destination: {host: db, port: {number: 5432}}}]\n"
                    "  tls:\n"
                    "  - match: [{sniHosts: [a.example.com]}]\n"
                    "    route: [{destination: {host: a.example.com}}]\n";
    wf_store *s = load_final(y, NULL);
    const wf_virtualservice *v = find(s, WF_KIND_VIRTUALSERVICE, "shop", "reviews")->t.vs;
    assert_int_equal(v->hosts.n, 2);
    assert_string_equal(v->hosts.v[1], "reviews.example.com");
    assert_int_equal(v->hosts.nodes[1]->line, 5);
    assert_int_equal(v->gateways.n, 2);
    assert_string_equal(v->export_to.v[0], ".");
    assert_int_equal(v->nhttp, 2);
    const wf_route *h0 = &v->http[0];
    assert_int_equal(h0->type, WF_ROUTE_HTTP);
    assert_string_equal(h0->name, "canary");
    assert_non_null(h0->match);
    assert_string_equal(h0->timeout, "3s");
    assert_int_equal(h0->ndest, 2);
    assert_string_equal(h0->dests[0].dest.host, "reviews");
    assert_string_equal(h0->dests[0].dest.subset, "v2");
    assert_int_equal(h0->dests[0].dest.port, 9080);
    assert_int_equal(h0->dests[0].weight, 80);
    assert_int_equal(h0->dests[0].dest.node->line, 12);
    assert_int_equal(h0->dests[1].weight, 20);
    assert_int_equal(h0->dests[1].dest.port, 0);
    assert_string_equal(h0->mirror.host, "shadow");
    assert_string_equal(h0->mirror.subset, "s");
    assert_int_equal(h0->nmirrors, 0);
    const wf_route *h1 = &v->http[1];
    assert_int_equal(h1->dests[0].weight, -1);
    assert_null(h1->dests[0].dest.subset);
    assert_null(h1->mirror.host);
    assert_int_equal(h1->nmirrors, 2);
    assert_string_equal(h1->mirrors[1].host, "m2");
    assert_int_equal(h1->mirrors[1].port, 81);
    assert_int_equal(v->ntcp, 1);
    assert_int_equal(v->tcp[0].type, WF_ROUTE_TCP);
    assert_int_equal(v->tcp[0].dests[0].dest.port, 5432);
    assert_int_equal(v->ntls, 1);
    assert_int_equal(v->tls[0].type, WF_ROUTE_TLS);
    assert_string_equal(v->tls[0].dests[0].dest.host, "a.example.com");
    wf_store_free(s);
}

static void test_decode_destinationrule(void **state)
{
    const char *y = "apiVersion: networking.istio.io/v1\n"
                    "kind: DestinationRule\n"
                    "metadata: {name: reviews, namespace: shop}\n"
                    "spec:\n"
                    "  host: reviews.shop.svc.cluster.local\n"
                    "  exportTo: [\"*\"]\n"
                    "  workloadSelector: {matchLabels: {app: client}}\n"
                    "  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}\n"
                    "  subsets:\n"
                    "  - name: v1\n"
                    "    labels: {version: v1}\n"
                    "  - name: v2\n"
                    "    labels: {version: v2, track: canary}\n"
                    "    trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}\n";
    wf_store *s = load_final(y, NULL);
    const wf_destinationrule *d = find(s, WF_KIND_DESTINATIONRULE, "shop", "reviews")->t.dr;
    assert_string_equal(d->host, "reviews.shop.svc.cluster.local");
    assert_string_equal(d->export_to.v[0], "*");
    assert_true(d->has_workload_selector);
    assert_string_equal(wf_kvs_get(&d->workload_selector, "app"), "client");
    assert_non_null(d->traffic_policy);
    assert_int_equal(d->nsubsets, 2);
    assert_string_equal(d->subsets[0].name, "v1");
    assert_null(d->subsets[0].traffic_policy);
    assert_string_equal(wf_kvs_get(&d->subsets[1].labels, "track"), "canary");
    assert_int_equal(d->subsets[1].labels.n, 2);
    assert_non_null(d->subsets[1].traffic_policy);
    assert_int_equal(d->subsets[1].node->line, 12);
    wf_store_free(s);
}

/* Istio kinds: fields of the wrong type load (schema validation reports them as IST0106)
 * and are absent in the typed view, never a crash. */
static void test_decode_wrong_types(void **state)
{
    const char *y = "apiVersion: networking.istio.io/v1\n"
                    "kind: VirtualService\n"
                    "metadata: {name: vs}\n"
                    "spec:\n"
                    "  hosts: reviews\n"
                    "  http:\n"
                    "  - route:\n"
                    "    - destination: {host: [r]}\n"
                    "      weight: \"abc\"\n"
                    "  - route: {destination: x}\n"
                    "  - 7\n"
                    "---\n"
                    "apiVersion: networking.istio.io/v1\n"
                    "kind: DestinationRule\n"
                    "metadata: {name: d}\n"
                    "spec: {host: 5, subsets: [name, {labels: [x]}, {name: {}}]}\n"
                    "---\n"
                    "apiVersion: networking.istio.io/v1\n"
                    "kind: Gateway\n"
                    "metadata: {name: g}\n"
                    "spec: [servers]\n";
    wf_store *s = load_final(y, "default");
    assert_int_equal(wf_store_count(s), 3);
    const wf_resource *vs = wf_store_at(s, 0);
    assert_int_equal(vs->t.vs->hosts.n, 0);
    assert_int_equal(vs->t.vs->nhttp, 3);
    assert_null(vs->t.vs->http[0].dests[0].dest.host);
    assert_int_equal(vs->t.vs->http[0].dests[0].weight, -1);
    assert_int_equal(vs->t.vs->http[1].ndest, 0);
    const wf_destinationrule *d = wf_store_at(s, 1)->t.dr;
    assert_string_equal(d->host, "5");
    assert_int_equal(d->nsubsets, 3);
    assert_null(d->subsets[0].name);
    assert_int_equal(d->subsets[1].labels.n, 0);
    assert_null(d->subsets[2].name);
    const wf_gateway *g = wf_store_at(s, 2)->t.gateway;
    assert_int_equal(g->nservers, 0);
    assert_false(g->has_selector);
    wf_store_free(s);
}

/* Kubernetes built-ins: a field of the wrong JSON type rejects the document, at the field,
 * as istioctl's strict decoding does ("failed parsing JSON for built-in type"). */
static void test_kube_wrong_types(void **state)
{
    const char *y = "apiVersion: v1\n"
                    "kind: Service\n"
                    "metadata: {name: {a: b}}\n"
                    "---\n"
                    "apiVersion: apps/v1\n"
                    "kind: Deployment\n"
                    "metadata: {name: d}\n"
                    "spec: {selector: [], template: {spec: {containers: {a: b}}}}\n"
                    "---\n"
                    "apiVersion: v1\n"
                    "kind: Pod\n"
                    "metadata: \"not a map\"\n"
                    "---\n"
                    "apiVersion: v1\n"
                    "kind: Service\n"
                    "metadata: {name: ok, labels: {a: b}}\n";
    wf_store *s = load("k.yaml", y, false, 3);
    const struct {
        uint32_t line, col;
        const char *text;
    } want[] = {
        {3, 18, "metadata.name: cannot unmarshal object into a value of type string"},
        {8, 18, "spec.selector: cannot unmarshal array into a value of type object"},
        {12, 11, "metadata: cannot unmarshal string into a value of type object"},
    };
    for (size_t i = 0; i < 3; i++) {
        const wf_load_error *e = wf_store_error(s, i);
        if (e->line != want[i].line || e->col != want[i].col || !strstr(e->message, want[i].text))
            fail_msg("error %zu: %u:%u %s", i, e->line, e->col, e->message);
        assert_non_null(strstr(e->message, "failed parsing JSON for built-in type"));
    }
    assert_int_equal(wf_store_failed_files(s), 1);
    assert_int_equal(wf_store_count(s), 1);
    assert_string_equal(wf_store_at(s, 0)->name, "ok");
    wf_store_free(s);
}

/* ---- store ---- */

static const char *const mesh =
    "apiVersion: v1\n"
    "kind: Namespace\n"
    "metadata: {name: shop, namespace: ignored}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata: {name: reviews, namespace: shop}\n"
    "spec: {selector: {app: reviews}}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata: {name: ratings}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: ext1, namespace: shop}\n"
    "spec: {hosts: [api.example.com, \"*.example.org\"]}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: ext2, namespace: other}\n"
    "spec: {hosts: [api.example.com]}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: reviews-1, namespace: shop, labels: {app: reviews, version: v1}}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: reviews-2, namespace: shop, labels: {app: reviews, version: v2}}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: reviews-x, namespace: other, labels: {app: reviews}}\n"
    "---\n"
    "apiVersion: apps/v1\n"
    "kind: Deployment\n"
    "metadata: {name: reviews-v1, namespace: shop}\n"
    "spec:\n"
    "  selector: {matchLabels: {app: reviews, version: v1}}\n"
    "  template: {metadata: {labels: {app: reviews, version: v1}}}\n"
    "---\n"
    "apiVersion: apps/v1\n"
    "kind: Deployment\n"
    "metadata: {name: ratings-v1}\n"
    "spec:\n"
    "  selector: {matchLabels: {app: ratings}}\n"
    "  template:\n"
    "    metadata: {labels: {app: ratings, version: v1}, annotations: {a: b}}\n"
    "    spec: {containers: [{name: app, image: ratings:1}]}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: coredns, namespace: kube-system}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata: {name: reviews, namespace: shop, labels: {dup: second}}\n";

static void test_store_find(void **state)
{
    wf_store *s = load_final(mesh, "default");
    /* kube-system is dropped; the first reviews Service is shadowed by the second; the
     * ratings Deployment gets a synthetic pod */
    assert_int_equal(wf_store_count(s), 11);
    assert_null(wf_store_find(s, WF_KIND_POD, "kube-system", "coredns"));
    const wf_resource *ns = find(s, WF_KIND_NAMESPACE, "", "shop");
    assert_string_equal(ns->ns, ""); /* cluster-scoped: never a namespace */
    assert_false(ns->ns_defaulted);
    const wf_resource *rev = find(s, WF_KIND_SERVICE, "shop", "reviews");
    assert_string_equal(wf_kvs_get(&rev->labels, "dup"), "second"); /* last loaded wins */
    assert_null(wf_store_find(s, WF_KIND_SERVICE, "default", "reviews"));
    assert_null(wf_store_find(s, WF_KIND_POD, "shop", "reviews")); /* kind is part of the key */
    assert_null(wf_store_find(s, WF_KIND_SERVICE, "shop", "nope"));
    size_t n;
    const wf_resource *const *svcs = wf_store_kind(s, WF_KIND_SERVICE, &n);
    assert_int_equal(n, 2); /* a resource read twice counts once, where it was read last */
    assert_string_equal(svcs[0]->name, "ratings");
    assert_ptr_equal(svcs[1], rev);
    assert_null(wf_store_kind(s, WF_KIND_COUNT, &n));
    assert_int_equal(n, 0);
    wf_store_free(s);
}

static void test_store_by_host(void **state)
{
    wf_store *s = load_final(mesh, "default");
    assert_string_equal(wf_store_domain_suffix(s), "cluster.local");
    size_t n;
    const wf_resource *const *r = wf_store_by_host(s, "reviews.shop.svc.cluster.local", &n);
    assert_int_equal(n, 1); /* the reviews Service read last */
    assert_ptr_equal(r[0], wf_store_find(s, WF_KIND_SERVICE, "shop", "reviews"));
    r = wf_store_by_host(s, "ratings.default.svc.cluster.local", &n);
    assert_int_equal(n, 1);
    assert_string_equal(r[0]->name, "ratings");
    r = wf_store_by_host(s, "api.example.com", &n);
    assert_int_equal(n, 2);
    assert_string_equal(r[0]->name, "ext1");
    assert_string_equal(r[1]->name, "ext2");
    r = wf_store_by_host(s, "*.example.org", &n);
    assert_int_equal(n, 1);
    wf_store_by_host(s, "reviews", &n);
    assert_int_equal(n, 0);
    wf_store_by_host(s, "x.example.org", &n); /* exact keys only: matching is the caller's */
    assert_int_equal(n, 0);
    wf_store_free(s);
}

typedef struct pod_list {
    const char *names[8];
    size_t n, stop_after;
} pod_list;

static bool collect(const wf_resource *pod, void *arg)
{
    pod_list *l = arg;
    l->names[l->n++] = pod->name;
    return l->n != l->stop_after;
}

static void test_pods_matching(void **state)
{
    wf_store *s = load_final(mesh, "default");
    wf_kv app = {"app", "reviews", NULL};
    wf_kvs sel = {1, &app};
    pod_list l = {{0}, 0, 0};
    wf_store_pods_matching(s, "shop", &sel, collect, &l);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.names[0], "reviews-1");
    assert_string_equal(l.names[1], "reviews-2");
    l = (pod_list){{0}, 0, 0};
    wf_store_pods_matching(s, NULL, &sel, collect, &l);
    assert_int_equal(l.n, 3);
    l = (pod_list){{0}, 0, 1};
    wf_store_pods_matching(s, NULL, &sel, collect, &l); /* the callback stops the walk */
    assert_int_equal(l.n, 1);
    wf_kv two[] = {{"app", "reviews", NULL}, {"version", "v2", NULL}};
    sel = (wf_kvs){2, two};
    l = (pod_list){{0}, 0, 0};
    wf_store_pods_matching(s, "shop", &sel, collect, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.names[0], "reviews-2");
    /* synthetic pods match too */
    wf_kv rat = {"app", "ratings", NULL};
    sel = (wf_kvs){1, &rat};
    l = (pod_list){{0}, 0, 0};
    wf_store_pods_matching(s, "default", &sel, collect, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.names[0], "ratings-v1");
    wf_store_free(s);
}

static void test_synthetic_pods(void **state)
{
    wf_store *s = load_final(mesh, "default");
    /* reviews-v1 has a real pod (reviews-1): no synthetic one */
    assert_null(wf_store_find(s, WF_KIND_POD, "shop", "reviews-v1"));
    const wf_resource *p = find(s, WF_KIND_POD, "default", "ratings-v1");
    const wf_resource *d = find(s, WF_KIND_DEPLOYMENT, "default", "ratings-v1");
    assert_true(p->synthetic);
    assert_ptr_equal(p->owner, d);
    assert_string_equal(p->kind_name, "Pod");
    assert_string_equal(wf_kvs_get(&p->labels, "version"), "v1");
    assert_string_equal(wf_kvs_get(&p->annotations, "a"), "b");
    assert_int_equal(p->t.pod->spec.ncontainers, 1);
    assert_string_equal(p->t.pod->spec.containers[0].image, "ratings:1");
    assert_string_equal(p->file, "t.yaml");
    assert_int_equal(p->index, wf_store_count(s) - 1);
    size_t n;
    wf_store_kind(s, WF_KIND_POD, &n);
    assert_int_equal(n, 4);
    wf_store_free(s);

    /* without synth_pods, none */
    s = load("t.yaml", mesh, false, 0);
    assert_int_equal(wf_store_finalize(s, "default", false), 0);
    wf_store_kind(s, WF_KIND_POD, &n);
    assert_int_equal(n, 3);
    wf_store_free(s);
}

static void test_default_namespace(void **state)
{
    wf_store *s = load_final(mesh, "team");
    const wf_resource *r = find(s, WF_KIND_SERVICE, "team", "ratings");
    assert_true(r->ns_defaulted);
    assert_false(find(s, WF_KIND_SERVICE, "shop", "reviews")->ns_defaulted);
    assert_string_equal(find(s, WF_KIND_NAMESPACE, "", "shop")->ns, "");
    size_t n;
    wf_store_by_host(s, "ratings.team.svc.cluster.local", &n);
    assert_int_equal(n, 1);
    assert_int_equal(wf_store_finalize(s, "other", true), 0); /* only once */
    assert_non_null(wf_store_find(s, WF_KIND_SERVICE, "team", "ratings"));
    wf_store_free(s);

    s = load_final(mesh, NULL); /* no default: stays "" */
    r = find(s, WF_KIND_SERVICE, "", "ratings");
    assert_false(r->ns_defaulted);
    wf_store_by_host(s, "ratings..svc.cluster.local", &n);
    assert_int_equal(n, 1);
    wf_store_free(s);
}

/* ---- bad input ---- */

static void test_error_syntax(void **state)
{
    /* truncated flow sequence: reported at the end of the last line */
    EXPECT_ERROR("apiVersion: v1\nkind: Service\nmetadata:\n  name: [a, b\n", false, 4, 14,
                 "did not find expected ',' or ']'");
    EXPECT_ERROR("a: \"abc\n", false, 2, 1, "unexpected end of stream");
    /* a tab as indentation */
    EXPECT_ERROR("apiVersion: v1\nkind: Service\nmetadata:\n\tname: x\n", false, 4, 1,
                 "cannot start any token");
    EXPECT_ERROR("%\xc6\x80 x\n", false, 1, 2, "directive");
    /* documents before the error are kept */
    const char *y = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\n---\na: [\n";
    wf_store *s = wf_store_new();
    assert_int_equal(wf_store_load_buffer(s, "p.yaml", y, strlen(y), false), 1);
    assert_int_equal(wf_store_count(s), 1);
    wf_store_free(s);
    /* ... and those after it: each chunk between "---" lines is parsed on its own, as Istio's
     * file source does (KubeSource.parseContent); lines count from the start of the file */
    const char *z = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"
                    "--- # broken\nkind: Service\nmetadata: {name: b\n"
                    "---\n\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: c\n"
                    "---\t\n...\n";
    s = wf_store_new();
    assert_int_equal(wf_store_load_buffer(s, "z.yaml", z, strlen(z), false), 1);
    assert_int_equal(wf_store_count(s), 2);
    assert_string_equal(wf_store_at(s, 0)->name, "a");
    assert_string_equal(wf_store_at(s, 1)->name, "c");
    assert_int_equal(wf_store_at(s, 1)->line, 8);
    const wf_load_error *e = only_error(s);
    assert_int_equal(e->line, 6);
    assert_non_null(strstr(e->message, "did not find expected ',' or '}'"));
    wf_store_free(s);
}

/* ---- error positions in a file's later documents ----
 * A YAML file is parsed chunk by chunk between "---" lines (parse_file.c), each chunk with its
 * own libyaml parser counting from line 1, so every position must be moved to the chunk's place
 * in the file exactly once. DOC1 is a good first document; the second starts on line 5. */
#define DOC1                                      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: y}\n---\n"
#define EXPECT_DOC2_ERROR(lit, line, col, needle) EXPECT_ERROR(DOC1 lit, false, line, col, needle)
/* A line holding a YAML 1.1 line break that is no LF (LS, U+2028, in a quoted string): libyaml
 * counts one more line there than the file (editors, grep -n, the chunk reader) has. */
#define LS_LINE                                                                                    \
    "note: \"a\xe2\x80\xa8"                                                                        \
    "b\"\n"

/* Regression: duplicate keys in a later document were shifted by the chunk's start twice
 * (the tester's file: 13:3 for 9:3). */
static void test_doc2_duplicate_keys(void **state)
{
    EXPECT_DOC2_ERROR("apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\n", 9, 3,
                      "mapping key \"name\" already defined at line 8");
    EXPECT_DOC2_ERROR("a: {x: 1, x: 2}\n", 5, 11, "mapping key \"x\" already defined at line 5");
    /* the sorted check of large maps */
    char buf[2048];
    size_t off = (size_t)snprintf(buf, sizeof(buf), "%s", DOC1);
    for (int i = 0; i < 40; i++)
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, "k%02d: %d\n", i, i);
    off += (size_t)snprintf(buf + off, sizeof(buf) - off, "k07: again\n");
    expect_error(buf, off, false, 45, 1, "mapping key \"k07\" already defined at line 12");
    /* the third document, after a "---" with a comment and leading comments and blank lines */
    EXPECT_DOC2_ERROR("apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n"
                      "--- # third\n# leading comment\n\n  \n# another\n"
                      "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  labels: {x: 1}\n"
                      "  name: b\n",
                      18, 3, "mapping key \"name\" already defined at line 16");
    /* an alias as the repeated key: where the alias is, not where its anchor is */
    EXPECT_DOC2_ERROR("k: &n name\nm:\n  name: 1\n  *n : 2\n", 8, 3,
                      "mapping key \"name\" already defined at line 7");
    /* after a line libyaml counts twice; with CR LF line ends (one line each) */
    EXPECT_DOC2_ERROR(LS_LINE "a: {x: 1, x: 2}\n", 6, 11,
                      "mapping key \"x\" already defined at line 6");
    EXPECT_DOC2_ERROR("m:\r\n  a: 1\r\n  a: 2\r\n", 7, 3,
                      "mapping key \"a\" already defined at line 6");
}

static void test_doc2_syntax_errors(void **state)
{
    EXPECT_DOC2_ERROR("a: b\n\tc: d\n", 6, 1, "found a tab character");
    EXPECT_DOC2_ERROR("a: b\nc\nd: e\n", 7, 1, "could not find expected ':'");
    EXPECT_DOC2_ERROR("a: [b, c}\n", 5, 9, "did not find expected ',' or ']'");
    /* the third document, after "..." and after leading comments */
    EXPECT_DOC2_ERROR("apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n...\n"
                      "---\n# leading\n\n# more\nb: {c: 1, d\nd: 2}\n",
                      14, 2, "did not find expected ',' or '}'");
    /* after a line libyaml counts twice, and after a lone CR */
    EXPECT_DOC2_ERROR(LS_LINE "a: b\n\tc: d\n", 7, 1, "found a tab character");
    EXPECT_DOC2_ERROR("note: \"a\rb\"\na: [b, c}\n", 6, 9, "did not find expected ',' or ']'");
}

/* A parser error at the end of a chunk is placed just after its last character that is not
 * white space: not on the next chunk's "---" line, nor on a line after the end of the file. */
static void test_doc2_error_at_end(void **state)
{
    EXPECT_DOC2_ERROR("a: [1, 2\n", 5, 9, "did not find expected ',' or ']'");
    /* a chunk in the middle of the file */
    EXPECT_DOC2_ERROR("a: [1, 2\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n", 5, 9,
                      "did not find expected ',' or ']'");
    /* ... with blank lines before the next "---" */
    EXPECT_DOC2_ERROR("a: [1, 2\n\n \n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n",
                      5, 9, "did not find expected ',' or ']'");
    /* characters, not bytes: "é" is one column, and the chunk's index counts characters */
    EXPECT_DOC2_ERROR("a: [\xc3\xa9\n", 5, 6, "did not find expected ',' or ']'");
    EXPECT_DOC2_ERROR("\xc3\xa9: 1\na: [1\n---\napiVersion: v1\nkind: Namespace\n"
                      "metadata: {name: b}\n",
                      6, 6, "did not find expected ',' or ']'");
    /* no final newline; CR LF line ends */
    EXPECT_DOC2_ERROR("a: [1, 2", 5, 9, "did not find expected ',' or ']'");
    EXPECT_ERROR("a: [1, 2", false, 1, 9, "did not find expected ',' or ']'");
    EXPECT_DOC2_ERROR("a: [1, 2\r\n", 5, 9, "did not find expected ',' or ']'");
    /* a scanner error at the end keeps the line after a final newline, as go-yaml does; without
     * one it is at the end of the last line (it was on a line past the end of the file) */
    EXPECT_DOC2_ERROR("a: b\nc", 6, 2, "could not find expected ':'");
    EXPECT_ERROR("a: b\nc", false, 2, 2, "could not find expected ':'");
    EXPECT_DOC2_ERROR("a: b\nc\n", 7, 1, "could not find expected ':'");
    EXPECT_DOC2_ERROR("a: \"abc\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n", 6, 1,
                      "found unexpected end of stream");
}

static void test_doc2_limits(void **state)
{
    char buf[32768];
    size_t n = (size_t)snprintf(buf, sizeof(buf), "%s%sa: ", DOC1, LS_LINE);
    for (int i = 0; i < 200; i++)
        buf[n++] = '[';
    for (int i = 0; i < 200; i++)
        buf[n++] = ']';
    expect_error(buf, n, false, 6, 131, "nested too deeply (limit 128 levels)");
    n = (size_t)snprintf(buf, sizeof(buf), "%s", DOC1);
    for (int i = 0; i < 140; i++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%*sk:\n", i, "");
    expect_error(buf, n, false, 133, 129, "nested too deeply");

    const char *bomb =
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n";
    n = (size_t)snprintf(buf, sizeof(buf), "%s%s", DOC1, bomb);
    expect_error(buf, n, false, 10, 8, "too many nodes through aliases (limit 100000)");
    n = (size_t)snprintf(buf, sizeof(buf), "%s%s%s", DOC1, LS_LINE, bomb);
    expect_error(buf, n, false, 11, 8, "too many nodes through aliases (limit 100000)");

    EXPECT_DOC2_ERROR("a: *nope\n", 5, 4, "unknown anchor 'nope'");
    EXPECT_DOC2_ERROR(LS_LINE "a: *nope\n", 6, 4, "unknown anchor 'nope'");

    /* too many anchors: the 10,001st is on a collection, reported where its anchor is (it
     * was reported at the collection's end) */
    size_t cap = 256u * 1024u;
    char *big = malloc(cap);
    assert_non_null(big);
    n = (size_t)snprintf(big, cap, "%s", DOC1);
    for (int i = 0; i < 10000; i++)
        n += (size_t)snprintf(big + n, cap - n, "- &x%d %d\n", i, i);
    n += (size_t)snprintf(big + n, cap - n, "- &x10000 [1]\n");
    expect_error(big, n, false, 10005, 3, "too many anchors");
    free(big);
}

/* Reader errors carry a byte offset: placed by the chunk's characters, not counting a leading
 * byte order mark (libyaml skips it), in whichever document they are. */
static void test_doc2_reader_errors(void **state)
{
    EXPECT_DOC2_ERROR("a: b\nc: d\nxyz: ab\x01"
                      "c\n",
                      7, 8, "control characters are not allowed");
    EXPECT_DOC2_ERROR("apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n--- # c\n\n"
                      "a: \xc3\xa9\x7f\n",
                      10, 5, "U+007F");
    EXPECT_DOC2_ERROR(LS_LINE "xyz: ab\x01"
                              "c\n",
                      6, 8, "control characters are not allowed");
    EXPECT_ERROR("\xef\xbb\xbf"
                 "a: b\x01\n",
                 false, 1, 5, "control characters are not allowed");
    /* a leading byte order mark is no column for libyaml's marks either */
    EXPECT_ERROR("\xef\xbb\xbf"
                 "a: {x: 1, x: 2}\n",
                 false, 1, 11, "mapping key \"x\" already defined at line 1");
    /* bad UTF-8 is found in the whole file before it is cut into chunks */
    EXPECT_DOC2_ERROR("apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n---\n"
                      "a: \xc3\xa9\xff\n",
                      9, 5, "invalid UTF-8");
}

/* Node positions (findings point at them) in later documents, also after comments, blank
 * lines and line breaks libyaml counts but the file does not. */
static void test_doc2_positions(void **state)
{
    const char *y = DOC1 "# leading comment\n\n"
                         "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n"
                         "--- # third\n\n" LS_LINE "apiVersion: v1\nkind: Service\n"
                         "metadata:\n  name: b\n"
                         "---\r\napiVersion: v1\r\nkind: Service\r\nmetadata:\r\n"
                         "  annotations: {n: \"x\ry\"}\r\n  name: c\r\n";
    wf_store *s = load("p.yaml", y, false, 0);
    assert_int_equal(wf_store_count(s), 4);
    const wf_resource *a = wf_store_at(s, 1), *b = wf_store_at(s, 2), *c = wf_store_at(s, 3);
    assert_string_equal(a->name, "a");
    assert_int_equal(a->line, 5); /* the line after its "---", as Istio's reader counts */
    const wf_map_entry *e = wf_map_entry_get(a->metadata, "name");
    assert_int_equal(e->key_line, 10);
    assert_int_equal(e->key_col, 3);
    assert_int_equal(e->value->line, 10);
    assert_int_equal(e->value->col, 9);
    assert_string_equal(b->name, "b");
    assert_int_equal(b->line, 12);
    e = wf_map_entry_get(b->metadata, "name");
    assert_int_equal(e->key_line, 17);
    assert_int_equal(e->value->col, 9);
    assert_int_equal(wf_map_entry_get(b->metadata, "name")->value->line, 17);
    assert_string_equal(c->name, "c");
    assert_int_equal(c->line, 19);
    e = wf_map_entry_get(c->metadata, "name");
    assert_int_equal(e->key_line, 23);
    assert_int_equal(e->key_col, 3);
    assert_int_equal(e->value->col, 9);
    wf_store_free(s);
}

static void test_error_tabs_in_values_are_fine(void **state)
{
    wf_store *s =
        load("t.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name:\tx\n", false, 0);
    assert_string_equal(wf_store_at(s, 0)->name, "x");
    wf_store_free(s);
}

static void test_error_duplicate_keys(void **state)
{
    EXPECT_ERROR("apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\n", false, 5, 3,
                 "mapping key \"name\" already defined at line 4");
    /* large maps use the sorted check */
    char buf[2048];
    size_t off = 0;
    for (int i = 0; i < 40; i++)
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, "k%02d: %d\n", i, i);
    off += (size_t)snprintf(buf + off, sizeof(buf) - off, "k07: again\n");
    expect_error(buf, off, false, 41, 1, "mapping key \"k07\" already defined at line 8");
    EXPECT_ERROR("{\"a\": 1, \"a\": 2}", true, 1, 12, "duplicate object key");
}

static void test_error_utf8(void **state)
{
    EXPECT_ERROR("apiVersion: v1\nmetadata:\n  name: x\xff\n", false, 3, 10, "invalid UTF-8");
    EXPECT_ERROR("%\xc6", false, 1, 2, "invalid UTF-8 (byte 0xC6 at offset 1)");
    EXPECT_ERROR("a: \xed\xa0\x80\n", false, 1, 4, "invalid UTF-8");     /* surrogate */
    EXPECT_ERROR("a: \xc0\xaf\n", false, 1, 4, "invalid UTF-8");         /* overlong */
    EXPECT_ERROR("a: \xf4\x90\x80\x80\n", false, 1, 4, "invalid UTF-8"); /* > U+10FFFF */
    EXPECT_ERROR("{\"a\": \"\xe2\x82\"}", true, 1, 8, "invalid UTF-8");
    /* multi-byte characters count as one column */
    EXPECT_ERROR("a: \xc3\xa9\xc3\xa9\xff\n", false, 1, 6, "invalid UTF-8");
}

/* Regression: libyaml reports reader errors (control characters) with a byte offset, not a
 * mark; they used to come out as 1:1. */
static void test_error_control_characters(void **state)
{
    EXPECT_ERROR("a: b\nc: d\nxyz: ab\x01"
                 "c\n",
                 false, 3, 8, "control characters are not allowed");
    EXPECT_ERROR("a: b\nc: \"d\0e\"\n", false, 2, 6, "control characters");
    EXPECT_ERROR("a: \xc3\xa9\x7f\n", false, 1, 5, "U+007F");
}

static void test_error_binary_garbage(void **state)
{
    unsigned char buf[4096];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof(buf); i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (unsigned char)(x >> 16);
    }
    wf_store *s = wf_store_new();
    assert_int_equal(wf_store_load_buffer(s, "bin.yaml", (const char *)buf, sizeof(buf), false), 1);
    assert_int_equal(wf_store_load_buffer(s, "bin.json", (const char *)buf, sizeof(buf), true), 1);
    assert_true(wf_store_error(s, 0)->line >= 1);
    assert_int_equal(wf_store_failed_files(s), 2);
    assert_int_equal(wf_store_count(s), 0);
    wf_store_free(s);
}

static void test_error_depth(void **state)
{
    char buf[32768];
    size_t n = 0;
    n += (size_t)snprintf(buf, sizeof(buf), "a: ");
    for (int i = 0; i < 200; i++)
        buf[n++] = '[';
    for (int i = 0; i < 200; i++)
        buf[n++] = ']';
    /* the map is level 1; the 128th '[' would be level 129 */
    expect_error(buf, n, false, 1, 131, "nested too deeply (limit 128 levels)");
    n = 0;
    for (int i = 0; i < 140; i++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%*sk:\n", i, "");
    expect_error(buf, n, false, 129, 129, "nested too deeply");
    /* exactly at the limit is fine: the document's map and 127 sequences */
    n = (size_t)snprintf(buf, sizeof(buf),
                         "{\"apiVersion\": \"example.com/v1\", \"kind\": \"Deep\", "
                         "\"x\": ");
    for (int i = 0; i < 127; i++)
        buf[n++] = '[';
    for (int i = 0; i < 127; i++)
        buf[n++] = ']';
    buf[n++] = '}';
    wf_store *s = wf_store_new();
    assert_int_equal(wf_store_load_buffer(s, "ok.yaml", buf, n, false), 0);
    assert_int_equal(wf_store_load_buffer(s, "ok.json", buf, n, true), 0);
    assert_int_equal(wf_store_count(s), 2);
    wf_store_free(s);
    /* JSON: the same limit, with the position of the first bracket too deep (strings with
     * brackets and escaped quotes do not count) */
    n = (size_t)snprintf(buf, sizeof(buf), "{\"s\": \"[[\\\"{{\",\n \"x\": ");
    for (int i = 0; i < 3000; i++)
        buf[n++] = '[';
    for (int i = 0; i < 3000; i++)
        buf[n++] = ']';
    buf[n++] = '}';
    expect_error(buf, n, true, 2, 134, "json: document nested too deeply (limit 128 levels)");
}

static void test_error_alias_bomb(void **state)
{
    const char *y =
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
        "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
        "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
    double t0 = cpu_seconds();
    expect_error(y, strlen(y), false, 6, 8, "too many nodes through aliases (limit 100000)");
    assert_true(cpu_seconds() - t0 < 1.0);
    EXPECT_ERROR("a: *nope\n", false, 1, 4, "unknown anchor 'nope'");
}

/* Regression: anchors were looked up linearly, so 10,000 anchors and 100,000 aliases took
 * seconds (6.8 s for a 730 KB file); merges compared every key with every key. */
static void test_anchor_and_merge_cost(void **state)
{
    size_t cap = 2u * 1024u * 1024u, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    n += (size_t)snprintf(buf + n, cap - n, "apiVersion: example.com/v1\nkind: Blob\na:\n");
    for (int i = 0; i < 10000; i++)
        n += (size_t)snprintf(buf + n, cap - n, "- &x%d %d\n", i, i);
    n += (size_t)snprintf(buf + n, cap - n, "b:\n");
    for (int i = 0; i < 90000; i++)
        n += (size_t)snprintf(buf + n, cap - n, "- *x%d\n", i % 7);
    double t0 = cpu_seconds();
    wf_store *s = wf_store_new();
    assert_int_equal(wf_store_load_buffer(s, "anchors.yaml", buf, n, false), 0);
    wf_store_free(s);

    n = (size_t)snprintf(buf, cap, "apiVersion: example.com/v1\nkind: Blob\na: &a\n");
    for (int i = 0; i < 45000; i++)
        n += (size_t)snprintf(buf + n, cap - n, "  k%d: %d\n", i, i);
    n += (size_t)snprintf(buf + n, cap - n, "b:\n  k7: mine\n  <<: *a\n");
    s = wf_store_new();
    assert_int_equal(wf_store_load_buffer(s, "merge.yaml", buf, n, false), 0);
    wf_store_free(s);
    double spent = cpu_seconds() - t0;
    if (spent > 2.0)
        fail_msg("anchors and merges took %.2f s of CPU", spent);
    /* too many anchors in one document */
    n = 0;
    for (int i = 0; i < 10001; i++)
        n += (size_t)snprintf(buf + n, cap - n, "- &x%d %d\n", i, i);
    expect_error(buf, n, false, 10001, 3, "too many anchors");
    free(buf);
}

/* Regression: index chains were appended by walking them, and wf_store_find walked to the
 * end, so 40,000 resources sharing a key (unnamed, or one kind in one namespace) took
 * 5.6 s to finalize. */
static void test_many_resources_share_a_key(void **state)
{
    const char *blob = "apiVersion: example.com/v1\nkind: Blob\nmetadata: {namespace: one}\n---\n";
    const char *cm =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d, namespace: one}\n---\n";
    size_t cap = 8u * 1024u * 1024u, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (int i = 0; i < 30000; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s", blob);
    for (int i = 0; i < 30000; i++)
        n += (size_t)snprintf(buf + n, cap - n, cm, i);
    wf_store *s = wf_store_new();
    assert_int_equal(wf_store_load_buffer(s, "many.yaml", buf, n, false), 0);
    double t0 = cpu_seconds();
    assert_int_equal(wf_store_finalize(s, NULL, true), 0);
    double spent = cpu_seconds() - t0;
    if (spent > 1.0)
        fail_msg("finalize took %.2f s of CPU", spent);
    assert_int_equal(wf_store_count(s), 60000); /* unknown kinds are never shadowed */
    assert_ptr_equal(wf_store_find(s, WF_KIND_OTHER, "one", ""), wf_store_at(s, 29999));
    size_t k;
    wf_store_kind_ns(s, WF_KIND_CONFIGMAP, "one", &k);
    assert_int_equal(k, 30000);
    wf_store_free(s);
    free(buf);
}

static void test_error_size_limit(void **state)
{
    size_t len = WF_LOAD_MAX_FILE_BYTES + 1;
    char *buf = malloc(len);
    assert_non_null(buf);
    memset(buf, ' ', len);
    expect_error(buf, len, false, 0, 0, "larger than the limit of 67108864 bytes");
    free(buf);
}

static void test_error_json_syntax(void **state)
{
    const char *j =
        "{\"apiVersion\": \"v1\", \"kind\": \"Service\",\n \"metadata\": {\"name\": \"x\"";
    expect_error(j, strlen(j), true, 2, 25, "json: '}' expected near end of file");
    EXPECT_ERROR("", true, 1, 1, "json:");
    EXPECT_ERROR("{\"a\": 1} {\"b\": 2}", true, 1, 10, "end of file expected");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multi_document),
        cmocka_unit_test(test_empty_inputs),
        cmocka_unit_test(test_kind_list),
        cmocka_unit_test(test_json_input),
        cmocka_unit_test(test_directory),
        cmocka_unit_test(test_directory_fifo),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_merge_keys),
        cmocka_unit_test(test_anchors),
        cmocka_unit_test(test_decode_service),
        cmocka_unit_test(test_decode_deployment),
        cmocka_unit_test(test_decode_virtualservice),
        cmocka_unit_test(test_decode_destinationrule),
        cmocka_unit_test(test_decode_wrong_types),
        cmocka_unit_test(test_kube_wrong_types),
        cmocka_unit_test(test_store_find),
        cmocka_unit_test(test_store_by_host),
        cmocka_unit_test(test_pods_matching),
        cmocka_unit_test(test_synthetic_pods),
        cmocka_unit_test(test_default_namespace),
        cmocka_unit_test(test_error_syntax),
        cmocka_unit_test(test_doc2_duplicate_keys),
        cmocka_unit_test(test_doc2_syntax_errors),
        cmocka_unit_test(test_doc2_error_at_end),
        cmocka_unit_test(test_doc2_limits),
        cmocka_unit_test(test_doc2_reader_errors),
        cmocka_unit_test(test_doc2_positions),
        cmocka_unit_test(test_error_tabs_in_values_are_fine),
        cmocka_unit_test(test_error_duplicate_keys),
        cmocka_unit_test(test_error_utf8),
        cmocka_unit_test(test_error_control_characters),
        cmocka_unit_test(test_error_binary_garbage),
        cmocka_unit_test(test_error_depth),
        cmocka_unit_test(test_error_alias_bomb),
        cmocka_unit_test(test_anchor_and_merge_cost),
        cmocka_unit_test(test_many_resources_share_a_key),
        cmocka_unit_test(test_error_size_limit),
        cmocka_unit_test(test_error_json_syntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
