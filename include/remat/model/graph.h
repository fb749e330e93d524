/* SPDX-License-Identifier: MIT */
/*
 * remat/model/graph.h: the op graph of one transformer layer plus the model head,
 * with symbolic shapes. Loaded from JSON (docs/graph-format.md), validated,
 * then immutable: the simulator binds it to a config without changing it.
 *
 * Every tensor and op is addressed by its index in its block. A graph owns
 * all of its strings and arrays; remat_graph_free releases them. A loaded
 * graph allocates each on its own; a built-in graph from remat_resolve is
 * one allocation, the struct and everything it points to (`one_block`).
 * A caller may change either in place (an array's entries, a string's
 * bytes, within their lengths), but must not replace or free a pointer a
 * one-block graph holds: only remat_graph_free frees, and the whole block.
 */
#ifndef REMAT_GRAPH_H
#define REMAT_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remat/base/error.h"
#include "remat/base/limits.h"

typedef enum remat_dtype {
    REMAT_DTYPE_ACT,    /* the config's `dtype` (default bf16) */
    REMAT_DTYPE_WEIGHT, /* the config's `weight_dtype` (default fp32) */
    REMAT_DTYPE_F32,
    REMAT_DTYPE_BF16,
    REMAT_DTYPE_F16,
    REMAT_DTYPE_F8E4M3,
    REMAT_DTYPE_F8E5M2,
    REMAT_DTYPE_I32,
    REMAT_DTYPE_I8,
    REMAT_DTYPE_BOOL,
    REMAT_DTYPE_COUNT
} remat_dtype_t;

typedef enum remat_opkind {
    REMAT_OP_EINSUM,
    REMAT_OP_ADD,
    REMAT_OP_MUL,
    REMAT_OP_SCALE,
    REMAT_OP_SILU,
    REMAT_OP_GELU,
    REMAT_OP_SOFTMAX,
    REMAT_OP_RMSNORM,
    REMAT_OP_LAYERNORM,
    REMAT_OP_ROPE,
    REMAT_OP_DROPOUT,
    REMAT_OP_FLASH_ATTENTION,
    REMAT_OP_CAST,
    REMAT_OP_RESHAPE,
    REMAT_OP_TRANSPOSE,
    REMAT_OP_SPLIT,
    REMAT_OP_CONCAT,
    REMAT_OP_EMBEDDING,
    REMAT_OP_CROSS_ENTROPY,
    REMAT_OP_SIGMOID,
    REMAT_OP_TOP_K,
    REMAT_OP_GATHER,
    REMAT_OP_BROADCAST,
    REMAT_OP_TANH,
    REMAT_OP_ONE_HOT,
    REMAT_OP_COUNT
} remat_opkind_t;

/* A symbolic dimension: its size comes from a config key or is a constant. */
typedef struct remat_dim {
    char *name;
    char *from;     /* config key, e.g. "base_emb_dim"; NULL for a constant */
    char *div;      /* optional config key the size is divided by (GQA groups) */
    uint64_t value; /* the constant when from == NULL */
    char *axis;     /* logical axis of activations along this dim, or NULL */
    char *weight_axis; /* logical axis of params along this dim ("embed"), or NULL */
} remat_dim_t;

/* A tensor's `kept` placement (remat_tensor_t.kept). */
enum { REMAT_KEPT_NONE = 0, REMAT_KEPT_DEVICE, REMAT_KEPT_OFFLOAD };

