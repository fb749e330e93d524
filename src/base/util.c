/* SPDX-License-Identifier: MIT */
/*
 * util.c: allocators, JSON paths, edit distance, file reading (see util.h).
 * No read blocks forever and every read is capped (see "reading a file").
 * Every allocation goes through injected(), which counts it in this thread
 * and says whether it is the one the hook fails; the x allocators are the
 * try_ allocators plus an abort, so the two families count alike.
 */
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Per thread, so that a test's injection cannot hit another thread. */
static _Thread_local uint64_t alloc_count, alloc_fail_at, alloc_failures;

void remat_i_alloc_fail_at(uint64_t n) {
    alloc_count = 0;
    alloc_fail_at = n;
}

uint64_t remat_i_alloc_count(void) {
    return alloc_count;
}

uint64_t remat_i_alloc_failures(void) {
    return alloc_failures;
}

/* Whether this allocation is the one to fail (one branch when the hook is
   off: alloc_fail_at is 0 and the count is never 0 after the increment). */
static bool injected(void) {
    return ++alloc_count == alloc_fail_at;
}

static void *nomem(size_t count, size_t size, remat_error_t *err) {
    alloc_failures++;
    if (size > 1 && count > SIZE_MAX / size) {
        remat_error_set(err, REMAT_E_NOMEM, NULL, NULL,
                        "out of memory (tried to allocate %zu x %zu bytes)", count, size);
    } else {
        remat_error_set(err, REMAT_E_NOMEM, NULL, NULL,
                        "out of memory (tried to allocate %zu bytes)", count * size);
    }
    return NULL;
}

_Noreturn void remat_i_oom(size_t n) {
    fprintf(stderr, "remat: out of memory (tried to allocate %zu bytes)\n", n);
    abort();
}

void *remat_i_try_malloc(size_t n, remat_error_t *err) {
    void *p = injected() ? NULL : malloc(n ? n : 1);
    return p ? p : nomem(n, 1, err);
}

void *remat_i_try_calloc(size_t count, size_t size, remat_error_t *err) {
    void *p = injected() ? NULL : calloc(count ? count : 1, size ? size : 1);
    return p ? p : nomem(count, size, err);
}

void *remat_i_try_realloc(void *p, size_t n, remat_error_t *err) {
    void *q = injected() ? NULL : realloc(p, n ? n : 1);
    return q ? q : nomem(n, 1, err);
}

void *remat_i_try_realloc_array(void *p, size_t count, size_t size, remat_error_t *err) {
    if (size != 0 && count > SIZE_MAX / size) {
        injected(); /* counted like any other call, so that the count stays a call count */
        return nomem(count, size, err);
    }
    return remat_i_try_realloc(p, count * size, err);
}

char *remat_i_try_strdup(const char *s, remat_error_t *err) {
    size_t n = strlen(s) + 1;
    char *d = remat_i_try_malloc(n, err);
    if (d) {
        memcpy(d, s, n);
    }
    return d;
}

void *remat_i_xmalloc(size_t n) {
    void *p = remat_i_try_malloc(n, NULL);
    if (!p) {
        remat_i_oom(n);
    }
    return p;
}

void *remat_i_xcalloc(size_t count, size_t size) {
    void *p = remat_i_try_calloc(count, size, NULL);
    if (!p) {
        remat_i_oom(count * size);
    }
    return p;
}

void *remat_i_xrealloc(void *p, size_t n) {
    void *q = remat_i_try_realloc(p, n, NULL);
    if (!q) {
        remat_i_oom(n);
    }
    return q;
}

char *remat_i_xstrdup(const char *s) {
    char *d = remat_i_try_strdup(s, NULL);
    if (!d) {
        remat_i_oom(strlen(s) + 1);
    }
    return d;
}

void remat_i_jpath_init(remat_jpath_t *p) {
    strcpy(p->buf, "$");
    p->depth = 0;
}

static void push(remat_jpath_t *p, const char *key, size_t i) {
    size_t cur = strlen(p->buf);
    if (p->depth < sizeof p->len / sizeof p->len[0]) {
        p->len[p->depth] = cur;
    }
    p->depth++;
    if (key) {
        snprintf(p->buf + cur, sizeof p->buf - cur, ".%s", key);
    } else {
        snprintf(p->buf + cur, sizeof p->buf - cur, "[%zu]", i);
    }
}

void remat_i_jpath_key(remat_jpath_t *p, const char *key) {
    push(p, key, 0);
}

void remat_i_jpath_index(remat_jpath_t *p, size_t i) {
    push(p, NULL, i);
}

void remat_i_jpath_pop(remat_jpath_t *p) {
    if (p->depth == 0) {
        return;
    }
    p->depth--;
    if (p->depth < sizeof p->len / sizeof p->len[0]) {
        p->buf[p->len[p->depth]] = '\0';
    }
}

size_t remat_i_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) {
        return (size_t)-1;
    }
    size_t row[65];
    for (size_t j = 0; j <= lb; j++) {
        row[j] = j;
    }
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) {
                best = row[j] + 1;
            }
            if (row[j - 1] + 1 < best) {
                best = row[j - 1] + 1;
            }
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Edits from @p key to @p k; a prefix ("per_device_batch") counts as two.
   Words that start differently are unrelated: 'my_name' is not 'hf_name'. */
