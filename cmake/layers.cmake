# The library is built in layers, bottom up (docs/architecture.md):
#
#   common <- kernels, topo <- bootstrap <- transport <- core (src/) <- zero (zero/)
#
# Each layer is an OBJECT library. Its include path holds an "include root" made for it in the
# build tree, which contains only a link to the layer's own folder, plus the roots of the layers
# it links: a file that includes a header of a layer above it (or beside it) does not compile.
# tools/check_layers.py checks the same order on the sources, in words, in CI.

# coll_add_layer(TARGET FOLDER [USES layer...] [SOURCES file...])
#   FOLDER   the layer's folder, relative to the repository root (e.g. "transport", "topo"); every
#            layer has a folder of its own, so a folder is a layer (tools/check_layers.py)
#   USES     the layers below whose headers this one includes (linked PRIVATE)
function(coll_add_layer target folder)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "USES;SOURCES")
  add_library(${target} OBJECT ${arg_SOURCES})
  set(root ${PROJECT_BINARY_DIR}/include-roots/${target})
  # A root made by an older layout may hold a folder where the link now goes.
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${root}/${folder} SYMBOLIC)
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>
                                              $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
  target_link_libraries(${target} PRIVATE ${arg_USES} Threads::Threads)
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:${COLL_WARNINGS};${COLL_ARCH_FLAGS};-fvisibility=hidden>")
  if(COLL_HAVE_CUDA)
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CUDA>:${COLL_CUDA_WARNINGS};-Xcompiler=-fvisibility=hidden>")
  endif()
  set_property(GLOBAL APPEND PROPERTY COLL_LAYER_TARGETS ${target})
endfunction()
