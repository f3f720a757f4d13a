#!/usr/bin/env bash
# Builds the large, realistic inputs the benchmarks read, with the real
# toolchain (clang-22 and clang-offload-bundler-22, HIP without ROCm:
# `-x hip -nogpulib -nogpuinc`). Nothing is downloaded.
#
#   generate_inputs.sh OUTDIR
#
# Outputs (paths relative to OUTDIR):
#   libbench_plain.so       lld -shared host library: TUS translation units,
#                           one plain bundle each (host entry + 8 targets),
#                           KERNELS kernels per TU, all in .hip_fatbin
#   libbench_compressed.so  the same TUs, each bundle compressed (CCOB v3 zstd,
#                           `clang-offload-bundler-22 -compress`)
#   parts/tu_NNN.hipfb      each TU's plain bundle (= its bytes in .hip_fatbin)
#   parts/tu_NNN.ccob       each TU's compressed bundle
#   large.hipfb             one TU of LARGE_KERNELS kernels (about 4 MiB of code
#                           per target), plain
#   large.ccob              the same bundle compressed (CCOB v3 zstd)
#   realistic_v2.ccob      REALISTIC_KERNELS kernels of long unrolled bodies
#                           with distinct constants (real code's entropy: zstd
#                           takes it down ~2.5x, not ~30x as large.ccob), one
#                           code object per REALISTIC_TARGETS (about 10 MiB
#                           each) and an empty host entry, bundled by
#                           clang-offload-bundler-19 -compress (CCOB v2)
#   realistic_v3.ccob      the same entries, clang-offload-bundler-22 --compress
#                           (CCOB v3); both: issue 27's first verified check
#   co/large-gfx90a-cov4.co the large TU for gfx90a only, code object v4 (what
#                           comgr 5.2.3 can read), bare ELF
#   co/tu_000-gfx90a-cov4.co  the same for TU 0
#   inputs.tsv              name  path  bundles  bytes  note
#   stamp                   the content key of everything above
#
# Every TU source is generated from one template (tu_source below) so that the
# kernels differ in name and body. Work is cached by content: each TU's bundle
# is stored under cache/<sha256 of source + tools + flags>, and a rerun whose
# overall key matches `stamp` does nothing at all.
#
# Environment (defaults in brackets):
#   CLANG [clang-22]  BUNDLER [clang-offload-bundler-22]  JOBS [nproc]
#   BUNDLER19 [clang-offload-bundler-19]
#   TUS [128]  KERNELS [6]  LARGE_KERNELS [1024]  REALISTIC_KERNELS [1560]
#   TARGETS ["gfx900 gfx906 gfx908 gfx90a gfx942 gfx1030 gfx1100 gfx1201"]
#   REALISTIC_TARGETS ["gfx900 gfx906 gfx908 gfx90a:xnack- gfx942 gfx1030 gfx1100"]
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KDIR=$(cd "$HERE/../tests/kernels" && pwd)
CLANG=${CLANG:-clang-22}
BUNDLER=${BUNDLER:-clang-offload-bundler-22}
BUNDLER19=${BUNDLER19:-clang-offload-bundler-19}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
TUS=${TUS:-128}
KERNELS=${KERNELS:-6}
LARGE_KERNELS=${LARGE_KERNELS:-1024}
REALISTIC_KERNELS=${REALISTIC_KERNELS:-1560}
TARGETS=${TARGETS:-gfx900 gfx906 gfx908 gfx90a gfx942 gfx1030 gfx1100 gfx1201}
REALISTIC_TARGETS=${REALISTIC_TARGETS:-gfx900 gfx906 gfx908 gfx90a:xnack- gfx942 gfx1030 gfx1100}

die() { echo "generate_inputs: error: $*" >&2; exit 1; }
note() { echo "generate_inputs: $*" >&2; }
command -v "$CLANG" >/dev/null || die "CLANG=$CLANG not found"
command -v "$BUNDLER" >/dev/null || die "BUNDLER=$BUNDLER not found"
command -v "$BUNDLER19" >/dev/null || die "BUNDLER19=$BUNDLER19 not found"
command -v python3 >/dev/null || die "python3 not found (it writes the realistic kernels)"
(( TUS >= 1 && KERNELS >= 1 && LARGE_KERNELS >= 1 && REALISTIC_KERNELS >= 1 )) ||
  die "TUS, KERNELS, LARGE_KERNELS and REALISTIC_KERNELS must be positive"

