/* SPDX-License-Identifier: MIT */
/*
 * cli/main.c: the remat command line. Parses arguments, resolves the inputs,
 * calls the library and prints. The only file that writes to stdout/stderr
 * or chooses an exit code: 0 ok/fits, 1 negative verdict (check), 2 bad input
 * or usage, 3 internal error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "remat/input/resolve.h"
#include "remat/input/graph_file.h"
#include "remat/data/builtin.h"
#include "remat/input/config.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/policy.h"
#include "remat/view/report.h"
#include "remat/sim/sim.h"
#include "remat/solve/solve.h"
#include "remat/base/version.h"
#include "cli/cli.h"
#include "cli/fix.h"
#include "cli/help.h"
#include "cli/job.h"
#include "cli/main.h"
#include "cli/view.h"
#include "base/json_util.h"
#include "view/report_internal.h"
#include "input/yaml_config.h"
#include "base/util.h"

enum {
    EXIT_OK = REMAT_EXIT_OK,
    EXIT_NO = REMAT_EXIT_NO,
    EXIT_INPUT = REMAT_EXIT_INPUT,
    EXIT_INTERNAL = REMAT_EXIT_INTERNAL
};

typedef remat_cli_opts_t opts_t;
typedef remat_cli_job_t job_t;

static int parse_kind(const char *arg, unsigned *kinds) {
    static const struct {
        const char *name;
        unsigned kinds;
    } table[] = {{"layers", REMAT_TABLE_LAYERS},
                 {"tensors", REMAT_TABLE_TENSORS},
                 {"names", REMAT_TABLE_NAMES},
                 {"stages", REMAT_TABLE_STAGES},
                 {"all", REMAT_TABLE_ALL}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(arg, table[i].name) == 0) {
            *kinds = table[i].kinds;
            return 0;
        }
    }
    return remat_cli_usage_error("unknown table kind '%s' (layers, tensors, names, stages, all)", arg);
}

static int take_view_option(int c, const char *arg, opts_t *o);

/* One option's value into @p o; getopt's code @p c. */
static int take_option(int c, const char *arg, opts_t *o) {
    switch (c) {
        case 'c':
            o->given |= CLI_OPT_CONFIG;
            o->config = arg;
            return 0;
        case 'f':
            o->given |= CLI_OPT_FORMAT;
            return remat_format_parse(arg, &o->fmt)
                       ? 0
                       : remat_cli_usage_error("unknown format '%s' (text, json, csv, md, trace)",
                                               arg);
        case 'p':
            o->given |= CLI_OPT_POLICIES;
            o->policies = arg;
            return 0;
        case 'F':
            o->given |= CLI_OPT_FRONTIER;
            o->solve_flags |= REMAT_SOLVE_FRONTIER;
            return 0;
        case 'X':
            o->given |= CLI_OPT_EXHAUSTIVE;
            o->solve_flags |= REMAT_SOLVE_EXHAUSTIVE;
            return 0;
        case 'E':
            o->given |= CLI_OPT_EMIT_POLICY;
            o->emit_policy = arg;
            return 0;
        case 'k':
            o->given |= CLI_OPT_KIND;
            o->kind = arg;
            return 0;
        default:
            return take_view_option(c, arg, o);
    }
}

/* The options of the drawing commands and analyze's chart. */
static int take_view_option(int c, const char *arg, opts_t *o) {
    switch (c) {
        case 'u':
            o->given |= CLI_OPT_UNFOLD;
            o->unfold = true;
            return 0;
        case 's': {
            o->given |= CLI_OPT_STAGE;
            char *end = NULL;
            unsigned long long k = strtoull(arg, &end, 10);
            if (!*arg || *end || arg[0] == '-' || k > 1000000) {
                return remat_cli_usage_error("--stage takes a stage number, not '%s'", arg);
            }
            o->stage = (size_t)k;
            return 0;
        }
        case 'o':
            o->given |= CLI_OPT_OUTPUT;
            o->output = arg;
            return 0;
        case 'H':
            o->given |= CLI_OPT_HTML;
            o->html = arg;
            return 0;
        case 'C':
        case 'N':
            o->given |= c == 'C' ? CLI_OPT_CHART : CLI_OPT_NO_CHART;
            o->chart = c == 'C';
            return 0;
        case 'h':
            o->help = true;
            return 0;
        default:
            return -1;
    }
}

/* A MaxText config named as an argument, as MaxText's own command line
   takes it (MaxText/configs/base.yml, or a YAML file of one's own), is the
   config file; it leaves the settings. Anything else must be key=value. */
static int take_config_file(opts_t *o) {
    int w = 0;
    for (int i = 0; i < o->nargs; i++) {
        char *a = o->args[i];
        if (!strchr(a, '=') && (remat_i_is_yaml_path(a) || strcmp(a, "-") == 0)) {
            if (o->config) {
                return remat_cli_usage_error("two config files, '%s' and '%s': give one", o->config, a);
            }
            o->config = a;
            continue;
        }
        if (!strchr(a, '=')) {
            return remat_cli_usage_error("unexpected argument '%s': settings are key=value", a);
        }
        o->args[w++] = a;
    }
    o->nargs = w;
    return 0;
}

