/* SPDX-License-Identifier: MIT */
/*
 * sweep.c: _core.sweep, many configurations in one call (ext.h): every
 * combination of the swept keys' values on top of the base settings and
 * config file, each built, resolved and analyzed as `remat analyze` would
 * (remat_config_build's layering, remat_resolve, remat_analyze), with the
 * GIL released while the rows run. Rows come in odometer order, the last
 * key fastest. The GIL is taken back every ROWS_PER_CHECK rows, so a
 * signal (Ctrl-C) ends a long sweep with its exception.
 *
 * Invariants: one result is reused for every row (its tables keep their
 * memory); a row whose settings are bad input records its one-line error
 * and the sweep goes on; no memory or an internal error ends the sweep
 * with an exception; the row count is checked against overflow and a
 * bound (REMAT_SWEEP_MAX_ROWS) before anything is allocated.
 */
#include "ext.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "remat/input/config.h"
#include "remat/input/resolve.h"
#include "remat/sim/sim.h"
#include "remat/view/report.h"

enum { REMAT_SWEEP_MAX_ROWS = 100000000 };

/* One row's figures. */
typedef struct row {
    uint64_t peak, budget, usable, recompute;
    double step, mfu, exposed;
    bool fits, fits_margin, passes;
    int verdict;   /* remat_verdict_t; -1 when the row did not analyze */
    char *error;   /* the row's error line, or NULL */
} row_t;

/* What the loop reads and writes, all of it C. */
typedef struct sweep {
    ext_argv_t base;            /* "remat" then the base settings */
    remat_i_config_file_t file; /* the config file's text */
    int has_file;
    size_t nkeys, nrows;
    size_t *nvalues;            /* per key */
    char ***settings;           /* per key, per value: "key=value" */
    row_t *rows;
    remat_status_t fatal;       /* REMAT_E_NOMEM or REMAT_E_INTERNAL ends it */
    char fatal_line[1024];
} sweep_t;

static void sweep_free(sweep_t *s) {
    for (size_t k = 0; s->settings && k < s->nkeys; k++) {
        for (size_t v = 0; s->settings[k] && v < s->nvalues[k]; v++) {
            free(s->settings[k][v]);
        }
        free(s->settings[k]);
    }
    for (size_t i = 0; s->rows && i < s->nrows; i++) {
        free(s->rows[i].error);
    }
    free(s->settings);
    free(s->nvalues);
    free(s->rows);
    ext_argv_free(&s->base);
    ext_config_free(&s->file);
}

/* Key @p k's values into "key=value" settings; -1 with an exception. */
static int take_values(sweep_t *s, size_t k, const char *key, PyObject *vals) {
    PyObject *fast = PySequence_Fast(vals, "each key's values must be a list of str");
    if (!fast) {
        return -1;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    s->nvalues[k] = (size_t)n;
    s->settings[k] = calloc((size_t)n + 1, sizeof(char *));
    int rc = s->settings[k] ? 0 : (PyErr_NoMemory(), -1);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        const char *v = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast, i));
        const size_t len = v ? strlen(key) + strlen(v) + 2 : 0;
        char *kv = v ? malloc(len) : NULL;
        if (!kv) {
            rc = -1;
            if (v) {
                PyErr_NoMemory();
            }
        } else {
            snprintf(kv, len, "%s=%s", key, v);
            s->settings[k][i] = kv;
        }
    }
    Py_DECREF(fast);
    return rc;
}

/* The row count: the product of the value counts, bounded. */
static int count_rows(sweep_t *s) {
    size_t n = 1;
    for (size_t k = 0; k < s->nkeys; k++) {
        if (s->nvalues[k] == 0) {
            PyErr_SetString(PyExc_ValueError, "a swept key has no values");
            return -1;
        }
        if (n > (size_t)REMAT_SWEEP_MAX_ROWS / s->nvalues[k]) {
            PyErr_Format(PyExc_ValueError, "the sweep has more than %d configurations",
                         REMAT_SWEEP_MAX_ROWS);
            return -1;
        }
        n *= s->nvalues[k];
    }
    s->nrows = n;
    s->rows = calloc(n, sizeof *s->rows);
    return s->rows ? 0 : (PyErr_NoMemory(), -1);
}

