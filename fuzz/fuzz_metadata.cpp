// Fuzzes the strict msgpack decoder of the NT_AMDGPU_METADATA note twice:
// directly (detail::decode_metadata on the raw bytes), and wrapped as the
// metadata note of an otherwise valid code object (coload_elf_writer), so
// that CodeObject::read hands the same bytes to it through the ELF layer.
// Checks what metadata.h promises of a success, and that both paths agree.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "code_object/metadata.h"
#include "coload/code_object.h"
#include "support/elf_writer.h"

namespace {

// Not assert: the check must hold in release builds and in the ctest replay.
void require(bool condition) {
  if (!condition) __builtin_trap();
}

void check(const coload::Metadata& metadata) {
  require(metadata.version_major == 1);
  require(metadata.kernels.size() <= coload::detail::kMaxMetadataKernels);
  for (const coload::Kernel& kernel : metadata.kernels) {
    require(kernel.wavefront_size == 32 || kernel.wavefront_size == 64);
    require(std::has_single_bit(kernel.kernarg_segment_align));
    require(kernel.name.find('\0') == std::string::npos && kernel.symbol.find('\0') == std::string::npos);
    require(kernel.args.size() <= coload::detail::kMaxKernelArgs);
    for (const coload::KernelArg& arg : kernel.args) {
      if (arg.pointee_align) require(std::has_single_bit(*arg.pointee_align));
      if (arg.kind == coload::ValueKind::HiddenUnknown) {
        require(arg.kind_text.starts_with("hidden_"));
      } else {
        require(arg.kind_text == coload::to_string(arg.kind));
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto direct = coload::detail::decode_metadata(bytes);
  if (direct) {
    check(direct->metadata);
    for (const coload::Problem& problem : direct->problems) require(!problem.message.empty());
  } else {
    require(!direct.error().message().empty());
    coload::ErrorKind kind = direct.error().kind();
    require(kind == coload::ErrorKind::Malformed || kind == coload::ErrorKind::LimitExceeded ||
            kind == coload::ErrorKind::UnsupportedVersion);
  }
  if (size == 0) return 0;  // an empty descriptor means "no note" to the ELF writer

  coload::testing::ElfSpec spec;
  spec.metadata_note.assign(bytes.begin(), bytes.end());
  auto object = coload::CodeObject::read(coload::testing::write_amdgpu_elf(spec));
  if (!direct) {
    // The ELF layer adds context, never a different verdict.
    require(!object && object.error().kind() == direct.error().kind());
    return 0;
  }
  if (!object) return 0;  // e.g. `amdhsa.target` against e_flags: the ELF layer's business
  require(object->kernels().size() == direct->metadata.kernels.size());
  for (std::size_t i = 0; i < object->kernels().size(); ++i) {
    require(object->kernels()[i].name == direct->metadata.kernels[i].name);
    require(object->kernels()[i].args.size() == direct->metadata.kernels[i].args.size());
  }
  return 0;
}
