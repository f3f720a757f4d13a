#!/usr/bin/env bash
# Installs every Debian 12 package coload needs, then configures and builds it
# (library, CLI, tests and their toolchain-built fixtures) into build/.
# Works as root on a fresh machine; uses sudo otherwise.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

packages=(
  # build
  cmake ninja-build pkg-config g++ git python3 file binutils
  # LLVM 22, linked statically; clang-22 and the bundler build the test inputs
  llvm-22-dev llvm-22 clang-22 lld-22 clang-tools-22 libclang-rt-22-dev
  # LLVM 19's bundler writes the CCOB v2 fixtures
  clang-19 clang-tools-19
  # compression; libssl-dev for libcrypto's MD5 (linked from its archive)
  libzstd-dev zstd zlib1g-dev libssl-dev
  # ROCm 5.2.3 runtimes and comgr (loader and differential tests)
  libhsa-runtime-dev libamdhip64-dev libamd-comgr-dev
  # tests and benchmarks; clang-format-22 checks the sources' layout
  libgtest-dev libgmock-dev libbenchmark-dev clang-format-22
  # the Python package's tests and their type check (docs/python.md)
  python3-pytest mypy
  # packaging: the man page, the .debs' dependencies, the C ABI guard, and the
  # install test's man page and completion checks
  help2man dpkg-dev abigail-tools man-db bash-completion
)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${packages[@]}"

cmake -S "$root" -B "$root/build" -G Ninja \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
cmake --build "$root/build"