static int parse_opts(int argc, char **argv, opts_t *o) {
    static const struct option longs[] = {{"config", required_argument, NULL, 'c'},
                                          {"format", required_argument, NULL, 'f'},
                                          {"policies", required_argument, NULL, 'p'},
                                          {"kind", required_argument, NULL, 'k'},
                                          {"frontier", no_argument, NULL, 'F'},
                                          {"exhaustive", no_argument, NULL, 'X'},
                                          {"emit-policy", required_argument, NULL, 'E'},
                                          {"unfold", no_argument, NULL, 'u'},
                                          {"stage", required_argument, NULL, 's'},
                                          {"output", required_argument, NULL, 'o'},
                                          {"html", required_argument, NULL, 'H'},
                                          {"chart", no_argument, NULL, 'C'},
                                          {"no-chart", no_argument, NULL, 'N'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->fmt = REMAT_FMT_TEXT;
    o->kinds = REMAT_TABLE_ALL;
    o->stage = REMAT_NONE;
    o->chart = -1;
    /* A second parse in one process (tests, a fuzzer driving the CLI) must
       not resume inside the previous argv: glibc fully resets getopt only
       for optind = 0; elsewhere 1 is the reset. */
#ifdef __GLIBC__
    optind = 0;
#else
    optind = 1;
#endif
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "c:f:p:k:o:h", longs, NULL)) != -1) {
        int rc = take_option(c, optarg, o);
        if (rc < 0) {
            return remat_cli_usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
        }
        if (rc) {
            return rc;
        }
    }
    o->nargs = argc - optind;
    o->args = argv + optind;
    return o->help ? 0 : take_config_file(o);
}

static remat_status_t job_run(job_t *j, remat_error_t *err) {
    remat_result_init(&j->result);
    remat_status_t st = remat_resolve(&j->cfg, &j->graph, &j->policy, &j->hw, err);
    if (st == REMAT_OK) {
        st = remat_analyze(j->graph, &j->cfg, j->policy, &j->hw, &j->result, err);
    }
    return st;
}

/* analyze's text ends with a chart of live HBM on a terminal, or when
   asked; never in the other formats. */
static bool wants_chart(const opts_t *o) {
    return o->fmt == REMAT_FMT_TEXT &&
           (o->chart == 1 || (o->chart < 0 && o->out == stdout && isatty(STDOUT_FILENO)));
}

/* analyze's and check's report, with what would make the run fit when it
   does not pass (text and JSON; CSV and Markdown have no place for it). */
static remat_status_t report_verdict(const opts_t *o, int which, const job_t *j,
                                     remat_error_t *err) {
    const bool want = !remat_result_passes(&j->result) &&
                      (o->fmt == REMAT_FMT_TEXT || o->fmt == REMAT_FMT_JSON);
    remat_fixes_t f;
    remat_fixes_init(&f);
    remat_fix_line_t lines[REMAT_CLI_FIX_LINES];
    size_t n = 0;
    remat_status_t st =
        want ? remat_cli_fixes(o, which == 0 ? "analyze" : "check", j, &f, lines, &n, err)
             : REMAT_OK;
    const remat_fix_report_t fx = {&f, lines, n};
    if (st == REMAT_OK && which == 0) {
        remat_report_analyze_with(o->out, &j->result, want ? &fx : NULL, o->fmt);
    } else if (st == REMAT_OK) {
        remat_report_check_with(o->out, &j->result, want ? &fx : NULL, o->fmt);
    }
    remat_fixes_release(&f);
    return st;
}

static int cmd_analyze_like(const opts_t *o, int which) {
    if (which == 0 && o->chart == 1 && o->fmt != REMAT_FMT_TEXT) {
        return remat_cli_usage_error("--chart draws under the text report, not under %s",
                                     remat_format_name(o->fmt));
    }
    if (which == 0 && wants_chart(o)) {
        return remat_cli_analyze_chart(o);
    }
    remat_error_t err;
    remat_error_init(&err);
    job_t *j = remat_i_xcalloc(1, sizeof *j);
    remat_status_t st = remat_cli_job_analyze(j, o, &err);
    if (st == REMAT_OK) {
        remat_cli_print_notes(&j->cfg, remat_result_passes(&j->result));
        if (which == 2) {
            remat_cli_print_result_notes(&j->result);
        }
    }
    if (st == REMAT_OK && which == 1) {
        remat_report_table(o->out, &j->result, o->fmt, o->kinds);
    } else if (st == REMAT_OK) {
        st = report_verdict(o, which, j, &err);
    }
    int rc = st ? remat_cli_report_run_error(o, &err)
             : which == 2 && !remat_result_passes(&j->result) ? EXIT_NO
                                                               : EXIT_OK;
    remat_cli_job_release(j);
    free(j);
    return rc;
}

static int cmd_compare(const opts_t *o) {
    remat_error_t err;
    remat_error_init(&err);
    remat_cli_compare_t c = {0};
    remat_status_t st;
    int rc = remat_cli_compare_run(o, &c, &st, &err);
    if (rc == EXIT_OK && st) {
        rc = remat_cli_report_run_error(o, &err);
    } else if (rc == EXIT_OK) {
        remat_cli_print_notes(&c.jobs[0].cfg, c.n && remat_result_passes(c.rs[0]));
        remat_report_compare(o->out, c.rs, c.n, o->fmt);
    }
    remat_cli_compare_release(&c);
    return rc;
}

/* What solve computes and prints, owned together. */
typedef struct solve_run {
    job_t *j; /* config, graph and hardware; its result analyses the solved placement */
    remat_solution_t sol;
    remat_policy_t *solved;
    remat_explain_row_t *rows;
    job_t *presets;
    const remat_result_t **pres; /* the presets' results, placed against the frontier */
    size_t np;
    remat_batch_row_t *batches; /* the solved placement's largest batch, then each preset's */
    size_t nb;
} solve_run_t;

static void solve_run_init(solve_run_t *s) {
    size_t npol = remat_builtin_count(REMAT_BUILTIN_POLICY);
    memset(s, 0, sizeof *s);
    s->j = remat_i_xcalloc(1, sizeof *s->j);
    remat_solution_init(&s->sol);
    s->presets = remat_i_xcalloc(npol, sizeof *s->presets);
    s->pres = remat_i_xcalloc(npol, sizeof *s->pres);
    s->batches = remat_i_xcalloc(npol + 1, sizeof *s->batches);
}

