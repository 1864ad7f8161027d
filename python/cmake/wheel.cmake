# The wheel build of torch_collective (pip install ./python): included by python/CMakeLists.txt
# when scikit-build-core configures the python folder on its own.
#
# libcollective comes from an installed prefix when find_package finds one (the wheel then points
# at it), else from this source tree, built here with only what the library needs and shipped in
# the wheel next to the extension. Either way the extension is built for the interpreter that pip
# runs (scikit-build-core's Python_EXECUTABLE), against the torch that interpreter has.
set(coll_wheel_build TRUE)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
# ccache as in the project build (the file is absent where only the python folder was copied).
include(${CMAKE_CURRENT_SOURCE_DIR}/../cmake/compiler_cache.cmake OPTIONAL)
set(coll_python ${Python_EXECUTABLE})
if(NOT coll_python)
  find_package(Python COMPONENTS Interpreter REQUIRED)
  set(coll_python ${Python_EXECUTABLE})
endif()

find_package(collective CONFIG QUIET)
if(collective_FOUND)
  get_target_property(coll_found_library collective::collective LOCATION)
  get_filename_component(coll_found_libdir ${coll_found_library} DIRECTORY)
  message(STATUS "torch_collective wheel: libcollective from ${coll_found_libdir}")
  add_library(collective ALIAS collective::collective)
  set(coll_extension_install_rpath ${coll_found_libdir})
else()
  message(STATUS "torch_collective wheel: no installed libcollective found; building this tree's into the wheel")
  # The library alone: no tests, benchmarks, static library or (nested) torch backend.
  set(COLL_WITH_TORCH OFF CACHE STRING "" FORCE)
  set(COLL_BUILD_TESTS OFF CACHE BOOL "" FORCE)
  set(COLL_BUILD_BENCHMARKS OFF CACHE BOOL "" FORCE)
  set(COLL_BUILD_STATIC OFF CACHE BOOL "" FORCE)
  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/.. libcollective EXCLUDE_FROM_ALL)
  # Only the file the extension asks for (its SONAME): a wheel would hold the two symlinks of a
  # normal install as two more copies.
  get_target_property(coll_soversion collective SOVERSION)
  install(FILES $<TARGET_FILE:collective> DESTINATION torch_collective RENAME libcollective.so.${coll_soversion}
          COMPONENT python)
  set(coll_extension_install_rpath "$ORIGIN")
endif()

# The project's AUTO/ON/OFF options, when the project itself was not configured here.
if(NOT COMMAND coll_auto_option)
  include(${CMAKE_CURRENT_SOURCE_DIR}/../cmake/auto_option.cmake)
endif()

# The backend itself, for this one interpreter, from the same rules as the project build.
set(COLL_WITH_TORCH ON CACHE STRING "" FORCE)
set(COLL_TORCH_PYTHON ${coll_python} CACHE STRING "" FORCE)
include(GNUInstallDirs)
add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR} torch_collective)
