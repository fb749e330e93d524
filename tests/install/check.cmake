# The install test: installs the build into PREFIX, then builds the consumer
# in consumer/ twice, with find_package(remat) and with
# `pkg-config --cflags --libs --static remat`, runs both and compares their
# peak with the installed CLI's.
#   BUILD      the build directory to install
#   PREFIX     the install prefix (emptied first)
#   WORK       scratch directory for the consumer's builds (emptied first)
#   LIBDIR     CMAKE_INSTALL_LIBDIR, for remat.pc's place under PREFIX
#   VERSION    the project version the installed files must carry
#   CC         the C compiler remat was built with
#   GENERATOR  the CMake generator remat was built with
#   PKG_CONFIG the pkg-config executable
set(here ${CMAKE_CURRENT_LIST_DIR})
file(REMOVE_RECURSE ${PREFIX} ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# The consumer must print the version it was compiled against and the same
# peak as the installed CLI.
function(check_output what output)
  if(NOT output MATCHES "^remat ([^ ]+) peak_hbm_bytes ([0-9]+)\n$")
    message(FATAL_ERROR "${what}: unexpected output: ${output}")
  endif()
  if(NOT CMAKE_MATCH_1 STREQUAL VERSION)
    message(FATAL_ERROR "${what}: version ${CMAKE_MATCH_1}, expected ${VERSION}")
  endif()
  if(NOT CMAKE_MATCH_2 STREQUAL want_peak)
    message(FATAL_ERROR "${what}: peak ${CMAKE_MATCH_2}, the CLI says ${want_peak}")
  endif()
  string(STRIP "${output}" shown)
  message(STATUS "${what}: ${shown}")
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX})

run("installed remat --version" ${PREFIX}/bin/remat --version)
if(NOT out STREQUAL "remat ${VERSION}\n")
  message(FATAL_ERROR "installed remat --version printed '${out}', expected 'remat ${VERSION}'")
endif()
run("installed remat analyze" ${PREFIX}/bin/remat analyze --format json)
string(JSON want_peak GET "${out}" peak_hbm_bytes)

# 1. find_package(remat CONFIG) and remat::remat.
run("configuring the consumer" ${CMAKE_COMMAND} -S ${here}/consumer -B ${WORK}/cmake
    -G ${GENERATOR} -DCMAKE_C_COMPILER=${CC} -DCMAKE_PREFIX_PATH=${PREFIX}
    -DREMAT_WANT_VERSION=${VERSION})
run("building the consumer" ${CMAKE_COMMAND} --build ${WORK}/cmake)
run("the consumer (find_package)" ${WORK}/cmake/consumer)
check_output("find_package consumer" "${out}")

# 2. pkg-config. remat.pc carries the sanitizer flag of a sanitized build,
# so the same command serves both builds.
if(IS_ABSOLUTE "${LIBDIR}")
  set(ENV{PKG_CONFIG_PATH} ${LIBDIR}/pkgconfig)
else()
  set(ENV{PKG_CONFIG_PATH} ${PREFIX}/${LIBDIR}/pkgconfig)
endif()
run("pkg-config" ${PKG_CONFIG} --cflags --libs --static remat)
string(STRIP "${out}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run("compiling the consumer with pkg-config's flags"
    ${CC} -std=c11 -Wall -Wextra -Wpedantic -Werror ${here}/consumer/main.c ${pc_flags}
    -o ${WORK}/pkgconfig-consumer)
run("the consumer (pkg-config)" ${WORK}/pkgconfig-consumer)
check_output("pkg-config consumer" "${out}")