mkdir -p "$1"
OUT=$(cd "$1" && pwd)
START=$(date +%s%N)

ARCHS=()
for t in $TARGETS; do ARCHS+=("--offload-arch=$t"); done
HIP=(-x hip -nogpulib -nogpuinc -O2 -I"$KDIR")
# Everything the outputs depend on besides the generated sources.
# TOOLKEY keys the per-TU cache (with the TU's source); STAMP keys the whole
# output (this script and the sizes too).
TOOLKEY=$( {
  "$CLANG" --version | head -1
  "$BUNDLER" --version | head -2
  echo "${HIP[*]} ${ARCHS[*]}"
  cat "$KDIR/hip_min.h"
} | sha256sum | cut -c1-32)
STAMP=$( {
  echo "$TOOLKEY TUS=$TUS KERNELS=$KERNELS LARGE=$LARGE_KERNELS"
  echo "REALISTIC=$REALISTIC_KERNELS $REALISTIC_TARGETS"
  "$BUNDLER19" --version | head -2
  cat "$KDIR/hip_stubs.c" "${BASH_SOURCE[0]}"
} | sha256sum | cut -c1-32)
if [[ -f "$OUT/stamp" && "$(cat "$OUT/stamp")" == "$STAMP" && -f "$OUT/inputs.tsv" ]]; then
  note "up to date ($OUT)"
  exit 0
fi
rm -f "$OUT/stamp"
mkdir -p "$OUT"/{src,parts,cache,obj/plain,obj/compressed}

# ---------------------------------------------------------------------------
# The template. kernel TU K INDEX SCALE writes one kernel; the body kind and
# its constants come from (TU, K), so no two kernels are the same. SCALE
# multiplies loop trip counts.
kernel() {
  local tu=$1 k=$2 s=$3
  local name="k_${tu}_${k}"
  local c1=$(( (tu * 31 + k * 17) % 97 + 3 )) c2=$(( (tu * 13 + k * 7) % 29 + 2 ))
  local n=$(( (8 + (tu + k) % 24) * s ))
  case $(( (tu * 7 + k) % 6 )) in
    0) cat <<EOF
__global__ void ${name}(float* __restrict__ out, const float* __restrict__ in, int n) {
  unsigned i = hip_global_idx_x();
  float acc = ${c2}.0f;
#pragma unroll 8
  for (int j = 0; j < ${n}; ++j) acc = acc * 1.000${c2}f + in[(i + j * ${c1}u) % n] * (float)(j + ${c1});
  if (i < (unsigned)n) out[i] = acc;
}
EOF
    ;;
    1) cat <<EOF
__global__ void ${name}(double* out, const double* in, int n) {
  __shared__ double tile[256];
  unsigned t = hip_thread_idx_x(), i = hip_global_idx_x();
  tile[t & 255] = in[i % n];
  hip_syncthreads();
  double s = 0;
#pragma unroll 4
  for (int j = 0; j < ${n}; ++j) s += tile[(t + j * ${c2}) & 255] * (j + ${c1});
  if (i < (unsigned)n) out[i] = s;
}
EOF
    ;;
    2) cat <<EOF
__global__ void ${name}(unsigned* out, const unsigned* in, int n, unsigned seed) {
  unsigned i = hip_global_idx_x();
  unsigned x = in[i % n] ^ (seed + ${c1}u);
#pragma unroll 4
  for (int r = 0; r < ${n}; ++r) { x ^= x << $(( c2 % 13 + 1 )); x ^= x >> $(( c1 % 17 + 1 )); x ^= x << 5; x += ${c1}u * r; }
  if (i < (unsigned)n) out[i] = x;
}
EOF
    ;;
    3) cat <<EOF
__global__ void ${name}(float* __restrict__ y, const float* __restrict__ a, const float* __restrict__ x, int rows, int cols) {
  unsigned r = hip_global_idx_x();
  if (r >= (unsigned)rows) return;
  float s = 0.0f;
#pragma unroll $(( c2 % 4 + 2 ))
  for (int c = 0; c < cols && c < ${n}; ++c) s += a[r * cols + c] * x[(c + ${c1}) % cols];
  y[r] = s * ${c2}.5f;
}
EOF
    ;;
    4) cat <<EOF
