/* SPDX-License-Identifier: MIT */
/*
 * trace.c: the simulator's event buffer, filled only by a traced run
 * (remat_run_opts_t.trace; the timeline asks for one). An ordinary analysis
 * never reaches this file: the rooms test one pointer and go on.
 *
 * Invariants:
 *  - an event's categories sum to its live bytes (asserted on every push);
 *  - events are kept in the order the simulator measured them, which is the
 *    order the step runs them in on each stage;
 *  - a released trace is all zero and can be filled again.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_rooms.h"
#include "base/util.h"

void remat_i_trace_init(remat_trace_t *t) {
    memset(t, 0, sizeof *t);
}

static void rel_free(rel_events_t *l, size_t n) {
    for (size_t i = 0; l && i < n; i++) {
        free(l[i].ev);
    }
    free(l);
}

void remat_i_trace_release(remat_trace_t *t) {
    free(t->events);
    rel_free(t->fwd, t->nprof);
    rel_free(t->bwd, t->nprof);
    remat_i_trace_init(t);
}

/* One list per profile and direction, emptied: a run's profiles replace
   the previous run's. */
void remat_i_trace_profiles(remat_trace_t *t, size_t nprofiles) {
    rel_free(t->fwd, t->nprof);
    rel_free(t->bwd, t->nprof);
    t->fwd = remat_i_xcalloc(nprofiles ? nprofiles : 1, sizeof *t->fwd);
    t->bwd = remat_i_xcalloc(nprofiles ? nprofiles : 1, sizeof *t->bwd);
    t->nprof = nprofiles;
    t->nevents = 0;
}

void remat_i_rel_push(rel_events_t *l, const meter_t *m, remat_step_t step, size_t op) {
    assert(meter_consistent(m));
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->ev = remat_i_xrealloc(l->ev, l->cap * sizeof *l->ev);
    }
    rel_event_t *e = &l->ev[l->n++];
    e->live = m->live;
    memcpy(e->cats, m->cats, sizeof e->cats);
    e->step = step;
    e->op = op;
}

void remat_i_trace_push(remat_trace_t *t, const remat_trace_event_t *e) {
    assert(cats_sum_to(e->cats, e->live) && "an event's categories sum to its live bytes");
    if (t->nevents == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->events = remat_i_xrealloc(t->events, t->cap * sizeof *t->events);
    }
    t->events[t->nevents++] = *e;
}
