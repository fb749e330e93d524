/* SPDX-License-Identifier: MIT */
/*
 * remat/model/mesh.h: the device mesh (MaxText's ici_* and dcn_* parallelism keys)
 * and the logical axis rules that map a tensor dim's logical axis to mesh
 * axes. A dim is divided by the product of the shards of its mesh axes.
 */
#ifndef REMAT_MESH_H
#define REMAT_MESH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remat/base/error.h"
#include "remat/base/limits.h"

typedef enum remat_axis {
    REMAT_AXIS_DATA,
    REMAT_AXIS_FSDP,
    REMAT_AXIS_FSDP_TRANSPOSE,
    REMAT_AXIS_SEQUENCE,
    REMAT_AXIS_TENSOR,
    REMAT_AXIS_TENSOR_SEQUENCE,
    REMAT_AXIS_CONTEXT,
    REMAT_AXIS_EXPERT,
    REMAT_AXIS_STAGE, /* MaxText's pipeline axis */
    REMAT_AXIS_CONTEXT_USP,     /* context_usp_ulysses: Ulysses head exchange */
    REMAT_AXIS_AUTOREGRESSIVE,  /* decode-time axis; shards weights like tensor */
    REMAT_AXIS_COUNT
} remat_axis_t;

/** MaxText's mesh axis name ("fsdp", "tensor", "stage"). Static storage. */
const char *remat_axis_name(remat_axis_t a);

/** The key stem of an axis in ici_<stem>_parallelism ("pipeline" for stage). */
const char *remat_axis_key(remat_axis_t a);


typedef struct remat_axis_rule {
    char logical[48];  /* "activation_batch", "embed", ... */
    unsigned axes;     /* bit set of remat_axis_t */
    uint32_t hash;     /* of `logical` (remat_mesh_name_hash), to match without strcmp */
} remat_axis_rule_t;

#define REMAT_RULE_BUCKETS 64
#define REMAT_RULE_NONE 0xff

typedef struct remat_mesh {
    uint64_t devices;
    uint64_t shards[REMAT_AXIS_COUNT]; /* ici x dcn per axis */
    uint64_t ici[REMAT_AXIS_COUNT];    /* the ici part of each (a -1 filled): one slice's mesh */
    /* The rules, when the config has its own (logical_axis_rules, or
       override_logical_axis_rules); with MaxText's defaults alone
       (default_rules below) none are copied here (nrules is 0) and the
       functions below read the built-in table. */
    size_t nrules;
    remat_axis_rule_t rules[REMAT_MAX_RULES];
    /* The rules chained by hash bucket, each chain in rule order
       (REMAT_RULE_NONE ends it): a tensor's dims find their rules without
       scanning all of them. Built by remat_mesh_build. */
    uint8_t bucket_head[REMAT_RULE_BUCKETS];
    uint8_t bucket_next[REMAT_MAX_RULES];
    /* Whether the rules are MaxText's defaults alone (no
       override_logical_axis_rules, no logical_axis_rules): then a name's
       rules are those remat_mesh_default_name_rules gives, which a graph
       can look up once instead of once per mesh, and the fields above hold
       none of them. */
    bool default_rules;
} remat_mesh_t;

/* A mesh's shape: its devices and each axis's shards, what a result
   reports (remat_result_t's `mesh`), without the rules. */
typedef struct remat_mesh_shape {
    uint64_t devices;
    uint64_t shards[REMAT_AXIS_COUNT];
} remat_mesh_shape_t;

/** What a mesh is built from (input/config.h's remat_mesh_build fills it
    from a config): the devices, the slices (<= 0: one), each axis's ici
    and dcn parallelism (REMAT_AXIS_COUNT entries each, -1: fills), and the
    logical axis rules' text ("" for none) with whether it replaces
    MaxText's defaults. Borrowed: the arrays and text outlive the build. */
typedef struct remat_mesh_spec {
    uint64_t devices;
    int64_t num_slices;
    const int64_t *ici;
    const int64_t *dcn;
    bool override_rules;
    const char *rules;
} remat_mesh_spec_t;

/**
 * Resolves the mesh @p spec describes into @p mesh (caller's storage, no
 * allocation): -1 fills the devices the other axes leave; the product must
 * equal the devices. Then MaxText's default logical axis rules, with the
 * spec's rules overriding them. REMAT_E_CONFIG naming the axis when they
 * do not multiply out.
 */
remat_status_t remat_mesh_build_spec(const remat_mesh_spec_t *spec, remat_mesh_t *mesh,
                                     remat_error_t *err);

/** Mesh axes (bit set) a logical axis maps to by its first rule; 0 when
    unmapped or NULL. For a whole tensor use remat_mesh_tensor_axes. */
unsigned remat_mesh_axes(const remat_mesh_t *mesh, const char *logical);

/**
 * The mesh axes of each dim of one tensor whose dims have the logical names
 * @p logical[0..rank) (NULL: replicated), as flax resolves them: the rules
 * are tried in order, and a rule applies to the first dim that has its
 * logical name when that dim is still unassigned and none of the rule's
 * mesh axes is used by another dim of the tensor. @p out gets @p rank bit
 * sets.
 */
void remat_mesh_tensor_axes(const remat_mesh_t *mesh, const char *const *logical, size_t rank,
                            unsigned *out);

/** The words of a bit set over a mesh's rules (bit i: mesh->rules[i]). */
#define REMAT_RULE_WORDS ((REMAT_MAX_RULES + 63) / 64)

/** The rules whose logical name is @p logical (@p hash its
    remat_mesh_name_hash) as a bit set into @p out; none for NULL.
    Returns the mesh axes of the first of them (0 when none). */
unsigned remat_mesh_name_rules(const remat_mesh_t *mesh, const char *logical, uint32_t hash,
                               uint64_t out[REMAT_RULE_WORDS]);

/** remat_mesh_name_rules of a mesh whose rules are the defaults alone
    (`default_rules`), without a mesh: the same bit set and first rule's
    axes, for any such mesh. */
unsigned remat_mesh_default_name_rules(const char *logical, uint32_t hash,
                                       uint64_t out[REMAT_RULE_WORDS]);

/** Whether flax gives each dim of a tensor whose dims have the rules
    @p rules (as for remat_mesh_tensor_axes_ruled) its name's first rule:
    no two dims share a rule, and no two first rules share a mesh axis.
    When true, @p out gets each dim's axes (those of its first rule). */
bool remat_mesh_first_rules(const remat_mesh_t *mesh, const uint64_t *const *rules, size_t rank,
                            unsigned *out);

/** remat_mesh_tensor_axes from each dim's rules (@p rules[d], the
    REMAT_RULE_WORDS words remat_mesh_name_rules gives for its name): a
    caller resolving many tensors finds each name's rules once. */
void remat_mesh_tensor_axes_ruled(const remat_mesh_t *mesh, const uint64_t *const *rules,
                                  size_t rank, unsigned *out);

/** The hash rules carry for their logical name (FNV-1a, 32 bits). */
uint32_t remat_mesh_name_hash(const char *name);

/** Product of the shards of a bit set of axes. */
uint64_t remat_mesh_product(const remat_mesh_t *mesh, unsigned axes);

/** "fsdp x tensor" for messages. */
void remat_mesh_axes_text(unsigned axes, char *buf, size_t size);

#endif