static void solve_run_release(solve_run_t *s) {
    for (size_t i = 0; i < s->np; i++) {
        remat_result_release(&s->presets[i].result);
        remat_policy_free(s->presets[i].policy);
    }
    free(s->presets);
    free(s->pres);
    free(s->batches);
    free(s->rows);
    remat_policy_free(s->solved);
    remat_solution_release(&s->sol);
    remat_cli_job_release(s->j);
    free(s->j);
}

/* The solved placement as a policy: its analysis, why each name went where
   it did, and its largest batch. */
static remat_status_t solve_describe(solve_run_t *s, remat_error_t *err) {
    job_t *j = s->j;
    s->solved = remat_solve_policy(s->sol.choices + s->sol.best.first, s->sol.nnames, "solved");
    remat_result_init(&j->result);
    remat_status_t st = remat_analyze(j->graph, &j->cfg, s->solved, &j->hw, &j->result, err);
    s->rows = remat_i_xcalloc(s->sol.nnames, sizeof *s->rows);
    if (st == REMAT_OK) {
        st = remat_solve_explain(j->graph, &j->cfg, &j->hw, &s->sol, s->rows, err);
    }
    if (st == REMAT_OK) {
        s->batches[s->nb].policy = "(solved)";
        st = remat_largest_batch(j->graph, &j->cfg, s->solved, &j->hw, &s->batches[s->nb++].batch,
                                 err);
    }
    return st;
}

static remat_status_t solve_placement(solve_run_t *s, const opts_t *o, remat_error_t *err) {
    job_t *j = s->j;
    remat_status_t st = remat_cli_config_build(o, &j->cfg, err);
    if (st == REMAT_OK) {
        st = remat_resolve(&j->cfg, &j->graph, &j->policy, &j->hw, err);
    }
    if (st == REMAT_OK) {
        st = remat_solve(j->graph, &j->cfg, &j->hw, o->solve_flags, &s->sol, err);
    }
    if (st == REMAT_OK && s->sol.found) {
        st = solve_describe(s, err);
    }
    return st;
}

/* Every preset: its largest batch, and its place against the frontier. */
static remat_status_t solve_presets(solve_run_t *s, remat_error_t *err) {
    const job_t *j = s->j;
    size_t npol = remat_builtin_count(REMAT_BUILTIN_POLICY);
    remat_status_t st = REMAT_OK;
    for (size_t i = 0; st == REMAT_OK && i < npol; i++) {
        const char *name = remat_builtin_name(REMAT_BUILTIN_POLICY, i);
        if (remat_cli_policy_is_alias(name)) {
            continue;
        }
        job_t *pj = &s->presets[s->np];
        pj->cfg = j->cfg;
        snprintf(pj->cfg.remat_policy, sizeof pj->cfg.remat_policy, "%s", name);
        pj->cfg.ncustom = 0;
        st = remat_policy_builtin(name, &pj->policy, err);
        if (st == REMAT_OK) {
            remat_result_init(&pj->result);
            st = remat_analyze(j->graph, &pj->cfg, pj->policy, &j->hw, &pj->result, err);
        }
        if (st == REMAT_OK) {
            s->pres[s->np] = &pj->result;
            s->batches[s->nb].policy = name;
            st = remat_largest_batch(j->graph, &pj->cfg, pj->policy, &j->hw,
                                     &s->batches[s->nb++].batch, err);
        }
        s->np++; /* counted even on failure, so that release frees its policy */
    }
    return st;
}

static remat_status_t emit_solved_policy(const solve_run_t *s, const char *path,
                                         remat_error_t *err) {
    FILE *f = fopen(path, "w");
    if (!f) {
        return remat_error_set(err, REMAT_E_IO, path, NULL, "cannot write file");
    }
    const job_t *j = s->j;
    char desc[REMAT_STR_LEN * 2 + 128];
    snprintf(desc, sizeof desc, "solved by remat for %s on %s (step %.6f s, peak %llu B)",
             j->cfg.model_name, j->hw.name, j->result.step_seconds,
             (unsigned long long)j->result.peak_bytes);
    remat_report_policy_file(f, s->sol.choices + s->sol.best.first, s->sol.nnames, desc);
    fclose(f);
    return REMAT_OK;
}

static int cmd_solve(const opts_t *o) {
    remat_error_t err;
    remat_error_init(&err);
    solve_run_t s;
    solve_run_init(&s);
    int rc = EXIT_OK;
    remat_status_t st = solve_placement(&s, o, &err);
    if (st == REMAT_OK) {
        st = solve_presets(&s, &err);
    }
    if (st == REMAT_OK && o->emit_policy && s.sol.found) {
        st = emit_solved_policy(&s, o->emit_policy, &err);
    }
    if (st) {
        rc = remat_cli_report_run_error(o, &err);
    } else {
        remat_cli_print_notes(&s.j->cfg, s.sol.found);
        remat_report_solve(o->out, &s.sol, s.rows, s.sol.found ? &s.j->result : NULL, s.pres, s.np,
                           s.batches, s.nb, o->fmt);
        rc = s.sol.found ? EXIT_OK : EXIT_NO;
    }
    solve_run_release(&s);
    return rc;
}