__global__ void ${name}(int* hist, const int* data, int n) {
  __shared__ int local[${c2}];
  unsigned t = hip_thread_idx_x(), i = hip_global_idx_x();
  if (t < ${c2}u) local[t] = 0;
  hip_syncthreads();
  for (int j = 0; j < ${n}; ++j) {
    unsigned idx = i * ${n} + j;
    if (idx < (unsigned)n) __atomic_fetch_add(&local[(data[idx] * ${c1}) % ${c2}], 1, __ATOMIC_RELAXED);
  }
  hip_syncthreads();
  if (t < ${c2}u) __atomic_fetch_add(&hist[t], local[t], __ATOMIC_RELAXED);
}
EOF
    ;;
    5) cat <<EOF
__global__ void ${name}(double* __restrict__ out, const double* __restrict__ in, long long n, double w) {
  unsigned i = hip_global_idx_x();
  if (i < ${c2}u || i + ${c2}u >= n) return;
  double s = 0;
#pragma unroll
  for (int d = -$(( c2 % 8 + 1 )); d <= $(( c2 % 8 + 1 )); ++d) s += in[i + d] * (w + d * 0.${c1});
  for (int j = 0; j < ${n}; ++j) s = s * 0.5 + in[(i + j) % n];
  out[i] = s;
}
EOF
    ;;
  esac
}

tu_source() {  # TU KERNELS SCALE
  echo "// Generated by bench/generate_inputs.sh: translation unit $1."
  echo '#include "hip_min.h"'
  local k
  for (( k = 0; k < $2; ++k )); do kernel "$1" "$k" "$3"; done
}

# ---------------------------------------------------------------------------
# Job pool (same shape as tests/fixtures/build_fixtures.sh).
RUNNING=0
FAILED=0
spawn() {
  if (( RUNNING >= JOBS )); then
    wait -n || FAILED=1
    RUNNING=$((RUNNING - 1))
  fi
  "$@" &
  RUNNING=$((RUNNING + 1))
}
join() {
  while (( RUNNING > 0 )); do
    wait -n || FAILED=1
    RUNNING=$((RUNNING - 1))
  done
  (( FAILED == 0 )) || die "a toolchain step failed (see above)"
}

# One TU: device compile to a plain bundle, then the same entries rebundled
# with -compress (the bundler cannot compress an existing bundle; the driver's
# --offload-compress is this same bundler call), host entry first and device
# entries sorted, as the driver orders them. Cached under cache/KEY.* where KEY
# hashes the source and TOOLKEY.
build_tu() {  # NAME SRC
  local name=$1 src=$2 key c
  key=$( { cat "$src"; echo "$TOOLKEY"; } | sha256sum | cut -c1-32)
  c=$OUT/cache/$key
  if [[ ! -f $c.done ]]; then
    "$CLANG" "${HIP[@]}" -cuid="$name" "${ARCHS[@]}" --offload-device-only -c "$src" -o "$c.hipfb"
    local dir=$c.d ids id targets=() inputs=() outputs=()
    mkdir -p "$dir"
    mapfile -t ids < <("$BUNDLER" -list -type=o -input="$c.hipfb" | LC_ALL=C sort |
      awk '/^host-/ { print; next } { rest[n++] = $0 } END { for (i = 0; i < n; ++i) print rest[i] }')
    for id in "${ids[@]}"; do
      targets+=("$id")
      inputs+=("-input=$dir/${id//:/_}")
      outputs+=("-output=$dir/${id//:/_}")
    done
    local IFS=,
    "$BUNDLER" -unbundle -type=o -targets="${targets[*]}" -input="$c.hipfb" "${outputs[@]}"
    "$BUNDLER" -type=o -compress -bundle-align=4096 -targets="${targets[*]}" "${inputs[@]}" -output="$c.ccob"
    unset IFS
    rm -rf "$dir"
    touch "$c.done"
  fi
  ln -f "$c.hipfb" "$OUT/parts/$name.hipfb"
  ln -f "$c.ccob" "$OUT/parts/$name.ccob"
}
host_obj() {  # NAME SRC BUNDLE OUT
  "$CLANG" "${HIP[@]}" -cuid="$1" --offload-host-only -Xclang -fcuda-include-gpubinary \
    -Xclang "$3" -c "$2" -o "$4"
}

# Sources, written only when their text changes (keeps mtimes stable).
write_source() {  # FILE TU KERNELS SCALE
  local tmp=$1.tmp
  tu_source "$2" "$3" "$4" >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}
NAMES=()
for (( tu = 0; tu < TUS; ++tu )); do
  name=$(printf 'tu_%03d' "$tu")
  NAMES+=("$name")
  write_source "$OUT/src/$name.hip" "$tu" "$KERNELS" 1
