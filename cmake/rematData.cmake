# remat_embedded_data(<root> <outdir> [LIBS <lib>...] [INCLUDES <dir>...]):
# the custom commands that generate the embedded built-in data
# (cmake/embed.cmake: graphs/, policies/, models/, hardware/), MaxText's key
# list (cmake/keys.cmake: maxtext/keys.txt) and the built-in graphs as C
# data (tools/gen_graphs.c, src/builtin_graphs.h) under <outdir>, and sets
# REMAT_BUILTIN_C, REMAT_KEYS_C and REMAT_GRAPHS_C in the caller to the
# generated sources. Used by the main build and by the fuzz project, so
# that both embed the same way.
#
# The graphs' generator is a host program, the target remat_gen_graphs: it
# loads each embedded graph with the library's own loader, compiled into it
# from the sources below (the loader and what it calls), and links <lib>s
# (jansson, igraph, libyaml and libm as the caller finds them), with the
# <dir>s as system include directories. The caller applies its warning flags
# to it.
function(remat_embedded_data root outdir)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "LIBS;INCLUDES")
  file(GLOB data CONFIGURE_DEPENDS
    ${root}/graphs/*.json ${root}/policies/*.json
    ${root}/models/*.json ${root}/hardware/*.json)
  set(builtin_c ${outdir}/builtin_data.c)
  add_custom_command(
    OUTPUT ${builtin_c}
    COMMAND ${CMAKE_COMMAND} -DOUT=${builtin_c} -DROOT=${root} -P ${root}/cmake/embed.cmake
    DEPENDS ${data} ${root}/cmake/embed.cmake
    COMMENT "Embedding built-in graphs, policies, models and hardware")
  set(keys_c ${outdir}/maxtext_keys_data.c)
  add_custom_command(
    OUTPUT ${keys_c}
    COMMAND ${CMAKE_COMMAND} -DIN=${root}/maxtext/keys.txt -DOUT=${keys_c}
            -P ${root}/cmake/keys.cmake
    DEPENDS ${root}/maxtext/keys.txt ${root}/cmake/keys.cmake
    COMMENT "Embedding MaxText's configuration keys")
  # The loader and every source it reaches (config.c's key checks bring the
  # config, policy, topology and hardware modules with the embedded data).
  add_executable(remat_gen_graphs ${root}/tools/gen_graphs.c
    ${root}/src/error.c ${root}/src/util.c ${root}/src/json_util.c ${root}/src/builtin.c
    ${builtin_c} ${root}/src/yaml_config.c ${root}/src/maxtext_keys.c ${keys_c}
    ${root}/src/graph_load.c ${root}/src/graph.c ${root}/src/graph_index.c ${root}/src/ops.c
    ${root}/src/config.c ${root}/src/config_maxtext.c ${root}/src/topology.c ${root}/src/hw.c
    ${root}/src/mesh.c ${root}/src/policy.c
    ${root}/src/builtin_cache.c)
  target_include_directories(remat_gen_graphs PRIVATE ${root}/include ${root}/src)
  target_include_directories(remat_gen_graphs SYSTEM PRIVATE ${arg_INCLUDES})
  target_link_libraries(remat_gen_graphs PRIVATE ${arg_LIBS})
  set(graphs_c ${outdir}/builtin_graphs_data.c)
  add_custom_command(
    OUTPUT ${graphs_c}
    COMMAND remat_gen_graphs ${graphs_c}
    DEPENDS remat_gen_graphs
    COMMENT "Generating the built-in graphs as C data")
  set(REMAT_BUILTIN_C ${builtin_c} PARENT_SCOPE)
  set(REMAT_KEYS_C ${keys_c} PARENT_SCOPE)
  set(REMAT_GRAPHS_C ${graphs_c} PARENT_SCOPE)
endfunction()