typedef struct remat_tensor {
    char *name;
    size_t rank;
    size_t dim[REMAT_MAX_RANK]; /* indices into graph->dims */
    remat_dtype_t dtype;
    bool param;                   /* a weight: static memory, always available */
    /* a frozen param (`frozen`): no gradient flows from it (MaxText's
       freeze_vision_encoder_params stops the encoder's output's gradient),
       so it has no gradient buffer; it keeps its optimizer state (MaxText's
       optimizer is not masked) */
    bool frozen;
    bool input;                   /* a block input (layer input, tokens, ...) */
    size_t ntags;
    char *tags[REMAT_MAX_TAGS];   /* MaxText checkpoint names (checkpoint_name) */
    /* A param's gather group (`gather_group`): the params of one group are
       gathered together before the first op that reads one of them and held
       until the last has run (MaxText's MoE shard_map takes the expert
       weights as inputs); NULL: gathered by each op that reads it. */
    char *gather_group;
    /* Where a kind with its own residuals (`own_residuals`) keeps it
       (`kept`): REMAT_KEPT_NONE, rebuilt in backward whatever the policy;
       DEVICE or OFFLOAD, saved there (MaxText's batch-split schedule,
       whose custom_vjp returns its residuals itself). Ignored elsewhere. */
    unsigned char kept;
    bool has_axes;                /* `axes` given: it overrides the dims' axes */
    char *axes[REMAT_MAX_RANK];   /* logical axis per dim (NULL: replicated) */
    /* Derived at load time. */
    size_t producer;              /* op index or REMAT_NONE */
    size_t storage;               /* tensor whose buffer this one uses (views) */
    size_t last_use;              /* position in `order` of the last forward reader */
    bool needs_grad;              /* on a differentiable path to a block output */
    bool residual;                /* some op's backward reads it */
} remat_tensor_t;

typedef struct remat_op {
    char *name;
    remat_opkind_t kind;
    size_t nin, nout;
    size_t in[REMAT_MAX_IO];
    size_t out[REMAT_MAX_IO];
    /* einsum only: subscripts of each input, then of the output. */
    char subs[REMAT_MAX_IO + 1][REMAT_MAX_RANK + 1];
    bool causal;          /* softmax/flash: causal mask (FLOPs are not halved) */
    bool bhsd;            /* flash: operands are [batch,heads,seq,head_dim] (else bshd) */
    double value;         /* scale: the constant; dropout: the rate */
    /* einsum: indices whose per-device sizes divide its FLOPs (a grouped
       matmul: each row meets one expert of the group, not all of them) */
    char ragged[REMAT_MAX_RANK + 1];
    /* gather: the mesh axis its rows cross (MoE's all-to-all over "expert"),
       "" when local */
    char over[24];
    /* flash_attention: the integer config key of its own attention window
       (Gemma 2's local half of a pair), over its kind's; "" when none */
    char window[REMAT_NAME_LEN];
    /* operands another part of the step makes and holds, left out of `in`
       (`outer`): 1 for a mul (Gemma 4's per-layer input, which the head
       holds), 2 for a flash_attention (the keys and values of an earlier
       layer, KV sharing); their FLOPs count, their bytes are the holder's */
    unsigned char outer;
    /* the op runs outside the layer's checkpoint (`outside`: MaxText's
       decoder loop computes a Gemma 4 donor's keys and values before the
       layer): what it makes is kept whatever the policy */
    bool outside;
    size_t nsaves;        /* what its backward reads (rule or "saves") */
    size_t saves[2 * REMAT_MAX_IO];
    bool saves_override;
    bool has_backward;    /* some output needs a gradient */
} remat_op_t;

typedef struct remat_block {
    size_t ntensors, nops;
    remat_tensor_t *tensors;
    remat_op_t *ops;
    size_t *order;        /* ops in topological order (igraph) */
    size_t ninputs, noutputs;
    size_t *inputs, *outputs;
} remat_block_t;

/* A layer kind: one block of the layer stack and the rule that says which
   layers run it (docs/graph-format.md, "Mixed layer stacks"). Layer i runs
   the first kind, in stack order, whose rule takes it:
     first: i < cfg[first]             (DeepSeek's first dense layers)
     every: (i + 1) % cfg[every] == 0  (Llama 4's interleaved MoE layers,
                                        Gemma's global attention layers)
   both must hold when both are given; a kind with neither takes every layer
   left, and the last kind of the stack has neither. A uniform graph
   (`layer`) has one kind named "layer". */