done
write_source "$OUT/src/large.hip" 9999 "$LARGE_KERNELS" 1

# The realistic bundle's source: KERNELS kernels of 300 dependent float
# operations each, fully written out, with pseudo-random constants (a seeded
# generator, so the text is the same on every run). Each constant becomes a
# 32-bit literal in the code, which keeps the code objects about as
# compressible as real ones.
realistic_source() {  # KERNELS
  python3 - "$1" <<'PY'
import random, sys
rng = random.Random(27)
print('// Generated by bench/generate_inputs.sh: the realistic bundle.\n#include "hip_min.h"')
for k in range(int(sys.argv[1])):
    print(f"__global__ void big_{k}(float* __restrict__ o, const float* __restrict__ in, int n) {{")
    print("  unsigned i = hip_global_idx_x();")
    print("  float a = in[i % n], b = in[(i + 1) % n], c = in[(i + 2) % n], d = in[(i + 3) % n];")
    for j in range(300):
        v, w, x = "abcd"[j % 4], "abcd"[(j + 1) % 4], "abcd"[(j + 3) % 4]
        c1, c2 = round(rng.uniform(-9, 9), 6), round(rng.uniform(-9, 9), 6)
        op = rng.choice([f"__builtin_fmaf({v}, {c1}f, {w})", f"{v} * {c1}f + {w} * {c2}f",
                         f"__builtin_fmaf({w}, {x}, {c1}f)", f"{v} - {w} * {c2}f"])
        print(f"  {v} = {op};")
        if j % 37 == 36:
            print(f"  if ({v} > {round(rng.uniform(0, 5), 3)}f) {w} = in[(i + {rng.randrange(1000)}) % n];")
    print("  o[i] = a + b + c + d;\n}")
PY
}
tmp=$OUT/src/realistic.hip.tmp
realistic_source "$REALISTIC_KERNELS" >"$tmp"
if cmp -s "$tmp" "$OUT/src/realistic.hip"; then rm -f "$tmp"; else mv "$tmp" "$OUT/src/realistic.hip"; fi

# One code object per target, each its own compile (so the pool runs them in
# parallel), cached by source, tools and target.
realistic_object() {  # TARGET OUT
  local key
  key=$( { cat "$OUT/src/realistic.hip"; echo "$TOOLKEY realistic $1"; } | sha256sum | cut -c1-32)
  [[ -f $OUT/cache/$key.co ]] ||
    "$CLANG" "${HIP[@]}" -cuid=realistic --offload-arch="$1" --offload-device-only --no-gpu-bundle-output \
      -c "$OUT/src/realistic.hip" -o "$OUT/cache/$key.co"
  ln -f "$OUT/cache/$key.co" "$2"
}
mkdir -p "$OUT/realistic"
: >"$OUT/realistic/host"
REALISTIC_IDS=()
for t in $REALISTIC_TARGETS; do
  REALISTIC_IDS+=("hipv4-amdgcn-amd-amdhsa--$t")
  spawn realistic_object "$t" "$OUT/realistic/${t//:/_}.co"
done

# Bare gfx90a code objects, version 4: comgr 5.2.3 reads no v5/v6 metadata.
cov4_object() {  # NAME SRC OUT
  local key
  key=$( { cat "$2"; echo "$TOOLKEY cov4"; } | sha256sum | cut -c1-32)
  [[ -f $OUT/cache/$key.co ]] ||
    "$CLANG" "${HIP[@]}" -cuid="$1" --offload-arch=gfx90a -mcode-object-version=4 \
      --offload-device-only --no-gpu-bundle-output -c "$2" -o "$OUT/cache/$key.co"
  ln -f "$OUT/cache/$key.co" "$3"
}
mkdir -p "$OUT/co"
for name in large "${NAMES[@]}"; do spawn build_tu "$name" "$OUT/src/$name.hip"; done
spawn cov4_object large "$OUT/src/large.hip" "$OUT/co/large-gfx90a-cov4.co"
spawn cov4_object tu_000 "$OUT/src/tu_000.hip" "$OUT/co/tu_000-gfx90a-cov4.co"
join
T_DEVICE=$(date +%s%N)

for name in "${NAMES[@]}"; do
  spawn host_obj "$name" "$OUT/src/$name.hip" "$OUT/parts/$name.hipfb" "$OUT/obj/plain/$name.o"
  spawn host_obj "$name" "$OUT/src/$name.hip" "$OUT/parts/$name.ccob" "$OUT/obj/compressed/$name.o"