static int cmd_list(FILE *out, int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "all";
    if (argc > 2 || (strcmp(what, "all") && strcmp(what, "models") && strcmp(what, "graphs") &&
                     strcmp(what, "policies") && strcmp(what, "hardware") && strcmp(what, "keys"))) {
        return remat_cli_usage_error("usage: remat list [models|graphs|policies|hardware|keys]");
    }
    static const struct {
        const char *name;
        remat_builtin_kind_t kind;
    } kinds[] = {{"models", REMAT_BUILTIN_MODEL},
                 {"graphs", REMAT_BUILTIN_GRAPH},
                 {"policies", REMAT_BUILTIN_POLICY},
                 {"hardware", REMAT_BUILTIN_HARDWARE}};
    for (size_t k = 0; k < 4; k++) {
        if (strcmp(what, "all") && strcmp(what, kinds[k].name)) {
            continue;
        }
        /* Descriptions were read at build time: listing parses nothing. A
           model preset with a "requires" key is one remat refuses; those
           are listed apart, after the ones it analyzes. */
        for (int refused = 0; refused <= (kinds[k].kind == REMAT_BUILTIN_MODEL); refused++) {
            fprintf(out, "%s:\n", refused ? "models remat cannot analyze yet" : kinds[k].name);
            for (size_t i = 0; i < remat_builtin_count(kinds[k].kind); i++) {
                if (remat_builtin_refused(kinds[k].kind, i) == (refused != 0)) {
                    fprintf(out, "  %-34s %s\n", remat_builtin_name(kinds[k].kind, i),
                           remat_builtin_description(kinds[k].kind, i));
                }
            }
        }
    }
    if (strcmp(what, "all") && strcmp(what, "keys")) {
        return EXIT_OK;
    }
    fprintf(out, "config keys:\n");
    for (size_t i = 0; i < remat_config_nkeys(); i++) {
        fprintf(out, "  %-34s %s\n", remat_config_key_name(i), remat_config_key_help(i));
    }
    return EXIT_OK;
}

/* validate's line for a good graph: its layer (or each layer kind) in
   tensors and ops. */
static void print_graph_ok(FILE *out, const char *path, const remat_graph_t *g) {
    const remat_block_t *b = &g->kinds[0].block;
    if (g->nkinds == 1) {
        fprintf(out, "%s: ok: graph '%s', layer of %zu tensors and %zu ops%s\n", path, g->name,
               b->ntensors, b->nops, g->has_head ? ", with a head" : "");
        return;
    }
    fprintf(out, "%s: ok: graph '%s', %zu layer kinds (", path, g->name, g->nkinds);
    for (size_t k = 0; k < g->nkinds; k++) {
        b = &g->kinds[k].block;
        fprintf(out, "%s%s: %zu tensors and %zu ops", k ? "; " : "", g->kinds[k].name, b->ntensors,
               b->nops);
    }
    fprintf(out, ")%s\n", g->has_head ? ", with a head" : "");
}

/* validate's config: built from its text (read once: "-" is standard
   input), then resolved and analyzed; the line says what it runs. */
static remat_status_t validate_config(FILE *out, const remat_i_config_file_t *f,
                                      remat_error_t *err) {
    job_t *j = remat_i_xcalloc(1, sizeof *j);
    remat_status_t st = remat_i_config_build_file(f, 0, NULL, &j->cfg, err);
    if (st == REMAT_OK) {
        st = job_run(j, err);
    }
    if (st == REMAT_OK) {
        remat_cli_print_notes(&j->cfg, true);
        fprintf(out, "%s: ok: config for %s, remat_policy=%s on %s\n", f->name, j->cfg.model_name,
               j->policy->name, j->hw.name);
    }
    remat_cli_job_release(j);
    free(j);
    return st;
}

/* validate's JSON file, by its "format" key (none: a config). */
static remat_status_t validate_json(FILE *out, const remat_i_config_file_t *f,
                                    remat_error_t *err) {
    const char *path = f->name, *text = f->text;
    json_t *root = remat_i_json_load(text, path, err);
    if (!root) {
        return err->code;
    }
    json_t *format = json_object_get(root, "format");
    const char *fm = json_is_string(format) ? json_string_value(format) : "";
    remat_status_t st = REMAT_OK;
    if (strcmp(fm, "remat-graph/1") == 0) {
        remat_graph_t *g = NULL;
        if ((st = remat_graph_load_string(text, path, &g, err)) == REMAT_OK) {
            print_graph_ok(out, path, g);
        }
        remat_graph_free(g);
    } else if (strcmp(fm, "remat-policy/1") == 0) {
        remat_policy_t *p = NULL;
        if ((st = remat_policy_load_string(text, path, false, &p, err)) == REMAT_OK) {
            fprintf(out, "%s: ok: policy '%s' placing %zu names, %zu layer ranges\n", path, p->name,
                   p->nrules, p->nranges);
        }
        remat_policy_free(p);
    } else if (strcmp(fm, "remat-hardware/2") == 0 || strcmp(fm, "remat-hardware/1") == 0) {
        remat_hw_t hw;
        if ((st = remat_hw_load_string(text, path, &hw, err)) == REMAT_OK) {
            fprintf(out, "%s: ok: hardware '%s'\n", path, hw.name);
        }
    } else if (format) {
        st = remat_error_set(err, REMAT_E_SCHEMA, path, "$.format",
                             "unknown format '%s' (remat-graph/1, remat-policy/1, "
                             "remat-hardware/2, remat-hardware/1; a config has no format key)",
                             fm);
    } else {
        st = validate_config(out, f, err);
    }
    json_decref(root);
    return st;
}

static int cmd_validate(FILE *out, int argc, char **argv) {
    if (argc != 2) {
        return remat_cli_usage_line("usage: remat validate FILE ('-': standard input)");
    }
    remat_error_t err;
    remat_error_init(&err);
    remat_i_config_file_t f;
    char *text = NULL;
    size_t len = 0;
    /* Read here, whatever the suffix: validate names a file that must be
       there (MaxText's base.yml that is not is no file to check). */
    remat_status_t st = remat_i_read_path(argv[1], REMAT_I_READ_STDIN, &text, &len, &err);
    int rc = EXIT_OK;
    if (st == REMAT_OK) {
        f = (remat_i_config_file_t){strcmp(argv[1], "-") == 0 ? "<stdin>" : argv[1], text, len,
                                    NULL};
        st = remat_i_config_text_is_yaml(f.name, text) ? validate_config(out, &f, &err)
                                                        : validate_json(out, &f, &err);
        /* a config's error as check's: a dim that does not divide gets the
           nearest mesh that does, built from this text */
        opts_t v;
        memset(&v, 0, sizeof v);
        v.config = argv[1];
        v.file = &f;
        v.out = out;
        rc = st ? remat_cli_report_run_error(&v, &err) : EXIT_OK;
    } else {
        rc = remat_cli_report_error(&err);
    }
    free(text);
    return rc;
}

