// coload/code_object.h: one AMDGPU code object read and cross-checked.
//
// Covers: the ELF layer (header, sections, segments, notes, symbol table,
// every range bounds-checked), the AMDGPU metadata note (NT_AMDGPU_METADATA,
// msgpack, decoded strictly), the 64-byte kernel descriptors (`<name>.kd`),
// their cross-check against the metadata, and each kernel's kernarg layout.
// docs/format.md has the layouts, docs/reading-rules.md the rules.
// Does not cover: checks against a device (coload/validate.h).
//
// Ownership: a CodeObject copies what it decodes; it does not keep the bytes.
// Threads: reading shares no state; a CodeObject is an immutable value.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/error.h"
#include "coload/target.h"

namespace coload {

/// `.value_kind` of a kernel argument. Hidden kinds are the ABI's implicit
/// arguments; HiddenUnknown is a `hidden_*` name this library does not know.
enum class ValueKind : std::uint8_t {
  ByValue,
  GlobalBuffer,
  DynamicSharedPointer,
  Sampler,
  Image,
  Pipe,
  Queue,
  HiddenGlobalOffsetX,
  HiddenGlobalOffsetY,
  HiddenGlobalOffsetZ,
  HiddenNone,
  HiddenPrintfBuffer,
  HiddenHostcallBuffer,
  HiddenDefaultQueue,
  HiddenCompletionAction,
  HiddenMultigridSyncArg,
  HiddenBlockCountX,
  HiddenBlockCountY,
  HiddenBlockCountZ,
  HiddenGroupSizeX,
  HiddenGroupSizeY,
  HiddenGroupSizeZ,
  HiddenRemainderX,
  HiddenRemainderY,
  HiddenRemainderZ,
  HiddenGridDims,
  HiddenHeapV1,
  HiddenDynamicLdsSize,
  HiddenPrivateBase,
  HiddenSharedBase,
  HiddenQueuePtr,
  HiddenUnknown,
};
/// The metadata spelling ("hidden_block_count_x"). HiddenUnknown gives
/// "hidden_unknown", which is no real spelling: KernelArg::kind_text has it.
std::string_view to_string(ValueKind kind);
/// Whether the runtime fills the argument (a `hidden_*` kind) rather than the caller.
bool is_hidden(ValueKind kind);

enum class AddressSpace : std::uint8_t { Unspecified, Private, Global, Constant, Local, Generic, Region };
/// The metadata spelling ("global"); Unspecified gives "unspecified".
std::string_view to_string(AddressSpace space);

enum class Access : std::uint8_t { Unspecified, ReadOnly, WriteOnly, ReadWrite };
/// The metadata spelling ("read_only"); Unspecified gives "unspecified".
std::string_view to_string(Access access);

/// One entry of a kernel's `.args`.
struct KernelArg {
  std::string name;       ///< `.name`, may be empty
  std::string type_name;  ///< `.type_name`, may be empty
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
  ValueKind kind = ValueKind::ByValue;
  std::string kind_text;  ///< `.value_kind` as written
  AddressSpace address_space = AddressSpace::Unspecified;
  Access access = Access::Unspecified;         ///< `.access`
  Access actual_access = Access::Unspecified;  ///< `.actual_access`
  std::optional<std::uint32_t> pointee_align;
  bool is_const = false, is_restrict = false, is_volatile = false, is_pipe = false;
};

/// A kernel's kernarg segment as the ABI lays it out: the explicit bytes the
/// caller packs, then the hidden (implicit) arguments the runtime fills.
struct KernargLayout {
  /// End of the last explicit argument (max offset + size); 0 without any.
  std::uint32_t explicit_size = 0;
  /// Offset of the first hidden argument; nullopt without any.
  std::optional<std::uint32_t> hidden_offset;
  /// End of the last hidden argument; 0 without any.
  std::uint32_t hidden_end = 0;
  /// `.kernarg_segment_size`: what the runtime reserves.
  std::uint32_t segment_size = 0;
  std::uint32_t segment_align = 0;
};

/// The 64-byte AMDHSA kernel descriptor, decoded.
struct KernelDescriptor {
  std::uint64_t address = 0;  ///< the `.kd` symbol's value
  std::uint32_t group_segment_fixed_size = 0;
  std::uint32_t private_segment_fixed_size = 0;
  std::uint32_t kernarg_size = 0;
  std::int64_t kernel_code_entry_byte_offset = 0;
  std::uint32_t compute_pgm_rsrc1 = 0;
  std::uint32_t compute_pgm_rsrc2 = 0;
  std::uint32_t compute_pgm_rsrc3 = 0;
  std::uint16_t kernel_code_properties = 0;
  std::uint16_t kernarg_preload = 0;

