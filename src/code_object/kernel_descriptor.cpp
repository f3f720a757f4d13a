#include "code_object/kernel_descriptor.h"
#include "code_object/metadata.h"

#include <string>

#include "llvm/Support/AMDHSAKernelDescriptor.h"

namespace coload::detail {
namespace {

namespace K = llvm::amdhsa;

/// Problems about one kernel's descriptor, each prefixed with the kernel and symbol.
class Reporter {
 public:
  Reporter(const Kernel& kernel, std::vector<Problem>& problems) : kernel_(kernel), problems_(problems) {}

  void add(ErrorKind kind, std::string_view field, const std::string& what) {
    problems_.push_back({kind, kernel_.name, std::string(field),
                         "kernel " + quoted(printable(kernel_.name, kMessageNameLimit)) + ": descriptor " +
                             quoted(printable(kernel_.symbol, kMessageNameLimit)) + ": " + what});
  }

  /// The descriptor's `field` and the metadata's `key` must agree.
  void equal(std::string_view field, std::uint64_t in_descriptor, std::string_view key, std::uint64_t in_metadata) {
    if (in_descriptor == in_metadata) return;
    add(ErrorKind::SizeMismatch, field,
        std::string(field) + " " + std::to_string(in_descriptor) + " disagrees with metadata " + std::string(key) +
            " " + std::to_string(in_metadata));
  }

