/* SPDX-License-Identifier: MIT */
/*
 * run.c: _core.analyze and the Run type (ext.h): `remat analyze ARGS`
 * parsed as the CLI parses it and analyzed once, its result kept, so that
 * the Python front reads the figures a gate needs without writing the
 * whole JSON document (which it asks of _core.call when a field beyond
 * them is read), and draws the notebook's summary from it.
 *
 * Invariants: a Run owns its job (config, graph, policy, hardware,
 * result) until deallocated; its getters read the result and never fail
 * but for no memory; the summary is drawn from a second analysis with its
 * timeline, so the Run's own result never changes.
 */
#include "ext.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remat/sim/sim.h"
#include "remat/sim/timeline.h"
#include "remat/view/report.h"

typedef struct ext_run {
    PyObject_HEAD
    remat_cli_job_t *job;
} ext_run_t;

static void run_dealloc(PyObject *self) {
    ext_run_t *r = (ext_run_t *)self;
    if (r->job) {
        remat_cli_job_release(r->job);
        free(r->job);
    }
    Py_TYPE(self)->tp_free(self);
}

/* The figures a getter reads, by the closure's number. */
enum {
    F_PEAK, F_BUDGET, F_USABLE, F_FITS, F_FITS_MARGIN, F_PASSES, F_VERDICT, F_STEP, F_MFU,
    F_HFU, F_RECOMPUTE, F_MODEL_FLOPS, F_DEVICES, F_LAYERS, F_MODEL, F_GRAPH, F_HARDWARE,
    F_POLICY, F_HOST_FITS, F_SAFETY
};

static PyObject *run_get(PyObject *self, void *closure) {
    const remat_result_t *r = &((ext_run_t *)self)->job->result;
    const remat_cli_job_t *j = ((ext_run_t *)self)->job;
    switch ((int)(intptr_t)closure) {
        case F_PEAK: return PyLong_FromUnsignedLongLong(r->peak_bytes);
        case F_BUDGET: return PyLong_FromUnsignedLongLong(r->budget_bytes);
        case F_USABLE: return PyLong_FromUnsignedLongLong(r->usable_bytes);
        case F_FITS: return PyBool_FromLong(r->fits);
        case F_FITS_MARGIN: return PyBool_FromLong(r->fits_margin);
        case F_PASSES: return PyBool_FromLong(remat_result_passes(r));
        case F_VERDICT: return PyUnicode_FromString(remat_verdict_name(remat_result_verdict(r)));
        case F_STEP: return ext_json_real(r->step_seconds);
        case F_MFU: return ext_json_real(r->mfu);
        case F_HFU: return ext_json_real(r->hfu);
        case F_RECOMPUTE: return PyLong_FromUnsignedLongLong(r->recompute_flops);
        case F_MODEL_FLOPS: return PyLong_FromUnsignedLongLong(r->model_flops);
        case F_DEVICES: return PyLong_FromUnsignedLongLong(r->mesh.devices);
        case F_LAYERS: return PyLong_FromSize_t(r->nlayers);
        case F_MODEL: return PyUnicode_FromString(j->cfg.model_name);
        case F_GRAPH: return PyUnicode_FromString(j->graph->name);
        case F_HARDWARE: return PyUnicode_FromString(j->hw.name);
        case F_POLICY: return PyUnicode_FromString(j->policy->name);
        case F_HOST_FITS: return PyBool_FromLong(r->host_fits);
        case F_SAFETY: return ext_json_real(j->cfg.safety_margin);
    }
    PyErr_SetString(PyExc_SystemError, "Run: unknown field");
    return NULL;
}

