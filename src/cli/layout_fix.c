/* SPDX-License-Identifier: MIT */
/*
 * cli/layout_fix.c: the nearest ICI mesh JAX can lay out, for a run whose
 * mesh it cannot (REMAT_HINT_MESH_LAYOUT; layout_fix.h). The run's sharded
 * ICI axes (and its -1 axis) share the slice's devices again, every split
 * whose sizes are divisors is tried on the slice's grid with the library's
 * rule (mesh_layout.h), and the nearest that lays out, by the summed
 * log-distance of its sizes from the run's, is named, once the whole run
 * with it has built and analyzed.
 *
 * Invariants: at most LAYOUT_AXES axes are redistributed (more gives no
 * suggestion, not a slow search); a candidate keeps the run's per-slice
 * device count; ties go to the split that leaves every sharded axis
 * sharded, then to the first found (axes in mesh_axes order, sizes
 * ascending), so the suggestion is the same on every run.
 */
#include "cli/layout_fix.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/job.h"
#include "remat/input/config.h"
#include "remat/input/topology.h"
#include "remat/model/mesh.h"
#include "remat/model/mesh_layout.h"

/* LAYOUT_AXES axes of at most DIVISORS sizes each, and at most TRIES
   layouts tried (each about a microsecond): a slice of any size, a
   fuzzer's 2^40 devices among them, answers in well under a second. */
enum { LAYOUT_AXES = 4, DIVISORS = 128, KEEP = 6, TRIES = 100000 };

typedef struct candidate {
    uint64_t shape[REMAT_LAYOUT_AXES];
    double distance;
    bool keeps_sharding; /* every axis sharded in the run stays above 1 */
} candidate_t;

typedef struct search {
    const remat_layout_slice_t *slice;
    const uint64_t *run; /* the run's shape */
    unsigned axes[LAYOUT_AXES];
    size_t naxes;
    uint64_t divisors[DIVISORS];
    size_t ndivisors;
    candidate_t best[KEEP]; /* nearest first */
    size_t nbest;
    size_t tries;
} search_t;

static bool before(const candidate_t *a, const candidate_t *b) {
    if (fabs(a->distance - b->distance) > 1e-9) {
        return a->distance < b->distance;
    }
    return a->keeps_sharding && !b->keeps_sharding;
}

/* Keeps @p c among the KEEP nearest, in order (a stable insert). */
static void consider(search_t *s, const uint64_t *shape) {
    candidate_t c = {.distance = 0, .keeps_sharding = true};
    memcpy(c.shape, shape, sizeof c.shape);
    for (size_t k = 0; k < s->naxes; k++) {
        const unsigned a = s->axes[k];
        c.distance += fabs(log2((double)shape[a] / (double)s->run[a]));
        c.keeps_sharding = c.keeps_sharding && (s->run[a] == 1 || shape[a] > 1);
    }
    size_t at = s->nbest;
    while (at > 0 && before(&c, &s->best[at - 1])) {
        at--;
    }
    if (at >= KEEP) {
        return;
    }
    const size_t moved = (s->nbest < KEEP ? s->nbest : KEEP - 1) - at;
    memmove(&s->best[at + 1], &s->best[at], moved * sizeof c);
    s->best[at] = c;
    s->nbest += s->nbest < KEEP;
}

/* Every split of @p left devices over axes k.. (each a divisor). */
static void split(search_t *s, size_t k, uint64_t left, uint64_t *shape) {
    if (k + 1 == s->naxes) {
        if (++s->tries > TRIES) {
            return;
        }
        shape[s->axes[k]] = left;
        remat_layout_t l;
        remat_layout_assign(s->slice, shape, &l);
        if (l.lays_out && memcmp(shape, s->run, sizeof(uint64_t) * REMAT_LAYOUT_AXES) != 0) {
            consider(s, shape);
        }
        return;
    }
    for (size_t i = 0; i < s->ndivisors && s->divisors[i] <= left; i++) {
        if (left % s->divisors[i] == 0) {
            shape[s->axes[k]] = s->divisors[i];
            split(s, k + 1, left / s->divisors[i], shape);
        }
    }
}

/* The candidate's changed axes as settings ("ici_tensor_parallelism=4"). */
static void settings_of(const search_t *s, const candidate_t *c, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < s->naxes && n < size; k++) {
        const unsigned a = s->axes[k];
        if (c->shape[a] != s->run[a]) {
            int w = snprintf(buf + n, size - n, "%sici_%s_parallelism=%llu", n ? " " : "",
                             remat_axis_key(remat_layout_axis_of(a)),
                             (unsigned long long)c->shape[a]);
            n += w > 0 ? (size_t)w : 0;
        }
    }
}

/* The search's axes and divisors from the run's config and mesh; false
   when there is nothing to redistribute or too much. */
static bool prepare(search_t *s, const remat_config_t *c, uint64_t devices) {
    for (unsigned i = 0; i < REMAT_LAYOUT_AXES; i++) {
        const remat_axis_t a = remat_layout_axis_of(i);
        if (a < REMAT_AXIS_COUNT && (s->run[i] > 1 || c->ici[a] < 0)) {
            if (s->naxes == LAYOUT_AXES) {
                return false;
            }
            s->axes[s->naxes++] = i;
        }
    }
    /* the divisors by trial up to the square root, each with its partner:
       ascending, the small ones first then the partners from the top */
    uint64_t high[DIVISORS];
    size_t nhigh = 0;
    for (uint64_t d = 1; d <= devices / d; d++) {
        if (devices % d) {
            continue;
        }
        if (s->ndivisors == DIVISORS || nhigh == DIVISORS) {
            return false;
        }
        s->divisors[s->ndivisors++] = d;
        if (d != devices / d) {
            high[nhigh++] = devices / d;
        }
    }
    while (nhigh > 0 && s->ndivisors < DIVISORS) {
        s->divisors[s->ndivisors++] = high[--nhigh];
    }
    return s->naxes >= 2 && nhigh == 0;
}

bool remat_cli_nearest_layout(const remat_cli_opts_t *o, remat_cli_analyzes_fn analyzes,
                              char *buf, size_t size) {
    buf[0] = '\0';
    remat_config_t c;
    remat_mesh_t m;
    remat_topology_t t;
    remat_error_t err;
    remat_error_init(&err);
    if (remat_cli_config_build(o, &c, &err)) {
        return false;
    }
    c.allow_split_physical_axes = true; /* the run's mesh itself, unchecked */
    if (remat_mesh_build(&c, &m, &err) ||
        remat_topology_parse(c.topology, NULL, "topology", &t, &err) || !t.has_grid) {
        return false;
    }
    uint64_t run[REMAT_LAYOUT_AXES], shape[REMAT_LAYOUT_AXES];
    remat_layout_shape(&m, run);
    search_t s = {.slice = &t.slice, .run = run};
    if (!prepare(&s, &c, t.devices)) {
        return false;
    }
    memcpy(shape, run, sizeof shape);
    split(&s, 0, t.devices, shape);
    for (size_t i = 0; i < s.nbest; i++) {
        settings_of(&s, &s.best[i], buf, size);
        if (buf[0] && analyzes(o, buf)) {
            return true;
        }
    }
    buf[0] = '\0';
    return false;
}
