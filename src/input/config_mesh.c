/* SPDX-License-Identifier: MIT */
/*
 * config_mesh.c: the mesh a config describes (config.h: remat_mesh_build,
 * remat_mesh_microbatches). The model layer builds meshes from a spec and
 * knows no config (src/layers.txt); this room is where the config's mesh
 * keys meet it.
 *
 * Invariants: the spec borrows the config's arrays and rule text for the
 * build only; a config's ici and dcn arrays have REMAT_AXIS_COUNT entries
 * (asserted at compile time).
 */
#include <stddef.h>

#include "remat/input/config.h"
#include "remat/model/mesh.h"
#include "input/config_internal.h"

_Static_assert(sizeof(((remat_config_t *)0)->ici) == REMAT_AXIS_COUNT * sizeof(int64_t),
               "a config names every mesh axis's ici parallelism");
_Static_assert(sizeof(((remat_config_t *)0)->dcn) == REMAT_AXIS_COUNT * sizeof(int64_t),
               "a config names every mesh axis's dcn parallelism");

remat_status_t remat_mesh_build(const remat_config_t *cfg, remat_mesh_t *m, remat_error_t *err) {
    const remat_mesh_spec_t spec = {
        .devices = cfg->num_devices,
        .num_slices = cfg->num_slices,
        .ici = cfg->ici,
        .dcn = cfg->dcn,
        .override_rules = cfg->override_logical_axis_rules,
        .rules = cfg->logical_axis_rules,
    };
    return remat_mesh_build_spec(&spec, m, err);
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

