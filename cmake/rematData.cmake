# remat_embedded_data(<root> <outdir> [LIBS <lib>...] [INCLUDES <dir>...]):
# the custom commands that generate the embedded built-in data
# (cmake/embed.cmake: graphs/, policies/, models/, hardware/), MaxText's key
# list (cmake/keys.cmake: maxtext/keys.txt) and the built-in graphs as C
# data (tools/gen_graphs.c, src/input/builtin_graphs.h) under <outdir>, and sets
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
  # Generated sources sit in their layer's folder (src/layers.txt), so
  # that the layer check reads their objects' layer from the path.
  file(MAKE_DIRECTORY ${outdir}/src/data ${outdir}/src/input)
  file(GLOB data CONFIGURE_DEPENDS
    ${root}/graphs/*.json ${root}/policies/*.json
    ${root}/models/*.json ${root}/hardware/*.json)
  set(builtin_c ${outdir}/src/data/builtin_data.c)
  add_custom_command(
    OUTPUT ${builtin_c}
    COMMAND ${CMAKE_COMMAND} -DOUT=${builtin_c} -DROOT=${root} -P ${root}/cmake/embed.cmake
    DEPENDS ${data} ${root}/cmake/embed.cmake
    COMMENT "Embedding built-in graphs, policies, models and hardware")
  set(keys_c ${outdir}/src/data/maxtext_keys_data.c)
  add_custom_command(
    OUTPUT ${keys_c}
    COMMAND ${CMAKE_COMMAND} -DIN=${root}/maxtext/keys.txt -DOUT=${keys_c}
            -P ${root}/cmake/keys.cmake
    DEPENDS ${root}/maxtext/keys.txt ${root}/cmake/keys.cmake
    COMMENT "Embedding MaxText's configuration keys")
  # The loader and every source it reaches, by layer (src/layers.txt):
  # base, the embedded data, the model (the loader indexes what it loads)
  # and the input layer's config (a graph's dims name its size keys).
  add_executable(remat_gen_graphs ${root}/tools/gen_graphs.c
    ${root}/src/base/error.c ${root}/src/base/util.c ${root}/src/base/json_util.c
    ${root}/src/data/builtin.c ${root}/src/data/builtin_cache.c ${root}/src/data/maxtext_keys.c
    ${builtin_c} ${keys_c}
    ${root}/src/model/dtype.c ${root}/src/model/ops.c ${root}/src/model/graph.c
    ${root}/src/model/graph_index.c ${root}/src/model/policy.c ${root}/src/model/hw.c
    ${root}/src/model/mesh.c
    ${root}/src/input/yaml_config.c ${root}/src/input/topology.c ${root}/src/input/config.c
    ${root}/src/input/config_maxtext.c ${root}/src/input/graph_load.c ${root}/src/input/slice_grids.c)
  target_include_directories(remat_gen_graphs PRIVATE ${root}/include ${root}/src)
  target_include_directories(remat_gen_graphs SYSTEM PRIVATE ${arg_INCLUDES})
  target_link_libraries(remat_gen_graphs PRIVATE ${arg_LIBS})
  set(graphs_c ${outdir}/src/input/builtin_graphs_data.c)
  add_custom_command(
    OUTPUT ${graphs_c}
    COMMAND remat_gen_graphs ${graphs_c}
    DEPENDS remat_gen_graphs
    COMMENT "Generating the built-in graphs as C data")
  set(REMAT_BUILTIN_C ${builtin_c} PARENT_SCOPE)
  set(REMAT_KEYS_C ${keys_c} PARENT_SCOPE)
  set(REMAT_GRAPHS_C ${graphs_c} PARENT_SCOPE)
endfunction()
