/* SPDX-License-Identifier: MIT */
/*
 * convert.c: Python objects into the engine's inputs (an argv, a config
 * file's text) and its outputs back (messages, the error tuple), for the
 * other rooms of remat._core (ext.h).
 *
 * Invariants: everything handed to the engine is a private copy, so that
 * it can run with the GIL released while Python threads change the
 * objects it came from; every allocation is checked (MemoryError).
 */
#include "ext.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "remat/base/error.h"
#include "remat/view/report.h"

pthread_mutex_t ext_cli_lock = PTHREAD_MUTEX_INITIALIZER;

void ext_argv_free(ext_argv_t *a) {
    for (int i = 0; a->owned && i < a->argc; i++) {
        free(a->owned[i]);
    }
    free(a->owned);
    free(a->argv);
    a->argv = a->owned = NULL;
    a->argc = 0;
}

/* A copy of @p s, or NULL with MemoryError set. */
static char *copy_text(const char *s, Py_ssize_t n) {
    char *c = malloc((size_t)n + 1);
    if (!c) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(c, s, (size_t)n);
    c[n] = '\0';
    return c;
}

int ext_argv_from(PyObject *seq, ext_argv_t *a) {
    a->argc = 0;
    a->argv = a->owned = NULL;
    PyObject *fast = PySequence_Fast(seq, "argv must be a list or tuple of str");
    if (!fast) {
        return -1;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > 1 << 20) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "more than a million arguments");
        return -1;
    }
    a->argv = calloc((size_t)n + 2, sizeof *a->argv);
    a->owned = calloc((size_t)n + 2, sizeof *a->owned);
    int rc = a->argv && a->owned ? 0 : (PyErr_NoMemory(), -1);
    if (rc == 0 && !(a->owned[0] = a->argv[0] = copy_text("remat", 5))) {
        rc = -1;
    }
    a->argc = rc == 0;
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        Py_ssize_t len = 0;
        const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &len) : NULL;
        if (!s && !PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "argv[%zd] is %s, not str", i, Py_TYPE(item)->tp_name);
        }
        if (!s || !(a->owned[a->argc] = a->argv[a->argc] = copy_text(s, len))) {
            rc = -1;
        } else {
            a->argc++;
        }
    }
    Py_DECREF(fast);
    return rc;
}

int ext_config_from(PyObject *obj, remat_i_config_file_t *f, int *has) {
    memset(f, 0, sizeof *f);
    *has = 0;
    if (obj == Py_None) {
        return 0;
    }
    const char *name = NULL, *text = NULL;
    Py_ssize_t nlen = 0, tlen = 0;
    if (!PyArg_ParseTuple(obj, "s#y#;config must be None or (name: str, text: bytes)", &name,
                          &nlen, &text, &tlen)) {
        return -1;
    }
    char *n = copy_text(name, nlen), *t = n ? copy_text(text, tlen) : NULL;
    if (!t) {
        free(n);
        return -1;
    }
    f->name = n;
    f->text = t;
    f->len = (size_t)tlen;
    f->owned = t;
    *has = 1;
    return 0;
}

int ext_inputs_from(PyObject *seq, PyObject *config, ext_argv_t *a, remat_i_config_file_t *f,
                    int *has) {
    memset(f, 0, sizeof *f);
    *has = 0;
    if (ext_argv_from(seq, a) < 0 || ext_config_from(config, f, has) < 0) {
        ext_argv_free(a);
        return -1;
    }
    return 0;
}

void ext_config_free(remat_i_config_file_t *f) {
    free((char *)f->name);
    free(f->owned);
    memset(f, 0, sizeof *f);
}

int ext_streams_open(ext_streams_t *s) {
    memset(s, 0, sizeof *s);
    s->outf = open_memstream(&s->out, &s->outlen);
    s->msgf = s->outf ? open_memstream(&s->msg, &s->msglen) : NULL;
    if (!s->msgf) {
        ext_streams_close(s);
        ext_streams_free(s);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

int ext_streams_open_messages(ext_streams_t *s) {
    memset(s, 0, sizeof *s);
    s->msgf = open_memstream(&s->msg, &s->msglen);
    if (!s->msgf) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

void ext_streams_close(ext_streams_t *s) {
    if (s->outf) {
        fclose(s->outf);
    }
    if (s->msgf) {
        fclose(s->msgf);
    }
    s->outf = s->msgf = NULL;
}

void ext_streams_free(ext_streams_t *s) {
    assert(!s->outf && !s->msgf);
    free(s->out);
    free(s->msg);
    s->out = s->msg = NULL;
}

PyObject *ext_messages(const ext_streams_t *s) {
    return PyUnicode_DecodeUTF8(s->msg ? s->msg : "", (Py_ssize_t)s->msglen, "replace");
}

PyObject *ext_error_tuple(const remat_cli_sink_t *sink) {
    if (!sink->has_err) {
        Py_RETURN_NONE;
    }
    const remat_error_t *e = &sink->err;
    return Py_BuildValue("(sssiis)", remat_status_name(e->code), e->source, e->json_path,
                         e->line, e->column, e->text);
}

PyObject *ext_json_real(double x) {
    /* the figure read back from the text the documents print */
    char buf[40];
    snprintf(buf, sizeof buf, "%.*g", REMAT_JSON_REAL_DIGITS, x);
    return PyFloat_FromDouble(strtod(buf, NULL));
}

int ext_command_open(PyObject *args, const char *fmt, int output, ext_command_t *c) {
    memset(c, 0, sizeof *c);
    PyObject *seq = NULL, *config = NULL;
    if (!PyArg_ParseTuple(args, fmt, &seq, &config) ||
        ext_inputs_from(seq, config, &c->a, &c->file, &c->has_file) < 0) {
        return -1;
    }
    if ((output ? ext_streams_open(&c->s) : ext_streams_open_messages(&c->s)) < 0) {
        ext_command_inputs_free(c);
        return -1;
    }
    c->sink.messages = c->s.msgf;
    return 0;
}

void ext_command_inputs_free(ext_command_t *c) {
    ext_argv_free(&c->a);
    ext_config_free(&c->file);
}
