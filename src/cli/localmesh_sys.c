/*
 * localmesh_sys.c - host helpers for the local mesh (localmesh_sys.h).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/localmesh_sys.h"

int wf_lm_mkdirs(const char *path, wf_strbuf *err)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return wf_strbuf_printf(err, "%s: path too long", path), -1;
    for (char *p = buf + 1;; p++) {
        bool end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return wf_strbuf_printf(err, "cannot create %s: %s", buf, strerror(errno)), -1;
            if (end)
                break;
            *p = '/';
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return wf_strbuf_printf(err, "%s is not a folder", path), -1;
    return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int wf_lm_clean_dir(const char *dir, const char *suffix, wf_strbuf *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : (wf_strbuf_printf(err, "%s: %s", dir, strerror(errno)), -1);
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        if (e->d_name[0] == '.' || !ends_with(e->d_name, suffix) ||
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
            continue;
        if (unlink(path) != 0 && errno != ENOENT) {
            wf_strbuf_printf(err, "cannot remove %s: %s", path, strerror(errno));
            rc = -1;
            break;
        }
    }
    closedir(d);
    return rc;
}

int wf_lm_write_file_mode(const char *path, const char *data, size_t len, unsigned mode,
                          wf_strbuf *err)
{
    char tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int dlen = slash ? (int)(slash - path) : 0;
    if (snprintf(tmp, sizeof tmp, "%.*s%s.%s.tmp", dlen, path, slash ? "/" : "",
                 slash ? slash + 1 : path) >= (int)sizeof tmp)
        return wf_strbuf_printf(err, "%s: path too long", path), -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, (mode_t)mode);
    if (fd < 0)
        return wf_strbuf_printf(err, "cannot write %s: %s", tmp, strerror(errno)), -1;
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    int saved = errno;
    if (fchmod(fd, (mode_t)mode) != 0 || close(fd) != 0 || off < len || rename(tmp, path) != 0) {
        wf_strbuf_printf(err, "cannot write %s: %s", path, strerror(off < len ? saved : errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int wf_lm_write_file(const char *path, const char *data, size_t len, wf_strbuf *err)
{
    return wf_lm_write_file_mode(path, data, len, 0644, err);
}

pid_t wf_lm_read_pid(const char *path)
{
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1 || pid <= 0 || pid > INT_MAX)
        pid = 0;
    fclose(f);
    return (pid_t)pid;
}

/* /proc/PID/cmdline with NULs turned into spaces; "" when unreadable. */
static void read_cmdline(pid_t pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    buf[n] = '\0';
}

static bool is_zombie(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool z = false;
    if (fgets(line, sizeof line, f)) {
        const char *close = strrchr(line, ')');
        z = close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
    }
    fclose(f);
    return z;
}

unsigned long long wf_lm_pid_start_ticks(pid_t pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f)
        return 0;
    const char *close = fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
    fclose(f);
    /* "pid (comm) state ...": the space after ')' starts field 3; starttime is field 22 */
    for (int field = 2; close && *close; close++)
        if (*close == ' ' && ++field == 22)
            return strtoull(close + 1, NULL, 10);
    return 0;
}

bool wf_lm_pid_is(pid_t pid, unsigned long long start_ticks, const char *want)
{
    if (!start_ticks)
        return wf_lm_pid_alive(pid, want);
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM) || is_zombie(pid))
        return false;
    return wf_lm_pid_start_ticks(pid) == start_ticks;
}

bool wf_lm_pid_alive(pid_t pid, const char *want)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM) || is_zombie(pid))
        return false;
    if (!want)
        return true;
    char cmd[4096];
    read_cmdline(pid, cmd, sizeof cmd);
    return strstr(cmd, want) != NULL;
}

/* The inode of a listening socket on port (any of 0.0.0.0, ip), 0 when none is found. */
static unsigned long listen_inode(const char *ip, int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f)
        return 0;
    struct in_addr want;
    inet_pton(AF_INET, ip, &want);
    char line[512];
    unsigned long inode = 0;
    while (!inode && fgets(line, sizeof line, f)) {
        unsigned addr, lport, st;
        unsigned long ino;
        if (sscanf(line, " %*d: %8X:%4X %*8X:%*4X %2X %*s %*s %*s %*s %*s %lu", &addr, &lport, &st,
                   &ino) == 4 &&
            (int)lport == port && st == 0x0A && (addr == 0 || addr == want.s_addr))
            inode = ino;
    }
    fclose(f);
    return inode;
}

static bool pid_has_socket(const char *pid, const char *target)
{
    char dir[300];
    snprintf(dir, sizeof dir, "/proc/%s/fd", pid);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d)) != NULL) {
        char path[600], link[128];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n > 0) {
            link[n] = '\0';
            found = strcmp(link, target) == 0;
        }
    }
    closedir(d);
    return found;
}

/* The PID holding socket inode, 0 when not found (other users' processes are not readable
 * unless we are root). */
