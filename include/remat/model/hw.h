/* SPDX-License-Identifier: MIT */
/*
 * remat/model/hw.h: hardware profiles (hardware/NAME.json, format
 * "remat-hardware/2"; "remat-hardware/1" files still load, as one device per
 * chip whose usable HBM is all of it).
 *
 * A profile states a CHIP: its HBM, bandwidths and peak FLOP/s as the vendor
 * publishes them, and how many JAX devices the chip shows (TPU7x is a
 * dual-chiplet chip: two devices of half the chip each). MaxText's
 * per_device_batch_size, its mesh axes and XLA's memory limit all count
 * devices, so the loader derives the per-device figures the simulator uses:
 * each per-chip quantity divided by devices_per_chip. The per-device HBM a
 * step may use by default is `hbm_limit_bytes`, the figure XLA prints as
 * "Used X of Y hbm" (less than the nominal HBM: the runtime keeps some).
 * A value no public source gives is listed in `assumed`, and every report
 * that uses it says so.
 */
#ifndef REMAT_HW_H
#define REMAT_HW_H

#include <stdbool.h>
#include <stdint.h>

#include "remat/base/error.h"

typedef struct remat_hw {
    char name[64];
    char description[256];
    uint64_t devices_per_chip;  /* JAX devices one chip shows (TPU7x: 2) */
    uint64_t cores_per_chip;    /* TensorCores, which slice names count (v5p: 2 in 1 device) */
    /* per chip, as published */
    uint64_t chip_hbm_bytes;
    double chip_flops_bf16, chip_flops_fp8, chip_hbm_bw;
    /* per JAX device (chip figures / devices_per_chip) */
    uint64_t hbm_bytes;         /* nominal HBM of one device */
    uint64_t hbm_limit_bytes;   /* what XLA lets one device's program use */
    double hbm_bw;              /* bytes/s */
    double flops_bf16;          /* dense peak FLOP/s */
    double flops_fp8;
    double host_link_bw;        /* bytes/s per direction, device <-> host */
    double ici_bw;              /* bytes/s, bidirectional */
    /* hosts */
    uint64_t chips_per_host;
    uint64_t devices_per_host;  /* chips_per_host x devices_per_chip */
    uint64_t host_ram_bytes;    /* per host */
    /* The fraction of the peak a step sustains, by kind of work (fitted to
       published step times, docs/time-model.md): weight and activation
       matmuls, the flash attention kernel, and HBM traffic of the rest. */
    double matmul_efficiency, attention_efficiency, memory_efficiency;
    /* What XLA adds to the simulated liveness (temporaries, fragmentation),
       as a fraction of the transient bytes at each moment: fitted to the
       compile reports in the validation suite (docs/memory-model.md). */
    double reserve_fraction;
    char assumed[256];          /* comma-separated field names that are assumptions */
    /* The compiler's backend: layout and scheduling rules read from
       XLA:TPU's compiles (the sim's) hold only where it is the TPU's. */
    bool xla_gpu;
    /* The side of the chip's matrix units (TPU v4, v5e, v5p: 128; v6e,
       TPU7x: 256); 0 where the profile does not say. XLA:TPU's layouts
       follow it (the sim's relaid inputs). */
    uint64_t mxu_size;
} remat_hw_t;

/** Parses a profile. @p source names it in errors. */
remat_status_t remat_hw_load_string(const char *text, const char *source, remat_hw_t *out,
                                    remat_error_t *err);

/** The built-in profile a chip family names ("v6e", "Trillium", "v5litepod",
    "a3ultra", "tpu-v4", ...; any case), or NULL. Static storage. */
const char *remat_hw_family(const char *family);

/** A built-in profile by its name or a family name (remat_hw_family), or a
    file when @p name ends in ".json". A built-in is parsed once per process
    and copied from then on (a process-wide cache); a file every call. */
remat_status_t remat_hw_resolve(const char *name, remat_hw_t *out, remat_error_t *err);

/** Whether field @p field ("host_link_bw") is an assumption. */
bool remat_hw_is_assumed(const remat_hw_t *hw, const char *field);

#endif