done
"$CLANG" -O2 -fPIC -c "$KDIR/hip_stubs.c" -o "$OUT/obj/hip_stubs.o"
join
PLAIN_OBJS=() COMP_OBJS=()
for name in "${NAMES[@]}"; do
  PLAIN_OBJS+=("$OUT/obj/plain/$name.o")
  COMP_OBJS+=("$OUT/obj/compressed/$name.o")
done
spawn "$CLANG" -shared -fuse-ld=lld "${PLAIN_OBJS[@]}" "$OUT/obj/hip_stubs.o" -o "$OUT/libbench_plain.so"
spawn "$CLANG" -shared -fuse-ld=lld "${COMP_OBJS[@]}" "$OUT/obj/hip_stubs.o" -o "$OUT/libbench_compressed.so"
join
# The realistic CCOBs: the host entry first, the device entries sorted, as
# the driver orders them; both bundlers' own compression settings. The host
# triple without its empty environment: both bundlers write it as
# host-x86_64-unknown-linux-gnu-, but bundler 19 given that appends the
# normalised triple to it again.
mapfile -t REALISTIC_ORDER < <(printf '%s\n' "${REALISTIC_IDS[@]}" | LC_ALL=C sort)
realistic_targets=host-x86_64-unknown-linux-gnu realistic_inputs=("-input=$OUT/realistic/host")
for id in "${REALISTIC_ORDER[@]}"; do
  realistic_targets+=",$id"
  t=${id#hipv4-amdgcn-amd-amdhsa--}
  realistic_inputs+=("-input=$OUT/realistic/${t//:/_}.co")
done
"$BUNDLER19" -type=o -compress -bundle-align=4096 -targets="$realistic_targets" "${realistic_inputs[@]}" \
  -output="$OUT/realistic_v2.ccob"
"$BUNDLER" --type=o --compress --bundle-align=4096 --targets="$realistic_targets" "${realistic_inputs[@]}" \
  --output="$OUT/realistic_v3.ccob"
REALISTIC_CONTENT=$(cat "$OUT"/realistic/*.co | wc -c)
cp "$OUT/parts/large.hipfb" "$OUT/large.hipfb"
cp "$OUT/parts/large.ccob" "$OUT/large.ccob"
rm -f "$OUT/parts/large."*

size() { stat -c %s "$1"; }
{
  printf '#name\tpath\tbundles\tbytes\tnote\n'
  printf 'host_plain\tlibbench_plain.so\t%d\t%d\t%s\n' "$TUS" "$(size "$OUT/libbench_plain.so")" \
    "$TUS TUs x $KERNELS kernels, targets: $TARGETS"
  printf 'host_compressed\tlibbench_compressed.so\t%d\t%d\t%s\n' "$TUS" "$(size "$OUT/libbench_compressed.so")" \
    "same TUs, CCOB v3 zstd bundles"
  printf 'large_plain\tlarge.hipfb\t1\t%d\t%s\n' "$(size "$OUT/large.hipfb")" \
    "$LARGE_KERNELS kernels, targets: $TARGETS"
  printf 'large_compressed\tlarge.ccob\t1\t%d\t%s\n' "$(size "$OUT/large.ccob")" "the same bundle, CCOB v3 zstd"
  for v in 2 3; do
    printf 'realistic_v%d\trealistic_v%d.ccob\t1\t%d\t%s\n' "$v" "$v" "$(size "$OUT/realistic_v$v.ccob")" \
      "$REALISTIC_KERNELS kernels, $REALISTIC_CONTENT bytes of code objects, CCOB v$v; targets: $REALISTIC_TARGETS"
  done
  printf 'co_large_cov4\tco/large-gfx90a-cov4.co\t1\t%d\t%s\n' "$(size "$OUT/co/large-gfx90a-cov4.co")" \
    "$LARGE_KERNELS kernels, gfx90a, code object v4"
  printf 'co_tu0_cov4\tco/tu_000-gfx90a-cov4.co\t1\t%d\t%s\n' "$(size "$OUT/co/tu_000-gfx90a-cov4.co")" \
    "$KERNELS kernels, gfx90a, code object v4"
} >"$OUT/inputs.tsv"
echo "$STAMP" >"$OUT/stamp"
END=$(date +%s%N)
note "device compiles $(( (T_DEVICE - START) / 1000000 )) ms, total $(( (END - START) / 1000000 )) ms -> $OUT"
