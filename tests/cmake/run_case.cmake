# Runs one validation tool on one file: TOOL, FILE, RC (the exit code it
# must give), REGEX (what its output, stdout and stderr together, must
# match). A refusal (RC 2) must say so on one line of stderr, as every bad
# input does.
execute_process(COMMAND ${TOOL} ${FILE}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
set(failed "")
if(NOT "${rc}" STREQUAL "${RC}")
  string(APPEND failed "exit code ${rc}, expected ${RC}\n")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  string(APPEND failed "the output does not match: ${REGEX}\n")
endif()
if("${RC}" STREQUAL "2")
  string(REGEX MATCHALL "\n" lines "${err}")
  list(LENGTH lines nlines)
  if(NOT nlines EQUAL 1)
    string(APPEND failed "a refusal is one line of stderr, got ${nlines}\n")
  endif()
endif()
if(failed)
  message(FATAL_ERROR "${failed}stdout:\n${out}\nstderr:\n${err}")
endif()