static size_t candidate_distance(const char *key, const char *k) {
    if (key[0] != k[0]) {
        return (size_t)-1;
    }
    size_t d = remat_i_edit_distance(key, k);
    if (strlen(key) >= 4 && strncmp(k, key, strlen(key)) == 0) {
        d = d < 2 ? d : 2;
    }
    return d;
}

const char *remat_i_nearest_word(const char *key, const char *const *words, size_t n,
                                 const char *best, size_t *bestd) {
    for (size_t i = 0; i < n; i++) {
        size_t d = candidate_distance(key, words[i]);
        /* ties go to the fewer real edits: enable_checkpoint is
           enable_checkpointing before enable_checkpoint_cloud_logger */
        if (d < *bestd || (d == *bestd && best &&
                           remat_i_edit_distance(key, words[i]) < remat_i_edit_distance(key, best))) {
            *bestd = d;
            best = words[i];
        }
    }
    return best;
}

bool remat_i_near_enough(const char *key, size_t d) {
    /* Within a quarter of the word and at most three edits: 'lerning_rate'
       is learning_rate, 'steps' is not dtype. */
    size_t limit = strlen(key) / 4 + 1;
    return d <= (limit < 3 ? limit : 3);
}

/* ---- reading a file ----------------------------------------------------
 * Every read is capped (REMAT_MAX_INPUT_BYTES) and none blocks forever: a
 * path is opened without blocking (a FIFO's open would otherwise wait for a
 * writer) and what it is, is asked of the descriptor it was opened with, so
 * that a file swapped between a check and the open cannot slip through. A
 * regular file is read to its end; a directory or a device is an error; a
 * pipe (a FIFO, `--config <(...)`, standard input) is read as its writer
 * writes, with a wait bounded by REMAT_PIPE_WAIT_MS, and a FIFO that no
 * writer opens is an error. */

/* A growing buffer for the text read, always NUL-terminated once read. */
typedef struct rbuf {
    char *buf;
    size_t len, cap;
} rbuf_t;

/* Room for @p more bytes after the text; false (NOMEM in @p err) when
   there is none to be had. */
static bool rbuf_room(rbuf_t *b, size_t more, remat_error_t *err) {
    if (b->len + more + 1 <= b->cap) {
        return true;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1) {
        cap *= 2;
    }
    char *grown = remat_i_try_realloc(b->buf, cap, err);
    if (!grown) {
        return false;
    }
    b->buf = grown;
    b->cap = cap;
    return true;
}

static remat_status_t too_large(const char *name, remat_error_t *err) {
    return remat_error_set(err, REMAT_E_IO, name, NULL, "larger than %zu MiB, the most remat reads",
                           REMAT_MAX_INPUT_BYTES >> 20);
}

/* Reads what @p fd holds once ready (a regular file, or a pipe that
   poll() said is readable) into @p b. *@p eof is set at the end. */
static remat_status_t read_some(int fd, const char *name, rbuf_t *b, bool *eof, bool *again,
                                remat_error_t *err) {
    *eof = *again = false;
    if (!rbuf_room(b, 65536, err)) {
        return REMAT_E_NOMEM;
    }
    ssize_t n = read(fd, b->buf + b->len, 65536);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        *again = true;
        return REMAT_OK;
    }
    if (n < 0) {
        return remat_error_set(err, REMAT_E_IO, name, NULL, "read error: %s", strerror(errno));
    }
    b->len += (size_t)n;
    b->buf[b->len] = '\0';
    *eof = n == 0;
    return b->len > REMAT_MAX_INPUT_BYTES ? too_large(name, err) : REMAT_OK;
}

/* A pipe: waits for its writer, boundedly. A descriptor remat opened is
   non-blocking and read first (poll would wait the whole time on a FIFO
   no writer has opened); standard input's is not remat's to change, so it
   is polled before each read, and a read after poll never blocks. A FIFO
   that no writer has opened reads as an end of file with nothing read
   and no hang-up: after a short grace for a writer that is opening it,
   that is an error. */
