/* SPDX-License-Identifier: MIT */
/*
 * seedtool.c: seed.sh's helper (not a fuzz target). Reads a JSON file and
 * prints on stdout, so that seeds stay short and libFuzzer's -max_len cuts
 * none of them:
 *   seedtool FILE            the document, compact
 *   seedtool FILE KEY        its member KEY, compact (a model preset's
 *                            "config" object is a config file)
 *   seedtool --args FILE KEY the members of object KEY as key=value lines
 *                            (the same preset as command-line settings)
 * Exit 1 when the file does not parse or lacks KEY.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

static int print_args(const json_t *obj) {
    const char *key;
    json_t *v;
    if (!json_is_object(obj)) {
        return 1;
    }
    json_object_foreach((json_t *)obj, key, v) {
        if (json_is_string(v)) {
            printf("%s=%s\n", key, json_string_value(v));
        } else if (json_is_integer(v)) {
            printf("%s=%lld\n", key, (long long)json_integer_value(v));
        } else if (json_is_real(v)) {
            printf("%s=%.17g\n", key, json_real_value(v));
        } else if (json_is_boolean(v)) {
            printf("%s=%s\n", key, json_is_true(v) ? "true" : "false");
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    int args = argc > 1 && strcmp(argv[1], "--args") == 0;
    if (args ? argc != 4 : argc != 2 && argc != 3) {
        fprintf(stderr, "usage: seedtool FILE [KEY] | seedtool --args FILE KEY\n");
        return 2;
    }
    json_error_t jerr;
    json_t *root = json_load_file(argv[1 + args], 0, &jerr);
    if (!root) {
        return 1;
    }
    json_t *v = argc == 3 + args ? json_object_get(root, argv[2 + args]) : root;
    int rc = 1;
    if (v && args) {
        rc = print_args(v);
    } else if (v) {
        rc = json_dumpf(v, stdout, JSON_COMPACT | JSON_ENCODE_ANY) == 0 ? 0 : 1;
    }
    json_decref(root);
    return rc;
}
