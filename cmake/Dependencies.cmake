# LLVM 22 (static, private), libzstd, zlib and libcrypto, all from Debian packages.
# LLVMConfigVersion accepts only an exact major.minor, so check the major by hand.
find_package(LLVM REQUIRED CONFIG HINTS /usr/lib/llvm-22/lib/cmake/llvm NO_DEFAULT_PATH)
if(NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR "coload needs LLVM 22 (llvm-22-dev), found ${LLVM_PACKAGE_VERSION} in ${LLVM_DIR}")
endif()
message(STATUS "LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
llvm_map_components_to_libnames(COLOAD_LLVM_LIBS Object BinaryFormat Support TargetParser)

# One interface target carrying LLVM's include path and definitions, so only
# the targets that link it see LLVM headers (never the public ones).
add_library(coload_llvm INTERFACE)
target_include_directories(coload_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
separate_arguments(COLOAD_LLVM_DEFINITIONS NATIVE_COMMAND ${LLVM_DEFINITIONS})
target_compile_definitions(coload_llvm INTERFACE ${COLOAD_LLVM_DEFINITIONS})
target_link_libraries(coload_llvm INTERFACE ${COLOAD_LLVM_LIBS})

find_package(PkgConfig REQUIRED)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
find_package(ZLIB REQUIRED)
# Their archives, which the -dev packages ship, for the coload tool's static link.
find_library(COLOAD_ZSTD_ARCHIVE NAMES libzstd.a)
find_library(COLOAD_ZLIB_ARCHIVE NAMES libz.a)

# libcrypto's MD5 (ccob/md5_stream.h), always from its archive (libssl-dev):
# the few members MD5 needs are linked in and hidden like LLVM, so neither
# libcoload.so nor the tool loads libcrypto.so.3 or needs libssl3.
find_path(COLOAD_CRYPTO_INCLUDE_DIR openssl/md5.h REQUIRED)
find_library(COLOAD_CRYPTO_ARCHIVE NAMES libcrypto.a REQUIRED)
add_library(coload_crypto INTERFACE)
target_include_directories(coload_crypto SYSTEM INTERFACE ${COLOAD_CRYPTO_INCLUDE_DIR})
target_link_libraries(coload_crypto INTERFACE ${COLOAD_CRYPTO_ARCHIVE} ${CMAKE_DL_LIBS})

# Toolchain programs that build the test fixtures.
find_program(COLOAD_CLANG NAMES clang-22 HINTS ${LLVM_TOOLS_BINARY_DIR})
find_program(COLOAD_BUNDLER NAMES clang-offload-bundler-22 HINTS ${LLVM_TOOLS_BINARY_DIR})
find_program(COLOAD_BUNDLER19 NAMES clang-offload-bundler-19)

# lld resolves a symbol at the first archive that defines it, which lets
# libcoload.so and the tool take zlib and zstd from their archives above.
include(CheckLinkerFlag)
check_linker_flag(CXX "-fuse-ld=lld" COLOAD_HAVE_LLD)
