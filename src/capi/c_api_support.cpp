// The C API's shared parts (c_api_support.h).
#include "capi/c_api_support.h"

#include <cstddef>
#include <string>
#include <utility>

namespace coload::capi {

namespace {

thread_local std::string last_error;

/// coload_kernel_info as 0.1 had it (ending with dynamic_callstack): a caller
/// built against it passes this size and gets those fields.
constexpr std::size_t kFirstKernelInfoSize = offsetof(coload_kernel_info, dynamic_callstack) + sizeof(int);

}  // namespace

coload_status fail(coload_status status, std::string message) {
  last_error = std::move(message);
  return status;
}

coload_status ok() {
  last_error.clear();
  return COLOAD_OK;
}

coload_status status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Io: return COLOAD_ERROR_IO;
    case ErrorKind::Truncated: return COLOAD_ERROR_TRUNCATED;
    case ErrorKind::BadMagic: return COLOAD_ERROR_BAD_MAGIC;
    case ErrorKind::OutOfBounds: return COLOAD_ERROR_OUT_OF_BOUNDS;
    case ErrorKind::Overflow: return COLOAD_ERROR_OVERFLOW;
    case ErrorKind::LimitExceeded: return COLOAD_ERROR_LIMIT_EXCEEDED;
    case ErrorKind::UnsupportedVersion: return COLOAD_ERROR_UNSUPPORTED_VERSION;
    case ErrorKind::UnsupportedMethod: return COLOAD_ERROR_UNSUPPORTED_METHOD;
    case ErrorKind::HashMismatch: return COLOAD_ERROR_HASH_MISMATCH;
    case ErrorKind::SizeMismatch: return COLOAD_ERROR_SIZE_MISMATCH;
    case ErrorKind::CorruptData: return COLOAD_ERROR_CORRUPT_DATA;
    case ErrorKind::Malformed: return COLOAD_ERROR_MALFORMED;
    case ErrorKind::NotFound: return COLOAD_ERROR_NOT_FOUND;
    case ErrorKind::Ambiguous: return COLOAD_ERROR_AMBIGUOUS;
    case ErrorKind::InvalidArgument: return COLOAD_ERROR_INVALID_ARGUMENT;
  }
  return COLOAD_ERROR_INTERNAL;
}

coload_status fail(const Error& error) { return fail(status_of(error.kind()), error.message()); }

coload_status check(const coload_registry* handle, const char* function, Registry** registry) {
  if (handle == nullptr) return fail(COLOAD_ERROR_INVALID_HANDLE, std::string(function) + ": registry is null");
  if (handle->magic != kRegistryMagic || !handle->registry) {
    return fail(COLOAD_ERROR_INVALID_HANDLE,
                std::string(function) + ": not a coload_registry (bad tag: destroyed, or another object)");
  }
  *registry = handle->registry.get();
  return COLOAD_OK;
}

coload_status null_argument(const char* function, const char* argument) {
  return fail(COLOAD_ERROR_NULL_ARGUMENT, std::string(function) + ": " + argument + " is null");
}

coload_status check_kernel_info(const char* function, const coload_kernel_info* out) {
  if (!out) return null_argument(function, "out");
  if (out->struct_size < kFirstKernelInfoSize) {
    return fail(COLOAD_ERROR_BAD_STRUCT_SIZE, std::string(function) + ": out->struct_size " +
                                                  std::to_string(out->struct_size) + " is less than " +
                                                  std::to_string(kFirstKernelInfoSize));
  }
  return COLOAD_OK;
}

Dispatch dispatch_of(std::uint64_t kernarg_bytes, std::uint64_t dynamic_lds, const std::uint32_t* workgroup_size) {
  Dispatch dispatch{.kernarg_bytes = kernarg_bytes, .dynamic_lds = dynamic_lds};
  if (workgroup_size) dispatch.workgroup_size = {workgroup_size[0], workgroup_size[1], workgroup_size[2]};
  return dispatch;
}

void fill_kernel_info(const LoadedKernel& kernel, coload_kernel_info* out) {
  out->handle = kernel.handle;
  out->kernarg_segment_size = kernel.kernarg_segment_size;
  out->kernarg_segment_align = kernel.kernarg_segment_align;
  out->group_segment_size = kernel.group_segment_size;
  out->private_segment_size = kernel.private_segment_size;
  out->dynamic_callstack = kernel.dynamic_callstack ? 1 : 0;
  if (out->struct_size >= offsetof(coload_kernel_info, explicit_kernarg_size) + sizeof(std::uint32_t))
    out->explicit_kernarg_size = kernel.explicit_kernarg_size;
}

const char* last_error_message() { return last_error.c_str(); }

}  // namespace coload::capi
