/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cli.c: libFuzzer target for the whole command line, in process
 * (remat_cli_main in src/cli/main.c, built without its main). The input is one
 * argument per line after an implied "remat"; a line "%%" ends the
 * arguments, and what follows it is up to four files separated by "%%"
 * lines, written to a.json, b.json, c.json and d.json, which the arguments
 * may name (validate a.json, --config a.json, graph=a.json,
 * remat_policy=b.json, hardware=c.json). A JSON text never holds a line
 * "%%" (a string cannot hold a newline), so any file can be embedded.
 *
 * The CLI runs inside a private temporary directory (made at start-up,
 * emptied after every run, removed at exit), and an argument holding '/' is
 * not run, so that nothing outside that directory is read or written
 * (--emit-policy writes files). stdout goes to /dev/null; the CLI's one-line
 * errors stay on stderr (run.sh passes -close_fd_mask=2).
 *
 * Crash files: libFuzzer writes them relative to the working directory at
 * the time of the crash, which is the temporary one; give -artifact_prefix
 * an absolute path (run.sh does).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"

/* src/cli/main.c's entry point; it has no header, as nothing else calls it. */
int remat_cli_main(int argc, char **argv);

static char dir[256];
static int home_fd = -1;
static int dir_fd = -1;

/* Removes every entry of the temporary directory (files only: the CLI makes
   no directories). */
static void empty_dir(void) {
    int fd = dup(dir_fd);
    if (fd < 0) {
        abort();
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        abort();
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            unlinkat(dir_fd, e->d_name, 0);
        }
    }
    closedir(d);
}

static void remove_dir(void) {
    empty_dir();
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/remat-fuzz-cli.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("fuzz_cli: mkdtemp");
        abort();
    }
    home_fd = open(".", O_RDONLY | O_DIRECTORY);
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
    int null_fd = open("/dev/null", O_WRONLY);
    if (home_fd < 0 || dir_fd < 0 || null_fd < 0 || dup2(null_fd, STDOUT_FILENO) < 0) {
        perror("fuzz_cli: set-up");
        abort();
    }
    close(null_fd);
    atexit(remove_dir);
    return 0;
}

/* The first "\n%%\n" in @p n bytes at @p p, or NULL (memmem is not C11 or
   POSIX). */
static char *find_sep(char *p, size_t n) {
    for (size_t i = 0; i + 4 <= n; i++) {
        if (memcmp(p + i, "\n%%\n", 4) == 0) {
            return p + i;
        }
    }
    return NULL;
}

static void write_file(const char *name, const char *body, size_t n) {
    int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || (n && write(fd, body, n) != (ssize_t)n)) {
        abort();
    }
    close(fd);
}

/* Writes the files that follow the arguments: @p body holds @p n bytes (NUL
   bytes included), files separated by "\n%%\n". */
static void write_files(char *body, size_t n) {
    static const char *const names[] = {"a.json", "b.json", "c.json", "d.json"};
    const char *end = body + n;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *sep = find_sep(body, (size_t)(end - body));
        const char *stop = sep && i + 1 < sizeof names / sizeof names[0] ? sep : end;
        write_file(names[i], body, (size_t)(stop - body));
        if (stop == end) {
            break;
        }
        body = sep + 4;
    }
}

/* Half the mutations change one of the embedded files as JSON
   (json_mutate.c); the others are libFuzzer's, on the whole input. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    char *text = (char *)data;
    size_t starts[4], ends[4], n = 0;
    size_t at = 0;
    if (size >= 3 && memcmp(text, "%%\n", 3) == 0) {
        at = 3;
    } else {
        char *sep = find_sep(text, size);
        at = sep ? (size_t)(sep - text) + 4 : size;
    }
    while (at < size && n < 4) {
        char *sep = find_sep(text + at, size - at);
        size_t end = sep && n + 1 < 4 ? (size_t)(sep - text) : size;
        starts[n] = at;
        ends[n++] = end;
        at = end + 4;
    }
    if (seed % 2 == 0 || n == 0) {
        return LLVMFuzzerMutate(data, size, max_size);
    }
    size_t i = (seed / 2) % n, len = ends[i] - starts[i], rest = size - ends[i];
    size_t room = max_size - (size - len);
    uint8_t *buf = malloc(room + 1);
    if (!buf) {
        abort();
    }
    memcpy(buf, data + starts[i], len);
    size_t m = fuzz_json_mutate(buf, len, room, seed / 2);
    memmove(data + starts[i] + m, data + ends[i], rest);
    memcpy(data + starts[i], buf, m);
    free(buf);
    return starts[i] + m + rest;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    /* The arguments end at a line "%%"; the rest is the files. */
    char *files = NULL;
    if (size >= 3 && memcmp(text, "%%\n", 3) == 0) {
        files = text + 3;
    } else {
        char *sep = find_sep(text, size);
        if (sep) {
            files = sep + 4;
        }
    }
    if (files) {
        write_files(files, size - (size_t)(files - text));
        files[-3] = '\0'; /* ends the arguments at the "%%" line */
    }
    static char prog[] = "remat";
    char *argv[FUZZ_MAX_LINES + 2];
    argv[0] = prog;
    size_t n = fuzz_lines(text, argv + 1);
    int hermetic = 1;
    for (size_t i = 1; i <= n; i++) {
        if (strchr(argv[i], '/')) {
            hermetic = 0;
        }
    }
    argv[n + 1] = NULL;
    if (hermetic) {
        if (fchdir(dir_fd) != 0) {
            abort();
        }
        (void)remat_cli_main((int)n + 1, argv);
        fflush(stdout);
        if (fchdir(home_fd) != 0) {
            abort();
        }
    }
    empty_dir();
    free(text);
    return 0;
}