static remat_status_t read_pipe(int fd, const char *name, bool ours, bool fifo, rbuf_t *b,
                                remat_error_t *err) {
    for (bool ready = ours;;) {
        bool eof = false, again = false;
        remat_status_t st = ready ? read_some(fd, name, b, &eof, &again, err) : REMAT_OK;
        if (st || (eof && b->len > 0) || (eof && !fifo)) {
            return st;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        const bool no_writer = eof; /* a FIFO, nothing read, no writer */
        int r = poll(&p, 1, no_writer ? REMAT_FIFO_GRACE_MS : REMAT_PIPE_WAIT_MS);
        if (r < 0 && errno == EINTR) {
            ready = false;
            continue;
        }
        if (r <= 0 && no_writer) {
            return remat_error_set(err, REMAT_E_IO, name, NULL,
                                   "a FIFO (named pipe) with no writer: remat reads a regular "
                                   "file, a pipe being written or '-' (standard input)");
        }
        if (r <= 0) {
            return remat_error_set(err, REMAT_E_IO, name, NULL,
                                   "no data from the pipe in %d s: its writer is stuck",
                                   REMAT_PIPE_WAIT_MS / 1000);
        }
        if (no_writer && !(p.revents & POLLIN)) {
            return REMAT_OK; /* a writer came and went with nothing: empty */
        }
        ready = true;
    }
}

/* Reads @p fd to its end: a regular file, or a terminal (blocking). */
static remat_status_t read_to_end(int fd, const char *name, rbuf_t *b, remat_error_t *err) {
    bool eof = false, again = false;
    while (!eof) {
        remat_status_t st = read_some(fd, name, b, &eof, &again, err);
        if (st) {
            return st;
        }
    }
    return REMAT_OK;
}

static remat_status_t read_regular(int fd, const char *name, const struct stat *sb, rbuf_t *b,
                                   remat_error_t *err) {
    if (sb->st_size > (off_t)REMAT_MAX_INPUT_BYTES) {
        return too_large(name, err);
    }
    return read_to_end(fd, name, b, err);
}

/* What a path that is not a file nor a pipe is, for its error. */
static const char *kind_of(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device"
                      : S_ISBLK(m)                 ? "a block device"
                      : S_ISSOCK(m)                ? "a socket"
                                                   : "not a regular file";
}

static remat_status_t open_error(const char *path, remat_error_t *err) {
    const char *why = errno == ENOENT ? "no such file" : errno == EACCES ? "permission denied"
                      : errno == ELOOP ? "a loop of symbolic links"
                      : errno == ENOTDIR ? "a component of the path is not a directory"
                                         : strerror(errno);
    return remat_error_set(err, REMAT_E_IO, path, NULL, "cannot open file: %s", why);
}

/* Reads @p fd (opened for @p name) into @p b by what it is. */
static remat_status_t read_fd(int fd, const char *name, unsigned flags, bool is_stdin, rbuf_t *b,
                              remat_error_t *err) {
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        return remat_error_set(err, REMAT_E_IO, name, NULL, "cannot stat: %s", strerror(errno));
    }
    if (S_ISREG(sb.st_mode)) {
        /* a regular file never blocks: the descriptor's flag goes */
        if (!is_stdin) {
            (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        }
        return read_regular(fd, name, &sb, b, err);
    }
    if ((flags & REMAT_I_READ_REGULAR) && !is_stdin) {
        return remat_error_set(err, REMAT_E_IO, name, NULL, "%s, not a regular file",
                               S_ISFIFO(sb.st_mode) ? "a FIFO (named pipe)" : kind_of(sb.st_mode));
    }
    if (S_ISFIFO(sb.st_mode) || (is_stdin && S_ISSOCK(sb.st_mode))) {
        return read_pipe(fd, name, !is_stdin, S_ISFIFO(sb.st_mode) && !is_stdin, b, err);
    }
    if (is_stdin && S_ISCHR(sb.st_mode)) {
        /* a terminal: the user types the config and ends it */
        return read_to_end(fd, name, b, err);
    }
    return remat_error_set(err, REMAT_E_IO, name, NULL, "%s, not a file%s", kind_of(sb.st_mode),
                           S_ISCHR(sb.st_mode) ? " ('-' reads standard input)" : "");
}

remat_status_t remat_i_read_path(const char *path, unsigned flags, char **out, size_t *len,
                                 remat_error_t *err) {
    *out = NULL;
    const bool is_stdin = (flags & REMAT_I_READ_STDIN) && strcmp(path, "-") == 0;
    const char *name = is_stdin ? "<stdin>" : path;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        return open_error(path, err);
    }
    rbuf_t b = {0};
    remat_status_t st = read_fd(fd, name, flags, is_stdin, &b, err);
    if (!is_stdin) {
        close(fd);
    }
    if (st == REMAT_OK && !b.buf && !(b.buf = remat_i_try_calloc(1, 1, err))) {
        st = REMAT_E_NOMEM;
    }
    if (st == REMAT_OK && strlen(b.buf) != b.len) {
        st = remat_error_set(err, REMAT_E_SYNTAX, name, NULL, "file contains a NUL byte");
    }
    if (st) {
        remat_error_set_source(err, name); /* out of memory names the file too */
        free(b.buf);
        return st;
    }
    *out = b.buf;
    if (len) {
        *len = b.len;
    }
    return REMAT_OK;
}

remat_status_t remat_i_read_file(const char *path, char **out, remat_error_t *err) {
    return remat_i_read_path(path, 0, out, NULL, err);
}

bool remat_i_is_json_name(const char *name) {
    const size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".json") == 0;
}

bool remat_i_printable(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        /* ASCII controls; UTF-8 C1 controls (U+0080-U+009F: C2 80-9F, among
           them NEL, which some readers take as a line break); the line and
           paragraph separators U+2028, U+2029 (E2 80 A8, E2 80 A9) */
        if (p[0] < 0x20 || p[0] == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) ||
            (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))) {
            return false;
        }
    }
    return true;
}