#define FIELD(name, id, doc) {name, run_get, NULL, doc, (void *)(intptr_t)(id)}
static PyGetSetDef run_getset[] = {
    FIELD("peak_hbm_bytes", F_PEAK, "peak HBM per device, bytes"),
    FIELD("budget_bytes", F_BUDGET, "the budget per device, bytes"),
    FIELD("usable_bytes", F_USABLE, "the budget less the safety margin, bytes"),
    FIELD("fits", F_FITS, "peak <= budget"),
    FIELD("fits_with_margin", F_FITS_MARGIN, "peak <= usable"),
    FIELD("passes", F_PASSES, "fits with the margin and the host holds the offloads"),
    FIELD("verdict", F_VERDICT, "'ok', 'risk', 'host_oom' or 'oom'"),
    FIELD("step_seconds", F_STEP, "estimated step time, seconds"),
    FIELD("mfu", F_MFU, "model FLOPs utilization"),
    FIELD("hfu", F_HFU, "hardware FLOPs utilization"),
    FIELD("recompute_flops", F_RECOMPUTE, "FLOPs re-run in backward, per device and step"),
    FIELD("model_flops", F_MODEL_FLOPS, "forward + backward FLOPs, per device and step"),
    FIELD("num_devices", F_DEVICES, "devices in the run"),
    FIELD("layers_count", F_LAYERS, "decoder layers"),
    FIELD("model", F_MODEL, "the config's model_name"),
    FIELD("graph", F_GRAPH, "the graph's name"),
    FIELD("hardware", F_HARDWARE, "the hardware profile's name"),
    FIELD("remat_policy", F_POLICY, "the policy's name"),
    FIELD("host_fits", F_HOST_FITS, "the host's RAM holds what is offloaded"),
    FIELD("safety_margin", F_SAFETY, "the config's safety_margin"),
    {NULL, NULL, NULL, NULL, NULL},
};
#undef FIELD

/* The summary's HTML into @p out: the step again, with its timeline. */
static remat_status_t draw_summary(const remat_cli_job_t *j, FILE *out, remat_error_t *err) {
    remat_result_t r;
    remat_timeline_t tl;
    remat_result_init(&r);
    remat_timeline_init(&tl);
    const remat_timeline_opts_t to = {.stage = REMAT_NONE, .unfold = true};
    remat_status_t st =
        remat_timeline_analyze(j->graph, &j->cfg, j->policy, &j->hw, &to, &r, &tl, err);
    if (st == REMAT_OK) {
        remat_report_html_summary(out, &r, &tl);
    }
    remat_timeline_release(&tl);
    remat_result_release(&r);
    return st;
}

static PyObject *run_html_summary(PyObject *self, PyObject *unused) {
    (void)unused;
    const remat_cli_job_t *j = ((ext_run_t *)self)->job;
    ext_streams_t s;
    if (ext_streams_open(&s) < 0) {
        return NULL;
    }
    remat_error_t err;
    remat_error_init(&err);
    remat_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = draw_summary(j, s.outf, &err);
    ext_streams_close(&s);
    Py_END_ALLOW_THREADS
    PyObject *res = NULL;
    if (st == REMAT_OK) {
        res = PyUnicode_DecodeUTF8(s.out ? s.out : "", (Py_ssize_t)s.outlen, "replace");
    } else {
        char line[1024];
        remat_error_format(&err, line, sizeof line);
        PyErr_Format(PyExc_RuntimeError, "remat: %s", line);
    }
    ext_streams_free(&s);
    return res;
}

static PyMethodDef run_methods[] = {
    {"html_summary", run_html_summary, METH_NOARGS,
     "html_summary() -> str: the report's verdict, breakdown, costs and timeline chart"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ext_run_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remat._core.Run",
    .tp_basicsize = sizeof(ext_run_t),
    .tp_dealloc = run_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One analysis, kept (made by _core.analyze).",
    .tp_methods = run_methods,
    .tp_getset = run_getset,
};

int ext_run_ready(PyObject *module) {
    if (PyType_Ready(&ext_run_type) < 0) {
        return -1;
    }
    Py_INCREF(&ext_run_type);
    if (PyModule_AddObject(module, "Run", (PyObject *)&ext_run_type) < 0) {
        Py_DECREF(&ext_run_type);
        return -1;
    }
    return 0;
}

/* The analysis of @p a into a new job, or NULL (exit code in *rc). */
static remat_cli_job_t *analyze_job(ext_argv_t *a, const remat_i_config_file_t *file,
                                    remat_cli_sink_t *sink, int *rc) {
    remat_cli_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        return NULL;
    }
    pthread_mutex_lock(&ext_cli_lock);
    *rc = remat_cli_call_job(a->argc, a->argv, file, j, sink);
    pthread_mutex_unlock(&ext_cli_lock);
    if (*rc != 0) {
        remat_cli_job_release(j);
        free(j);
        return NULL;
    }
    return j;
}

