# Test inputs: the test-side bundle writer and the toolchain-built fixtures.
#
# Included from tests/CMakeLists.txt. Defines
#   coload_bundle_writer  static library (tests/support/bundle_writer.{h,cpp}),
#                         namespace coload::testing; include "support/bundle_writer.h"
#                         (or "bundle_writer.h")
#   make_ccob             tests/support/make_ccob.cpp, wraps a plain bundle into a CCOB
#   coload_kpack_writer   static library (tests/support/kpack_writer.{h,cpp}), namespace
#                         coload::testing::kpack; include "support/kpack_writer.h"
#   coload_elf_writer     static library (tests/support/elf_writer.{h,cpp}), from
#                         cmake/ElfWriter.cmake; the fuzz targets link it too
#   coload_fixtures       custom target (ALL) running tests/fixtures/build_fixtures.sh
#                         at build time into ${COLOAD_FIXTURE_DIR}
#   COLOAD_FIXTURE_DIR    ${CMAKE_BINARY_DIR}/fixtures (normal and cache variable), or
#                         ${COLOAD_FIXTURES_FROM}/fixtures
#   COLOAD_FIXTURES_FROM  (cache, empty by default) another build tree of this source whose
#                         toolchain-built inputs this build uses instead of building its own:
#                         the fixtures and the template library's objects (tests/HipTemplates.cmake).
#                         The toolchain writes the same bytes whatever coload is built with, so
#                         scripts/test.sh's sanitizer build reads the normal build's.
#   kpack_pack            tests/support/kpack_pack.cpp, packs bundle files into kpack archives
#   coload_kpack_fixtures custom target (ALL) running tests/fixtures/kpack_fixtures.sh into
#                         COLOAD_KPACK_FIXTURE_DIR (${CMAKE_BINARY_DIR}/fixtures-kpack)
#   COLOAD_HAVE_FIXTURES  ON when clang-22 and clang-offload-bundler-22 were found
#   coload_use_fixtures(<target>)  adds the COLOAD_FIXTURE_DIR="..." definition and
#                         a dependency on coload_fixtures to <target>
# The programs come from cmake/Dependencies.cmake (COLOAD_CLANG, COLOAD_BUNDLER,
# COLOAD_BUNDLER19); clang-19 and lld are looked up here. LLVM 19 tools are
# optional: without them their fixtures are skipped.

set(COLOAD_TEST_SUPPORT_DIR ${PROJECT_SOURCE_DIR}/tests/support)

add_library(coload_bundle_writer STATIC ${COLOAD_TEST_SUPPORT_DIR}/bundle_writer.cpp)
target_compile_features(coload_bundle_writer PUBLIC cxx_std_20)
target_include_directories(coload_bundle_writer
  PUBLIC ${PROJECT_SOURCE_DIR}/tests ${COLOAD_TEST_SUPPORT_DIR})
# llvm::MD5 for the CCOB hash; LLVM headers stay private to the writer.
target_link_libraries(coload_bundle_writer PRIVATE coload_llvm PkgConfig::ZSTD ZLIB::ZLIB)

# The test-side kpack archive writer (tests/support/kpack_writer.{h,cpp}),
# independent of the library: libzstd for its frames.
add_library(coload_kpack_writer STATIC ${COLOAD_TEST_SUPPORT_DIR}/kpack_writer.cpp)
target_compile_features(coload_kpack_writer PUBLIC cxx_std_20)
target_include_directories(coload_kpack_writer PUBLIC ${PROJECT_SOURCE_DIR}/tests ${COLOAD_TEST_SUPPORT_DIR})
target_link_libraries(coload_kpack_writer PRIVATE PkgConfig::ZSTD)

add_executable(make_ccob ${COLOAD_TEST_SUPPORT_DIR}/make_ccob.cpp)
target_link_libraries(make_ccob PRIVATE coload_bundle_writer)

include(ElfWriter)

set(COLOAD_FIXTURES_FROM "" CACHE PATH "A build tree of this source whose toolchain-built test inputs to use")
if(COLOAD_FIXTURES_FROM)
  set(COLOAD_FIXTURE_DIR ${COLOAD_FIXTURES_FROM}/fixtures)
  if(NOT EXISTS ${COLOAD_FIXTURE_DIR}/manifest.tsv)
    message(FATAL_ERROR "COLOAD_FIXTURES_FROM: ${COLOAD_FIXTURE_DIR}/manifest.tsv does not exist (build that tree first)")
  endif()
else()
  set(COLOAD_FIXTURE_DIR ${CMAKE_BINARY_DIR}/fixtures)
endif()
set(COLOAD_FIXTURE_DIR ${COLOAD_FIXTURE_DIR} CACHE INTERNAL "Toolchain-built test fixtures")

find_program(COLOAD_CLANG19 NAMES clang-19)
find_program(COLOAD_LLD NAMES lld-22 lld HINTS ${LLVM_TOOLS_BINARY_DIR} NO_DEFAULT_PATH)
if(NOT COLOAD_LLD)
  find_program(COLOAD_LLD NAMES lld-22)
