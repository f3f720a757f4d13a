// The metadata spellings of the argument enums of coload/code_object.h
// (docs/format.md, "Metadata keys"). metadata.cpp parses
// by comparing against these, so each spelling lives only here.
#include "coload/code_object.h"

namespace coload {

std::string_view to_string(ValueKind kind) {
  switch (kind) {
    case ValueKind::ByValue: return "by_value";
    case ValueKind::GlobalBuffer: return "global_buffer";
    case ValueKind::DynamicSharedPointer: return "dynamic_shared_pointer";
    case ValueKind::Sampler: return "sampler";
    case ValueKind::Image: return "image";
    case ValueKind::Pipe: return "pipe";
    case ValueKind::Queue: return "queue";
    case ValueKind::HiddenGlobalOffsetX: return "hidden_global_offset_x";
    case ValueKind::HiddenGlobalOffsetY: return "hidden_global_offset_y";
    case ValueKind::HiddenGlobalOffsetZ: return "hidden_global_offset_z";
    case ValueKind::HiddenNone: return "hidden_none";
    case ValueKind::HiddenPrintfBuffer: return "hidden_printf_buffer";
    case ValueKind::HiddenHostcallBuffer: return "hidden_hostcall_buffer";
    case ValueKind::HiddenDefaultQueue: return "hidden_default_queue";
    case ValueKind::HiddenCompletionAction: return "hidden_completion_action";
    case ValueKind::HiddenMultigridSyncArg: return "hidden_multigrid_sync_arg";
    case ValueKind::HiddenBlockCountX: return "hidden_block_count_x";
    case ValueKind::HiddenBlockCountY: return "hidden_block_count_y";
    case ValueKind::HiddenBlockCountZ: return "hidden_block_count_z";
    case ValueKind::HiddenGroupSizeX: return "hidden_group_size_x";
    case ValueKind::HiddenGroupSizeY: return "hidden_group_size_y";
    case ValueKind::HiddenGroupSizeZ: return "hidden_group_size_z";
    case ValueKind::HiddenRemainderX: return "hidden_remainder_x";
    case ValueKind::HiddenRemainderY: return "hidden_remainder_y";
    case ValueKind::HiddenRemainderZ: return "hidden_remainder_z";
    case ValueKind::HiddenGridDims: return "hidden_grid_dims";
    case ValueKind::HiddenHeapV1: return "hidden_heap_v1";
    case ValueKind::HiddenDynamicLdsSize: return "hidden_dynamic_lds_size";
    case ValueKind::HiddenPrivateBase: return "hidden_private_base";
    case ValueKind::HiddenSharedBase: return "hidden_shared_base";
    case ValueKind::HiddenQueuePtr: return "hidden_queue_ptr";
    // Not a spelling: KernelArg::kind_text holds the name as written.
    case ValueKind::HiddenUnknown: return "hidden_unknown";
  }
  return "invalid";
}

bool is_hidden(ValueKind kind) { return kind >= ValueKind::HiddenGlobalOffsetX; }

std::string_view to_string(AddressSpace space) {
  switch (space) {
    case AddressSpace::Unspecified: return "unspecified";  // no `.address_space`
    case AddressSpace::Private: return "private";
    case AddressSpace::Global: return "global";
    case AddressSpace::Constant: return "constant";
    case AddressSpace::Local: return "local";
    case AddressSpace::Generic: return "generic";
    case AddressSpace::Region: return "region";
  }
  return "invalid";
}

std::string_view to_string(Access access) {
  switch (access) {
    case Access::Unspecified: return "unspecified";  // no `.access` / `.actual_access`
    case Access::ReadOnly: return "read_only";
    case Access::WriteOnly: return "write_only";
    case Access::ReadWrite: return "read_write";
  }
  return "invalid";
}

}  // namespace coload
