/* SPDX-License-Identifier: MIT */
/*
 * mesh_layouts.c: remat's mesh layout rule against JAX's own
 * (validation/mesh_layouts.json, recorded by validation/xla/mesh_layouts.py).
 *
 *   remat_meshlayouts [--check] [FILE]
 *
 * The file holds MaxText's chip grid for every TPU slice name of its
 * accelerator table, and cases: a slice and an ICI mesh (remat settings),
 * with whether JAX's mesh_utils laid the mesh out and, when it did not, the
 * mesh axis it failed on and the physical axes it had left. Each grid is
 * compared with remat's (remat_topology_parse); each case is built as
 * `remat check` builds its mesh (remat_config_build, remat_mesh_build) and
 * remat's answer compared with JAX's: a mesh JAX lays out must build, and
 * one it does not must be refused on the same ICI key, with the same
 * physical axes left.
 *
 * Invariants: every case and every grid is compared (none skipped); --check
 * exits 1 on any disagreement or on a file with no case. Exit 2 on a bad
 * file or argument: a grid that is no list of 2 or 3 positive integers, a
 * refused case that names no axis remat has or no list of axes left, each
 * named by its place in the file.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "remat/base/error.h"
#include "remat/input/config.h"
#include "remat/input/topology.h"
#include "remat/model/mesh.h"
#include "remat/model/mesh_layout.h"

#define MAX_SETTINGS 16

typedef struct tally {
    size_t cases, refused, grids, wrong;
} tally_t;

static int bad_file(const char *path, const char *what) {
    fprintf(stderr, "remat_meshlayouts: %s: %s\n", path, what);
    return 2;
}

/* A grid of MaxText's table against remat's for that name; false when
   the file's grid is no list of 2 or 3 positive integers. */
static bool check_grid(const char *name, json_t *want, tally_t *t) {
    remat_topology_t topo;
    remat_error_t err;
    remat_error_init(&err);
    uint64_t w[3] = {1, 1, 1};
    const size_t nd = json_array_size(want);
    if (!json_is_array(want) || nd < 2 || nd > 3) {
        return false;
    }
    for (size_t d = 0; d < nd; d++) {
        json_t *v = json_array_get(want, d);
        if (!json_is_integer(v) || json_integer_value(v) <= 0) {
            return false;
        }
        w[d] = (uint64_t)json_integer_value(v);
    }
    t->grids++;
    if (remat_topology_parse(name, NULL, "topology", &topo, &err) || !topo.has_grid ||
        memcmp(topo.slice.grid, w, sizeof w) != 0) {
        printf("grid %-14s MaxText %" PRIu64 "x%" PRIu64 "x%" PRIu64 ", remat %s\n", name, w[0],
               w[1], w[2], topo.has_grid ? "another" : "none");
        t->wrong++;
    }
    return true;
}

/* What remat should say for a case JAX refused: the ICI key of the axis
   (MaxText's mesh_axes name, as the library maps it) and the axes left.
   False when the file names no axis remat has, or no list of sizes. */
static bool expected_refusal(json_t *c, char *key, size_t nkey, char *left, size_t nleft) {
    const char *axis = json_string_value(json_object_get(c, "failed_axis"));
    unsigned i = 0;
    while (axis && i < REMAT_LAYOUT_AXES && strcmp(remat_layout_axis_name(i), axis) != 0) {
        i++;
    }
    json_t *rem = json_object_get(c, "remaining");
    if (!axis || remat_layout_axis_of(i) >= REMAT_AXIS_COUNT || !json_is_array(rem)) {
        return false;
    }
    snprintf(key, nkey, "ici_%s_parallelism", remat_axis_key(remat_layout_axis_of(i)));
    int n = snprintf(left, nleft, "[");
    for (size_t d = 0; d < json_array_size(rem) && n > 0 && (size_t)n < nleft; d++) {
        json_t *v = json_array_get(rem, d);
        if (!json_is_integer(v)) {
            return false;
        }
        n += snprintf(left + n, nleft - (size_t)n, "%s%" JSON_INTEGER_FORMAT, d ? ", " : "",
                      json_integer_value(v));
    }
    if (n > 0 && (size_t)n < nleft) {
        snprintf(left + n, nleft - (size_t)n, "]");
    }
    return true;
}

