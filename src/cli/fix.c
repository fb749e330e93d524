/* SPDX-License-Identifier: MIT */
/*
 * cli/fix.c: the lines check and analyze end with when a run does not
 * pass: what would make it fit, as whole commands to paste. The fixes
 * themselves are the library's (remat_fixes_find); this file writes each as
 * the user's own command with the change and runs that command's config
 * before printing it, so that every line printed is one that passes.
 *
 * Invariants: a fix's command is the command as given (its config file and
 * settings; a pasted launcher's words aside) minus the settings the change
 * replaces, plus the change's settings, last (later settings win); a line
 * is printed with its command only when that exact config builds, resolves
 * and passes; otherwise the line is a comment saying why there is no fix.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/fix.h"
#include "cli/job.h"
#include "cli/layout_fix.h"
#include "remat/model/mesh.h"
#include "base/util.h"
#include "input/yaml_config.h"

/* The settings a fix replaces: its keys, and, for a preset, the run's own
   custom placements. */
typedef struct change {
    const char *const *drop; /* keys of the user's settings the change replaces */
    bool drop_placements;    /* the run's custom placements go too */
    char add[2048];          /* the change's settings, space-separated */
} change_t;

static bool in_list(const char *key, const char *const *keys) {
    for (; keys && *keys; keys++) {
        if (strcmp(key, *keys) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether setting @p arg ("key=value") sets one of the run's placements. */
static bool is_placement(const char *arg, const remat_config_t *c) {
    const char *eq = strchr(arg, '=');
    for (size_t i = 0; c && eq && i < c->ncustom; i++) {
        const size_t n = strlen(c->custom[i].name);
        if ((size_t)(eq - arg) == n && strncmp(arg, c->custom[i].name, n) == 0) {
            return true;
        }
    }
    return false;
}

/* The user's settings without those @p ch replaces, then the change's,
   into @p out (at most @p cap; the strings are @p o's and @p words'). */
static int changed_args(const remat_cli_opts_t *o, const remat_config_t *c, const change_t *ch,
                        char *words, char **out, int cap) {
    int n = 0;
    for (int i = 0; i < o->nargs && n < cap; i++) {
        const char *a = o->args[i], *eq = strchr(a, '=');
        char key[96];
        snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - a) : 0, a);
        if (!in_list(key, ch->drop) && !(ch->drop_placements && is_placement(a, c))) {
            out[n++] = o->args[i];
        }
    }
    char *save = NULL;
    for (char *w = strtok_r(words, " ", &save); w && n < cap; w = strtok_r(NULL, " ", &save)) {
        out[n++] = w;
    }
    return n;
}

/* Whether the run with @p args (and the options' config file) passes. */
static bool passes(const remat_cli_opts_t *o, int nargs, char **args) {
    remat_cli_opts_t v = *o;
    v.nargs = nargs;
    v.args = args;
    remat_error_t err;
    remat_error_init(&err);
    remat_cli_job_t *j = remat_i_xcalloc(1, sizeof *j);
    remat_status_t st = remat_cli_job_analyze(j, &v, &err);
    const bool ok = st == REMAT_OK && remat_result_passes(&j->result);
    remat_cli_job_release(j);
    free(j);
    return ok;
}

/* Appends @p word to @p buf, quoted for a POSIX shell when it must be. */
static void put_word(char *buf, size_t size, const char *word) {
    size_t len = strlen(buf);
    const bool plain = word[0] && strspn(word, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
                                               "XYZ0123456789_-.,:=+/@%") == strlen(word);
    if (plain) {
        snprintf(buf + len, size - len, "%s%s", len ? " " : "", word);
        return;
    }
    snprintf(buf + len, size - len, "%s'", len ? " " : "");
    for (const char *p = word; *p; p++) {
        len = strlen(buf);
        snprintf(buf + len, size - len, *p == '\'' ? "'\\''" : "%c", *p);
    }
    len = strlen(buf);
    snprintf(buf + len, size - len, "'");
}

/* Fix line @p l for change @p ch, with @p comment, when the changed run
   passes; else the line says @p otherwise. */
static void fix_line(const remat_cli_opts_t *o, const char *cmd, const remat_config_t *c,
                     change_t *ch, const char *comment, const char *otherwise,
                     remat_fix_line_t *l) {
    enum { CAP = 512 };
    char *args[CAP];
    char words[sizeof ch->add];
    snprintf(l->settings, sizeof l->settings, "%s", ch->add);
    snprintf(words, sizeof words, "%s", ch->add);
    int n = changed_args(o, c, ch, words, args, CAP);
    if (!ch->add[0] || n >= CAP || !passes(o, n, args)) {
        /* no fix, or more settings than a line is checked with */
        l->command[0] = l->settings[0] = '\0';
        snprintf(l->comment, sizeof l->comment, "%s", otherwise);
        return;
    }
    l->command[0] = '\0';
    put_word(l->command, sizeof l->command, "remat");
    put_word(l->command, sizeof l->command, cmd);
    if (o->config && !remat_i_is_yaml_path(o->config) && strcmp(o->config, "-") != 0) {
        put_word(l->command, sizeof l->command, "--config");
    }
    if (o->config) {
        put_word(l->command, sizeof l->command, o->config);
    }
    for (int i = 0; i < n; i++) {
        put_word(l->command, sizeof l->command, args[i]);
    }
    snprintf(l->comment, sizeof l->comment, "%s", comment);
    if (strlen(l->command) + 1 >= sizeof l->command) {
        /* cut short, it would not paste: the settings alone, said so */
        l->command[0] = '\0';
        snprintf(l->comment, sizeof l->comment,
                 "%.200s; the command is too long to print: add %.200s to yours", comment,
                 ch->add);
    }
}

static const char *const policy_keys[] = {"remat_policy", NULL};
static const char *const batch_keys[] = {"per_device_batch_size", NULL};
static const char *const policy_batch_keys[] = {"remat_policy", "per_device_batch_size", NULL};
static const char *const slice_keys[] = {"topology", "compile_topology", "num_devices",
                                         "hardware", "gpu_multiprocess", NULL};
static const char *const scan_keys[] = {"scan_layers", NULL};

static void placement_line(const remat_cli_opts_t *o, const char *cmd, const remat_cli_job_t *j,
                           const remat_fixes_t *f, remat_fix_line_t *l) {
    change_t ch = {policy_keys, false, ""};
    size_t len = 0;
    if (f->placement_found) {
        len = (size_t)snprintf(ch.add, sizeof ch.add, "remat_policy=custom");
    }
    for (size_t i = 0; f->placement_found && i < f->nchoices && len < sizeof ch.add; i++) {
        len += (size_t)snprintf(ch.add + len, sizeof ch.add - len, " %s=%s", f->choices[i].name,
                                remat_place_name(f->choices[i].place));
    }
    char comment[512], otherwise[512];
    snprintf(comment, sizeof comment,
             "the fastest placement that fits (remat solve): peak %.2f GiB, step %.3f s (now "
             "%.3f s)",
             (double)f->placement_peak_bytes / (1u << 30), f->placement_step_seconds,
             j->result.step_seconds);
    if (f->placement_note[0]) { /* the search could not answer: say why, not "none fits" */
        snprintf(otherwise, sizeof otherwise, "no placement found: %s", f->placement_note);
    } else {
        snprintf(otherwise, sizeof otherwise,
                 "no placement of the checkpoint names fits at this batch on this slice");
    }
    l->kind = "placement";
    fix_line(o, cmd, &j->cfg, &ch, comment, otherwise, l);
}

/* The best batch row whose line passes, and the others in the comment. */
static void batch_line(const remat_cli_opts_t *o, const char *cmd, const remat_cli_job_t *j,
                       const remat_fixes_t *f, remat_fix_line_t *l) {
    static const char none[] = "no policy fits at any per_device_batch_size on this slice";
    l->kind = "batch";
    /* both empty until a batch passes: when none does, no line is written
       over them (a long-lived caller's stack is not zero, as a fresh
       process's was: the Python package's round trip found it) */
    l->command[0] = l->settings[0] = '\0';
    snprintf(l->comment, sizeof l->comment, "%s", none);
    for (size_t i = 0; i < f->nbatches && !l->command[0] && f->batches[i].batch > 0; i++) {
        const remat_fix_batch_t *b = &f->batches[i];
        change_t ch = {b->own ? batch_keys : policy_batch_keys, !b->own, ""};
        if (b->own) {
            snprintf(ch.add, sizeof ch.add, "per_device_batch_size=%g", b->batch);
        } else {
            snprintf(ch.add, sizeof ch.add, "remat_policy=%s per_device_batch_size=%g", b->policy,
                     b->batch);
        }
        char comment[512];
        size_t len = (size_t)snprintf(comment, sizeof comment,
                                      "the largest batch that fits, per policy: %s%s %g",
                                      b->policy, b->own ? " (this run's)" : "", b->batch);
        for (size_t k = 0, shown = 0; k < f->nbatches && shown < 4 && len < sizeof comment; k++) {
            if (k != i && f->batches[k].batch > 0) {
                len += (size_t)snprintf(comment + len, sizeof comment - len, ", %s%s %g",
                                        f->batches[k].policy,
                                        f->batches[k].own ? " (this run's)" : "",
                                        f->batches[k].batch);
                shown++;
            }
        }
        fix_line(o, cmd, &j->cfg, &ch, comment, none, l);
    }
}

static void slice_line(const remat_cli_opts_t *o, const char *cmd, const remat_cli_job_t *j,
                       const remat_fixes_t *f, remat_fix_line_t *l) {
    change_t ch = {slice_keys, false, ""};
    if (f->slice_found && j->cfg.num_devices_set) {
        /* a num_devices in the config file would disagree with the slice */
        snprintf(ch.add, sizeof ch.add, "topology=%s num_devices=%llu", f->topology,
                 (unsigned long long)f->slice_devices);
    } else if (f->slice_found) {
        snprintf(ch.add, sizeof ch.add, "topology=%s", f->topology);
    }
    char comment[512], otherwise[512];
    snprintf(comment, sizeof comment,
             "the smallest %s slice that fits: %llu chip%s, %llu device%s, peak %.2f GiB",
             j->hw.name, (unsigned long long)f->slice_chips, f->slice_chips == 1 ? "" : "s",
             (unsigned long long)f->slice_devices, f->slice_devices == 1 ? "" : "s",
             (double)f->slice_peak_bytes / (1u << 30));
    snprintf(otherwise, sizeof otherwise,
             "no %s slice of up to %llu devices fits this run (the per-device batch and the "
             "policy kept)",
             j->hw.name, (unsigned long long)REMAT_FIX_MAX_DEVICES);
    l->kind = "slice";
    fix_line(o, cmd, &j->cfg, &ch, comment, otherwise, l);
}

/* The layers scanned, where the run unrolls them (f->scan_tried). */
static void scan_line(const remat_cli_opts_t *o, const char *cmd, const remat_cli_job_t *j,
                      const remat_fixes_t *f, remat_fix_line_t *l) {
    change_t ch = {scan_keys, false, ""};
    if (f->scan_found) {
        snprintf(ch.add, sizeof ch.add, "scan_layers=true");
    }
    char comment[512];
    snprintf(comment, sizeof comment,
             "the layers scanned (MaxText's default): each re-runs inside the scan's loop, "
             "one at a time: peak %.2f GiB, step %.3f s (now %.3f s)",
             (double)f->scan_peak_bytes / (1u << 30), f->scan_step_seconds,
             j->result.step_seconds);
    char otherwise[384];
    snprintf(otherwise, sizeof otherwise, "%s%.255s",
             f->scan_note[0] ? "the layers cannot be scanned: "
                             : "scanning the layers (scan_layers=true) does not make it fit either",
             f->scan_note);
    l->kind = "scan";
    fix_line(o, cmd, &j->cfg, &ch, comment, otherwise, l);
}

remat_status_t remat_cli_fixes(const remat_cli_opts_t *o, const char *cmd,
                               const remat_cli_job_t *j, remat_fixes_t *f,
                               remat_fix_line_t *lines, size_t *nlines, remat_error_t *err) {
    *nlines = 0;
    remat_status_t st = remat_fixes_find(j->graph, &j->cfg, j->policy, &j->hw, f, err);
    if (st) {
        return st;
    }
    placement_line(o, cmd, j, f, &lines[(*nlines)++]);
    batch_line(o, cmd, j, f, &lines[(*nlines)++]);
    slice_line(o, cmd, j, f, &lines[(*nlines)++]);
    if (f->scan_tried) {
        scan_line(o, cmd, j, f, &lines[(*nlines)++]);
    }
    assert(*nlines <= REMAT_CLI_FIX_LINES);
    return REMAT_OK;
}

/* ---- the nearest mesh that divides ------------------------------------- */

/* Axis @p a's ici devices: as set, or its shards over its dcn factor. */
static uint64_t axis_ici(const remat_config_t *c, const remat_mesh_t *m, remat_axis_t a) {
    const int64_t dcn = c->dcn[a] > 0 ? c->dcn[a] : 1;
    return c->ici[a] > 0 ? (uint64_t)c->ici[a] : m->shards[a] / (uint64_t)dcn;
}

/* A mesh that moves a factor @p f of axis @p a's ici devices to data
   parallelism, as settings ("ici_fsdp_parallelism=64
   ici_data_parallelism=2"); false when @p f does not divide the axis. */
static bool moved_mesh(const remat_config_t *c, const remat_mesh_t *m, remat_axis_t a, uint64_t f,
                       char *buf, size_t size) {
    const uint64_t ici = axis_ici(c, m, a);
    const uint64_t data = c->ici[REMAT_AXIS_DATA] > 0 ? (uint64_t)c->ici[REMAT_AXIS_DATA] : 0;
    if (ici < 2 || ici % f || data == 0) {
        return false; /* a data axis that fills already takes what is left */
    }
    snprintf(buf, size, "ici_%s_parallelism=%llu ici_data_parallelism=%llu", remat_axis_key(a),
             (unsigned long long)(ici / f), (unsigned long long)(data * f));
    return true;
}

/* Whether the run with the options' settings and @p extra analyzes. */
static bool analyzes(const remat_cli_opts_t *o, const char *extra) {
    enum { CAP = 512 };
    char *args[CAP], words[256];
    snprintf(words, sizeof words, "%s", extra);
    const change_t none = {NULL, false, ""};
    int n = changed_args(o, NULL, &none, words, args, CAP);
    remat_cli_opts_t v = *o;
    v.nargs = n;
    v.args = args;
    remat_error_t err;
    remat_error_init(&err);
    remat_cli_job_t *j = remat_i_xcalloc(1, sizeof *j);
    remat_status_t st = remat_cli_job_analyze(j, &v, &err);
    remat_cli_job_release(j);
    free(j);
    return st == REMAT_OK;
}

/* The factors tried, at most (each try analyzes the run once), and the
   largest factor moved: no slice has more devices on one axis, and a
   bound keeps a mesh of any size (a fuzzer's 2^44 devices) from a walk
   over its devices. */
enum { MESH_TRIES = 32 };
#define MESH_FACTOR_MAX 65536u

/* The least factors above 1 (at most MESH_TRIES, ascending, each once) of
   some sharding axis's ici devices, into @p out; their count. */
static size_t mesh_factors(const remat_config_t *c, const remat_mesh_t *m, uint64_t *out) {
    size_t n = 0;
    for (uint64_t f = 2; f <= MESH_FACTOR_MAX && n < MESH_TRIES; f++) {
        bool divides = false;
        for (int a = REMAT_AXIS_DATA + 1; a < REMAT_AXIS_COUNT && !divides; a++) {
            const uint64_t ici = axis_ici(c, m, (remat_axis_t)a);
            divides = ici >= f && ici % f == 0;
        }
        if (divides) {
            out[n++] = f;
        }
    }
    return n;
}

/* The nearest mesh of the same devices on which the run binds: the least
   factor moved from one sharding axis to data parallelism (the axis that
   shards only the batch), as settings into @p buf; "" when none of the
   least MESH_TRIES factors does. */
static void nearest_mesh(const remat_cli_opts_t *o, char *buf, size_t size) {
    buf[0] = '\0';
    remat_config_t c;
    remat_mesh_t m;
    remat_error_t err;
    remat_error_init(&err);
    if (remat_cli_config_build(o, &c, &err) || remat_mesh_build(&c, &m, &err)) {
        return;
    }
    uint64_t factors[MESH_TRIES];
    const size_t nf = mesh_factors(&c, &m, factors);
    for (size_t k = 0; k < nf && !buf[0]; k++) {
        for (int a = REMAT_AXIS_DATA + 1; a < REMAT_AXIS_COUNT && !buf[0]; a++) {
            char mesh[160];
            if (moved_mesh(&c, &m, (remat_axis_t)a, factors[k], mesh, sizeof mesh) &&
                analyzes(o, mesh)) {
                snprintf(buf, size, "%s", mesh);
            }
        }
    }
}

/* A mesh JAX cannot lay out: its line, with the nearest that it can. */
static int report_layout_error(const remat_cli_opts_t *o, const remat_error_t *err) {
    char line[1024], mesh[256];
    remat_error_format(err, line, sizeof line);
    if (remat_cli_nearest_layout(o, analyzes, mesh, sizeof mesh)) {
        fprintf(remat_cli_stderr(), "remat: %s; the nearest mesh that lays out: %s\n", line, mesh);
    } else {
        fprintf(remat_cli_stderr(), "remat: %s\n", line);
    }
    remat_cli_catch(err);
    return REMAT_EXIT_INPUT;
}

int remat_cli_report_run_error(const remat_cli_opts_t *o, const remat_error_t *err) {
    if (o && err->hint == REMAT_HINT_MESH_LAYOUT) {
        return report_layout_error(o, err);
    }
    if (err->hint != REMAT_HINT_MESH_DIVIDE || !o) {
        return remat_cli_report_error(err);
    }
    char line[1024], mesh[256];
    remat_error_format(err, line, sizeof line);
    nearest_mesh(o, mesh, sizeof mesh);
    if (mesh[0]) {
        fprintf(remat_cli_stderr(), "remat: %s; the nearest mesh that divides: %s\n", line,
                mesh);
    } else {
        fprintf(remat_cli_stderr(),
                "remat: %s; no mesh of these devices that moves shards to data "
                "parallelism divides it: change the sizes or the devices\n",
                line);
    }
    remat_cli_catch(err);
    return REMAT_EXIT_INPUT;
}
