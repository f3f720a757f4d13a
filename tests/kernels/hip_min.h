// Minimal stand-in for the HIP runtime headers, enough to compile the test
// kernels with `clang -x hip -nogpulib -nogpuinc` (no ROCm installed) for both
// the device and the host side, including `kernel<<<grid, block>>>(...)`
// launches. The host-side runtime entry points are defined by hip_stubs.c.
#pragma once

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))

struct dim3 {
  unsigned x, y, z;
  __host__ __device__ constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1)
      : x(x_), y(y_), z(z_) {}
};

typedef struct ihipStream_t* hipStream_t;
typedef int hipError_t;

extern "C" {
hipError_t hipLaunchKernel(const void* function, dim3 grid, dim3 block, void** args,
                           unsigned long shared_mem_bytes, hipStream_t stream);
hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, unsigned long shared_mem = 0,
                                      hipStream_t stream = 0);
hipError_t __hipPopCallConfiguration(dim3* grid, dim3* block, unsigned long* shared_mem,
                                     hipStream_t* stream);
}

// Device-side helpers built on AMDGPU builtins (no device libraries needed).
__device__ inline unsigned hip_thread_idx_x() { return __builtin_amdgcn_workitem_id_x(); }
__device__ inline unsigned hip_block_idx_x() { return __builtin_amdgcn_workgroup_id_x(); }
__device__ inline unsigned hip_block_dim_x() { return __builtin_amdgcn_workgroup_size_x(); }
__device__ inline unsigned hip_global_idx_x() {
  return hip_block_idx_x() * hip_block_dim_x() + hip_thread_idx_x();
}
__device__ inline void hip_syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
