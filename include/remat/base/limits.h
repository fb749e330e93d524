/* SPDX-License-Identifier: MIT */
/*
 * remat/base/limits.h: every limit remat puts on its input, in one place, so that
 * the graph, policy, hardware and config loaders, the simulator and the
 * solver agree (a name a graph may hold fits a policy, a table cell and the
 * solver's policy file), and so that every command stays under a second on
 * any input the limits admit. docs/config.md (Limits) lists them for users.
 * Each limit that a loader checks is also the one the code after it relies
 * on: raising one is a change to review, not a constant to bump.
 */
#ifndef REMAT_LIMITS_H
#define REMAT_LIMITS_H

#include <stddef.h>
#include <stdint.h>

/* "No index": what a lookup by name returns when nothing has the name
   (a tensor, a built-in, a stage), in every layer. */
#define REMAT_NONE ((size_t)-1)

/* Names: checkpoint, tensor, op, dim and graph names are 1 to
   REMAT_NAME_LEN - 1 characters (the buffers hold the NUL). */
#define REMAT_NAME_LEN 48

/* Strings of a config (model names, file paths, axis rules). */
#define REMAT_STR_LEN 256

/* The largest byte count remat represents (4 EiB): budgets and sizes above
   it are input errors, and any sum of bytes stays below 2^63 with room for
   signed deltas. */
#define REMAT_BYTES_MAX ((uint64_t)1 << 62)

/* The most decoder layers a config may have: 80x MaxText's deepest model
   (llama3.1-405b, 126), and small enough that an analysis and its per-layer
   tables stay well under a second. */
#define REMAT_MAX_LAYERS 10000

/* A graph: dims per tensor, inputs and outputs per op, checkpoint names per
   tensor (a table cell holds four), named dims per graph. */
#define REMAT_MAX_RANK 8
#define REMAT_MAX_IO 8
#define REMAT_MAX_TAGS 4
#define REMAT_MAX_DIMS 64
/* Layer kinds of one graph's stack (dense, MoE, local, global, ...). */
#define REMAT_MAX_KINDS 8

/* A policy's layer ranges; custom placements in one config. */
#define REMAT_MAX_RANGES 64
#define REMAT_MAX_CUSTOM 32

/* Logical axis rules of a mesh (MaxText's base.yml has 82), and the text of
   a config's overrides (a model file's rule list runs to a few KB). */
#define REMAT_MAX_RULES 96
#define REMAT_RULES_LEN 4096

/* Devices: one mesh axis, and the whole run (2^40, far past any slice). */
#define REMAT_MAX_AXIS_SIZE 1000000000
#define REMAT_MAX_DEVICES ((uint64_t)1 << 40)

/* Sequences in one micro-batch (per_device_batch_size x devices / steps). */
#define REMAT_MAX_SEQUENCES 1e15

/* Devices (TensorCores) per chip a hardware profile may give. */
#define REMAT_MAX_DEVICES_PER_CHIP 16

/* The most bytes an input file may hold (64 MiB: the largest built-in graph
   is under 100 KB); a larger one, or an endless one (/dev/zero), is an
   error rather than a read until memory runs out. */
#define REMAT_MAX_INPUT_BYTES ((size_t)64 << 20)

/* No read blocks forever: a pipe whose writer sends nothing for this long
   (milliseconds) is an error, and a FIFO that no writer opens within the
   grace is one at once (a writer that is opening it gets the grace). */
#define REMAT_PIPE_WAIT_MS 60000
#define REMAT_FIFO_GRACE_MS 200

/* A YAML config's base_config chain, the file itself included. */
#define REMAT_YAML_MAX_CHAIN 16

/* A YAML document's lists and mappings nest at most this deep, and the
   walks that write its values as text (aliases expanded) visit at most
   REMAT_YAML_MAX_VISITS nodes and write at most REMAT_YAML_MAX_TEXT bytes
   in all: a config far past any MaxText config's size, and a bound on an
   alias bomb's work. */
#define REMAT_YAML_MAX_DEPTH 64
#define REMAT_YAML_MAX_VISITS (1 << 18)
#define REMAT_YAML_MAX_TEXT (4 << 20)

/* The solver: checkpoint names it searches (2 x 3^39 placements fit 64
   bits), and the layer plans one search may make (docs/solver.md, Limits:
   7 to 16 s and under 300 MB in a Release build). A build may set the
   second lower; the fuzz targets do. */
#define REMAT_SOLVE_MAX_NAMES 40
/* The layer plans a quick search (REMAT_SOLVE_QUICK: the fix lines check
   and analyze print) may make before it gives up: a launch gate answers in
   well under a second whatever the model (DeepSeek's 17 names reach the
   full bound in seconds). */
#ifndef REMAT_SOLVE_QUICK_PLANS
#define REMAT_SOLVE_QUICK_PLANS 20000
#endif
#ifndef REMAT_SOLVE_MAX_PLANS
#define REMAT_SOLVE_MAX_PLANS 1000000
#endif

/* Policies one `compare` ranks. */
#define REMAT_MAX_COMPARED 64

#endif
