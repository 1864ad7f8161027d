# The library is built in layers, bottom up (docs/architecture.md):
#
#   common <- kernels, topo <- bootstrap <- transport <- core (src/) <- zero (src/zero)
#
# Each layer is an OBJECT library. Its include path holds an "include root" made for it in the
# build tree, which contains only a link to the layer's own folder, plus the roots of the layers
# it links: a file that includes a header of a layer above it (or beside it) does not compile.
# tools/check_layers.py checks the same order on the sources, in words, in CI.

# coll_add_layer(TARGET FOLDER [EXCLUDE child...] [USES layer...] [SOURCES file...])
#   FOLDER   the layer's folder, relative to the repository root (e.g. "transport", "src/topo")
#   EXCLUDE  children of FOLDER that belong to other layers (src/ holds topo/ and zero/): the
#            root then links FOLDER's other children one by one instead of FOLDER itself
#   USES     the layers below whose headers this one includes (linked PRIVATE)
function(coll_add_layer target folder)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "EXCLUDE;USES;SOURCES")
  add_library(${target} OBJECT ${arg_SOURCES})
  set(root ${PROJECT_BINARY_DIR}/include-roots/${target})
  set(source ${PROJECT_SOURCE_DIR}/${folder})
  if(arg_EXCLUDE)
    file(REMOVE_RECURSE ${root})
    file(MAKE_DIRECTORY ${root}/${folder})
    file(GLOB children LIST_DIRECTORIES true CONFIGURE_DEPENDS RELATIVE ${source} ${source}/*)
    foreach(child IN LISTS children)
      if(NOT child IN_LIST arg_EXCLUDE)
        file(CREATE_LINK ${source}/${child} ${root}/${folder}/${child} SYMBOLIC)
      endif()
    endforeach()
  else()
    get_filename_component(parent ${root}/${folder} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${source} ${root}/${folder} SYMBOLIC)
  endif()
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
