/* SPDX-License-Identifier: MIT */
/* startup.c: start-up time of commands against /bin/true, paired and
   interleaved (bench/startup.sh builds and runs it; bench/README.md).

     startup N -- CMD [ARG...] -- CMD [ARG...] ...

   The first command is the reference (/bin/true). Each of the N rounds
   runs every command once, in an order rotated by one every round so that
   no command always follows another, each started with posix_spawn with
   stdin, stdout and stderr on /dev/null and timed with CLOCK_MONOTONIC
   from just before the spawn to the return of waitpid. Two rounds run
   untimed first, to warm the page cache. Prints per command the median
   time, the median of its ratio to the reference in the same round (the
   paired ratio), and the exit status; exits 1 if a command's status
   changed between runs or a spawn failed. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

#define MAX_CMDS 32

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Runs argv once with its output discarded; returns the time in µs and
   the exit status through @p status (-1 when it did not exit normally). */
static double run_once(char **argv, int *status) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    double t0 = now_us();
    int err = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    if (err) {
        posix_spawn_file_actions_destroy(&fa);
        fprintf(stderr, "startup: cannot start %s: %s\n", argv[0], strerror(err));
        exit(1);
    }
    int ws;
    while (waitpid(pid, &ws, 0) < 0) {
        if (errno != EINTR) {
            perror("startup: waitpid");
            exit(1);
        }
    }
    double t = now_us() - t0;
    posix_spawn_file_actions_destroy(&fa);
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    return t;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The commands of argv after N, split at "--" in place, into @p cmd; each
   one's label (its program by its last path component, then its
   arguments) into @p label. Returns the count, 0 on a usage error. */
static size_t split_commands(int argc, char **argv, char **cmd[MAX_CMDS], char *label[MAX_CMDS]) {
    size_t nc = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            argv[i] = NULL;
            if (i + 1 < argc && strcmp(argv[i + 1], "--") != 0) {
                if (nc == MAX_CMDS) {
                    fprintf(stderr, "startup: at most %d commands\n", MAX_CMDS);
                    return 0;
                }
                cmd[nc++] = &argv[i + 1];
            }
        }
    }
    for (size_t c = 0; c < nc; c++) {
        size_t len = 0;
        for (char **a = cmd[c]; *a; a++) {
            len += strlen(*a) + 1;
        }
        label[c] = malloc(len + 1);
        label[c][0] = '\0';
        for (char **a = cmd[c]; *a; a++) {
            strcat(label[c], a == cmd[c] ? "" : " ");
            const char *s = a == cmd[c] && strrchr(*a, '/') ? strrchr(*a, '/') + 1 : *a;
            strcat(label[c], s);
        }
    }
    return nc;
}

/* N rounds of every command, in an order that rotates each round, into
   t[round * nc + command]; 1 when a command's exit status changed. */
static int run_rounds(long n, size_t nc, char **cmd[MAX_CMDS], char *label[MAX_CMDS],
                      int first_status[MAX_CMDS], double *t) {
    int bad = 0;
    for (size_t c = 0; c < nc; c++) {
        run_once(cmd[c], &first_status[c]);
        run_once(cmd[c], &first_status[c]);
    }
    for (long r = 0; r < n; r++) {
        for (size_t k = 0; k < nc; k++) {
            size_t c = (k + (size_t)r) % nc;
            int st;
            t[(size_t)r * nc + c] = run_once(cmd[c], &st);
            if (st != first_status[c]) {
                fprintf(stderr, "startup: %s exited %d, earlier %d\n", label[c], st,
                        first_status[c]);
                bad = 1;
            }
        }
    }
    return bad;
}

int main(int argc, char **argv) {
    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        fprintf(stderr, "usage: startup N -- CMD [ARG...] [-- CMD [ARG...]]...\n");
        return 2;
    }
    long n = strtol(argv[1], NULL, 10);
    if (n < 1 || n > 1000000) {
        fprintf(stderr, "startup: N must be 1 to 1000000\n");
        return 2;
    }
    char **cmd[MAX_CMDS];
    char *label[MAX_CMDS];
    const size_t nc = split_commands(argc, argv, cmd, label);
    if (nc < 2) {
        fprintf(stderr, "startup: give the reference command and at least one other\n");
        return 2;
    }
    double *t = malloc(sizeof *t * (size_t)n * nc);
    double *col = malloc(sizeof *col * (size_t)n);
    int first_status[MAX_CMDS];
    int bad = run_rounds(n, nc, cmd, label, first_status, t);
    for (long r = 0; r < n; r++) {
        col[r] = t[(size_t)r * nc];
    }
    double ref = median(col, (size_t)n);
    printf("%-36s %10s %8s %6s\n", "command", "median_us", "x_ref", "exit");
    for (size_t c = 0; c < nc; c++) {
        for (long r = 0; r < n; r++) {
            col[r] = t[(size_t)r * nc + c];
        }
        double med = median(col, (size_t)n);
        for (long r = 0; r < n; r++) {
            col[r] = t[(size_t)r * nc + c] / t[(size_t)r * nc];
        }
        double ratio = median(col, (size_t)n);
        printf("%-36s %10.0f %8.2f %6d\n", label[c], med, ratio, first_status[c]);
    }
    printf("(%ld paired rounds; x_ref: median over rounds of the time / %s's time in the same "
           "round; %s median %.0f us)\n",
           n, label[0], label[0], ref);
    for (size_t c = 0; c < nc; c++) {
        free(label[c]);
    }
    free(t);
    free(col);
    return bad;
}
