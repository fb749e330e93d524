/* SPDX-License-Identifier: MIT */
/*
 * remat/input/graph_file.h: graph files (docs/graph-format.md) read into
 * graphs. The input layer owns the reading because a graph's dims name the
 * config's size keys, which the loader checks; the graph itself (its types,
 * checks and freeing) is the model layer's (remat/model/graph.h).
 */
#ifndef REMAT_INPUT_GRAPH_FILE_H
#define REMAT_INPUT_GRAPH_FILE_H

#include "remat/base/error.h"
#include "remat/model/graph.h"

/**
 * Parses and validates a graph from a JSON text. @p source names it in errors.
 * @return REMAT_OK and a new graph in *out (free with remat_graph_free), or an
 * error status with @p err filled (file, JSON path, rule broken).
 */
remat_status_t remat_graph_load_string(const char *text, const char *source, remat_graph_t **out,
                                       remat_error_t *err);

/** As remat_graph_load_string, reading the file at @p path. */
remat_status_t remat_graph_load_file(const char *path, remat_graph_t **out, remat_error_t *err);

#endif
