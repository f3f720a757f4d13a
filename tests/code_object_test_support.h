// Test support for the CodeObject::read tests (code_object_test.cpp,
// kernel_descriptor_test.cpp): metadata and objects built by hand (the ELF
// writer in tests/support plus LLVM's msgpack writer) and assertions on the
// problems a read reports.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coload/code_object.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "support/bundle_writer.h"
#include "support/elf_writer.h"
#include "test_util.h"

namespace coload::code_object_test {

using testing::DescriptorFields;
using testing::ElfSpec;
using testing::KernelSpec;
using testing::write_amdgpu_elf;

inline const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;

inline std::vector<std::byte> fixture(const std::string& path) {
  return testing::read_file((kFixtures / path).string());
}

// ---------------------------------------------------------------------------
// Metadata (msgpack) for hand-built objects.

struct MetaKernel {
  std::string name = "k";
  std::string symbol = "k.kd";
  std::uint32_t kernarg_size = 8, kernarg_align = 8;
  std::uint32_t group = 0, private_size = 0, wavefront = 64;
  std::optional<bool> uses_dynamic_stack;
  std::optional<std::uint32_t> workgroup_processor_mode;
  std::uint32_t overlapping_args = 0;  ///< more 8-byte args at offset 0, each overlapping the first
};

struct Meta {
  std::vector<MetaKernel> kernels{MetaKernel{}};
  std::string target = "amdgcn-amd-amdhsa--gfx90a";  // empty: no amdhsa.target
  std::uint32_t major = 1, minor = 2;
  std::string pad;                 // a vendor key to adjust the blob's length
  std::size_t printf_formats = 0;  // empty amdhsa.printf strings
  std::size_t vendor_keys = 0;     // root keys vendor.0, vendor.1, ...
};

inline std::vector<std::byte> metadata(const Meta& meta) {
  llvm::msgpack::Document doc;
  auto root = doc.getRoot().getMap(/*Convert=*/true);
  auto version = doc.getArrayNode();
  version.push_back(doc.getNode(meta.major));
  version.push_back(doc.getNode(meta.minor));
  root["amdhsa.version"] = version;
  if (!meta.target.empty()) root["amdhsa.target"] = doc.getNode(meta.target, /*Copy=*/true);
  if (!meta.pad.empty()) root["vendor.pad"] = doc.getNode(meta.pad, /*Copy=*/true);
  if (meta.printf_formats > 0) {
    auto formats = doc.getArrayNode();
    for (std::size_t i = 0; i < meta.printf_formats; ++i) formats.push_back(doc.getNode(""));
    root["amdhsa.printf"] = formats;
  }
  for (std::size_t i = 0; i < meta.vendor_keys; ++i) {
    root[doc.getNode("vendor." + std::to_string(i), /*Copy=*/true)] = doc.getNode(0u);
  }
  auto kernels = doc.getArrayNode();
  for (const MetaKernel& kernel : meta.kernels) {
    auto map = doc.getMapNode();
    map[".name"] = doc.getNode(kernel.name, true);
    map[".symbol"] = doc.getNode(kernel.symbol, true);
    map[".kernarg_segment_size"] = doc.getNode(kernel.kernarg_size);
    map[".kernarg_segment_align"] = doc.getNode(kernel.kernarg_align);
    map[".group_segment_fixed_size"] = doc.getNode(kernel.group);
    map[".private_segment_fixed_size"] = doc.getNode(kernel.private_size);
    map[".wavefront_size"] = doc.getNode(kernel.wavefront);
    map[".sgpr_count"] = doc.getNode(8u);
    map[".vgpr_count"] = doc.getNode(4u);
    map[".max_flat_workgroup_size"] = doc.getNode(1024u);
    if (kernel.uses_dynamic_stack) map[".uses_dynamic_stack"] = doc.getNode(*kernel.uses_dynamic_stack);
    if (kernel.workgroup_processor_mode)
      map[".workgroup_processor_mode"] = doc.getNode(*kernel.workgroup_processor_mode);
    auto args = doc.getArrayNode();
    if (kernel.kernarg_size >= 8) {
      auto arg = doc.getMapNode();
      arg[".offset"] = doc.getNode(0u);
      arg[".size"] = doc.getNode(8u);
      arg[".value_kind"] = doc.getNode("global_buffer");
      arg[".address_space"] = doc.getNode("global");
      args.push_back(arg);
    }
    for (std::uint32_t i = 0; i < kernel.overlapping_args; ++i) {
      auto arg = doc.getMapNode();
      arg[".offset"] = doc.getNode(0u);
      arg[".size"] = doc.getNode(8u);
      arg[".value_kind"] = doc.getNode("by_value");
      args.push_back(arg);
    }
    map[".args"] = args;
    kernels.push_back(map);
  }
  root["amdhsa.kernels"] = kernels;
  std::string blob;
  doc.writeToBlob(blob);
  std::vector<std::byte> bytes(blob.size());
  std::memcpy(bytes.data(), blob.data(), blob.size());
  return bytes;
}

/// A descriptor agreeing with `kernel` (entry offset filled in by the writer).
inline std::array<std::byte, 64> descriptor_for(const MetaKernel& kernel) {
  DescriptorFields fields;
  fields.group_segment_fixed_size = kernel.group;
  fields.private_segment_fixed_size = kernel.private_size;
  fields.kernarg_size = kernel.kernarg_size;
  fields.compute_pgm_rsrc1 = 0x00af0000;  // float modes, IEEE, DX10 clamp as clang writes them
  fields.compute_pgm_rsrc2 = 0x00000090;
  fields.kernel_code_properties = 0x0008;  // kernarg segment pointer
  if (kernel.wavefront == 32) fields.kernel_code_properties |= 1u << 10;
  if (kernel.uses_dynamic_stack.value_or(false)) fields.kernel_code_properties |= 1u << 11;
  if (kernel.workgroup_processor_mode.value_or(0)) fields.compute_pgm_rsrc1 |= 1u << 29;
  return testing::descriptor_bytes(fields);
}

inline KernelSpec kernel_spec(const MetaKernel& kernel) {
  KernelSpec spec;
  spec.descriptor_symbol = kernel.symbol;
  spec.descriptor = descriptor_for(kernel);
  spec.function_symbol = kernel.name;
  return spec;
}

/// A valid object: gfx90a, code object v5, one kernel "k".
inline ElfSpec valid_spec(const Meta& meta = {}) {
  ElfSpec spec;
  spec.metadata_note = metadata(meta);
  for (const MetaKernel& kernel : meta.kernels) spec.kernels.push_back(kernel_spec(kernel));
  return spec;
}

inline Expected<CodeObject> read(const ElfSpec& spec) { return CodeObject::read(write_amdgpu_elf(spec)); }

inline void set_u32(std::array<std::byte, 64>& bytes, std::size_t offset, std::uint32_t value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

/// The problems about `field`, for assertions.
inline std::vector<Problem> problems_on(const CodeObject& object, std::string_view field) {
  std::vector<Problem> found;
  for (const Problem& problem : object.problems()) {
    if (problem.field == field) found.push_back(problem);
  }
  return found;
}

inline std::string all_problems(const CodeObject& object) {
  std::string text;
  for (const Problem& problem : object.problems()) text += problem.field + ": " + problem.message + "\n";
  return text;
}

/// Exactly one problem, about `field`, of `kind`, whose message contains each of `words`.
inline ::testing::AssertionResult HasOneProblem(const Expected<CodeObject>& object, ErrorKind kind,
                                                std::string_view field, std::vector<std::string> words = {}) {
  if (!object) return ::testing::AssertionFailure() << "read failed: " << object.error().message();
  if (object->problems().size() != 1) {
    return ::testing::AssertionFailure() << object->problems().size() << " problems:\n" << all_problems(*object);
  }
  const Problem& problem = object->problems()[0];
  if (problem.kind != kind || problem.field != field) {
    return ::testing::AssertionFailure() << "problem " << to_string(problem.kind) << " on " << problem.field << ": "
                                         << problem.message;
  }
  for (const std::string& word : words) {
    if (problem.message.find(word) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks \"" << word << "\": " << problem.message;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace coload::code_object_test
