/* SPDX-License-Identifier: MIT */
/*
 * call.c: _core.call, one command of the CLI run in process (ext.h): the
 * same option parsing, config layering, analysis and writers as the
 * remat program, with its output and messages into memory. What the
 * Python front's check, compare, solve, timeline, table and documents use.
 *
 * Invariants: the GIL is released for the whole command; ext_cli_lock is
 * held for it too, since the option parser's state is global; the output
 * is returned whole, even for exit code 1 (a negative verdict prints its
 * document).
 */
#include "ext.h"

PyObject *ext_call(PyObject *self, PyObject *args) {
    (void)self;
    ext_command_t c;
    if (ext_command_open(args, "OO:call", 1, &c) < 0) {
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&ext_cli_lock);
    rc = remat_cli_call(c.a.argc, c.a.argv, c.s.outf, c.has_file ? &c.file : NULL, &c.sink);
    pthread_mutex_unlock(&ext_cli_lock);
    ext_streams_close(&c.s);
    Py_END_ALLOW_THREADS
    ext_command_inputs_free(&c);
    PyObject *msg = ext_messages(&c.s), *err = msg ? ext_error_tuple(&c.sink) : NULL;
    PyObject *res = err ? Py_BuildValue("(iy#NN)", rc, c.s.out ? c.s.out : "",
                                        (Py_ssize_t)c.s.outlen, msg, err)
                        : NULL;
    if (!res) {
        Py_XDECREF(msg);
        Py_XDECREF(err);
    }
    ext_streams_free(&c.s);
    return res;
}
