/* SPDX-License-Identifier: MIT */
/*
 * remat/hw.h: per-chip hardware profiles (hardware/NAME.json, format
 * "remat-hardware/1"). A value no public source gives is listed in
 * `assumed`, and every report that uses it says so.
 */
#ifndef REMAT_HW_H
#define REMAT_HW_H

#include <stdbool.h>
#include <stdint.h>

#include "remat/error.h"

typedef struct remat_hw {
    char name[64];
    char description[256];
    uint64_t hbm_bytes;      /* HBM per chip */
    double hbm_bw;           /* bytes/s */
    double flops_bf16;       /* dense peak FLOP/s */
    double flops_fp8;
    double host_link_bw;     /* bytes/s per direction, chip <-> host */
    uint64_t chips_per_host;
    uint64_t host_ram_bytes; /* per host */
    double ici_bw;           /* bytes/s per chip, bidirectional */
    char assumed[256];       /* comma-separated field names that are assumptions */
} remat_hw_t;

/** Parses a profile. @p source names it in errors. */
remat_status_t remat_hw_load_string(const char *text, const char *source, remat_hw_t *out,
                                    remat_error_t *err);

/** A built-in profile by name, or a file when @p name ends in ".json". */
remat_status_t remat_hw_resolve(const char *name, remat_hw_t *out, remat_error_t *err);

/** Whether field @p field ("host_link_bw") is an assumption. */
bool remat_hw_is_assumed(const remat_hw_t *hw, const char *field);

#endif