endif()
find_program(COLOAD_BASH NAMES bash REQUIRED)

set(_coload_fixture_script ${PROJECT_SOURCE_DIR}/tests/fixtures/build_fixtures.sh)
file(GLOB _coload_fixture_kernels CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/tests/kernels/*.hip
  ${PROJECT_SOURCE_DIR}/tests/kernels/*.h
  ${PROJECT_SOURCE_DIR}/tests/kernels/*.c)

if(COLOAD_CLANG AND COLOAD_BUNDLER AND COLOAD_FIXTURES_FROM)
  set(COLOAD_HAVE_FIXTURES ON)
  add_custom_target(coload_fixtures)
elseif(COLOAD_CLANG AND COLOAD_BUNDLER)
  set(COLOAD_HAVE_FIXTURES ON)
  # Empty values make the script skip the LLVM 19 fixtures.
  set(_coload_clang19 "")
  set(_coload_bundler19 "")
  set(_coload_lld "")
  if(COLOAD_CLANG19 AND COLOAD_LLD)
    set(_coload_clang19 ${COLOAD_CLANG19})
    set(_coload_lld ${COLOAD_LLD})
  endif()
  if(COLOAD_BUNDLER19)
    set(_coload_bundler19 ${COLOAD_BUNDLER19})
  endif()
  set(_coload_fixture_tools ${COLOAD_CLANG} ${COLOAD_BUNDLER})
  foreach(_tool IN ITEMS ${_coload_clang19} ${_coload_bundler19})
    list(APPEND _coload_fixture_tools ${_tool})
  endforeach()

  add_custom_command(
    OUTPUT ${COLOAD_FIXTURE_DIR}/manifest.tsv
    BYPRODUCTS ${COLOAD_FIXTURE_DIR}/fixtures.tsv ${COLOAD_FIXTURE_DIR}/bundles.tsv
    COMMAND ${CMAKE_COMMAND} -E env
      CLANG=${COLOAD_CLANG}
      BUNDLER=${COLOAD_BUNDLER}
      CLANG19=${_coload_clang19}
      BUNDLER19=${_coload_bundler19}
      LLD=${_coload_lld}
      ${COLOAD_BASH} ${_coload_fixture_script} ${COLOAD_FIXTURE_DIR} $<TARGET_FILE:make_ccob>
    DEPENDS ${_coload_fixture_script} ${_coload_fixture_kernels} make_ccob ${_coload_fixture_tools}
    COMMENT "Building toolchain fixtures in ${COLOAD_FIXTURE_DIR}"
    VERBATIM)
  add_custom_target(coload_fixtures ALL DEPENDS ${COLOAD_FIXTURE_DIR}/manifest.tsv)
else()
  set(COLOAD_HAVE_FIXTURES OFF)
  message(WARNING "clang-22 or clang-offload-bundler-22 not found: toolchain fixtures disabled")
  add_custom_target(coload_fixtures)
endif()

# kpack archives packed from the fixtures by the test-side packer
# (tests/fixtures/kpack_fixtures.sh), in this build tree also when the
# fixtures come from COLOAD_FIXTURES_FROM (the packer is this tree's).
add_executable(kpack_pack ${COLOAD_TEST_SUPPORT_DIR}/kpack_pack.cpp)
target_link_libraries(kpack_pack PRIVATE coload_static coload_kpack_writer)
set(COLOAD_KPACK_FIXTURE_DIR ${CMAKE_BINARY_DIR}/fixtures-kpack CACHE INTERNAL "Fixtures packed into kpack archives")
set(_coload_kpack_script ${PROJECT_SOURCE_DIR}/tests/fixtures/kpack_fixtures.sh)
if(COLOAD_HAVE_FIXTURES)
  add_custom_command(
    OUTPUT ${COLOAD_KPACK_FIXTURE_DIR}/kpack.tsv
    COMMAND ${COLOAD_BASH} ${_coload_kpack_script} ${COLOAD_FIXTURE_DIR} ${COLOAD_KPACK_FIXTURE_DIR}
      $<TARGET_FILE:kpack_pack>
    DEPENDS ${_coload_kpack_script} kpack_pack ${COLOAD_FIXTURE_DIR}/manifest.tsv
    COMMENT "Packing fixtures into kpack archives in ${COLOAD_KPACK_FIXTURE_DIR}"
    VERBATIM)
  add_custom_target(coload_kpack_fixtures ALL DEPENDS ${COLOAD_KPACK_FIXTURE_DIR}/kpack.tsv)
  add_dependencies(coload_kpack_fixtures coload_fixtures)
else()
  add_custom_target(coload_kpack_fixtures)
endif()

function(coload_use_fixtures target)
  target_compile_definitions(${target} PRIVATE COLOAD_FIXTURE_DIR="${COLOAD_FIXTURE_DIR}")
  add_dependencies(${target} coload_fixtures)
endfunction()
