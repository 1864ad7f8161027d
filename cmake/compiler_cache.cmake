# ccache in front of every compiler where it is installed (tools/install-deps.sh installs it): a
# build of sources compiled before, in any clone and build folder on this machine, takes the objects
# from the cache (ccache's own folder, ~/.cache/ccache by default) instead of compiling them again.
# CI builds a clean clone three times (the release build, then tools/sanitize.sh's ASan and TSan
# builds), most of its time before the cache and a small part with it warm (docs/performance.md,
# "CI time"). COLL_CCACHE=OFF turns it off, and a launcher of one's own
# (-DCMAKE_CXX_COMPILER_LAUNCHER=...) is kept.
option(COLL_CCACHE "Compile through ccache where it is installed" ON)
if(COLL_CCACHE)
  find_program(COLL_CCACHE_PROGRAM ccache)
  if(COLL_CCACHE_PROGRAM)
    # Paths in the repository reach the cache relative to it (CCACHE_BASEDIR: this file's parent
    # folder, also for pip's build of the python folder), and the build folder's name is left out
    # of the hash (CCACHE_NOHASHDIR; it still names itself in the debug information), so that
    # clones in different folders share the objects.
    get_filename_component(coll_repository_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
    set(coll_compiler_launcher env "CCACHE_BASEDIR=${coll_repository_root}" CCACHE_NOHASHDIR=1
                               "${COLL_CCACHE_PROGRAM}")
    foreach(coll_lang C CXX CUDA)
      if(NOT CMAKE_${coll_lang}_COMPILER_LAUNCHER)
        set(CMAKE_${coll_lang}_COMPILER_LAUNCHER ${coll_compiler_launcher})
      endif()
    endforeach()
    message(STATUS "libcollective: compiling through ${COLL_CCACHE_PROGRAM} (COLL_CCACHE=OFF: not)")
  endif()
endif()
