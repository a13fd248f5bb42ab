# One helper for a part's library and one for a test, so that every part is built the same way
# and no part links a part that the dependency table (drawn in README.md's Layout) does not allow.

# Which parts each part may link, and so include (scripts/layering reads these lines and checks
# every #include against them). The ground floor first: core <- model <- onnx, devices <- spec <-
# results; then the parts that stand on them. A part may use what the parts it names use.
set(RALP_PARTS_ALLOWED_core "")
set(RALP_PARTS_ALLOWED_model "core")
set(RALP_PARTS_ALLOWED_onnx "core;model")
set(RALP_PARTS_ALLOWED_devices "core;model")
set(RALP_PARTS_ALLOWED_spec "core;model;onnx;devices")
set(RALP_PARTS_ALLOWED_results "core;model;devices;spec")
set(RALP_PARTS_ALLOWED_published "core;model;devices")
set(RALP_PARTS_ALLOWED_kernels "core;model;devices")
set(RALP_PARTS_ALLOWED_calibrate "core;model;devices;results;kernels")
set(RALP_PARTS_ALLOWED_schedule "core;model;devices;spec;results")
set(RALP_PARTS_ALLOWED_sim "core;model;devices;spec;results;schedule")
set(RALP_PARTS_ALLOWED_placement "core;model;devices;spec;results;schedule;sim")
set(RALP_PARTS_ALLOWED_reports "core;model;devices;spec;results")
set(RALP_PARTS_ALLOWED_sweep "core;model;devices;spec;results;schedule;sim;placement;reports")
set(RALP_PARTS_ALLOWED_cluster "core;model;devices;spec;results;schedule;kernels")
set(RALP_PARTS_ALLOWED_validate "core;model;devices;spec;results;sim")
# The executable, not a library: every part.
set(RALP_PARTS_ALLOWED_cli "core;model;onnx;devices;spec;results;published;kernels;calibrate;schedule;sim;placement;reports;sweep;cluster;validate")

set(RALP_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers)

# ralp_add_library(<part> SOURCES ... [PARTS <parts>] [PUBLIC_LIBS ...] [PRIVATE_LIBS ...])
# Creates ralp_<part> with public headers in <part>/include. PARTS are other ralp parts it links;
# a part outside the allowed list is a configuration error.
function(ralp_add_library part)
  cmake_parse_arguments(ARG "" "" "SOURCES;PARTS;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
  if(NOT DEFINED RALP_PARTS_ALLOWED_${part})
    message(FATAL_ERROR "ralp_add_library: '${part}' is not a part named in RalpHelpers.cmake")
  endif()
  foreach(dep IN LISTS ARG_PARTS)
    if(NOT dep IN_LIST RALP_PARTS_ALLOWED_${part})
      message(FATAL_ERROR "ralp_${part} may not depend on ralp_${dep} (allowed: "
                          "'${RALP_PARTS_ALLOWED_${part}}'); see README.md, Layout")
    endif()
  endforeach()
  set(target ralp_${part})
  add_library(${target} ${ARG_SOURCES})
  add_library(ralp::${part} ALIAS ${target})
  target_include_directories(${target} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${RALP_WARNINGS}>)
  # Position-independent, so that a loadable module (the CUDA backend) can link the parts it
  # needs; without semantic interposition the code is as fast as an executable's.
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-semantic-interposition>)
  list(TRANSFORM ARG_PARTS PREPEND "ralp::" OUTPUT_VARIABLE part_targets)
  target_link_libraries(${target} PUBLIC ${part_targets} ${ARG_PUBLIC_LIBS} PRIVATE ${ARG_PRIVATE_LIBS})
endfunction()

# ralp_add_test(<name> SOURCES ... LIBS ... [LABELS ...] [TIMEOUT s] [PROPERTIES <prop> <value>...])
# A GoogleTest executable registered with CTest test by test. RALP_TEST_DATA_DIR points at tests/
# and RALP_SOURCE_DIR at the repository root, so tests never depend on the working directory.
function(ralp_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS;PROPERTIES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_options(${name} PRIVATE ${RALP_WARNINGS})
  target_compile_definitions(${name} PRIVATE
    RALP_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests"
    RALP_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    RALP_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}" ${ARG_PROPERTIES})
endfunction()

# ralp_add_module(<name> HOST <library> MACRO <prefix> SOURCES ... [LIBS ...])
# A loadable module, lib<name>.so, placed beside the ralp executable, that <library> opens on first
# use (core's loadable_module.hpp), so that commands which never use it do not load its libraries.
# The module links its own copy of the parts in LIBS and hides every symbol but the entry point
# its sources mark visible; it must resolve every symbol itself. <library> gets <prefix>_FILE (the
# file name) and <prefix>_DIR (the folder the build places it in) and builds the module with it.
function(ralp_add_module name)
  cmake_parse_arguments(ARG "" "HOST;MACRO" "SOURCES;LIBS" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${RALP_WARNINGS}>)
  target_link_options(${name} PRIVATE
    LINKER:--no-undefined LINKER:--exclude-libs,ALL LINKER:--as-needed)
  set_target_properties(${name} PROPERTIES
    CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
  target_compile_definitions(${ARG_HOST} PRIVATE
    ${ARG_MACRO}_FILE="$<TARGET_FILE_NAME:${name}>"
    ${ARG_MACRO}_DIR="$<TARGET_FILE_DIR:${name}>")
  # Whatever links the host library gets the module built too.
  add_dependencies(${ARG_HOST} ${name})
endfunction()