/* One case: remat's mesh build against JAX's layout; false when a case JAX
   refused does not say where (a malformed file). */
static bool check_case(json_t *c, size_t i, tally_t *t) {
    json_t *settings = json_object_get(c, "settings");
    char *args[MAX_SETTINGS];
    size_t n = 0;
    for (; n < json_array_size(settings) && n < MAX_SETTINGS; n++) {
        args[n] = (char *)json_string_value(json_array_get(settings, n));
    }
    const bool lays_out = json_is_true(json_object_get(c, "lays_out"));
    remat_config_t cfg;
    remat_mesh_t mesh;
    remat_error_t err;
    remat_error_init(&err);
    const bool built = remat_config_build(NULL, n, args, &cfg, &err) == REMAT_OK &&
                       remat_mesh_build(&cfg, &mesh, &err) == REMAT_OK;
    char key[64] = "", left[64] = "", line[1024];
    remat_error_format(&err, line, sizeof line);
    bool right = built == lays_out;
    if (!lays_out) {
        if (!expected_refusal(c, key, sizeof key, left, sizeof left)) {
            return false;
        }
        right = right && strcmp(err.json_path, key) == 0 && strstr(err.text, left) != NULL;
    }
    t->cases++;
    t->refused += !lays_out;
    if (!right) {
        t->wrong++;
        printf("case %zu (%s%s%s): JAX %s %s, remat %s\n", i, args[0], n > 1 ? " " : "",
               n > 1 ? args[1] : "", lays_out ? "lays it out" : "fails on", key,
               built ? "builds it" : line);
    }
    return true;
}

int main(int argc, char **argv) {
    bool check = false;
    const char *path = REMAT_MESH_LAYOUTS_FILE;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--check") == 0) {
            check = true;
        } else if (argv[a][0] == '-') {
            fprintf(stderr, "remat_meshlayouts: unknown option '%s' (--check, FILE)\n", argv[a]);
            return 2;
        } else {
            path = argv[a];
        }
    }
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        fprintf(stderr, "remat_meshlayouts: %s:%d: %s\n", path, jerr.line, jerr.text);
        return 2;
    }
    json_t *grids = json_object_get(root, "grids"), *cases = json_object_get(root, "cases");
    if (!json_is_object(grids) || !json_is_array(cases)) {
        json_decref(root);
        return bad_file(path, "needs an object 'grids' and an array 'cases'");
    }
    tally_t t = {0};
    const char *name;
    json_t *grid;
    json_object_foreach(grids, name, grid) {
        if (!check_grid(name, grid, &t)) {
            fprintf(stderr, "remat_meshlayouts: %s: grids.%s must be a list of 2 or 3 positive "
                            "integers (a chip grid)\n", path, name);
            json_decref(root);
            return 2;
        }
    }
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i), *s = json_object_get(c, "settings");
        bool strings = json_is_array(s) && json_array_size(s) > 0 &&
                       json_array_size(s) <= MAX_SETTINGS;
        for (size_t k = 0; strings && k < json_array_size(s); k++) {
            strings = json_is_string(json_array_get(s, k));
        }
        if (!strings || !json_is_boolean(json_object_get(c, "lays_out"))) {
            fprintf(stderr, "remat_meshlayouts: %s: cases[%zu] needs 'settings' (1 to %d strings) "
                            "and a boolean 'lays_out'\n", path, i, MAX_SETTINGS);
            json_decref(root);
            return 2;
        }
        if (!check_case(c, i, &t)) {
            fprintf(stderr, "remat_meshlayouts: %s: cases[%zu] is refused by JAX but needs "
                            "'failed_axis' (a mesh axis remat has) and 'remaining' (a list of "
                            "integers)\n", path, i);
            json_decref(root);
            return 2;
        }
    }
    json_decref(root);
    printf("mesh layouts: %zu grids, %zu meshes (JAX refuses %zu); remat disagrees on %zu\n",
           t.grids, t.cases, t.refused, t.wrong);
    return check && (t.wrong > 0 || t.cases == 0) ? 1 : 0;
}
