# Finds the Debian-packaged dependencies (scripts/setup installs them) and the optional backends.
# On a machine without them (a GPU machine with only CUDA and CMake), RALP_THIRD_PARTY_DIR names a
# folder made by scripts/gpu-bundle holding the header-only libraries, GoogleTest's sources and
# Google Benchmark.
set(RALP_THIRD_PARTY_DIR "" CACHE PATH "Bundled third-party folder (scripts/gpu-bundle), if any")
find_package(Threads REQUIRED)
if(RALP_THIRD_PARTY_DIR)
  set(bundle ${RALP_THIRD_PARTY_DIR})
  foreach(target nlohmann_json::nlohmann_json Boost::headers CLI11::CLI11)
    add_library(${target} INTERFACE IMPORTED)
    target_include_directories(${target} INTERFACE ${bundle}/include)
  endforeach()
  add_library(benchmark::benchmark SHARED IMPORTED)
  set_target_properties(benchmark::benchmark PROPERTIES
    IMPORTED_LOCATION ${bundle}/lib/libbenchmark.so.1debian
    INTERFACE_INCLUDE_DIRECTORIES ${bundle}/include
    INTERFACE_LINK_LIBRARIES Threads::Threads)
  if(RALP_BUILD_TESTS)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    add_subdirectory(${bundle}/googletest ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
    # GoogleTest 1.11 and later name their targets GTest::* themselves.
    foreach(name gtest gmock gtest_main)
      if(NOT TARGET GTest::${name})
        add_library(GTest::${name} ALIAS ${name})
      endif()
    endforeach()
    include(GoogleTest)
  endif()
else()
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(Boost 1.74 REQUIRED)
  find_package(CLI11 QUIET CONFIG)
  if(NOT TARGET CLI11::CLI11)
    find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
    add_library(CLI11::CLI11 INTERFACE IMPORTED)
    target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
  endif()
  if(RALP_BUILD_TESTS)
    find_package(GTest REQUIRED)
    include(GoogleTest)
  endif()
  # Google Benchmark: the benchmarks' harness, and calibration's.
  if(RALP_BUILD_BENCH)
    find_package(benchmark REQUIRED)
  else()
    find_package(benchmark QUIET)
  endif()
endif()

# SimGrid ships only a pkg-config file in Debian.
set(RALP_HAVE_SIM OFF)
if(RALP_ENABLE_SIM)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(SimGrid IMPORTED_TARGET simgrid>=3.32)
  if(SimGrid_FOUND)
    add_library(SimGrid::SimGrid ALIAS PkgConfig::SimGrid)
    set(RALP_HAVE_SIM ON)
  else()
    message(WARNING "SimGrid not found: the simulator and placement parts are not built")
  endif()
endif()

# ralp::allocator: the malloc of the programs that simulate (ralp, the simulator's benchmarks).
# SimGrid 3.32 keeps every flow in flight in one list that it scans from end to end each time a
# flow ends; under glibc's malloc the list's nodes lie scattered through the heap and the scan
# waits on memory at every node, while jemalloc packs small blocks of one size together. The
# event simulation of bench/nodes.cpp runs about twice as fast (docs/simulate.md, "Speed").
add_library(ralp_allocator INTERFACE)
add_library(ralp::allocator ALIAS ralp_allocator)
set(RALP_HAVE_JEMALLOC OFF)
if(RALP_HAVE_SIM)
  pkg_check_modules(jemalloc IMPORTED_TARGET jemalloc)
  if(jemalloc_FOUND)
    target_link_libraries(ralp_allocator INTERFACE PkgConfig::jemalloc)
    set(RALP_HAVE_JEMALLOC ON)
  else()
    message(WARNING "jemalloc not found (libjemalloc-dev): the event simulation runs slower")
  endif()
endif()

set(RALP_HAVE_MPI OFF)
if(RALP_ENABLE_MPI)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(RALP_HAVE_MPI ON)
  else()
    message(STATUS "MPI not found: the real-cluster mode is not built")
  endif()
endif()

message(STATUS "ralp: simulator ${RALP_HAVE_SIM}, MPI ${RALP_HAVE_MPI}")

# CPU kernel backend: oneDNN (Debian's build threads with OpenMP, and its config file needs the
# OpenCL headers). Absent, the CPU backend is not built and the CUDA one stands alone. OpenBLAS is
# only the benchmarks' comparison point for FC layers (the kernels do not use it, see
# kernels/src/cpu/cpu_backend.cpp).
set(RALP_HAVE_CPU_KERNELS OFF)
if(RALP_ENABLE_CPU_KERNELS)
  find_package(dnnl CONFIG QUIET)
  find_package(OpenMP COMPONENTS CXX QUIET)
  if(TARGET DNNL::dnnl AND OpenMP_CXX_FOUND)
    set(RALP_HAVE_CPU_KERNELS ON)
  else()
    message(STATUS "oneDNN or OpenMP not found: the CPU kernel backend is not built")
  endif()
  find_package(OpenBLAS CONFIG QUIET)
  if(OpenBLAS_FOUND)
    add_library(ralp_openblas INTERFACE IMPORTED)
    target_include_directories(ralp_openblas INTERFACE ${OpenBLAS_INCLUDE_DIRS})
    target_link_libraries(ralp_openblas INTERFACE ${OpenBLAS_LIBRARIES})
  endif()
endif()

# CUDA kernel backend: only when nvcc is found (CUDA never goes into project(LANGUAGES)), with
# cuDNN found by hand (it has no CMake package; CUDNN_ROOT points at a tarball or wheel install).
# Only the runtime API is linked: linking the driver library breaks start-up without a driver.
set(RALP_HAVE_CUDA OFF)
if(RALP_ENABLE_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "75-virtual;80-real;90-real" CACHE STRING "CUDA architectures")
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(CUDNN_ROOT "$ENV{CUDNN_ROOT}" CACHE PATH "cuDNN install prefix (lib/ and include/)")
    find_library(RALP_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
      HINTS ${CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
      PATH_SUFFIXES lib lib64 lib/x64)
    find_path(RALP_CUDNN_INCLUDE_DIR cudnn.h
      HINTS ${CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
    if(RALP_CUDNN_LIBRARY AND RALP_CUDNN_INCLUDE_DIR AND TARGET CUDA::cublas)
      add_library(ralp_cudnn INTERFACE IMPORTED)
      target_include_directories(ralp_cudnn INTERFACE ${RALP_CUDNN_INCLUDE_DIR})
      target_link_libraries(ralp_cudnn INTERFACE ${RALP_CUDNN_LIBRARY})
      set(RALP_HAVE_CUDA ON)
    else()
      message(STATUS "cuDNN or cuBLAS not found (set CUDNN_ROOT): the CUDA backend is not built")
    endif()
  else()
    message(STATUS "nvcc not found: the CUDA kernel backend is not built")
  endif()
endif()

message(STATUS "ralp: CPU kernels ${RALP_HAVE_CPU_KERNELS}, CUDA kernels ${RALP_HAVE_CUDA}")

# ONNX import: Debian's libonnx-dev ships a CMake config (targets onnx and onnx_proto); its
# onnx_proto target links protobuf::libprotobuf, which CMake's FindProtobuf defines from
# libprotobuf-dev. Absent, `ralp model import` says what to install and the rest builds as usual.
option(RALP_ENABLE_ONNX "Import ONNX models (needs libonnx-dev and libprotobuf-dev)" ON)
set(RALP_HAVE_ONNX OFF)
if(RALP_ENABLE_ONNX)
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX CONFIG QUIET)
  endif()
  if(TARGET onnx_proto)
    set(RALP_HAVE_ONNX ON)
  else()
    message(STATUS "ONNX or protobuf not found (libonnx-dev, libprotobuf-dev): no ONNX import")
  endif()
endif()
message(STATUS "ralp: ONNX import ${RALP_HAVE_ONNX}")
