/*
 * listen_hold.c - warming listeners' sockets, held from the LDS update that added them until
 * the listener serves (see listen_hold.h for the Envoy behaviour and the socket options).
 */
#include "proxy/server/listen_hold.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "proxy/server/listen_socket.h"

typedef struct held {
    char *name;
    wp_addr addr;
    int *fds;    /* nsockets bound sockets */
    bool fresh;  /* bound by the pending LDS update */
    bool wanted; /* a listener of the pending LDS update */
} held;

struct wp_listen_hold {
    unsigned nsockets;
    held *v;
    size_t n, cap;
};

wp_listen_hold *wp_listen_hold_new(unsigned nsockets)
{
    wp_listen_hold *h = calloc(1, sizeof(*h));
    if (h)
        h->nsockets = nsockets ? nsockets : 1;
    return h;
}

static void close_held(wp_listen_hold *h, held *e)
{
    for (unsigned k = 0; e->fds && k < h->nsockets; k++)
        if (e->fds[k] >= 0)
            close(e->fds[k]);
    free(e->fds);
    free(e->name);
}

/* Removes entry i (closing its sockets when close_fds). */
static void drop(wp_listen_hold *h, size_t i, bool close_fds)
{
    if (close_fds) {
        close_held(h, &h->v[i]);
    } else {
        free(h->v[i].fds);
        free(h->v[i].name);
    }
    h->v[i] = h->v[--h->n];
}

void wp_listen_hold_free(wp_listen_hold *h)
{
    if (!h)
        return;
    while (h->n)
        drop(h, h->n - 1, true);
    free(h->v);
    free(h);
}

bool wp_listener_same(const wp_listener *a, const wp_listener *b)
{
    return strcmp(a->name, b->name) == 0 && a->addr.len == b->addr.len &&
           a->bind_to_port == b->bind_to_port && memcmp(&a->addr.sa, &b->addr.sa, a->addr.len) == 0;
}

const char *wp_listen_error_reason(const char *err, const char *name)
{
    size_t nl = strlen(name);
    if (strncmp(err, "listener ", 9) == 0 && strncmp(err + 9, name, nl) == 0 &&
        strncmp(err + 9 + nl, ": ", 2) == 0)
        return err + 11 + nl;
    return err;
}

static held *find(wp_listen_hold *h, const wp_listener *l)
{
    for (size_t i = 0; i < h->n; i++) {
        held *e = &h->v[i];
        if (strcmp(e->name, l->name) == 0 && e->addr.len == l->addr.len &&
            memcmp(&e->addr.sa, &l->addr.sa, l->addr.len) == 0)
            return e;
    }
    return NULL;
}

static bool serves(const wp_config *serving, const wp_listener *l)
{
    for (size_t i = 0; serving && i < serving->nlisteners; i++)
        if (serving->listeners[i].bound && wp_listener_same(&serving->listeners[i], l))
            return true;
    return false;
}

static bool named(const wf_xds_names *names, const char *name)
{
    for (size_t i = 0; names && i < names->n; i++)
        if (strcmp(names->v[i], name) == 0)
            return true;
    return false;
}

static void set_reuseaddr(int fd, int on)
{
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
}

/* Binds l's sockets into a new entry: 0, 1 with the reason in why (nothing held), -1 out of
 * memory. */
static int bind_new(wp_listen_hold *h, const wp_listener *l, wf_strbuf *why)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 8;
        held *v = realloc(h->v, cap * sizeof(*v));
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    held e = {.name = strdup(l->name), .addr = l->addr, .fds = malloc(h->nsockets * sizeof(int))};
    if (!e.name || !e.fds) {
        free(e.name);
        free(e.fds);
        return -1;
    }
    for (unsigned k = 0; k < h->nsockets; k++) {
        e.fds[k] = wp_listen_socket(l, why);
        if (e.fds[k] < 0) {
            while (k-- > 0)
                close(e.fds[k]);
            free(e.fds);
            free(e.name);
            return 1;
        }
        set_reuseaddr(e.fds[k], 0); /* nobody else binds it meanwhile (listen_hold.h) */
    }
    e.fresh = e.wanted = true;
    h->v[h->n++] = e;
    return 0;
}

int wp_listen_hold_add(wp_listen_hold *h, const wp_config *cfg, size_t first,
                       const wf_xds_names *warming, const wp_config *serving, json_t *failed)
{
    for (size_t i = first; i < cfg->nlisteners; i++) {
        const wp_listener *l = &cfg->listeners[i];
        if (!l->bind_to_port)
            continue; /* no socket: it takes connections a use_original_dst listener hands over */
        if (serves(serving, l) && !named(warming, l->name))
            continue; /* the workers' sockets stay with the next snapshot */
        held *e = find(h, l);
        if (e) {
            e->wanted = true;
            continue;
        }
        wf_strbuf why = WF_STRBUF_INIT;
        int rc = bind_new(h, l, &why);
        if (rc == 1 && json_object_set_new(
                           failed, l->name,
                           json_string(wp_listen_error_reason(wf_strbuf_cstr(&why), l->name))) != 0)
            rc = -1;
        wf_strbuf_free(&why);
        if (rc < 0)
            return -1;
    }
    return 0;
}

void wp_listen_hold_settle(wp_listen_hold *h, bool accepted)
{
    for (size_t i = h->n; i-- > 0;) {
        held *e = &h->v[i];
        if (accepted ? !e->wanted : e->fresh) {
            drop(h, i, true);
        } else {
            e->fresh = e->wanted = false;
        }
    }
}

bool wp_listen_hold_take(wp_listen_hold *h, const wp_listener *l, int *fds)
{
    held *e = h ? find(h, l) : NULL;
    if (!e)
        return false;
    for (unsigned k = 0; k < h->nsockets; k++) {
        set_reuseaddr(e->fds[k], 1);
        fds[k] = e->fds[k];
    }
    drop(h, (size_t)(e - h->v), false);
    return true;
}

size_t wp_listen_hold_count(const wp_listen_hold *h)
{
    return h ? h->n : 0;
}
