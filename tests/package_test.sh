#!/usr/bin/env bash
# Uses coload from outside its build, every way docs/packaging.md offers:
# installs it into a temporary prefix and builds, out of tree, (a) a C program
# with pkg-config, (b) a C and a C++ program with find_package(coload) (and the
# C one with the build tree's package), (c) the C++ program with coload as an
# add_subdirectory subproject, and (d) the C program against the .debs cpack
# writes, extracted with dpkg -x; and (e) the Python package, installed and
# from python3-coload, prints coload.version(). Each program registers a fixture with the
# dry-run runtime and checks the entry bundle 0 chooses and the sizes of a
# kernel (tests/package/consumer.c).
#   package_test.sh SOURCE_DIR BUILD_DIR FIXTURE_DIR
set -euo pipefail
source_dir=$1
build_dir=$2
fixture=$3/bundles/driver_two_arch.hipfb
expected=(gfx90a _Z5saxpyfPKfPfi hipv4-amdgcn-amd-amdhsa--gfx90a 288 0)
compilers=(-DCMAKE_C_COMPILER="${CC:-clang-22}" -DCMAKE_CXX_COMPILER="${CXX:-clang++-22}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

consumer() {  # consumer PROGRAM: runs it on the fixture; it checks what it gets
  "$1" "$fixture" "${expected[@]}"
}
fail() {
  echo "FAIL: $*"
  exit 1
}

echo "== cmake --install"
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" > /dev/null
pc_file=$(find "$prefix" -name coload.pc)
[ -n "$pc_file" ] || fail "no coload.pc installed"
soname=$(readelf -d "$(dirname "$pc_file")"/../libcoload.so | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libcoload.so.0 ] || fail "SONAME '$soname', expected libcoload.so.0"

echo "== the installed tool: coload --version, man page, bash completion"
[ "$("$prefix/bin/coload" --version)" = "coload $(sed -n 's/^Version: //p' "$pc_file")" ] ||
  fail "the installed coload --version differs from coload.pc's version"
bash "$source_dir/tests/man_completion_test.sh" "$prefix/bin/coload" "$prefix/share/man/man1/coload.1" \
  "$prefix/share/bash-completion/completions/coload"

echo "== the Python package, from the prefix"
# It finds the prefix's libcoload.so.0 relative to itself (docs/python.md).
python_module=$(find "$prefix" -path '*/coload/py.typed')
[ -n "$python_module" ] || fail "no Python package installed"
python_version=$(env -u COLOAD_LIBRARY PYTHONPATH="$(dirname "$(dirname "$python_module")")" \
  python3 -c "import coload; print(coload.version())")
[ "$python_version" = "$(sed -n 's/^Version: //p' "$pc_file")" ] ||
  fail "the installed Python package prints version '$python_version'"

echo "== (a) C program, pkg-config"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc_file")
# shellcheck disable=SC2046  # pkg-config's flags are words
"${CC:-clang-22}" -std=c11 -Wall -Werror -o "$work/c_pkg_config" "$source_dir/tests/package/consumer.c" \
  $(pkg-config --cflags --libs coload)
LD_LIBRARY_PATH=$(pkg-config --variable=libdir coload) consumer "$work/c_pkg_config"
[ "$(pkg-config --modversion coload)" = "$("$prefix/bin/coload" --version | cut -d' ' -f2)" ] ||
  fail "coload.pc's version differs from the tool's"

echo "== (b) C and C++ programs, find_package(coload)"
cmake -S "$source_dir/tests/package/find_package" -B "$work/find_package" -G Ninja "${compilers[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$work/find_package" > /dev/null
consumer "$work/find_package/consumer_c"
consumer "$work/find_package/consumer_cpp"
# The build tree is a package too.
cmake -S "$source_dir/tests/package/find_package" -B "$work/build_tree_package" -G Ninja "${compilers[@]}" \
  -Dcoload_DIR="$build_dir" > /dev/null
cmake --build "$work/build_tree_package" --target consumer_c > /dev/null
consumer "$work/build_tree_package/consumer_c"
# A newer major is refused (SameMajorVersion), a lower minor accepted.
mkdir -p "$work/version_probe"
cat > "$work/version_probe/CMakeLists.txt" << 'PROBE'
cmake_minimum_required(VERSION 3.25)
project(version_probe NONE)
find_package(coload 0.0 CONFIG REQUIRED)
find_package(coload 1.0 CONFIG QUIET)
if(coload_FOUND)
  message(FATAL_ERROR "find_package(coload 1.0) accepted ${coload_VERSION}")
endif()
PROBE
cmake -S "$work/version_probe" -B "$work/version_probe/build" -DCMAKE_PREFIX_PATH="$prefix" > /dev/null

echo "== (c) C++ program, coload as a subproject"
cmake -S "$source_dir/tests/package/subproject" -B "$work/subproject" -G Ninja "${compilers[@]}" \
  -DCOLOAD_SOURCE="$source_dir" > /dev/null
cmake --build "$work/subproject" --target consumer_cpp > /dev/null
consumer "$work/subproject/consumer_cpp"

echo "== (d) the Debian packages"
(cd "$work" && cpack --config "$build_dir/CPackConfig.cmake" -G DEB -B "$work/debs" > /dev/null)
version=$(pkg-config --modversion coload)
for package in libcoload0 libcoload-dev coload-tools python3-coload coload-preload; do
  deb=$(find "$work/debs" -maxdepth 1 -name "${package}_${version}_*.deb")
  [ -n "$deb" ] || fail "cpack wrote no $package package"
  dpkg-deb -x "$deb" "$work/root"
  declare "depends_${package//-/_}=$(dpkg-deb -f "$deb" Depends)"
done
# The runtime package loads libc and libzstd only; ROCm stays optional.
# shellcheck disable=SC2154  # set by declare above
runtime_depends=$(echo "$depends_libcoload0" | tr ',' '\n' | sed 's/ *(.*//; s/^ *//' | sort | tr '\n' ' ')
[ "$runtime_depends" = "libc6 libzstd1 " ] || fail "libcoload0 depends on: $depends_libcoload0"
# shellcheck disable=SC2154
[[ "$depends_libcoload_dev" == *"libcoload0 (= $version)"* ]] ||
  fail "libcoload-dev depends on: $depends_libcoload_dev"
# The preload, like the runtime, loads libc and libzstd only, and `coload run` finds it beside the tool.
# shellcheck disable=SC2154
preload_depends=$(echo "$depends_coload_preload" | tr ',' '\n' | sed 's/ *(.*//; s/^ *//' | sort | tr '\n' ' ')
[ "$preload_depends" = "libc6 libzstd1 " ] || fail "coload-preload depends on: $depends_coload_preload"
[ -n "$(find "$work/root" -name libcoload_preload.so)" ] || fail "coload-preload holds no libcoload_preload.so"
PKG_CONFIG_PATH=$(dirname "$(find "$work/root" -name coload.pc)")
[[ "$(pkg-config --variable=libdir coload)" == "$work/root/usr/"* ]] || fail "coload.pc does not point into the .debs"
# shellcheck disable=SC2046
"${CC:-clang-22}" -std=c11 -Wall -Werror -o "$work/c_deb" "$source_dir/tests/package/consumer.c" \
  $(pkg-config --cflags --libs coload)
LD_LIBRARY_PATH=$(pkg-config --variable=libdir coload) consumer "$work/c_deb"
[ "$("$work/root/usr/bin/coload" --version)" = "coload $version" ] || fail "coload-tools' coload --version"
for file in usr/share/man/man1/coload.1 usr/share/bash-completion/completions/coload; do
  [ -f "$work/root/$file" ] || fail "coload-tools lacks /$file"
done
# python3-coload: the package where Debian's python3 looks, finding libcoload0's library.
# shellcheck disable=SC2154
[[ "$depends_python3_coload" == *"libcoload0 (= $version)"* ]] || fail "python3-coload depends on: $depends_python3_coload"
[ "$(env -u COLOAD_LIBRARY PYTHONPATH="$work/root/usr/lib/python3/dist-packages" python3 -c \
  "import coload; print(coload.version(), coload.library_path())")" = "$version $(find "$work/root" -name libcoload.so.0)" ] ||
  fail "python3-coload does not find the extracted libcoload.so.0"
echo "PASS: install, Python, pkg-config, find_package, subproject and .deb consumers"
