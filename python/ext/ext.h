/* SPDX-License-Identifier: MIT */
/*
 * ext.h: the rooms of the extension module remat._core (docs/python.md),
 * which the package's Python front (python/remat/) calls: commands run in
 * process as the CLI runs them (call.c), one analysis kept as an object
 * (run.c), a sweep over settings (sweep.c), and the conversions between
 * Python objects and the C types they all use (convert.c).
 *
 * Invariants: no function here raises for remat's own errors: they come
 * back as an error tuple (ext_error_tuple) beside the messages, and the
 * Python front raises RematError; a Python exception means a misuse of
 * _core (a wrong type) or no memory. Every engine call runs with the GIL
 * released, on copies of its inputs; the command line's option parsing
 * (getopt's globals) runs under ext_cli_lock.
 */
#ifndef REMAT_PY_EXT_H
#define REMAT_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdio.h>

#include "cli/main.h"

/* Serializes the command line's option parsing (getopt keeps globals). */
extern pthread_mutex_t ext_cli_lock;

/* An argv the engine may permute and overwrite (getopt permutes it; the
   launcher skip copies the command's name over a launcher word), so the
   copies of the strings are owned, and freed, through owned[]. */
typedef struct ext_argv {
    int argc;
    char **argv;  /* NULL at argv[argc] */
    char **owned; /* the same strings, in their first order */
} ext_argv_t;

/* "remat" then @p seq's strings (a list or tuple of str) into @p a; -1
   with a Python exception set. ext_argv_free frees it either way. */
int ext_argv_from(PyObject *seq, ext_argv_t *a);
void ext_argv_free(ext_argv_t *a);

/* A config file's text from Python: None (no file: *has = 0) or a tuple
   (name: str, text: bytes); the text is copied, so that the engine reads
   it without the GIL. Release with ext_config_free. -1 with an exception. */
int ext_config_from(PyObject *obj, remat_i_config_file_t *f, int *has);
void ext_config_free(remat_i_config_file_t *f);

/* A command's inputs, (argv, config), by ext_argv_from and ext_config_from;
   -1 with an exception and nothing left to free. */
int ext_inputs_from(PyObject *seq, PyObject *config, ext_argv_t *a, remat_i_config_file_t *f,
                    int *has);

/* Memory streams for a command's output and messages. */
typedef struct ext_streams {
    char *out, *msg;
    size_t outlen, msglen;
    FILE *outf, *msgf;
} ext_streams_t;

/* Opens both (-1 with MemoryError set); ext_streams_close flushes and
   closes them (their text stays until ext_streams_free). */
int ext_streams_open(ext_streams_t *s);
/* The messages' stream alone (a command whose output is not wanted). */
int ext_streams_open_messages(ext_streams_t *s);
void ext_streams_close(ext_streams_t *s);
void ext_streams_free(ext_streams_t *s);

/* A real as the JSON documents write it (10 significant digits), so that
   a figure read from a Run or a sweep equals the document's. */
PyObject *ext_json_real(double x);

/* What a command run from Python holds: its argv, its config file's text
   and the streams it writes. */
typedef struct ext_command {
    ext_argv_t a;
    remat_i_config_file_t file;
    int has_file;
    ext_streams_t s;
    remat_cli_sink_t sink; /* its messages go to s.msgf */
} ext_command_t;

/* The call's arguments (argv, config) by the format @p fmt ("OO:name")
   into @p c, and its streams opened (the output's only when @p output);
   -1 with an exception and nothing left to free. */
int ext_command_open(PyObject *args, const char *fmt, int output, ext_command_t *c);

/* Frees the argv and the config of @p c (the streams stay, for reading). */
void ext_command_inputs_free(ext_command_t *c);

/* The messages as str (invalid UTF-8 replaced); NULL with an exception. */
PyObject *ext_messages(const ext_streams_t *s);

/* The sink's error as (status, source, json_path, line, column, text), or
   None when the run recorded none. New reference; NULL with an exception. */
PyObject *ext_error_tuple(const remat_cli_sink_t *sink);

/* _core.call(argv, config) -> (exit code, output: bytes, messages: str,
   error tuple or None): one command run as the CLI runs it. */
PyObject *ext_call(PyObject *self, PyObject *args);

/* _core.analyze(argv, config) -> (Run or None, exit code, messages,
   error tuple or None): `remat analyze ARGV` kept as a Run. */
PyObject *ext_analyze(PyObject *self, PyObject *args);

/* _core.time_analyze(argv, config, n) -> seconds per analysis: _core.analyze's
   path @p n times in C, for bench/python.py. */
PyObject *ext_time_analyze(PyObject *self, PyObject *args);

/* _core.sweep(base, config, keys, values) -> dict of columns. */
PyObject *ext_sweep(PyObject *self, PyObject *args);

/* The Run type (run.c); ext_run_ready readies it for the module. */
extern PyTypeObject ext_run_type;
int ext_run_ready(PyObject *module);

#endif