/* The tuple analyze returns: (Run or None, exit code, messages, error). */
static PyObject *analyze_tuple(remat_cli_job_t *j, int rc, const ext_streams_t *s,
                               const remat_cli_sink_t *sink) {
    ext_run_t *run = j ? PyObject_New(ext_run_t, &ext_run_type) : NULL;
    if (j && !run) {
        remat_cli_job_release(j);
        free(j);
        return NULL;
    }
    if (run) {
        run->job = j;
    }
    PyObject *msg = ext_messages(s), *err = msg ? ext_error_tuple(sink) : NULL;
    PyObject *res = err ? Py_BuildValue("(OiNN)", run ? (PyObject *)run : Py_None, rc, msg, err)
                        : NULL;
    if (!err) {
        Py_XDECREF(msg);
    }
    Py_XDECREF(run);
    return res;
}

PyObject *ext_analyze(PyObject *self, PyObject *args) {
    (void)self;
    ext_command_t c;
    if (ext_command_open(args, "OO:analyze", 0, &c) < 0) {
        return NULL;
    }
    int rc = 0;
    remat_cli_job_t *j;
    Py_BEGIN_ALLOW_THREADS
    j = analyze_job(&c.a, c.has_file ? &c.file : NULL, &c.sink, &rc);
    ext_streams_close(&c.s);
    Py_END_ALLOW_THREADS
    ext_command_inputs_free(&c);
    PyObject *res = (j || rc) ? analyze_tuple(j, rc, &c.s, &c.sink) : PyErr_NoMemory();
    ext_streams_free(&c.s);
    return res;
}

/* Seconds of the monotonic clock. */
static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The same analyses as _core.analyze, @p n of them, all in C: the time
   the engine's own path takes, which bench/python.py divides the Python
   call's time by. Each round copies the argv (getopt permutes it). */
static double time_jobs(const ext_argv_t *a, const remat_i_config_file_t *file, long n,
                        int *rc) {
    char **argv = malloc(((size_t)a->argc + 1) * sizeof *argv);
    FILE *sink_file = argv ? fopen("/dev/null", "w") : NULL; /* the notes, unread */
    if (!sink_file) {
        free(argv);
        *rc = 3;
        return 0;
    }
    const double t0 = now_seconds();
    for (long i = 0; i < n && *rc == 0; i++) {
        memcpy(argv, a->argv, ((size_t)a->argc + 1) * sizeof *argv);
        remat_cli_sink_t sink = {.messages = sink_file};
        ext_argv_t copy = {.argc = a->argc, .argv = argv, .owned = NULL};
        remat_cli_job_t *j = analyze_job(&copy, file, &sink, rc);
        if (j) {
            remat_cli_job_release(j);
            free(j);
        }
    }
    const double t = now_seconds() - t0;
    fclose(sink_file);
    free(argv);
    return n > 0 ? t / (double)n : 0;
}

PyObject *ext_time_analyze(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *seq = NULL, *config = NULL;
    long n = 0;
    if (!PyArg_ParseTuple(args, "OOl:time_analyze", &seq, &config, &n)) {
        return NULL;
    }
    ext_argv_t a;
    remat_i_config_file_t file;
    int has = 0, rc = 0;
    if (ext_inputs_from(seq, config, &a, &file, &has) < 0) {
        return NULL;
    }
    double per;
    Py_BEGIN_ALLOW_THREADS
    per = time_jobs(&a, has ? &file : NULL, n, &rc);
    Py_END_ALLOW_THREADS
    ext_argv_free(&a);
    ext_config_free(&file);
    if (rc != 0) {
        PyErr_Format(PyExc_RuntimeError, "time_analyze: the run exits %d", rc);
        return NULL;
    }
    return PyFloat_FromDouble(per);
}