typedef struct remat_kind {
    char *name;
    char *block_name;     /* its entry in `blocks`; NULL for a uniform graph's `layer` */
    remat_block_t block;
    char *first;          /* integer config key, or NULL */
    char *every;          /* integer config key, or NULL */
    uint64_t first_n, every_n; /* the rule as a constant when its key is NULL (0: none);
                                  MaxText fixes some patterns in code (Gemma 3's 6) */
    char *window;         /* integer config key: its attention ops see at most this
                             many positions (sliding-window, chunked); NULL: all */
    /* MaxText keeps on device what the policy offloads by name in these
       layers (Gemma 4's global layer: its scan's own save_only_these_names
       of the saved and offloaded names, models/gemma4.py); remat_resolve
       clears it under scan_layers=false, where every layer runs the
       config's policy */
    bool keeps_offloads;
    /* The kind saves its own residuals (`own_residuals`): its tensors'
       `kept` placements, whatever the policy (MaxText's batch-split MoE
       scan: a custom_vjp over the layers); the policy still places the
       other kinds' names */
    bool own_residuals;
    /* The kind's gather group is gathered one layer ahead (`gathers_ahead`):
       the next layer's copies (the previous one's in backward) are live
       through every op of the group's span, not only at its last (the
       batch-split scan gathers layer i + 1's weights while layer i runs) */
    bool gathers_ahead;
} remat_kind_t;

struct remat_graph_index; /* opaque: the simulator's index of a graph */

typedef struct remat_graph {
    char *name;
    char *description;
    char *source;         /* file name or "built-in graph 'NAME'" */
    size_t ndims;
    remat_dim_t *dims;
    size_t nkinds;        /* 1..REMAT_MAX_KINDS; every block has the same layer input */
    remat_kind_t *kinds;  /* in stack order */
    /* MaxText's expert-parallel MoE path (graph key expert_parallel): the
       analysis refuses it unless the expert mesh axis is sharded */
    bool expert_parallel;
    bool has_head;
    remat_block_t head;
    size_t head_feeds;    /* head tensor that is layer 0's input */
    size_t head_takes;    /* head tensor that is the last layer's output */
    size_t head_npre;     /* head->order[0..npre) runs before the layers */
    /* The bytes of the one allocation that starts at the graph and holds
       every string and array of it (a built-in graph from remat_resolve):
       remat_graph_free frees that block. 0: each is its own (a load). */
    size_t one_block;
    /* Derived when the graph is made, like the tensors' derived fields:
       what the simulator reads of the blocks that no config changes (op
       positions, buffer lifetimes, fusable tensors, checkpoint-name ids).
       Opaque; the graph owns it (inside the block of a one-block graph).
       Analyzing a graph without it (not made by the library) is an error. */
    const struct remat_graph_index *index;
} remat_graph_t;

/** Frees a graph and everything it owns. NULL is a no-op. */
void remat_graph_free(remat_graph_t *g);

/** Index of the tensor named @p name in @p b, or REMAT_NONE. */
size_t remat_block_find_tensor(const remat_block_t *b, const char *name);

/** Whether any tensor of any layer kind carries checkpoint name @p tag. */
bool remat_graph_has_tag(const remat_graph_t *g, const char *tag);

/** Whether tensor @p t of block @p b carries checkpoint name @p tag. */
bool remat_tensor_has_tag(const remat_tensor_t *t, const char *tag);

/**
 * The kind layer @p l runs (the remat_kind_t rule), given each kind's bound
 * rule: @p first[k] (UINT64_MAX without `first`) and @p every[k] (1 without
 * `every`; 0 takes no layer).
 */
size_t remat_graph_kind_of(const remat_graph_t *g, size_t l, const uint64_t *first,
                           const uint64_t *every);

/** Name of an op kind ("einsum") / dtype ("bf16", "act"). Static storage. */
const char *remat_opkind_name(remat_opkind_t k);
const char *remat_dtype_name(remat_dtype_t d);

/** Bytes per element of a concrete dtype (act/weight resolve via the config). */
unsigned remat_dtype_bytes(remat_dtype_t d);

/** Parses a dtype name, accepting MaxText's spellings (bfloat16, float32). */
bool remat_dtype_parse(const char *s, remat_dtype_t *out);

/** Whether an einsum op has no batch dimension (JAX's dot predicate); a
 * grouped matmul (`ragged`) is not a dot_general and never matches. */
bool remat_op_einsum_no_batch_dims(const remat_op_t *op);

#endif