  bool wave32() const { return kernel_code_properties & (1u << 10); }
  bool uses_dynamic_stack() const { return kernel_code_properties & (1u << 11); }
};

/// One kernel: its metadata map, its descriptor and its kernarg layout.
struct Kernel {
  std::string name;    ///< `.name`
  std::string symbol;  ///< `.symbol`, normally `<name>.kd`
  std::uint32_t kernarg_segment_size = 0;
  std::uint32_t kernarg_segment_align = 0;
  std::uint32_t group_segment_fixed_size = 0;
  std::uint32_t private_segment_fixed_size = 0;
  std::uint32_t wavefront_size = 0;
  std::uint32_t sgpr_count = 0;
  std::uint32_t vgpr_count = 0;
  std::optional<std::uint32_t> agpr_count;
  std::uint32_t max_flat_workgroup_size = 0;
  std::optional<std::array<std::uint32_t, 3>> reqd_workgroup_size;
  std::optional<std::array<std::uint32_t, 3>> workgroup_size_hint;
  std::optional<bool> uses_dynamic_stack;
  std::optional<std::uint32_t> sgpr_spill_count, vgpr_spill_count;
  std::optional<std::uint32_t> workgroup_processor_mode;
  std::optional<std::uint32_t> uniform_work_group_size;
  std::string language;
  std::vector<KernelArg> args;  ///< in metadata order
  KernargLayout layout;
  /// The descriptor `.symbol` names; nullopt when the symbol is missing (a problem is reported).
  std::optional<KernelDescriptor> descriptor;
  /// Whether a defined STT_FUNC symbol is named `.name`: what HIP's
  /// hipModuleGetFunction finds a kernel by (ROCr needs the descriptor only).
  bool function_symbol = false;
};

/// A global variable the code object defines (a `__device__` or
/// `__constant__` variable): a defined, non-local STT_OBJECT symbol that is
/// not a `.kd` descriptor, the symbols ROCr's loader makes variables of.
struct Variable {
  std::string name;        ///< the symbol's name (C++ variables are mangled unless at namespace scope)
  std::uint64_t size = 0;  ///< st_size
};

/// The decoded `NT_AMDGPU_METADATA` note.
struct Metadata {
  std::uint32_t version_major = 0, version_minor = 0;  ///< `amdhsa.version`
  std::string target;                                  ///< `amdhsa.target` (v4+), may be empty
  std::vector<std::string> printf_formats;             ///< `amdhsa.printf`
  std::vector<Kernel> kernels;
  /// Keys this library does not know, skipped (e.g. "amdhsa.kernels[0].vendor.x"):
  /// the first 1024 of them.
  std::vector<std::string> unknown_keys;
};

/// Something wrong with a code object that does not stop it being read:
/// a descriptor disagreeing with the metadata, a `.kd` symbol without a
/// metadata entry, an inconsistent kernarg layout. `kernel` is empty for
/// object-wide problems. Kinds: SizeMismatch (descriptor and metadata sizes
/// differ), NotFound (missing descriptor or target, orphan `.kd`),
/// OutOfBounds / Overflow (descriptor range, entry point), Ambiguous (two
/// kernels share a name or symbol), Malformed (everything else).
struct Problem {
  ErrorKind kind = ErrorKind::Malformed;
  std::string kernel;
  std::string field;
  std::string message;  ///< names both values where two sources disagree
};

/// A code object, read and cross-checked.
class CodeObject {
 public:
  /// Reads `bytes` (an AMDHSA ELF; copied from as needed, not kept). Errors
  /// for what makes the object unusable: the ELF header, a table or range
  /// outside the bytes, no or several metadata notes, msgpack that does not
  /// decode strictly or lacks a required key. Everything else is a Problem.
  static Expected<CodeObject> read(std::span<const std::byte> bytes);

  const CodeObjectTarget& target() const { return target_; }
  const Metadata& metadata() const { return metadata_; }
  std::span<const Kernel> kernels() const { return metadata_.kernels; }
  /// By `.name`; null when absent.
  const Kernel* find_kernel(std::string_view name) const;
  /// Problems found while cross-checking, in discovery order.
  std::span<const Problem> problems() const { return problems_; }
  /// `.kd` symbols that no metadata kernel names (reported, never kernels).
  std::span<const std::string> orphan_descriptors() const { return orphan_descriptors_; }
  /// The global variables, in symbol table order (.symtab, then .dynsym
  /// names .symtab lacks).
  std::span<const Variable> variables() const { return variables_; }
  /// By name; null when absent.
  const Variable* find_variable(std::string_view name) const;
  /// Bytes the ELF occupies (its furthest table or content).
  std::uint64_t size() const { return size_; }

  CodeObject(CodeObjectTarget target, Metadata metadata, std::vector<Problem> problems,
             std::vector<std::string> orphan_descriptors, std::uint64_t size, std::vector<Variable> variables = {})
      : target_(std::move(target)),
        metadata_(std::move(metadata)),
        problems_(std::move(problems)),
        orphan_descriptors_(std::move(orphan_descriptors)),
        variables_(std::move(variables)),
        size_(size) {}

 private:
  CodeObjectTarget target_;
  Metadata metadata_;
  std::vector<Problem> problems_;
  std::vector<std::string> orphan_descriptors_;
  std::vector<Variable> variables_;
  std::uint64_t size_ = 0;
};

}  // namespace coload
