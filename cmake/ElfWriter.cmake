# coload_elf_writer: the test-side AMDGPU ELF writer (tests/support/elf_writer.{h,cpp},
# namespace coload::testing), shared by the tests and the fuzz targets, which wrap
# fuzz bytes into valid code objects with it. It includes no coload header.
# Included from cmake/Fixtures.cmake and fuzz/CMakeLists.txt.
include_guard(GLOBAL)

add_library(coload_elf_writer STATIC ${PROJECT_SOURCE_DIR}/tests/support/elf_writer.cpp)
target_compile_features(coload_elf_writer PUBLIC cxx_std_20)
target_include_directories(coload_elf_writer PUBLIC ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/tests/support)