/* The swept keys and their values; -1 with an exception. */
static int take_grid(sweep_t *s, PyObject *keys, PyObject *values) {
    PyObject *fk = PySequence_Fast(keys, "keys must be a list of str");
    PyObject *fv = fk ? PySequence_Fast(values, "values must be a list of lists") : NULL;
    int rc = fv ? 0 : -1;
    if (rc == 0 && PySequence_Fast_GET_SIZE(fk) != PySequence_Fast_GET_SIZE(fv)) {
        PyErr_SetString(PyExc_ValueError, "one list of values per key");
        rc = -1;
    }
    const size_t nk = rc == 0 ? (size_t)PySequence_Fast_GET_SIZE(fk) : 0;
    s->nkeys = nk;
    s->nvalues = calloc(nk + 1, sizeof *s->nvalues);
    s->settings = calloc(nk + 1, sizeof *s->settings);
    if (rc == 0 && (!s->nvalues || !s->settings)) {
        PyErr_NoMemory();
        rc = -1;
    }
    for (size_t k = 0; rc == 0 && k < nk; k++) {
        const char *key = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fk, (Py_ssize_t)k));
        rc = key ? take_values(s, k, key, PySequence_Fast_GET_ITEM(fv, (Py_ssize_t)k)) : -1;
    }
    Py_XDECREF(fk);
    Py_XDECREF(fv);
    return rc == 0 ? count_rows(s) : -1;
}

/* Row @p i's figures, or its error line. */
static void record(row_t *row, const remat_result_t *r) {
    row->peak = r->peak_bytes;
    row->budget = r->budget_bytes;
    row->usable = r->usable_bytes;
    row->recompute = r->recompute_flops;
    row->step = r->step_seconds;
    row->mfu = r->mfu;
    row->exposed = r->exposed_seconds;
    row->fits = r->fits;
    row->fits_margin = r->fits_margin;
    row->passes = remat_result_passes(r);
    row->verdict = (int)remat_result_verdict(r);
}

/* One row: its settings after the base's, then build, resolve, analyze. */
static remat_status_t run_row(sweep_t *s, size_t i, char **args, remat_result_t *res) {
    size_t rest = i, nargs = (size_t)s->base.argc - 1;
    for (size_t k = s->nkeys; k-- > 0;) {
        args[nargs + k] = s->settings[k][rest % s->nvalues[k]];
        rest /= s->nvalues[k];
    }
    nargs += s->nkeys;
    remat_error_t err;
    remat_error_init(&err);
    remat_config_t cfg;
    remat_graph_t *g = NULL;
    remat_policy_t *p = NULL;
    remat_hw_t hw;
    remat_status_t st = remat_i_config_build_file(s->has_file ? &s->file : NULL, nargs, args,
                                                  &cfg, &err);
    st = st ? st : remat_resolve(&cfg, &g, &p, &hw, &err);
    st = st ? st : remat_analyze(g, &cfg, p, &hw, res, &err);
    row_t *row = &s->rows[i];
    row->verdict = -1;
    if (st == REMAT_OK) {
        record(row, res);
    } else {
        char line[1024];
        remat_error_format(&err, line, sizeof line);
        row->error = strdup(line);
        if (st == REMAT_E_NOMEM || st == REMAT_E_INTERNAL || !row->error) {
            snprintf(s->fatal_line, sizeof s->fatal_line, "%s", line);
            st = s->fatal = st == REMAT_E_INTERNAL ? REMAT_E_INTERNAL : REMAT_E_NOMEM;
        }
    }
    remat_graph_free(g);
    remat_policy_free(p);
    return s->fatal;
}

/* Rows between signal checks: about 0.1 s of analyses, so that Ctrl-C
   stops a long sweep at once while the checks cost nothing measurable. */
enum { ROWS_PER_CHECK = 4096 };

/* Every row, with the GIL released for each chunk of ROWS_PER_CHECK and
   taken back between chunks to let Python handle its signals: a pending
   KeyboardInterrupt ends the sweep (-1, the exception set). */
