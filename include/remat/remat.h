/* SPDX-License-Identifier: MIT */
/*
 * remat/remat.h: remat's public C API, one include. What the CLI, the
 * bench, the validation tools and bindings (the Python package) call.
 *
 * The headers follow the library's layers (src/layers.txt), lowest first;
 * each may include only headers of its own layer or below:
 *   base   remat/base/error.h (status codes, the error struct), limits.h,
 *          version.h
 *   data   remat/data/builtin.h: the embedded graphs, policies, models and
 *          hardware profiles, by name
 *   model  remat/model/graph.h (graphs, ops, dtypes), policy.h (policies
 *          and layer plans), hw.h (hardware profiles), mesh.h (meshes and
 *          logical axis rules)
 *   input  remat/input/config.h (a run's settings, MaxText's keys and
 *          YAML, its mesh), topology.h (slice names), graph_file.h (graph
 *          files), resolve.h (a config's names made into objects)
 *   sim    remat/sim/sim.h (the step simulated: remat_analyze and its
 *          result), timeline.h (the step event by event)
 *   solve  remat/solve/solve.h: the fastest placement that fits, the
 *          largest batches, the fixes for a run that does not fit
 *   view   remat/view/report.h (text, JSON, CSV, Markdown, HTML), chart.h
 *          (SVG and terminal charts)
 *
 * The contract every function keeps, so that each declaration's comment
 * says only what differs:
 *  - Errors: a fallible function returns remat_status_t (REMAT_OK, 0, on
 *    success) and takes a remat_error_t *err last, which it fills on
 *    failure with the file, key or JSON path and one line of what is wrong
 *    (remat_error_format prints it). On failure its outputs hold nothing to
 *    free, unless its comment says to release them either way.
 *  - Ownership: a function that makes an object returns it through an out
 *    pointer and the caller owns it: remat_X_free frees a heap object
 *    (graph, policy; NULL is a no-op), remat_X_release frees what a
 *    caller-storage struct holds after remat_X_init (result, timeline,
 *    solution, plan, fixes). Pointers a function takes are borrowed for the
 *    call unless its comment says the result borrows them (a result
 *    borrows nothing: it owns its tables). Built-in texts and names are
 *    static storage.
 *  - Threads: no function holds global mutable state except the cache of
 *    built-ins, which is safe for any number of threads; distinct results,
 *    graphs and policies may be used from distinct threads at once.
 *  - Writers (view) write to a FILE * the caller opened and never fail:
 *    they report no error, and a short write is the stream's to tell.
 */
#ifndef REMAT_REMAT_H
#define REMAT_REMAT_H

#include "remat/base/error.h"
#include "remat/base/limits.h"
#include "remat/base/version.h"
#include "remat/data/builtin.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/mesh.h"
#include "remat/model/policy.h"
#include "remat/input/config.h"
#include "remat/input/graph_file.h"
#include "remat/input/resolve.h"
#include "remat/input/topology.h"
#include "remat/sim/sim.h"
#include "remat/sim/timeline.h"
#include "remat/solve/solve.h"
#include "remat/view/chart.h"
#include "remat/view/report.h"

#endif