/* ---- the command table ------------------------------------------------- */

static int run_analyze(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c, (void)argc, (void)argv;
    return cmd_analyze_like(o, 0);
}

static int run_table(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c, (void)argc, (void)argv;
    opts_t t = *o;
    if (o->kind && parse_kind(o->kind, &t.kinds)) {
        return EXIT_INPUT;
    }
    /* A CSV file holds one table, with one header, as pandas and
       spreadsheets read it: the per-layer table unless --kind says. */
    if (t.fmt == REMAT_FMT_CSV && !(t.given & CLI_OPT_KIND)) {
        t.kinds = REMAT_TABLE_LAYERS;
        return cmd_analyze_like(&t, 1);
    }
    if (t.fmt == REMAT_FMT_CSV && t.kinds == REMAT_TABLE_ALL) {
        return remat_cli_usage_error("a CSV file holds one table: --kind layers, tensors, names or "
                                     "stages (or --format json or md for all)");
    }
    return cmd_analyze_like(&t, 1);
}

static int run_check(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c, (void)argc, (void)argv;
    return cmd_analyze_like(o, 2);
}

static int run_compare(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c, (void)argc, (void)argv;
    return cmd_compare(o);
}

static int run_solve(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c, (void)argc, (void)argv;
    return cmd_solve(o);
}

static int run_timeline(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c, (void)argc, (void)argv;
    return remat_cli_timeline(o);
}

static int run_chart(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c, (void)argc, (void)argv;
    return remat_cli_chart(o);
}

static int run_report(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c, (void)argc, (void)argv;
    return remat_cli_report(o);
}

static int run_list(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c;
    return cmd_list(o ? o->out : stdout, argc, argv);
}

static int run_validate(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c;
    return cmd_validate(o ? o->out : stdout, argc, argv);
}

static int run_version(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c, (void)o, (void)argv;
    if (argc > 1) {
        return remat_cli_usage_error("'version' takes no arguments");
    }
    printf("remat " REMAT_VERSION_STRING "\n");
    return EXIT_OK;
}

static int run_help(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv);

#define SETTINGS " [options] [key=value ...]"
#define ALL_FORMATS                                                                      \
    (CLI_FMT(REMAT_FMT_TEXT) | CLI_FMT(REMAT_FMT_JSON) | CLI_FMT(REMAT_FMT_CSV) | \
     CLI_FMT(REMAT_FMT_MD))
#define TEXT_JSON (CLI_FMT(REMAT_FMT_TEXT) | CLI_FMT(REMAT_FMT_JSON))
#define TIMELINE_FORMATS                                                                    \
    (CLI_FMT(REMAT_FMT_TEXT) | CLI_FMT(REMAT_FMT_JSON) | CLI_FMT(REMAT_FMT_CSV) | \
     CLI_FMT(REMAT_FMT_TRACE))

/* The exit codes every command shares past its own 0 and 1. */
#define EXITS_REST "2 bad input or usage, 3 internal error"

