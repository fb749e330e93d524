/* SPDX-License-Identifier: MIT */
/* fuzz_common.c: see fuzz_common.h. */
#include "remat/input/resolve.h"
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/view/report.h"
#include "remat/sim/sim.h"

static fuzz_fixtures_t fixtures;
static int fixtures_ready;

static void fixture_fail(const remat_error_t *err) {
    char line[1024];
    remat_error_format(err, line, sizeof line);
    fprintf(stderr, "fuzz: the default analysis does not load: %s\n", line);
    abort();
}

const fuzz_fixtures_t *fuzz_fixtures_init(void) {
    if (fixtures_ready) {
        return &fixtures;
    }
    remat_error_t err;
    remat_error_init(&err);
    if (remat_config_build(NULL, 0, NULL, &fixtures.cfg, &err) ||
        remat_resolve(&fixtures.cfg, &fixtures.graph, &fixtures.policy, &fixtures.hw, &err)) {
        fixture_fail(&err);
    }
    fixtures.devnull = fopen("/dev/null", "w");
    if (!fixtures.devnull) {
        perror("fuzz: /dev/null");
        abort();
    }
    fixtures_ready = 1;
    return &fixtures;
}

char *fuzz_text(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) {
        abort();
    }
    if (size) {
        memcpy(text, data, size);
    }
    text[size] = '\0';
    return text;
}

size_t fuzz_lines(char *text, char **lines) {
    size_t n = 0;
    char *s = text;
    while (*s && n < FUZZ_MAX_LINES) {
        lines[n++] = s;
        char *nl = strchr(s, '\n');
        if (!nl) {
            break;
        }
        *nl = '\0';
        s = nl + 1;
    }
    return n;
}

void fuzz_analyze_and_report(const fuzz_fixtures_t *fx, const remat_graph_t *g,
                             const remat_config_t *cfg, const remat_policy_t *p,
                             const remat_hw_t *hw) {
    remat_error_t err;
    remat_error_init(&err);
    remat_result_t r;
    remat_result_init(&r);
    if (remat_analyze(g, cfg, p, hw, &r, &err) == REMAT_OK) {
        /* Every printer in every format: the reports are where names and
           numbers from the input meet fixed-size cells and buffers. */
        static const remat_format_t fmts[] = {REMAT_FMT_TEXT, REMAT_FMT_JSON, REMAT_FMT_CSV,
                                              REMAT_FMT_MD};
        const remat_result_t *rs[1] = {&r};
        for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
            remat_report_analyze(fx->devnull, &r, fmts[i]);
            remat_report_table(fx->devnull, &r, fmts[i], REMAT_TABLE_ALL);
            remat_report_compare(fx->devnull, rs, 1, fmts[i]);
        }
        remat_report_check(fx->devnull, &r, REMAT_FMT_TEXT);
        remat_report_check(fx->devnull, &r, REMAT_FMT_JSON);
        (void)remat_result_passes(&r);
    }
    remat_result_release(&r);
}

static int ends_with_json(const char *s) {
    size_t n = strlen(s);
    return n >= 5 && strcmp(s + n - 5, ".json") == 0;
}

void fuzz_config_run(const fuzz_fixtures_t *fx, const remat_config_t *cfg) {
    if (ends_with_json(cfg->graph) || ends_with_json(cfg->remat_policy) ||
        ends_with_json(cfg->hardware)) {
        return;
    }
    remat_error_t err;
    remat_error_init(&err);
    remat_graph_t *g = NULL;
    remat_policy_t *p = NULL;
    remat_hw_t hw;
    if (remat_resolve(cfg, &g, &p, &hw, &err) == REMAT_OK) {
        fuzz_analyze_and_report(fx, g, cfg, p, &hw);
    }
    remat_graph_free(g);
    remat_policy_free(p);
}

void fuzz_make_dir(const char *prefix, char *dir, size_t size) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
    if (!mkdtemp(dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
}

void fuzz_write_file(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size)) {
        abort();
    }
    fclose(f);
}

void fuzz_build_file_and_run(const fuzz_fixtures_t *fx, const char *path) {
    remat_error_t err;
    remat_error_init(&err);
    remat_config_t *cfg = malloc(sizeof *cfg); /* several KB: not on the stack */
    if (!cfg) {
        abort();
    }
    if (remat_config_build(path, 0, NULL, cfg, &err) == REMAT_OK) {
        fuzz_config_run(fx, cfg);
    }
    free(cfg);
}
