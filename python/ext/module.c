/* SPDX-License-Identifier: MIT */
/*
 * module.c: the module remat._core (ext.h): its functions, the Run type
 * and the library's version. Private to the package: the Python front
 * (python/remat/) is the documented interface.
 */
#include "ext.h"

#include "remat/base/version.h"

static PyMethodDef methods[] = {
    {"call", ext_call, METH_VARARGS,
     "call(argv, config) -> (exit_code, output, messages, error): one CLI command in process"},
    {"analyze", ext_analyze, METH_VARARGS,
     "analyze(argv, config) -> (Run | None, exit_code, messages, error)"},
    {"time_analyze", ext_time_analyze, METH_VARARGS,
     "time_analyze(argv, config, n) -> seconds per analysis, timed in C (bench/python.py)"},
    {"sweep", ext_sweep, METH_VARARGS,
     "sweep(base, config, keys, values) -> dict of columns, one row per combination"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "remat._core",
    "remat's engine: the C library and its command line, in process (private; use remat).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void);

PyMODINIT_FUNC PyInit__core(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) {
        return NULL;
    }
    if (ext_run_ready(m) < 0 ||
        PyModule_AddStringConstant(m, "version", REMAT_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