static const remat_cli_command_t commands[] = {
    {"analyze", "analyze", "analyze" SETTINGS,
     "peak HBM per device, breakdown, recompute FLOPs, offload cost",
     "Simulates one training step op by op on one device and prints the peak HBM\n"
     "with its breakdown and the moment it occurs, the margin to the budget, the\n"
     "recompute FLOPs, the bytes offloaded and their PCIe time, the step time and\n"
     "MFU. When the step does not pass it ends with what would make it fit: the\n"
     "solver's fastest placement, the largest batch per policy and the smallest\n"
     "slice of the chip, each the command to paste. On a terminal the text ends\n"
     "with a small chart of live HBM over the step against the budget.\n"
     "With no settings it analyzes remat's default run: MaxText's llama3.1-70b\n"
     "recipe for tpu7x-128 (tpu-recipes; 64 chips, per_device_batch_size=2,\n"
     "max_target_length=8192), which fits at 88% of the budget.\n",
     "0 analyzed, whether or not it fits ('check' is the gate), " EXITS_REST,
     CLI_OPT_CONFIG | CLI_OPT_FORMAT | CLI_OPT_CHART | CLI_OPT_NO_CHART | CLI_OPT_OUTPUT,
     ALL_FORMATS, run_analyze},
    {"compare", "compare", "compare" SETTINGS,
     "every preset (or --policies a,b,...) side by side, ranked",
     "Analyzes every built-in preset, or the presets and policy files --policies\n"
     "names, on one configuration and ranks them: those that pass, by estimated\n"
     "step time; then those inside the safety margin, by step time; then those\n"
     "whose offloads break the host's RAM; then those over the budget, by how far\n"
     "over. minimal_flash is minimal_with_context under a second name and is left\n"
     "out of 'every preset'.\n",
     "0 compared, " EXITS_REST,
     CLI_OPT_CONFIG | CLI_OPT_FORMAT | CLI_OPT_POLICIES | CLI_OPT_OUTPUT, ALL_FORMATS,
     run_compare},
    {"check", "check", "check" SETTINGS,
     "launch gate: exit 0 fits, 1 over budget or inside the margin",
     "One line: the verdict (OK, RISK inside the safety margin, HOST-OOM when the\n"
     "host cannot hold what is offloaded, OOM), the model, the slice, the policy and\n"
     "the peak against the per-device budget. When the step does not pass, the\n"
     "lines after it say what would make it fit, each the command to paste (the\n"
     "solver's fastest placement, the largest batch per policy, the smallest slice).\n"
     "Notes (a placement that changes nothing, an assumption relied on) go to\n"
     "standard error.\n",
     "0 the step passes, 1 it does not (OOM, RISK, HOST-OOM), " EXITS_REST,
     CLI_OPT_CONFIG | CLI_OPT_FORMAT | CLI_OPT_OUTPUT, TEXT_JSON, run_check},
    {"table", "table", "table" SETTINGS,
     "per-layer, per-tensor, per-checkpoint-name and per-stage tables",
     "Per layer: kept, offloaded and recomputed bytes and FLOPs. Per tensor of one\n"
     "layer: shape, bytes, placement and fate. Per checkpoint name over all layers.\n"
     "Per pipeline stage: static, in-flight and peak bytes. --kind picks one; CSV\n"
     "holds one table, the per-layer one unless --kind names another.\n",
     "0 written, " EXITS_REST,
     CLI_OPT_CONFIG | CLI_OPT_FORMAT | CLI_OPT_KIND | CLI_OPT_OUTPUT, ALL_FORMATS, run_table},
    {"timeline", "timeline", "timeline" SETTINGS,
     "the step event by event: times and live bytes by category",
     "Every moment the simulator measures on one pipeline stage (the worst unless\n"
     "--stage), in the order the step runs: an op's forward, re-run or backward, a\n"
     "layer's host fetch, with its start and end time (time model) and the live bytes\n"
     "of each category. The highest event is analyze's peak. Layers of one profile\n"
     "that run in a row are folded into one (--unfold lists every layer). --format\n"
     "trace writes Chrome's trace event JSON (always unfolded) for Perfetto.\n",
     "0 written, " EXITS_REST,
     CLI_OPT_CONFIG | CLI_OPT_FORMAT | CLI_OPT_UNFOLD | CLI_OPT_STAGE | CLI_OPT_OUTPUT,
     TIMELINE_FORMATS, run_timeline},
    {"chart", "chart", "chart" SETTINGS,
     "an SVG chart: the memory timeline, the layers or the policies",
     "Draws an SVG chart (to standard output, or to -o FILE). --kind timeline (the\n"
     "default): live HBM over the step by category, the budget, the safety margin and\n"
     "the peak with its moment (--stage picks a pipeline stage). --kind layers: per\n"
     "layer, the bytes kept and offloaded and the recompute FLOPs. --kind policies:\n"
     "every preset (or --policies) as peak against step time near the budget (the\n"
     "far ones marked at the edge), with the budget, the solver's Pareto frontier\n"
     "and its placement. docs/charts.md describes them.\n",
     "0 written, " EXITS_REST,
     CLI_OPT_CONFIG | CLI_OPT_KIND | CLI_OPT_STAGE | CLI_OPT_OUTPUT | CLI_OPT_POLICIES, 0,
     run_chart},
    {"report", "report", "report --html FILE" SETTINGS,
     "one self-contained HTML page: verdict, breakdown, charts, tables, config",
     "Writes one HTML page (no network: the charts are inline SVG) with the verdict,\n"
     "the breakdown at the peak, the step's costs, the memory timeline (hover it for\n"
     "each moment's op and bytes), the per-layer chart and table, the per-name table,\n"
     "every preset (or --policies) against the solver's Pareto frontier, the notes and\n"
     "the configuration, to --html FILE (or -o FILE; '-': standard output).\n",
     "0 written, " EXITS_REST,
     CLI_OPT_CONFIG | CLI_OPT_HTML | CLI_OPT_OUTPUT | CLI_OPT_STAGE | CLI_OPT_POLICIES, 0,
     run_report},
    {"solve", "solve", "solve" SETTINGS,
     "the fastest placement that fits, why, largest batches, Pareto frontier",
     "Places every checkpoint name of the graph on the device, rematerialized or\n"
     "offloaded: the fastest step that passes, within the per-device budget with the\n"
     "safety margin and within the host's RAM (what it offloads, times the chips a\n"
     "host holds, against host_ram_bytes). Prints the choice as remat_policy=custom\n"
     "overrides, why each name is placed so, the presets beside it and the largest\n"
     "batch that fits for each; --frontier adds the Pareto frontier of (peak, step\n"
     "time), each point marked fits, HOST-OOM or OOM.\n",
     "0 a placement passes, 1 none does, " EXITS_REST,
     CLI_OPT_CONFIG | CLI_OPT_FORMAT | CLI_OPT_FRONTIER | CLI_OPT_EXHAUSTIVE |
         CLI_OPT_EMIT_POLICY | CLI_OPT_OUTPUT,
     TEXT_JSON, run_solve},
    {"list", "list [KIND]", "list [-o FILE] [models|graphs|policies|hardware|keys]",
     "built-in models, graphs, policies, hardware, config keys",
     "Lists the built-ins of one kind with their descriptions, or every kind and the\n"
     "config keys (the default). -o FILE (--output FILE) writes the list to FILE.\n",
     "0 listed, " EXITS_REST, 0, 0, run_list},
    {"validate", "validate F", "validate [-o FILE] FILE",
     "check a graph, policy, hardware or config file (JSON or YAML)",
     "Loads the file and says what it holds, or prints the first error with its\n"
     "location and exits 2. A JSON file is told by its \"format\" key (a graph, a\n"
     "policy, a hardware profile; none: a config); a YAML file is a MaxText config.\n"
     "A config is also resolved and analyzed (not judged: that is 'check'). '-'\n"
     "reads the file from standard input. -o FILE (--output FILE) writes the line\n"
     "to FILE.\n",
     "0 valid, " EXITS_REST, 0, 0, run_validate},
    {"help", "help [CMD]", "help [COMMAND]", "this text, or one command's", NULL,
     "0, 2 an unknown command", 0, 0, run_help},
    {"version", "version", "version", "remat's version", NULL, "0", 0, 0, run_version},
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

static const remat_cli_command_t *find_command(const char *name) {
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(name, commands[i].name) == 0) {
            return &commands[i];
        }
    }
    return NULL;
}