static int run_rows(sweep_t *s) {
    char **args = calloc((size_t)s->base.argc + s->nkeys + 1, sizeof *args);
    if (!args) {
        s->fatal = REMAT_E_NOMEM;
        return 0;
    }
    memcpy(args, s->base.argv + 1, ((size_t)s->base.argc - 1) * sizeof *args);
    remat_result_t res;
    remat_result_init(&res);
    int rc = 0;
    for (size_t i = 0; i < s->nrows && !s->fatal && rc == 0;) {
        const size_t end = s->nrows - i > ROWS_PER_CHECK ? i + ROWS_PER_CHECK : s->nrows;
        Py_BEGIN_ALLOW_THREADS
        for (; i < end && run_row(s, i, args, &res) == REMAT_OK; i++) {
        }
        Py_END_ALLOW_THREADS
        rc = PyErr_CheckSignals();
    }
    remat_result_release(&res);
    free(args);
    return rc;
}

/* The columns' names, in the order column() fills them. */
static const char *const columns[] = {
    "peak_hbm_bytes", "budget_bytes", "usable_bytes", "fits", "fits_with_margin", "passes",
    "verdict", "step_seconds", "mfu", "recompute_flops", "offload_exposed_seconds", "error",
};
enum { NCOLUMNS = sizeof columns / sizeof columns[0] };

/* Column @p c of row @p r, a new reference (None where the row failed). */
static PyObject *cell(const row_t *r, size_t c) {
    if (r->verdict < 0 && c != NCOLUMNS - 1) {
        Py_RETURN_NONE;
    }
    switch (c) {
        case 0: return PyLong_FromUnsignedLongLong(r->peak);
        case 1: return PyLong_FromUnsignedLongLong(r->budget);
        case 2: return PyLong_FromUnsignedLongLong(r->usable);
        case 3: return PyBool_FromLong(r->fits);
        case 4: return PyBool_FromLong(r->fits_margin);
        case 5: return PyBool_FromLong(r->passes);
        case 6: return PyUnicode_FromString(remat_verdict_name((remat_verdict_t)r->verdict));
        case 7: return ext_json_real(r->step);
        case 8: return ext_json_real(r->mfu);
        case 9: return PyLong_FromUnsignedLongLong(r->recompute);
        case 10: return ext_json_real(r->exposed);
        default:
            if (!r->error) {
                Py_RETURN_NONE;
            }
            return PyUnicode_DecodeUTF8(r->error, (Py_ssize_t)strlen(r->error), "replace");
    }
}

/* The rows as a dict of lists, one per column. */
static PyObject *columns_dict(const sweep_t *s) {
    PyObject *d = PyDict_New();
    for (size_t c = 0; d && c < NCOLUMNS; c++) {
        PyObject *list = PyList_New((Py_ssize_t)s->nrows);
        for (size_t i = 0; list && i < s->nrows; i++) {
            PyObject *v = cell(&s->rows[i], c);
            if (!v) {
                Py_CLEAR(list);
            } else {
                PyList_SET_ITEM(list, (Py_ssize_t)i, v);
            }
        }
        if (!list || PyDict_SetItemString(d, columns[c], list) < 0) {
            Py_CLEAR(d);
        }
        Py_XDECREF(list);
    }
    return d;
}

PyObject *ext_sweep(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *base = NULL, *config = NULL, *keys = NULL, *values = NULL;
    if (!PyArg_ParseTuple(args, "OOOO:sweep", &base, &config, &keys, &values)) {
        return NULL;
    }
    sweep_t s;
    memset(&s, 0, sizeof s);
    if (ext_argv_from(base, &s.base) < 0 || ext_config_from(config, &s.file, &s.has_file) < 0 ||
        take_grid(&s, keys, values) < 0) {
        sweep_free(&s);
        return NULL;
    }
    PyObject *res = NULL;
    if (run_rows(&s) < 0) {
        /* interrupted: the signal's exception is set */
    } else if (s.fatal == REMAT_E_NOMEM) {
        PyErr_NoMemory();
    } else if (s.fatal) {
        PyErr_Format(PyExc_RuntimeError, "remat: %s", s.fatal_line);
    } else {
        res = columns_dict(&s);
    }
    sweep_free(&s);
    return res;
}
