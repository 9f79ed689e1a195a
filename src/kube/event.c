/*
 * event.c - watch event lines and Status errors (event.h).
 */
#include "kube/event.h"

#include <stdio.h>
#include <string.h>

static const char *const TYPE_NAMES[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

const char *wf_kube_event_type_name(wf_kube_event_type t)
{
    return (unsigned)t < 5 ? TYPE_NAMES[t] : "?";
}

const char *wf_kube_obj_rv(const json_t *obj)
{
    const char *s =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    return s ? s : "";
}

const char *wf_kube_obj_key(const json_t *obj, char *buf, size_t cap)
{
    const json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!name || !*name)
        return NULL;
    int n = ns && *ns ? snprintf(buf, cap, "%s/%s", ns, name) : snprintf(buf, cap, "%s", name);
    return n > 0 && (size_t)n < cap ? buf : NULL;
}

void wf_kube_status_from_json(const json_t *status, wf_kube_status *st)
{
    memset(st, 0, sizeof *st);
    st->code = (int)json_integer_value(json_object_get(status, "code"));
    const char *r = json_string_value(json_object_get(status, "reason"));
    const char *m = json_string_value(json_object_get(status, "message"));
    snprintf(st->reason, sizeof st->reason, "%s", r ? r : "");
    snprintf(st->message, sizeof st->message, "%s", m ? m : "");
}

void wf_kube_status_from_body(int http_status, const char *body, size_t len, wf_kube_status *st)
{
    json_t *j = len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *kind = json_string_value(json_object_get(j, "kind"));
    if (kind && strcmp(kind, "Status") == 0) {
        wf_kube_status_from_json(j, st);
        if (st->code == 0)
            st->code = http_status;
    } else {
        memset(st, 0, sizeof *st);
        st->code = http_status;
        size_t n = len < 120 ? len : 120;
        int k = snprintf(st->message, sizeof st->message, "(not a Status: %.*s)", (int)n,
                         body ? body : "");
        for (int i = 0; i < k && st->message[i]; i++)
            if (st->message[i] == '\n' || st->message[i] == '\r')
                st->message[i] = ' ';
    }
    json_decref(j);
}

void wf_kube_status_format(const wf_kube_status *st, wf_strbuf *out)
{
    if (st->reason[0])
        wf_strbuf_printf(out, "%d %s: %s", st->code, st->reason, st->message);
    else
        wf_strbuf_printf(out, "HTTP %d %s", st->code, st->message);
}

bool wf_kube_status_expired(const wf_kube_status *st)
{
    return st->code == 410;
}

int wf_kube_event_parse(const char *line, size_t len, wf_kube_event *ev, wf_strbuf *why)
{
    memset(ev, 0, sizeof *ev);
    ev->rv = "";
    json_error_t je;
    json_t *j = json_loadb(line, len, 0, &je);
    if (!j || !json_is_object(j)) {
        wf_strbuf_printf(why, "watch event: not a JSON object: %s", j ? "" : je.text);
        json_decref(j);
        return -1;
    }
    const char *type = json_string_value(json_object_get(j, "type"));
    json_t *obj = json_object_get(j, "object");
    int t = -1;
    for (int i = 0; type && i < 5; i++)
        if (strcmp(type, TYPE_NAMES[i]) == 0)
            t = i;
    if (t < 0) {
        wf_strbuf_printf(why, "watch event: unknown type \"%s\"", type ? type : "");
        json_decref(j);
        return -1;
    }
    if (!json_is_object(obj)) {
        wf_strbuf_printf(why, "watch event: %s without an object", type);
        json_decref(j);
        return -1;
    }
    ev->type = (wf_kube_event_type)t;
    ev->object = json_incref(obj);
    json_decref(j);
    if (ev->type == WF_KUBE_ERROR) {
        wf_kube_status_from_json(ev->object, &ev->err);
        return 0;
    }
    ev->rv = wf_kube_obj_rv(ev->object);
    if (!ev->rv[0]) {
        wf_strbuf_printf(why, "watch event: %s object without metadata.resourceVersion",
                         wf_kube_event_type_name(ev->type));
        wf_kube_event_clear(ev);
        return -1;
    }
    return 0;
}

void wf_kube_event_clear(wf_kube_event *ev)
{
    json_decref(ev->object);
    ev->object = NULL;
    ev->rv = "";
}
