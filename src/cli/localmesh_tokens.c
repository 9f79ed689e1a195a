/*
 * localmesh_tokens.c - per-pod service-account tokens of the local mesh (localmesh_tokens.h).
 */
#include "cli/localmesh_netns.h"
#include "cli/localmesh_tokens.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cli/localmesh_sys.h"
#include "pilot/ca.h"
#include "pilot/ca_token.h"

const char *wf_lm_pod_sa(const wf_lm_pod *pod)
{
    return pod->service_account && *pod->service_account ? pod->service_account : WF_LM_DEFAULT_SA;
}

static int mkdir_private(const char *path, wf_strbuf *err)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return wf_strbuf_printf(err, "cannot create %s: %s", path, strerror(errno)), -1;
    if (chmod(path, 0700) != 0)
        return wf_strbuf_printf(err, "cannot chmod %s: %s", path, strerror(errno)), -1;
    return 0;
}

/* Removes dir/name: a regular file, or a folder and what is in it (one level of folders). */
static int remove_entry(const char *path, int depth, wf_strbuf *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT
                   ? 0
                   : (wf_strbuf_printf(err, "cannot remove %s: %s", path, strerror(errno)), -1);
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) != 0 && errno != ENOENT)
            return wf_strbuf_printf(err, "cannot remove %s: %s", path, strerror(errno)), -1;
        return 0;
    }
    if (depth > 2)
        return wf_strbuf_printf(err, "cannot remove %s: unexpected folder", path), -1;
    DIR *d = opendir(path);
    if (!d)
        return wf_strbuf_printf(err, "cannot read %s: %s", path, strerror(errno)), -1;
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[4200];
        if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub)
            rc = (wf_strbuf_printf(err, "%s/%s: path too long", path, e->d_name), -1);
        else
            rc = remove_entry(sub, depth + 1, err);
    }
    closedir(d);
    if (rc == 0 && rmdir(path) != 0 && errno != ENOENT)
        return wf_strbuf_printf(err, "cannot remove %s: %s", path, strerror(errno)), -1;
    return rc;
}

int wf_lm_tokens_remove(const char *state, wf_strbuf *err)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%s/%s", state, WF_LM_TOKENS_DIR) >= (int)sizeof path)
        return wf_strbuf_printf(err, "%s: path too long", state), -1;
    return remove_entry(path, 0, err);
}

static int write_token(const wf_lm_plan *p, const wf_lm_pod *pod, const wf_ca_token_key *key,
                       int64_t now_s, wf_strbuf *err)
{
    char dir[4200], msg[256];
    if (snprintf(dir, sizeof dir, "%s/%s/%s.%s", p->state, WF_LM_TOKENS_DIR, pod->name, pod->ns) >=
        (int)sizeof dir)
        return wf_strbuf_printf(err, "%s: path too long", p->state), -1;
    if (mkdir_private(dir, err) != 0)
        return -1;
    char *tok = wf_ca_token_mint(key, pod->ns, wf_lm_pod_sa(pod), now_s, WF_CA_TOKEN_DEFAULT_TTL_S,
                                 msg, sizeof msg);
    if (!tok)
        return wf_strbuf_printf(err, "pod %s/%s: cannot make its token: %s", pod->ns, pod->name,
                                msg),
               -1;
    int rc = wf_lm_write_file_mode(pod->token, tok, strlen(tok), 0600, err);
    OPENSSL_cleanse(tok, strlen(tok));
    free(tok);
    /* --capture: the sidecar runs as Istio's proxy uid 1337, and the token is its own (as
     * Kubernetes gives the istio-token volume the pod's fsGroup 1337) */
    if (rc == 0 && p->capture && pod->sidecar &&
        (chown(dir, WF_LM_CAPTURE_UID, WF_LM_CAPTURE_UID) != 0 ||
         chown(pod->token, WF_LM_CAPTURE_UID, WF_LM_CAPTURE_UID) != 0))
        return wf_strbuf_printf(err, "chown %s to uid %d: %s", pod->token, WF_LM_CAPTURE_UID,
                                strerror(errno)),
               -1;
    return rc;
}

/* A token for every pod with a proxy, from the mesh CA's key (made when missing). */
static int write_all(const wf_lm_plan *p, int64_t now_s, wf_strbuf *err)
{
    char ca_dir[4200], msg[512];
    snprintf(ca_dir, sizeof ca_dir, "%s/ca", p->state);
    wf_ca_token_key key;
    if (wf_ca_make_dir(ca_dir, msg, sizeof msg) != 0 ||
        wf_ca_token_key_load(ca_dir, 1, &key, msg, sizeof msg) != 0)
        return wf_strbuf_printf(err, "the mesh CA's token key: %s", msg), -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < p->npods; i++)
        if (p->pods[i].token && !p->pods[i].error)
            rc = write_token(p, &p->pods[i], &key, now_s, err);
    OPENSSL_cleanse(&key, sizeof key);
    return rc;
}

int wf_lm_tokens_write(const wf_lm_plan *p, int64_t now_s, wf_strbuf *err)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", p->state, WF_LM_TOKENS_DIR);
    if (wf_lm_tokens_remove(p->state, err) != 0 || mkdir_private(dir, err) != 0)
        return -1;
    /* --capture: uid 1337 must pass through STATE/tokens to its pod's folder (not list it) */
    if (p->capture && chmod(dir, 0711) != 0)
        return wf_strbuf_printf(err, "chmod %s: %s", dir, strerror(errno)), -1;
    return write_all(p, now_s, err);
}

int wf_lm_tokens_refresh(const wf_lm_plan *p, int64_t now_s, wf_strbuf *err)
{
    return write_all(p, now_s, err);
}
