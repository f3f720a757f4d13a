// Template kernels in the shape of rocPRIM/hipCUB block algorithms (reduce,
// scan, radix-sort histogram, staged transform), instantiated over several
// types and block sizes by many translation units (tpl_unit.hip). Each
// kernel's static LDS is one array whose element count depends on its
// template parameters, plus TPL_TU elements: every TU compiles the "same"
// instantiation (same mangled name, one merged host stub) with its own LDS
// size, so a registration layer's lookup shows which TU's code it took
// (docs/fixtures.md, "Template library"). Deliberately an ODR violation, as
// libraries built with different macros per TU make one in the field.
#pragma once

#include "hip_min.h"

#ifndef TPL_TU
#error "TPL_TU (the translation unit's number) must be defined"
#endif

/// What a TU says about one kernel it launched: the host stub it registered
/// and the two numbers its static LDS is made of, elem_size * (base_elems + TU).
struct tpl_kernel_row {
  const void* stub;
  unsigned elem_size;
  unsigned base_elems;
};

template <typename T, int Block>
__global__ void tpl_block_reduce(const T* in, T* out, int n) {
  __shared__ T partial[Block + TPL_TU];
  unsigned tid = hip_thread_idx_x();
  unsigned i = hip_block_idx_x() * Block + tid;
  partial[tid] = i < unsigned(n) ? in[i] : T(0);
  hip_syncthreads();
  for (unsigned stride = Block / 2; stride > 0; stride /= 2) {
    if (tid < stride) partial[tid] += partial[tid + stride];
    hip_syncthreads();
  }
  if (tid == 0) out[hip_block_idx_x()] = partial[TPL_TU - 1 + Block] + partial[0];
}

template <typename T, int Block>
__global__ void tpl_block_scan(const T* in, T* out, int n) {
  __shared__ T tile[2 * Block + TPL_TU];
  unsigned tid = hip_thread_idx_x();
  unsigned i = hip_block_idx_x() * Block + tid;
  tile[tid] = i < unsigned(n) ? in[i] : T(0);
  hip_syncthreads();
  unsigned from = 0;
  for (unsigned offset = 1; offset < Block; offset *= 2) {
    unsigned to = Block - from;
    tile[to + tid] = tile[from + tid] + (tid >= offset ? tile[from + tid - offset] : T(0));
    hip_syncthreads();
    from = to;
  }
  if (i < unsigned(n)) out[i] = tile[from + tid] + tile[2 * Block + TPL_TU - 1];
}

template <typename Key, int Block, int RadixBits>
__global__ void tpl_radix_histogram(const Key* keys, unsigned* counts, int n, int shift) {
  constexpr int kDigits = 1 << RadixBits;
  __shared__ unsigned histogram[kDigits + TPL_TU];
  unsigned tid = hip_thread_idx_x();
  for (unsigned d = tid; d < kDigits + TPL_TU; d += Block) histogram[d] = 0;
  hip_syncthreads();
  unsigned i = hip_block_idx_x() * Block + tid;
  if (i < unsigned(n)) {
    unsigned digit = unsigned(keys[i] >> shift) & (kDigits - 1);
    __atomic_fetch_add(&histogram[digit], 1u, __ATOMIC_RELAXED);
  }
  hip_syncthreads();
  for (unsigned d = tid; d < kDigits; d += Block)
    __atomic_fetch_add(&counts[d], histogram[d] + histogram[kDigits + TPL_TU - 1], __ATOMIC_RELAXED);
}

template <typename T>
struct tpl_scale_op {
  __device__ T operator()(T x) const { return x * T(3); }
};
template <typename T>
struct tpl_negate_op {
  __device__ T operator()(T x) const { return -x; }
};

template <typename T, int Block, typename Op>
__global__ void tpl_staged_transform(const T* in, T* out, int n) {
  __shared__ T stage[Block + TPL_TU];
  unsigned tid = hip_thread_idx_x();
  unsigned i = hip_block_idx_x() * Block + tid;
  stage[Block - 1 - tid] = i < unsigned(n) ? Op()(in[i]) : T(0);
  hip_syncthreads();
  if (i < unsigned(n)) out[i] = stage[tid] + stage[Block + TPL_TU - 1];
}

// Launches one instantiation as a library would and says what it is.
template <typename T, int Block>
void tpl_launch_reduce(tpl_kernel_row* row) {
  tpl_block_reduce<T, Block><<<dim3(8), dim3(Block)>>>(nullptr, nullptr, 8 * Block);
  *row = {reinterpret_cast<const void*>(&tpl_block_reduce<T, Block>), sizeof(T), Block};
}
template <typename T, int Block>
void tpl_launch_scan(tpl_kernel_row* row) {
  tpl_block_scan<T, Block><<<dim3(8), dim3(Block)>>>(nullptr, nullptr, 8 * Block);
  *row = {reinterpret_cast<const void*>(&tpl_block_scan<T, Block>), sizeof(T), 2 * Block};
}
template <typename Key, int Block, int RadixBits>
void tpl_launch_histogram(tpl_kernel_row* row) {
  tpl_radix_histogram<Key, Block, RadixBits><<<dim3(8), dim3(Block)>>>(nullptr, nullptr, 8 * Block, 0);
  *row = {reinterpret_cast<const void*>(&tpl_radix_histogram<Key, Block, RadixBits>), sizeof(unsigned),
          1u << RadixBits};
}
template <typename T, int Block, typename Op>
void tpl_launch_transform(tpl_kernel_row* row) {
  tpl_staged_transform<T, Block, Op><<<dim3(8), dim3(Block)>>>(nullptr, nullptr, 8 * Block);
  *row = {reinterpret_cast<const void*>(&tpl_staged_transform<T, Block, Op>), sizeof(T), Block};
}