 private:
  const Kernel& kernel_;
  std::vector<Problem>& problems_;
};

/// Offset and length of each reserved run, which must be zero.
struct ReservedRun {
  std::size_t offset, size;
  std::string_view name;
};
constexpr ReservedRun kReserved[] = {
    {K::RESERVED0_OFFSET, 4, "reserved0"},
    {K::RESERVED1_OFFSET, 20, "reserved1"},
    {K::RESERVED3_OFFSET, 4, "reserved3"},
};

std::string_view yes_no(bool value) { return value ? "set" : "clear"; }

// GFX6-9 before gfx90a: compute_pgm_rsrc3 does not exist (gfx90a and the
// gfx940 family carry ACCUM_OFFSET and TG_SPLIT there).
bool before_gfx90a(const Processor& processor) {
  return processor.isa_major < 9 ||
         (processor.isa_major == 9 && processor.isa_minor == 0 && processor.isa_stepping != 10);
}

// Kernarg preloading came with gfx90a and the gfx940 family, and returned
// with gfx1250 (clang-22 writes it there); gfx10, gfx11 and gfx12.0 lack it.
// Later processors are not judged.
bool lacks_kernarg_preload(const Processor& processor) {
  return before_gfx90a(processor) || processor.isa_major == 10 || processor.isa_major == 11 ||
         (processor.isa_major == 12 && processor.isa_minor == 0);
}

}  // namespace

KernelDescriptor decode_kernel_descriptor(Bytes bytes, std::uint64_t address) {
  const std::byte* at = bytes.data();
  KernelDescriptor kd;
  kd.address = address;
  kd.group_segment_fixed_size = load_le<std::uint32_t>(at + K::GROUP_SEGMENT_FIXED_SIZE_OFFSET);
  kd.private_segment_fixed_size = load_le<std::uint32_t>(at + K::PRIVATE_SEGMENT_FIXED_SIZE_OFFSET);
  kd.kernarg_size = load_le<std::uint32_t>(at + K::KERNARG_SIZE_OFFSET);
  kd.kernel_code_entry_byte_offset = load_le<std::int64_t>(at + K::KERNEL_CODE_ENTRY_BYTE_OFFSET_OFFSET);
  kd.compute_pgm_rsrc3 = load_le<std::uint32_t>(at + K::COMPUTE_PGM_RSRC3_OFFSET);
  kd.compute_pgm_rsrc1 = load_le<std::uint32_t>(at + K::COMPUTE_PGM_RSRC1_OFFSET);
  kd.compute_pgm_rsrc2 = load_le<std::uint32_t>(at + K::COMPUTE_PGM_RSRC2_OFFSET);
  kd.kernel_code_properties = load_le<std::uint16_t>(at + K::KERNEL_CODE_PROPERTIES_OFFSET);
  kd.kernarg_preload = load_le<std::uint16_t>(at + K::KERNARG_PRELOAD_OFFSET);
  return kd;
}

void cross_check_descriptor(const Kernel& kernel, const KernelDescriptor& kd, Bytes bytes,
                            const CodeObjectTarget& target, std::vector<Problem>& problems) {
  Reporter report(kernel, problems);
  report.equal("group_segment_fixed_size", kd.group_segment_fixed_size, ".group_segment_fixed_size",
               kernel.group_segment_fixed_size);
  report.equal("private_segment_fixed_size", kd.private_segment_fixed_size, ".private_segment_fixed_size",
               kernel.private_segment_fixed_size);
  // Code object v3 left kernarg_size 0, meaning "unspecified" (ROCR-Runtime #117).
  if (!(target.code_object_version == 3 && kd.kernarg_size == 0)) {
    report.equal("kernarg_size", kd.kernarg_size, ".kernarg_segment_size", kernel.kernarg_segment_size);
  }

  if (kd.wave32() != (kernel.wavefront_size == 32)) {
    report.add(ErrorKind::Malformed, "wavefront_size",
               std::string("kernel_code_properties ENABLE_WAVEFRONT_SIZE32 (bit 10) is ") +
                   std::string(yes_no(kd.wave32())) + " but metadata .wavefront_size is " +
                   std::to_string(kernel.wavefront_size));
  }
  if (kernel.uses_dynamic_stack && kd.uses_dynamic_stack() != *kernel.uses_dynamic_stack) {
    report.add(ErrorKind::Malformed, "uses_dynamic_stack",
               std::string("kernel_code_properties USES_DYNAMIC_STACK (bit 11) is ") +
                   std::string(yes_no(kd.uses_dynamic_stack())) + " but metadata .uses_dynamic_stack is " +
                   (*kernel.uses_dynamic_stack ? "true" : "false"));
  }
  bool gfx10_plus = target.target.processor && target.target.processor->isa_major >= 10;
  if (gfx10_plus && kernel.workgroup_processor_mode) {
    bool wgp = kd.compute_pgm_rsrc1 & K::COMPUTE_PGM_RSRC1_GFX10_PLUS_WGP_MODE;
    if (wgp != (*kernel.workgroup_processor_mode != 0)) {
      report.add(ErrorKind::Malformed, "workgroup_processor_mode",
                 std::string("compute_pgm_rsrc1 WGP_MODE (bit 29) is ") + std::string(yes_no(wgp)) +
                     " but metadata .workgroup_processor_mode is " + std::to_string(*kernel.workgroup_processor_mode));
    }
  }
  std::uint32_t lds_granules = (kd.compute_pgm_rsrc2 & K::COMPUTE_PGM_RSRC2_GRANULATED_LDS_SIZE) >>
                               K::COMPUTE_PGM_RSRC2_GRANULATED_LDS_SIZE_SHIFT;
  if (lds_granules != 0) {
    report.add(ErrorKind::Malformed, "compute_pgm_rsrc2",
               "compute_pgm_rsrc2 " + hex(kd.compute_pgm_rsrc2) + " sets GRANULATED_LDS_SIZE (bits 15-23) to " +
                   std::to_string(lds_granules) + "; it must be 0 (the dispatch packet gives the LDS size)");
  }
  constexpr std::uint32_t kReservedProperties =
      K::KERNEL_CODE_PROPERTY_RESERVED0 | K::KERNEL_CODE_PROPERTY_RESERVED1;  // bits 7-9, 12-15
  if (kd.kernel_code_properties & kReservedProperties) {
    report.add(ErrorKind::Malformed, "kernel_code_properties",
               "kernel_code_properties " + hex(kd.kernel_code_properties) + " at descriptor offset 56 sets " +
                   "reserved bits " + hex(kd.kernel_code_properties & kReservedProperties) +
                   " (bits 7-9 and 12-15 must be 0)");
  }
  if (const Processor* processor = target.target.processor) {
    if (kd.compute_pgm_rsrc3 != 0 && before_gfx90a(*processor)) {
      report.add(ErrorKind::Malformed, "compute_pgm_rsrc3",
                 "compute_pgm_rsrc3 " + hex(kd.compute_pgm_rsrc3) + " at descriptor offset 44 must be 0 on " +
                     std::string(processor->name) + " (GFX6-9 before gfx90a have no such register)");
    }
    if (kd.kernarg_preload != 0 && lacks_kernarg_preload(*processor)) {
      report.add(ErrorKind::Malformed, "kernarg_preload",
                 "kernarg_preload " + hex(kd.kernarg_preload) + " at descriptor offset 58 must be 0 on " +
                     std::string(processor->name) + ", which cannot preload kernel arguments");
    }
  }
  for (const ReservedRun& run : kReserved) {
    for (std::size_t i = 0; i < run.size; ++i) {
      if (bytes[run.offset + i] == std::byte{0}) continue;
      report.add(ErrorKind::Malformed, run.name,
                 std::string(run.name) + " byte at descriptor offset " + std::to_string(run.offset + i) + " is " +
                     hex(static_cast<unsigned>(bytes[run.offset + i])) + ", must be 0");
      break;
    }
  }
}

}  // namespace coload::detail
