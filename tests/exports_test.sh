#!/usr/bin/env bash
# libcoload.so exports exactly the functions the C API's headers declare, each
# under the version node of its ABI (COLOAD_<major>), with the SONAME
# libcoload.so.<major>; nothing else (no C++ API, LLVM, zstd, zlib or C++
# runtime), which would bind against another LLVM or libstdc++ in the same
# process (comgr, Mesa, torch). docs/packaging.md says what the ABI promises.
#   exports_test.sh LIBRARY VERSION_H HEADER...  (coload.h and the headers it includes)
set -euo pipefail
library=$1
version_header=$2
headers=("${@:3}")
major=$(sed -n 's/^#define COLOAD_VERSION_MAJOR \([0-9]*\)$/\1/p' "$version_header")
[ -n "$major" ] || { echo "FAIL: no COLOAD_VERSION_MAJOR in $version_header"; exit 1; }

soname=$(readelf -d "$library" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libcoload.so.$major" ] || { echo "FAIL: SONAME '$soname', expected libcoload.so.$major"; exit 1; }

# nm -D prints versioned symbols as name@@NODE; GNU ld also defines the node
# itself as an absolute symbol (A COLOAD_0), which is not an export.
exported=$(nm -D --defined-only "$library" | awk -v node="COLOAD_$major" '!($2 == "A" && $3 == node) {print $3}' | sort)
unversioned=$(echo "$exported" | grep -v -E "^coload_[a-z0-9_]+@@COLOAD_${major}\$" || true)
if [ -n "$unversioned" ]; then
  echo "FAIL: $library exports symbols that are not coload_* @@COLOAD_$major:"
  echo "$unversioned" | c++filt | head -20
  exit 1
fi
declared=$(grep -hoE '^(const )?[a-z_]+\*? \*?coload_[a-z0-9_]+\(' "${headers[@]}" | sed -E 's/.*(coload_[a-z0-9_]+)\(/\1/' | sort)
names=$(echo "$exported" | sed 's/@@.*//')
if [ "$declared" != "$names" ]; then
  echo "FAIL: the exports differ from the functions the C headers declare (< declared, > exported):"
  diff <(echo "$declared") <(echo "$names") || true
  exit 1
fi
# Nor does loading it run a static dependency's initialiser: OpenSSL's CPU
# probe (OPENSSL_cpuid_setup, an .init entry) stays out of the link
# (ccob/md5_stream.cpp says how).
symbols=$(nm "$library")
[ -n "$symbols" ] || { echo "FAIL: $library has no symbol table to check"; exit 1; }
if grep -q -w OPENSSL_cpuid_setup <<<"$symbols"; then
  echo "FAIL: $library links OpenSSL's CPU probe (OPENSSL_cpuid_setup), which runs at every load"
  exit 1
fi
echo "PASS: $(echo "$names" | wc -l) functions of coload.h, all @@COLOAD_$major; SONAME $soname"