static pid_t socket_owner(unsigned long inode)
{
    char target[64];
    snprintf(target, sizeof target, "socket:[%lu]", inode);
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    struct dirent *e;
    pid_t pid = 0;
    while (!pid && (e = readdir(d)) != NULL) {
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && pid_has_socket(e->d_name, target))
            pid = (pid_t)atoi(e->d_name);
    }
    closedir(d);
    return pid;
}

static void describe_owner(const char *ip, int port, wf_strbuf *err)
{
    unsigned long inode = listen_inode(ip, port);
    pid_t pid = inode ? socket_owner(inode) : 0;
    if (!pid)
        return;
    char cmd[4096];
    read_cmdline(pid, cmd, sizeof cmd);
    wf_strbuf_printf(err, " by pid %d (%.200s)", (int)pid, cmd);
}

int wf_lm_port_free(const char *ip, int port, wf_strbuf *err)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
        return wf_strbuf_printf(err, "%s: not an IPv4 address", ip), -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return wf_strbuf_printf(err, "socket: %s", strerror(errno)), -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    int saved = errno;
    close(fd);
    if (rc == 0)
        return 0;
    wf_strbuf_printf(err, "%s:%d is %s", ip, port,
                     saved == EADDRINUSE ? "in use" : strerror(saved));
    if (saved == EADDRINUSE)
        describe_owner(ip, port, err);
    return -1;
}

char *wf_lm_self_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return strdup(buf[0] ? buf : "/");
}

/* ---- the default state folder ------------------------------------------------------------ */

static void state_name(const char *absdir, char *out, size_t cap)
{
    const char *base = strrchr(absdir, '/');
    base = base ? base + 1 : absdir;
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */
    for (const char *c = absdir; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    size_t n = 0;
    for (const char *c = *base ? base : "root"; *c && n + 14 < cap && n < 64; c++)
        out[n++] = isalnum((unsigned char)*c) || strchr("._-", *c) ? *c : '_';
    snprintf(out + n, cap - n, "-%012llx", (unsigned long long)(h & 0xffffffffffffull));
}

/* base/sub/weft created and writable: the malloc'd path of base/sub/weft, else NULL. */
static char *usable_base(const char *base, const char *sub)
{
    if (!base || base[0] != '/')
        return NULL;
    size_t len = strlen(base) + strlen(sub) + 8;
    char *path = malloc(len);
    if (!path)
        return NULL;
    snprintf(path, len, "%s%s/weft", base, sub);
    wf_strbuf ignored = WF_STRBUF_INIT;
    bool ok = wf_lm_mkdirs(path, &ignored) == 0 && access(path, W_OK | X_OK) == 0;
    wf_strbuf_free(&ignored);
    if (!ok) {
        free(path);
        return NULL;
    }
    return path;
}

/* /tmp/weft-<uid>: made 0700 if missing; refused unless a real folder of this user that
 * nobody else may write. */
static char *tmp_base(wf_strbuf *err)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/weft-%u", (unsigned)getuid());
    struct stat st;
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        wf_strbuf_printf(err, "cannot create %s: %s", path, strerror(errno));
        return NULL;
    }
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 022)) {
        wf_strbuf_printf(err,
                         "%s is not a folder of yours that only you can write: set "
                         "XDG_STATE_HOME or HOME, or name a state folder with --state",
                         path);
        return NULL;
    }
    return strdup(path);
}

/* /run/weft: made 0711 if missing (others may pass, not list or write); refused unless a real
 * folder of root that nobody else may write. */
static char *run_base(wf_strbuf *err)
{
    const char *path = "/run/weft";
    struct stat st;
    if (mkdir(path, 0711) != 0 && errno != EEXIST) {
        wf_strbuf_printf(err, "cannot create %s: %s", path, strerror(errno));
        return NULL;
    }
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) ||
        (st.st_mode & 011) != 011) {
        wf_strbuf_printf(err,
                         "%s is not a folder of root that others may pass through and only root "
                         "can write: name a state folder with --state",
                         path);
        return NULL;
    }
    return strdup(path);
}

/* base/<NAME>-<HASH> of absdir (base is freed). */
static char *state_in(char *base, const char *absdir, wf_strbuf *err)
{
    char name[128];
    state_name(absdir, name, sizeof name);
    size_t len = strlen(base) + strlen(name) + 2;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%s/%s", base, name);
    else
        wf_strbuf_puts(err, "out of memory");
    free(base);
    return out;
}

char *wf_lm_capture_state(const char *absdir, wf_strbuf *err)
{
    const char *xdg = getenv("XDG_STATE_HOME");
    if (geteuid() != 0 || (xdg && xdg[0] == '/'))
        return wf_lm_default_state(absdir, err);
    char *base = run_base(err);
    if (!base)
        return NULL;
    return state_in(base, absdir, err);
}

char *wf_lm_default_state(const char *absdir, wf_strbuf *err)
{
    char *base = usable_base(getenv("XDG_STATE_HOME"), "");
    if (!base)
        base = usable_base(getenv("HOME"), "/.local/state");
    if (!base)
        base = tmp_base(err);
    if (!base)
        return NULL;
    return state_in(base, absdir, err);
}