static int unknown_command(const char *name) {
    /* The config keys' rule (config_maxtext.c): near, same first letter;
       'vesion' is 'version', 'nope' is not 'solve'. */
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (size_t i = 0; i < NCOMMANDS; i++) {
        best = remat_i_nearest_word(name, &commands[i].name, 1, best, &bestd);
    }
    if (best && remat_i_near_enough(name, bestd)) {
        return remat_cli_usage_line("unknown command '%s' (did you mean '%s'?)", name, best);
    }
    return remat_cli_usage_line("unknown command '%s' (see 'remat help')", name);
}

static int run_help(const remat_cli_command_t *c, const opts_t *o, int argc, char **argv) {
    (void)c;
    FILE *out = o && o->out ? o->out : stdout;
    if (argc > 2) {
        return remat_cli_usage_error("usage: remat help [COMMAND]");
    }
    if (argc < 2) {
        remat_cli_overview(out, commands, NCOMMANDS);
        return EXIT_OK;
    }
    const remat_cli_command_t *cmd = find_command(argv[1]);
    if (!cmd) {
        return unknown_command(argv[1]);
    }
    remat_cli_command_help(out, cmd);
    return EXIT_OK;
}

/* An option the command does not take is an error, not a silent no-op. */
static int check_options(const remat_cli_command_t *cmd, const opts_t *o) {
    unsigned extra = o->given & ~cmd->opts;
    for (size_t k = 0; extra && k < remat_cli_noptions; k++) {
        if (extra & remat_cli_options[k].bit) {
            return remat_cli_usage_line("'%s' takes no %s option (see 'remat help %s')",
                                        cmd->name, remat_cli_options[k].name, cmd->name);
        }
    }
    if (cmd->formats && !(cmd->formats & CLI_FMT(o->fmt))) {
        char fmts[64];
        remat_cli_formats_text(cmd->formats, false, fmts, sizeof fmts);
        return remat_cli_usage_line("'%s' cannot print %s (it prints %s; see 'remat help %s')",
                                    cmd->name, remat_format_name(o->fmt), fmts, cmd->name);
    }
    return EXIT_OK;
}

static bool is_env_assignment(const char *a) {
    const char *eq = strchr(a, '=');
    if (!eq || eq == a) {
        return false;
    }
    for (const char *c = a; c < eq; c++) {
        if (!((*c >= 'A' && *c <= 'Z') || *c == '_' || (c > a && *c >= '0' && *c <= '9'))) {
            return false;
        }
    }
    return true;
}

static bool is_python(const char *a) {
    const char *base = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
    return strncmp(base, "python", 6) == 0 && strspn(base + 6, "0123456789.") == strlen(base + 6);
}

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

/* The launcher of a pasted MaxText command: environment assignments
   (XLA_FLAGS=...), then "python3 [-u] -m MaxText.train" or a .py script.
   Returns how many of @p args it takes; 0 when they do not start with a
   launcher (then an upper-case VAR=value is an unknown key, as it should). */
static int launcher_words(int n, char **args) {
    int i = 0;
    while (i < n && is_env_assignment(args[i])) {
        i++;
    }
    bool python = i < n && is_python(args[i]);
    i += python;
    while (python && i < n && args[i][0] == '-' && strlen(args[i]) == 2 && args[i][1] != 'm') {
        i++; /* the interpreter's own flags: -u, -B, -O */
    }
    if (python && i + 1 < n && strcmp(args[i], "-m") == 0 &&
        (strncmp(args[i + 1], "MaxText.", 8) == 0 || strncmp(args[i + 1], "maxtext.", 8) == 0)) {
        return i + 2;
    }
    if (i < n && ends_with(args[i], ".py")) {
        return i + 1;
    }
    return 0;
}

