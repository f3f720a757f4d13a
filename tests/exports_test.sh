#!/usr/bin/env bash
# libcoload.so must export only coload's own symbols: C API (coload_*) and the
# coload:: C++ namespace. Anything else (LLVM, zstd, libstdc++ templates) would
# clash with another LLVM in the same process (comgr, Mesa).
set -euo pipefail
library=$1
exported=$(nm -D --defined-only "$library" | awk '{print $3}')
[ -n "$exported" ] || { echo "FAIL: $library exports nothing"; exit 1; }
foreign=$(echo "$exported" | c++filt | grep -v -E '^(coload_|coload::|(typeinfo|vtable|typeinfo name) for coload::)' \
  | grep -v -E '^coload::Expected<' || true)
# Template instantiations of coload types (coload::Expected<std::string>) demangle with coload:: first: allowed.
if [ -n "$foreign" ]; then
  echo "FAIL: $library exports symbols outside coload:"
  echo "$foreign" | head -20
  exit 1
fi
# coload::detail is internal (no public header names it): none of its own
# functions or data may be exported. (Instantiations of coload::Expected over
# a detail type demangle as coload::Expected<...> and stay weak exports.)
internal=$(echo "$exported" | c++filt | grep -E '^coload::detail::' || true)
if [ -n "$internal" ]; then
  echo "FAIL: $library exports coload::detail internals:"
  echo "$internal" | head -20
  exit 1
fi
llvm=$(echo "$exported" | grep -c -i llvm || true)
echo "PASS: $(echo "$exported" | wc -l) exported symbols, all coload's; $llvm mention llvm"
[ "$llvm" -eq 0 ]
