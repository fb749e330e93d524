/* SPDX-License-Identifier: MIT */
/*
 * fuzz_yaml.c: libFuzzer target for MaxText YAML configs: the YAML reader
 * (yaml_config.c) and the config builder fed its settings. Each input is
 * written to run.yml in a private temporary directory made at start-up,
 * beside a fixed base file team.yml, so that an input naming
 * `base_config: team.yml` (the dictionary holds it) walks a chain, and one
 * naming run.yml walks a cycle. A config that builds is resolved against
 * the built-ins, analyzed and printed to /dev/null.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "input/yaml_config.h"

static const fuzz_fixtures_t *fx;
static char dir[256];
static char path[300], base[300];

static void remove_dir(void) {
    unlink(path);
    unlink(base);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fx = fuzz_fixtures_init();
    fuzz_make_dir("remat-fuzz-yaml", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/run.yml", dir);
    snprintf(base, sizeof base, "%s/team.yml", dir);
    FILE *f = fopen(base, "w");
    if (!f) {
        abort();
    }
    fputs("base_config: base.yml\nper_device_batch_size: 2\nmodel_name: llama2-7b\n"
          "steps: 10\nici_fsdp_parallelism: -1\nnum_devices: 8\n",
          f);
    fclose(f);
    atexit(remove_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* The reader on the bytes as they are (no file, no chain). */
    remat_yaml_config_t y = {0};
    remat_error_t err;
    remat_error_init(&err);
    char *named = NULL;
    (void)remat_i_yaml_parse((const char *)data, size, "input.yml", &y, &named, &err);
    free(named);
    remat_i_yaml_release(&y);
    /* The whole builder on the file. */
    fuzz_write_file(path, data, size);
    fuzz_build_file_and_run(fx, path);
    return 0;
}
