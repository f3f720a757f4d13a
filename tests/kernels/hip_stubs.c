/* Host-side stand-ins for the HIP runtime entry points that clang's generated
 * host code references, so HIP host objects link into shared libraries and
 * executables without ROCm. They do nothing useful: the fixtures are only
 * read, never run on a GPU. */
#include <stddef.h>

typedef struct { unsigned x, y, z; } dim3;
typedef void* hipStream_t;

void** __hipRegisterFatBinary(const void* wrapper) {
  static void* handle;
  (void)wrapper;
  return &handle;
}
void __hipUnregisterFatBinary(void** handle) { (void)handle; }
void __hipRegisterFunction(void** handle, const void* host_fn, char* device_fn,
                           const char* device_name, unsigned thread_limit, void* tid,
                           void* bid, dim3* block_dim, dim3* grid_dim, int* wsize) {
  (void)handle; (void)host_fn; (void)device_fn; (void)device_name; (void)thread_limit;
  (void)tid; (void)bid; (void)block_dim; (void)grid_dim; (void)wsize;
}
void __hipRegisterVar(void** handle, char* host_var, char* device_address,
                      const char* device_name, int ext, size_t size, int constant,
                      int global) {
  (void)handle; (void)host_var; (void)device_address; (void)device_name; (void)ext;
  (void)size; (void)constant; (void)global;
}
int hipLaunchKernel(const void* fn, dim3 grid, dim3 block, void** args, size_t shmem,
                    hipStream_t stream) {
  (void)fn; (void)grid; (void)block; (void)args; (void)shmem; (void)stream;
  return 0;
}
static dim3 saved_grid, saved_block;
static size_t saved_shmem;
static hipStream_t saved_stream;
int __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, hipStream_t stream) {
  saved_grid = grid; saved_block = block; saved_shmem = shmem; saved_stream = stream;
  return 0;
}
int __hipPopCallConfiguration(dim3* grid, dim3* block, size_t* shmem, hipStream_t* stream) {
  *grid = saved_grid; *block = saved_block; *shmem = saved_shmem; *stream = saved_stream;
  return 0;
}