static bool is_help_flag(const char *arg) {
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

/* Runs @p cmd with its output where -o says, else into @p out. A command
   that prints to its output prints into memory, which reaches the file
   only when the command ran (exit 0 or 1): a failed run leaves no
   half-written file (the drawing commands open their files themselves,
   after their analysis). */
static int run_to_output(const remat_cli_command_t *cmd, opts_t *o, FILE *out, int argc,
                         char **argv) {
    o->out = out;
    const bool own = cmd->run != run_timeline && cmd->run != run_chart && cmd->run != run_report;
    if (!own || !o->output || strcmp(o->output, "-") == 0) {
        return cmd->run(cmd, o, argc, argv);
    }
    char *text = NULL;
    size_t len = 0;
    o->out = open_memstream(&text, &len);
    if (!o->out) {
        remat_i_oom(4096);
    }
    int rc = cmd->run(cmd, o, argc, argv);
    fclose(o->out);
    o->out = out;
    if (rc == EXIT_OK || rc == EXIT_NO) {
        FILE *f = fopen(o->output, "w");
        bool bad = !f || fwrite(text, 1, len, f) != len;
        const int why = errno;
        bad = (f && fclose(f) != 0) || bad;
        if (bad) {
            remat_error_t err;
            remat_error_init(&err);
            remat_error_set(&err, REMAT_E_IO, o->output, NULL, "cannot write file: %s",
                            strerror(why ? why : errno));
            rc = remat_cli_report_error(&err);
        }
    }
    free(text);
    return rc;
}

/* A command that parses its own arguments (list, validate): -o FILE
   (--output FILE) taken out of them, then as run_to_output. */
static int run_own_arguments(const remat_cli_command_t *cmd, FILE *out, int argc, char **argv) {
    opts_t o;
    memset(&o, 0, sizeof o);
    int w = 0;
    for (int i = 0; i < argc; i++) {
        const bool flag = strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0;
        if (i > 0 && flag && (cmd->run == run_list || cmd->run == run_validate)) {
            if (i + 1 == argc) {
                return remat_cli_usage_error("%s needs a file", argv[i]);
            }
            o.output = argv[++i];
            continue;
        }
        argv[w++] = argv[i];
    }
    return run_to_output(cmd, &o, out, w, argv);
}

/* The options of command @p cmd (argv[1]) into @p o: the launcher words
   of a pasted MaxText command skipped, the options parsed and checked,
   then the config file read once into @p file (or @p mem's text, already
   in memory, borrowed). Returns an exit code (0: run the command; also 0
   with o->help set, for its page). Release @p file when !mem, either way. */
static int prepare(const remat_cli_command_t *cmd, int argc, char **argv,
                   const remat_i_config_file_t *mem, opts_t *o, remat_i_config_file_t *file) {
    memset(file, 0, sizeof *file);
    /* parse_opts reads argv[0] as the program: the command's name stays
       in front of what the launcher leaves. */
    int skip = launcher_words(argc - 2, argv + 2);
    if (skip) {
        argv[skip + 1] = argv[1];
    }
    int rc = parse_opts(argc - 1 - skip, argv + 1 + skip, o);
    rc = rc || o->help ? rc : check_options(cmd, o);
    if (rc || o->help) {
        return rc;
    }
    if (mem && o->config) {
        return remat_cli_usage_error("one config file a run: %s is given beside %s", o->config,
                                     mem->name);
    }
    if (mem) {
        *file = *mem;
        o->config = mem->name;
    }
    o->file = file;
    if (o->config && !mem) {
        remat_error_t err;
        remat_error_init(&err);
        if (remat_i_config_file_read(o->config, file, &err)) {
            return remat_cli_report_error(&err);
        }
    }
    return EXIT_OK;
}

/* The command @p cmd (argv[1]) whose options the command line parses. */
static int run_with_options(const remat_cli_command_t *cmd, int argc, char **argv, FILE *out,
                            const remat_i_config_file_t *mem) {
    opts_t o;
    remat_i_config_file_t file;
    int rc = prepare(cmd, argc, argv, mem, &o, &file);
    if (rc == EXIT_OK && o.help) {
        remat_cli_command_help(out, cmd);
    } else if (rc == EXIT_OK) {
        rc = run_to_output(cmd, &o, out, 0, NULL);
    }
    if (!mem) {
        remat_i_config_file_release(&file);
    }
    return rc;
}

/* The whole command line with its output into @p out and, when @p mem is
   given, its config file's text from memory. */
static int dispatch(int argc, char **argv, FILE *out, const remat_i_config_file_t *mem) {
    if (argc < 2) {
        remat_cli_overview(remat_cli_stderr(), commands, NCOMMANDS);
        return EXIT_INPUT;
    }
    const char *name = argv[1];
    if (is_help_flag(name)) {
        name = "help";
    } else if (strcmp(name, "--version") == 0) {
        name = "version";
    }
    const remat_cli_command_t *cmd = find_command(name);
    if (!cmd) {
        return unknown_command(name);
    }
    if (!cmd->opts) {
        /* It parses its own arguments; --help alone asks for its page. */
        if (argc == 3 && is_help_flag(argv[2]) && cmd->run != run_help) {
            remat_cli_command_help(out, cmd);
            return EXIT_OK;
        }
        return run_own_arguments(cmd, out, argc - 1, argv + 1);
    }
    return run_with_options(cmd, argc, argv, out, mem);
}

/* The whole command line as a function, so that a fuzzer can drive the CLI
   in process; main below only forwards to it. */
int remat_cli_main(int argc, char **argv) {
    return dispatch(argc, argv, stdout, NULL);
}

int remat_cli_call(int argc, char **argv, FILE *out, const remat_i_config_file_t *config,
                   remat_cli_sink_t *sink) {
    remat_cli_set_sink(sink);
    const int rc = dispatch(argc, argv, out, config);
    remat_cli_set_sink(NULL);
    return rc;
}

int remat_cli_call_job(int argc, char **argv, const remat_i_config_file_t *config,
                       remat_cli_job_t *j, remat_cli_sink_t *sink) {
    remat_cli_set_sink(sink);
    const remat_cli_command_t *cmd = find_command("analyze");
    opts_t o;
    remat_i_config_file_t file;
    memset(&file, 0, sizeof file);
    int rc = argc < 2 || strcmp(argv[1], "analyze") != 0
                 ? remat_cli_usage_line("a job's command line is 'remat analyze ...'")
                 : prepare(cmd, argc, argv, config, &o, &file);
    if (rc == EXIT_OK && o.help) {
        rc = remat_cli_usage_line("--help asks for a page, not an analysis");
    }
    remat_error_t err;
    remat_error_init(&err);
    if (rc == EXIT_OK && remat_cli_job_analyze(j, &o, &err) != REMAT_OK) {
        rc = remat_cli_report_run_error(&o, &err);
    } else if (rc == EXIT_OK) {
        remat_cli_print_notes(&j->cfg, remat_result_passes(&j->result));
    }
    if (!config) {
        remat_i_config_file_release(&file);
    }
    remat_cli_set_sink(NULL);
    return rc;
}

/* The fuzz build and the Python extension link this file without its main
   (fuzz/CMakeLists.txt, python/CMakeLists.txt). */
#ifndef REMAT_CLI_NO_MAIN
int main(int argc, char **argv) {
    return remat_cli_main(argc, argv);
}
#endif
