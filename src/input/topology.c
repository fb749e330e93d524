/* SPDX-License-Identifier: MIT */
/*
 * topology.c: slice names to a hardware profile and a device count
 * (topology.h). Chip family spellings belong to hw.c (remat_hw_family).
 * Parsing loads the family's built-in profile, so it can fail for memory:
 * REMAT_E_NOMEM, as from any loader. A TPU slice's chip grid is the
 * name's own (NAME-AxBxC) or MaxText's table's (slice_grids.c).
 */
#include "remat/input/topology.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "remat/model/hw.h"
#include "input/slice_grids.h"
#include "base/util.h"

/* Digits only, at most 7 of them (a slice of up to 9,999,999 units). */
static bool small_number(const char *s, size_t n, uint64_t *out) {
    if (n == 0 || n > 7) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return v > 0;
}

/* "4x4x4" -> 64 chips, grid 4 4 4 ("4x4": z 1); false unless 2 or 3
   positive factors. */
static bool grid(const char *s, uint64_t *chips, uint64_t dims[3]) {
    uint64_t p = 1;
    size_t nf = 0;
    dims[0] = dims[1] = dims[2] = 1;
    while (*s) {
        const char *x = strchr(s, 'x');
        size_t n = x ? (size_t)(x - s) : strlen(s);
        uint64_t f;
        if (!small_number(s, n, &f) || nf >= 3 || !remat_i_mul(p, f, &p)) {
            return false;
        }
        dims[nf++] = f;
        s += n + (x ? 1 : 0);
        if (x && !*s) {
            return false;
        }
    }
    *chips = p;
    return nf >= 2;
}

static remat_status_t bad_name(const char *name, const char *source, const char *path,
                               const char *why, remat_error_t *err) {
    return remat_error_set(err, REMAT_E_CONFIG, source, path,
                           "topology '%s' %s (MaxText's spellings: tpu7x-128, tpu7x-4x4x4, "
                           "v6e-256, v5p-256, v5litepod-256, v4-128, h100-16)",
                           name, why);
}

/* JAX's mesh handler for the profile's chip (mesh_layout.h); false for a
   profile that is no TPU of MaxText's table. */
static bool layout_kind(const char *hardware, remat_layout_kind_t *kind) {
    static const struct {
        const char *hardware;
        remat_layout_kind_t kind;
    } kinds[] = {{"tpu-v4", REMAT_LAYOUT_GENERIC}, {"tpu-v5e", REMAT_LAYOUT_V5E},
                 {"tpu-v6e", REMAT_LAYOUT_V5E},    {"tpu-v5p", REMAT_LAYOUT_V5P},
                 {"tpu7x", REMAT_LAYOUT_7X}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strcmp(kinds[i].hardware, hardware) == 0) {
            *kind = kinds[i].kind;
            return true;
        }
    }
    return false;
}

remat_status_t remat_topology_parse(const char *name, const char *source, const char *path,
                                    remat_topology_t *out, remat_error_t *err) {
    memset(out, 0, sizeof *out);
    const char *dash = strrchr(name, '-');
    /* the family is everything before the count: "tpu-v5p-8" keeps "tpu-v5p" */
    char family[32];
    const char *hardware = NULL;
    if (dash && (size_t)(dash - name) < sizeof family) {
        memcpy(family, name, (size_t)(dash - name));
        family[dash - name] = '\0';
        hardware = remat_hw_family(family);
    }
    if (!dash) {
        return bad_name(name, source, path, "needs a count or a chip grid: NAME-N or NAME-AxBxC",
                        err);
    }
    if (dash > name && dash[-1] == '-') {
        return bad_name(name, source, path, "needs a positive count or a chip grid after '-'",
                        err);
    }
    if (!hardware) {
        return bad_name(name, source, path, "names no known chip family", err);
    }
    remat_hw_t hw;
    remat_error_t hw_err;
    remat_error_init(&hw_err);
    remat_status_t st = remat_hw_resolve(hardware, &hw, &hw_err);
    if (st == REMAT_E_NOMEM) {
        /* loading the profile ran out of memory: that, not a broken built-in */
        return remat_error_set(err, st, source ? source : hw_err.source, path, "%s", hw_err.text);
    }
    if (st != REMAT_OK) {
        return remat_error_set(err, REMAT_E_INTERNAL, source, path,
                               "built-in hardware '%s' does not load", hardware);
    }
    snprintf(out->hardware, sizeof out->hardware, "%s", hardware);
    uint64_t units;
    const bool tpu = layout_kind(hardware, &out->slice.kind);
    if (grid(dash + 1, &out->chips, out->slice.grid)) {
        if (!remat_i_mul(out->chips, hw.devices_per_chip, &out->devices)) {
            return bad_name(name, source, path, "is too large", err);
        }
        out->has_grid = tpu;
        return REMAT_OK;
    }
    if (!small_number(dash + 1, strlen(dash + 1), &units)) {
        return bad_name(name, source, path, "needs a positive count or a chip grid after '-'",
                        err);
    }
    /* NAME-N counts TensorCores: N / cores_per_chip chips. */
    if (units % hw.cores_per_chip) {
        return bad_name(name, source, path, "counts TensorCores, and this is not a whole chip",
                        err);
    }
    out->chips = units / hw.cores_per_chip;
    out->devices = out->chips * hw.devices_per_chip;
    out->has_grid = tpu && remat_i_slice_grid(hardware, units, out->slice.grid);
    return REMAT_OK;
}
