# Defines the imported targets remat::jansson, remat::igraph and remat::yaml
# (libyaml), the link
# dependencies of the static library. Used twice, so that the build and an
# installed package find them the same way: by the top-level CMakeLists.txt,
# and by rematConfig.cmake in a consumer's project.
#
# Both are found again on the machine that uses them rather than written into
# the export as absolute paths: a path such as the multiarch libigraph.a is
# only true where remat was built, whereas finding it again also honours a
# consumer's CMAKE_PREFIX_PATH and REMAT_IGRAPH_A/REMAT_JANSSON_A overrides.
#
# remat_find_deps(<static>): with <static> true, link the static archives
# libigraph.a, libjansson.a and libyaml.a when all are found (see REMAT_STATIC_DEPS in
# CMakeLists.txt for why), else the shared libraries pkg-config names. Sets
# REMAT_DEPS_STATIC to what was chosen. PkgConfig must already be found.

macro(remat_find_deps _remat_static)
  # The public headers include neither jansson.h nor igraph.h, so a consumer
  # needs only the link; the include directories serve remat's own build.
  # A private prefix keeps the variables out of a consumer's JANSSON_* names.
  pkg_check_modules(REMAT_DEP_JANSSON QUIET IMPORTED_TARGET jansson)
  pkg_check_modules(REMAT_DEP_IGRAPH QUIET IMPORTED_TARGET igraph)
  pkg_check_modules(REMAT_DEP_YAML QUIET IMPORTED_TARGET yaml-0.1)
  set(REMAT_DEPS_STATIC OFF)
  if("${_remat_static}")
    find_library(REMAT_IGRAPH_A NAMES libigraph.a HINTS ${REMAT_DEP_IGRAPH_LIBDIR})
    find_library(REMAT_JANSSON_A NAMES libjansson.a HINTS ${REMAT_DEP_JANSSON_LIBDIR})
    find_library(REMAT_YAML_A NAMES libyaml.a HINTS ${REMAT_DEP_YAML_LIBDIR})
    if(REMAT_IGRAPH_A AND REMAT_JANSSON_A AND REMAT_YAML_A)
      set(REMAT_DEPS_STATIC ON)
    endif()
  endif()
  if(REMAT_DEP_JANSSON_FOUND AND REMAT_DEP_IGRAPH_FOUND AND REMAT_DEP_YAML_FOUND
     AND NOT TARGET remat::jansson)
    add_library(remat::jansson INTERFACE IMPORTED)
    add_library(remat::igraph INTERFACE IMPORTED)
    add_library(remat::yaml INTERFACE IMPORTED)
    set_target_properties(remat::yaml PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${REMAT_DEP_YAML_INCLUDE_DIRS}")
    set_target_properties(remat::jansson PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${REMAT_DEP_JANSSON_INCLUDE_DIRS}")
    set_target_properties(remat::igraph PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${REMAT_DEP_IGRAPH_INCLUDE_DIRS}")
    if(REMAT_DEPS_STATIC)
      set_target_properties(remat::jansson PROPERTIES INTERFACE_LINK_LIBRARIES "${REMAT_JANSSON_A}")
      set_target_properties(remat::igraph PROPERTIES INTERFACE_LINK_LIBRARIES "${REMAT_IGRAPH_A}")
      set_target_properties(remat::yaml PROPERTIES INTERFACE_LINK_LIBRARIES "${REMAT_YAML_A}")
    else()
      set_target_properties(remat::jansson PROPERTIES
        INTERFACE_LINK_LIBRARIES PkgConfig::REMAT_DEP_JANSSON)
      set_target_properties(remat::igraph PROPERTIES
        INTERFACE_LINK_LIBRARIES PkgConfig::REMAT_DEP_IGRAPH)
      set_target_properties(remat::yaml PROPERTIES
        INTERFACE_LINK_LIBRARIES PkgConfig::REMAT_DEP_YAML)
    endif()
  endif()
endmacro()
