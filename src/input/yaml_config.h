/* SPDX-License-Identifier: MIT */
/*
 * yaml_config.h: MaxText's YAML configs read into settings (key, text
 * value), the way MaxText's pyconfig reads them: a file's top-level mapping,
 * its base_config chain first, so that a later setting overrides an earlier
 * one (base < file). Internal to the library; config.c turns the settings
 * into a remat_config_t.
 *
 * Ownership: a remat_yaml_config_t owns its settings and their strings;
 * release it with remat_i_yaml_release (safe on a zeroed or partly built
 * one). Every allocation is fallible (REMAT_E_NOMEM), libyaml's own aside.
 */
#ifndef REMAT_YAML_CONFIG_H
#define REMAT_YAML_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "remat/base/error.h"
#include "remat/base/limits.h"

/* REMAT_YAML_MAX_CHAIN: remat/base/limits.h */

typedef struct remat_yaml_setting {
    char *key;
    /* A scalar's text as YAML 1.1 resolves a plain scalar (True -> true,
       500_000 -> 500000, ~ -> ""); a list or mapping in flow style. */
    char *value;
    bool scalar; /* false for a list or a mapping */
    bool cut;    /* the text was cut at its buffer's size (4 KiB) */
    int line;    /* 1-based line in its file */
    const char *source; /* the file it came from: one of the config's sources */
} remat_yaml_setting_t;

typedef struct remat_yaml_config {
    remat_yaml_setting_t *settings; /* the chain's root first */
    size_t n, cap;
    char **sources; /* the files read, the one named first, then its bases */
    size_t nsources;
    /* The chain ended at MaxText's base.yml, which is not read: remat's
       defaults are base.yml's (docs/config.md, YAML configs). */
    bool maxtext_base;
} remat_yaml_config_t;

/* Reads @p path and its base_config chain into @p out (zeroed first).
   base_config is looked up relative to the file that names it; a base.yml
   that is not there (named directly or as a base), or a file named base.yml
   with no base_config of its own, is MaxText's base config and ends the
   chain (maxtext_base). Errors name the
   file and the line: REMAT_E_IO (a base_config that is not a regular file
   among them), REMAT_E_SYNTAX, REMAT_E_SCHEMA (a root that is not a
   mapping, a key that is not a string, a chain too long or a cycle,
   aliases that expand past the budget, nesting past REMAT_YAML_MAX_DEPTH),
   REMAT_E_NOMEM. An empty document sets nothing. On error @p out is
   released. */
remat_status_t remat_i_yaml_load(const char *path, remat_yaml_config_t *out, remat_error_t *err);

/* As remat_i_yaml_load, the file's own text given (read once by the
   caller: standard input cannot be read twice); @p name names it in errors
   and is where its base_config is looked up from ("<stdin>": the working
   directory). A path of "-" to remat_i_yaml_load reads standard input. */
remat_status_t remat_i_yaml_load_text(const char *name, const char *text, size_t len,
                                      remat_yaml_config_t *out, remat_error_t *err);

/* Parses one YAML text (no chain) and appends its settings to @p out (a
   merge key's, "<<: *anchor", first, as PyYAML merges them); sets
   *base_config to a copy of its base_config value (caller frees) or NULL.
   @p source must outlive @p out. */
remat_status_t remat_i_yaml_parse(const char *text, size_t len, const char *source,
                                  remat_yaml_config_t *out, char **base_config,
                                  remat_error_t *err);

void remat_i_yaml_release(remat_yaml_config_t *c);

/* Whether @p path names a YAML file (.yml or .yaml). */
bool remat_i_is_yaml_path(const char *path);

#endif
