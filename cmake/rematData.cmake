# remat_embedded_data(<root> <outdir>): the custom commands that generate
# the embedded built-in data (cmake/embed.cmake: graphs/, policies/,
# models/, hardware/) and MaxText's key list (cmake/keys.cmake:
# maxtext/keys.txt) under <outdir>, and sets REMAT_BUILTIN_C and
# REMAT_KEYS_C in the caller to the generated sources. Used by the main
# build and by the fuzz project, so that both embed the same way.
function(remat_embedded_data root outdir)
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
  set(REMAT_BUILTIN_C ${builtin_c} PARENT_SCOPE)
  set(REMAT_KEYS_C ${keys_c} PARENT_SCOPE)
endfunction()
