/* SPDX-License-Identifier: MIT */
/*
 * config_mesh.c: the mesh a config describes (config.h: remat_mesh_build,
 * remat_mesh_microbatches). The model layer builds meshes from a spec and
 * knows no config (src/layers.txt); this room is where the config's mesh
 * keys meet it.
 *
 * A mesh that multiplies out must also lay out: where the topology names a
 * TPU slice whose chip grid is known, JAX must find whole physical axes for
 * each ICI axis (mesh_layout.h), or MaxText stops before it compiles.
 *
 * Invariants: the spec borrows the config's arrays and rule text for the
 * build only; a config's ici and dcn arrays have REMAT_AXIS_COUNT entries
 * (asserted at compile time).
 */
#include <assert.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "remat/input/config.h"
#include "remat/input/topology.h"
#include "remat/model/mesh.h"
#include "remat/model/mesh_layout.h"
#include "input/config_internal.h"

_Static_assert(sizeof(((remat_config_t *)0)->ici) == REMAT_AXIS_COUNT * sizeof(int64_t),
               "a config names every mesh axis's ici parallelism");
_Static_assert(sizeof(((remat_config_t *)0)->dcn) == REMAT_AXIS_COUNT * sizeof(int64_t),
               "a config names every mesh axis's dcn parallelism");

/* The one line that says why JAX cannot lay @p m out on @p t's grid. */
static remat_status_t no_layout(const remat_config_t *cfg, const remat_topology_t *t,
                                const remat_layout_t *l, remat_error_t *err) {
    const remat_axis_t a = remat_layout_axis_of(l->axis);
    /* only an axis above 1 fails, and the two remat has not are always 1 */
    assert(a < REMAT_AXIS_COUNT && "a failed axis is one of remat's");
    char key[64], left[64];
    snprintf(key, sizeof key, "ici_%s_parallelism", remat_axis_key(a));
    int n = 0;
    for (unsigned d = 0; d < l->ndim && n >= 0 && (size_t)n < sizeof left; d++) {
        n += snprintf(left + n, sizeof left - (size_t)n, "%s%" PRIu64, d ? ", " : "",
                      l->remaining[d]);
    }
    const bool fresh = err && err->code == REMAT_OK;
    remat_status_t st = remat_error_set(
        err, REMAT_E_CONFIG, NULL, key,
        "%" PRIu64 "%s does not lay out on topology=%s (chips %" PRIu64 "x%" PRIu64 "x%" PRIu64
        "): JAX gives each ICI axis whole physical axes of the slice, expert's first and data's "
        "last, and none of those left [%s] multiply to %" PRIu64 ", so MaxText stops before it "
        "compiles; set allow_split_physical_axes=true, or make each ICI axis a product of "
        "whole axes",
        l->size, cfg->ici[a] < 0 ? " (its -1 filled)" : "", cfg->topology, t->slice.grid[0],
        t->slice.grid[1], t->slice.grid[2], left, l->size);
    if (fresh) {
        err->hint = REMAT_HINT_MESH_LAYOUT;
    }
    return st;
}

/* JAX's layout of the mesh on the topology's chip grid, when it is known
   and MaxText does not let JAX split physical axes; each slice of several
   gets the same ICI mesh (create_hybrid_device_mesh). */
static remat_status_t check_layout(const remat_config_t *cfg, const remat_mesh_t *m,
                                   remat_error_t *err) {
    if (cfg->allow_split_physical_axes || !cfg->topology[0]) {
        return REMAT_OK;
    }
    remat_topology_t t;
    remat_error_t ignored; /* the config parsed it once already */
    remat_error_init(&ignored);
    if (remat_topology_parse(cfg->topology, NULL, "topology", &t, &ignored) || !t.has_grid) {
        return REMAT_OK;
    }
    uint64_t shape[REMAT_LAYOUT_AXES], per_slice = 1;
    remat_layout_shape(m, shape);
    for (unsigned i = 0; i < REMAT_LAYOUT_AXES; i++) {
        per_slice *= shape[i]; /* each divides the devices: no overflow */
    }
    if (per_slice != t.devices) { /* ICI over more than one slice: MaxText refuses it itself */
        return REMAT_OK;
    }
    remat_layout_t l;
    remat_layout_assign(&t.slice, shape, &l);
    return l.lays_out ? REMAT_OK : no_layout(cfg, &t, &l, err);
}

remat_status_t remat_mesh_build(const remat_config_t *cfg, remat_mesh_t *m, remat_error_t *err) {
    const remat_mesh_spec_t spec = {
        .devices = cfg->num_devices,
        .num_slices = cfg->num_slices,
        .ici = cfg->ici,
        .dcn = cfg->dcn,
        .override_rules = cfg->override_logical_axis_rules,
        .rules = cfg->logical_axis_rules,
    };
    remat_status_t st = remat_mesh_build_spec(&spec, m, err);
    return st ? st : check_layout(cfg, m, err);
}

unsigned remat_i_config_pipeline_delay(const remat_config_t *cfg) {
    return cfg->pipeline_delay_activation_forwarding ? 2u : 1u;
}

uint64_t remat_mesh_microbatches(const remat_mesh_t *m, const remat_config_t *cfg) {
    uint64_t stages = m->shards[REMAT_AXIS_STAGE];
    if (stages <= 1) {
        return 1;
    }
    /* MaxText's default (configs/types.py at e591f30): one per stage, two
       with delayed activation forwarding */
    return cfg->num_pipeline_microbatches
               ? cfg->num_pipeline_microbatches
               : stages * remat_i_config_pipeline_delay(cfg);
}

