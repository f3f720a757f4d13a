// The metadata decoder on the notes of the toolchain-built fixtures: the
// expected values for tests/kernels/*.hip, then agreement with two other
// readers of the same notes on every fixture code object: comgr 5.2.3's
// amd_comgr_get_data_metadata (loaded with dlopen, skipped when absent) and
// llvm-readelf-22 --notes (its YAML, parsed with LLVM's YAML parser; skipped
// when absent). Both hand back leaves as text, so numbers are compared as
// numbers and booleans as 0/1.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "amd_comgr.h"
#include "code_object/metadata.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"
#include "support/bundle_writer.h"
#include "support/metadata_note.h"
#include "test_util.h"

namespace coload {
namespace {

using detail::decode_metadata;
using testing::FailsWith;
using testing::Succeeds;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;

Expected<detail::DecodedMetadata> decode(const std::vector<std::byte>& bytes) { return decode_metadata(bytes); }

// ---------------------------------------------------------------------------
// The notes of clang-22 code objects (tests/kernels/*.hip).

std::vector<std::byte> fixture_note(const std::string& path) {
  auto bytes = testing::read_file((kFixtures / path).string());
  auto note = testing::amdgpu_metadata_note(bytes);
  EXPECT_TRUE(note.has_value()) << path << " has no NT_AMDGPU_METADATA note";
  return note.value_or(std::vector<std::byte>{});
}

std::vector<ValueKind> kinds(const Kernel& k) {
  std::vector<ValueKind> out;
  for (const KernelArg& a : k.args) out.push_back(a.kind);
  return out;
}

bool has_kind(const Kernel& k, ValueKind kind) {
  for (const KernelArg& a : k.args) {
    if (a.kind == kind) return true;
  }
  return false;
}

TEST(MetadataFixtures, VectorOpsAtCodeObjectV4) {
  auto result = decode(fixture_note("co/gfx90a-cov4.co"));
  ASSERT_TRUE(Succeeds(result));
  const Metadata& m = result->metadata;
  EXPECT_EQ(m.version_major, 1u);
  EXPECT_EQ(m.version_minor, 1u);
  EXPECT_EQ(m.target, "amdgcn-amd-amdhsa--gfx90a");
  ASSERT_EQ(m.kernels.size(), 3u);
  EXPECT_EQ(m.kernels[0].name, "_Z7add_onePii");
  EXPECT_EQ(m.kernels[0].symbol, "_Z7add_onePii.kd");
  EXPECT_EQ(m.kernels[0].kernarg_segment_size, 12u);
  EXPECT_EQ(m.kernels[1].name, "_Z5saxpyfPKfPfi");
  EXPECT_EQ(m.kernels[1].kernarg_segment_size, 28u);
  EXPECT_EQ(m.kernels[2].name, "_Z12scale_doublePddx");
  EXPECT_EQ(m.kernels[2].symbol, "_Z12scale_doublePddx.kd");
  EXPECT_EQ(m.kernels[2].kernarg_segment_size, 24u);
  for (const Kernel& k : m.kernels) {
    EXPECT_EQ(k.kernarg_segment_align, 8u);
    EXPECT_EQ(k.group_segment_fixed_size, 0u);
    EXPECT_EQ(k.wavefront_size, 64u);
    EXPECT_EQ(k.max_flat_workgroup_size, 1024u);
    EXPECT_EQ(k.agpr_count, 0u);                                                  // gfx90a has AGPRs
    EXPECT_FALSE(k.uses_dynamic_stack);                                           // a v5 addition
    for (const KernelArg& a : k.args) EXPECT_FALSE(is_hidden(a.kind)) << k.name;  // -O2: none kept
  }
  EXPECT_EQ(kinds(m.kernels[1]), (std::vector<ValueKind>{ValueKind::ByValue, ValueKind::GlobalBuffer,
                                                         ValueKind::GlobalBuffer, ValueKind::ByValue}));
  EXPECT_EQ(m.kernels[1].args[1].actual_access, Access::ReadOnly);  // const float* __restrict__
  EXPECT_EQ(m.kernels[1].args[1].address_space, AddressSpace::Global);
  EXPECT_TRUE(m.unknown_keys.empty());
  EXPECT_TRUE(result->problems.empty());
}

TEST(MetadataFixtures, VectorOpsAtCodeObjectV5HasHiddenArguments) {
  auto result = decode(fixture_note("co/gfx90a-cov5.co"));
  ASSERT_TRUE(Succeeds(result));
  const Metadata& m = result->metadata;
  EXPECT_EQ(m.version_minor, 2u);
  ASSERT_EQ(m.kernels.size(), 3u);
  const Kernel& add_one = m.kernels[0];
  EXPECT_EQ(add_one.name, "_Z7add_onePii");
  EXPECT_EQ(add_one.kernarg_segment_size, 272u);
  EXPECT_EQ(add_one.uses_dynamic_stack, false);
  EXPECT_EQ(add_one.uniform_work_group_size, 1u);
  ASSERT_EQ(add_one.args.size(), 15u);
  EXPECT_EQ(add_one.args[2].kind, ValueKind::HiddenBlockCountX);  // blockIdx * blockDim + threadIdx
  EXPECT_EQ(add_one.args[2].offset, 16u);
  EXPECT_EQ(add_one.args[5].kind, ValueKind::HiddenGroupSizeX);
  EXPECT_EQ(add_one.args[5].size, 2u);
  EXPECT_EQ(add_one.args[14].kind, ValueKind::HiddenGridDims);
  EXPECT_EQ(add_one.args[14].offset, 80u);
  EXPECT_EQ(m.kernels[1].kernarg_segment_size, 288u);
  EXPECT_EQ(m.kernels[2].kernarg_segment_size, 280u);
  for (const Kernel& k : m.kernels) {
    EXPECT_TRUE(has_kind(k, ValueKind::HiddenBlockCountX)) << k.name;
    EXPECT_FALSE(has_kind(k, ValueKind::HiddenUnknown)) << k.name;
  }
  EXPECT_TRUE(m.unknown_keys.empty());
}

TEST(MetadataFixtures, VectorOpsOnWave32AndGenericTargets) {
  auto result = decode(fixture_note("co/gfx1100.co"));
  ASSERT_TRUE(Succeeds(result));
  for (const Kernel& k : result->metadata.kernels) {
    EXPECT_EQ(k.wavefront_size, 32u) << k.name;
    EXPECT_EQ(k.workgroup_processor_mode, 1u) << k.name;
    EXPECT_FALSE(k.agpr_count) << k.name;  // no MAI on gfx11
  }
  result = decode(fixture_note("co/gfx9-generic.co"));
  ASSERT_TRUE(Succeeds(result));
  EXPECT_EQ(result->metadata.target, "amdgcn-amd-amdhsa--gfx9-generic");
  EXPECT_EQ(result->metadata.kernels.size(), 3u);
}

TEST(MetadataFixtures, StaticLds) {
  auto result = decode(fixture_note("expected/bundles__bundler_plain.hipfb/hipv4-amdgcn-amd-amdhsa--gfx90a.co"));
  ASSERT_TRUE(Succeeds(result));
  const Metadata& m = result->metadata;
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].name, "_Z9block_sumPKfPfj");
  EXPECT_EQ(m.kernels[0].symbol, "_Z9block_sumPKfPfj.kd");
  EXPECT_EQ(m.kernels[0].group_segment_fixed_size, 1024u);  // float tile[256]
  EXPECT_EQ(m.kernels[0].kernarg_segment_size, 20u);
  EXPECT_FALSE(has_kind(m.kernels[0], ValueKind::HiddenBlockCountX));
  EXPECT_EQ(m.kernels[1].name, "_Z9histogramPKhPjj");
  EXPECT_EQ(m.kernels[1].group_segment_fixed_size, 1024u);  // unsigned local[256]
  EXPECT_EQ(m.kernels[1].kernarg_segment_size, 280u);
  EXPECT_TRUE(has_kind(m.kernels[1], ValueKind::HiddenBlockCountX));  // the grid-stride loop
}

TEST(MetadataFixtures, DynamicLds) {
  auto result = decode(fixture_note("expected/bundles__driver_single_arch.hipfb/hipv4-amdgcn-amd-amdhsa--gfx1100.co"));
  ASSERT_TRUE(Succeeds(result));
  const Metadata& m = result->metadata;
  ASSERT_EQ(m.kernels.size(), 2u);
  const Kernel& transform = m.kernels[0];
  EXPECT_EQ(transform.name, "_Z9transform6ParamsPKfPf");
  EXPECT_EQ(transform.group_segment_fixed_size, 0u);  // extern __shared__: all dynamic
  EXPECT_EQ(transform.kernarg_segment_size, 296u);
  EXPECT_EQ(transform.wavefront_size, 32u);
  EXPECT_EQ(transform.args.at(0).kind, ValueKind::ByValue);
  EXPECT_EQ(transform.args.at(0).size, 24u);  // struct Params
  EXPECT_TRUE(has_kind(transform, ValueKind::HiddenDynamicLdsSize));
  EXPECT_EQ(m.kernels[1].name, "_Z4fillPffy");
  EXPECT_EQ(m.kernels[1].kernarg_segment_size, 280u);
  EXPECT_FALSE(has_kind(m.kernels[1], ValueKind::HiddenDynamicLdsSize));
}

TEST(MetadataFixtures, EveryFixtureNoteDecodesAndNoPrefixDoes) {
  std::size_t decoded = 0;
  for (const auto& path : testing::code_object_files(kFixtures)) {
    auto bytes = testing::read_file(path.string());
    auto note = testing::amdgpu_metadata_note(bytes);
    if (!note) continue;  // SPIR-V entries and the like
    auto result = decode(*note);
    EXPECT_TRUE(Succeeds(result)) << path;
    if (result) {
      EXPECT_TRUE(result->metadata.unknown_keys.empty()) << path << ": " << result->metadata.unknown_keys.front();
      EXPECT_TRUE(result->problems.empty()) << path;
    }
    ++decoded;
  }
  EXPECT_GE(decoded, 14u);
  // Truncations of one real note, byte by byte.
  auto note = fixture_note("co/gfx90a-cov5.co");
  for (std::size_t size = 0; size < note.size(); ++size) {
    std::vector<std::byte> prefix(note.begin(), note.begin() + size);
    ASSERT_TRUE(FailsWith(decode(prefix), ErrorKind::Malformed)) << "prefix of " << size << " bytes";
  }
}

/// A metadata tree as another reader shows it: text leaves, maps, lists.
struct Tree {
  enum class Kind { Scalar, Map, List } kind = Kind::Scalar;
  std::string scalar;
  std::map<std::string, Tree> map;
  std::vector<Tree> list;

  const Tree* find(const std::string& key) const {
    auto at = map.find(key);
    return at == map.end() ? nullptr : &at->second;
  }
};

std::optional<std::uint64_t> number(const Tree& leaf) {
  if (leaf.kind != Tree::Kind::Scalar) return std::nullopt;
  const std::string& text = leaf.scalar;
  if (text == "true") return 1;
  if (text == "false") return 0;
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// ---------------------------------------------------------------------------
// The comparison, shared by both readers.

/// `theirs[key]` as a number, or nullopt when absent; a present non-number fails the test.
std::optional<std::uint64_t> field(const Tree& theirs, const std::string& key, const std::string& where) {
  const Tree* leaf = theirs.find(key);
  if (!leaf) return std::nullopt;
  auto value = number(*leaf);
  EXPECT_TRUE(value.has_value()) << where << key << ": \"" << leaf->scalar << "\" is not a number";
  return value;
}

void expect_same(const Metadata& ours, const Tree& theirs, const std::string& where) {
  ASSERT_EQ(theirs.kind, Tree::Kind::Map) << where;
  const Tree* version = theirs.find("amdhsa.version");
  ASSERT_TRUE(version && version->list.size() == 2) << where;
  EXPECT_EQ(number(version->list[0]), ours.version_major) << where;
  EXPECT_EQ(number(version->list[1]), ours.version_minor) << where;
  if (const Tree* target = theirs.find("amdhsa.target")) EXPECT_EQ(target->scalar, ours.target) << where;

  const Tree* kernels = theirs.find("amdhsa.kernels");
  ASSERT_TRUE(kernels) << where;
  ASSERT_EQ(kernels->list.size(), ours.kernels.size()) << where;
  for (std::size_t i = 0; i < ours.kernels.size(); ++i) {
    const Kernel& k = ours.kernels[i];
    const Tree& t = kernels->list[i];
    std::string at = where + ": amdhsa.kernels[" + std::to_string(i) + "]";
    ASSERT_TRUE(t.find(".name") && t.find(".symbol")) << at;
    EXPECT_EQ(t.find(".name")->scalar, k.name) << at;
    EXPECT_EQ(t.find(".symbol")->scalar, k.symbol) << at;
    const std::pair<const char*, std::uint32_t> required[] = {
        {".kernarg_segment_size", k.kernarg_segment_size},
        {".kernarg_segment_align", k.kernarg_segment_align},
        {".group_segment_fixed_size", k.group_segment_fixed_size},
        {".private_segment_fixed_size", k.private_segment_fixed_size},
        {".wavefront_size", k.wavefront_size},
        {".sgpr_count", k.sgpr_count},
        {".vgpr_count", k.vgpr_count},
        {".max_flat_workgroup_size", k.max_flat_workgroup_size},
    };
    for (const auto& [key, value] : required) EXPECT_EQ(field(t, key, at), value) << at << key;
    const std::pair<const char*, std::optional<std::uint32_t>> optional[] = {
        {".agpr_count", k.agpr_count},
        {".sgpr_spill_count", k.sgpr_spill_count},
        {".vgpr_spill_count", k.vgpr_spill_count},
        {".uniform_work_group_size", k.uniform_work_group_size},
        {".workgroup_processor_mode", k.workgroup_processor_mode},
        {".uses_dynamic_stack",
         k.uses_dynamic_stack ? std::optional<std::uint32_t>(*k.uses_dynamic_stack) : std::nullopt},
    };
    for (const auto& [key, value] : optional) EXPECT_EQ(field(t, key, at), value) << at << key;

    const Tree* args = t.find(".args");
    ASSERT_EQ(args ? args->list.size() : 0, k.args.size()) << at;
    for (std::size_t j = 0; j < k.args.size(); ++j) {
      const KernelArg& a = k.args[j];
      const Tree& ta = args->list[j];
      std::string arg_at = at + ".args[" + std::to_string(j) + "]";
      EXPECT_EQ(field(ta, ".offset", arg_at), a.offset) << arg_at;
      EXPECT_EQ(field(ta, ".size", arg_at), a.size) << arg_at;
      ASSERT_TRUE(ta.find(".value_kind")) << arg_at;
      EXPECT_EQ(ta.find(".value_kind")->scalar, a.kind_text) << arg_at;
      EXPECT_EQ(ta.find(".value_kind")->scalar, to_string(a.kind)) << arg_at;
      const Tree* space = ta.find(".address_space");
      EXPECT_EQ(space ? space->scalar : "unspecified", to_string(a.address_space)) << arg_at;
    }
  }
}

struct Fixture {
  std::filesystem::path path;
  std::vector<std::byte> elf;
  Metadata metadata;
};

/// Every fixture code object with a metadata note, decoded by coload.
std::vector<Fixture> decoded_fixtures() {
  std::vector<Fixture> out;
  for (const auto& path : testing::code_object_files(kFixtures)) {
    auto elf = testing::read_file(path.string());
    auto note = testing::amdgpu_metadata_note(elf);
    if (!note) continue;
    auto decoded = detail::decode_metadata(*note);
    EXPECT_TRUE(Succeeds(decoded)) << path;
    if (decoded) out.push_back({path, std::move(elf), std::move(decoded->metadata)});
  }
  return out;
}

// ---------------------------------------------------------------------------
// comgr, through dlopen: no link-time dependency, a skip when missing.

class ComgrMetadata {
 public:
  /// Null when libamd_comgr.so.2 or one of its metadata functions is missing; `why` says which.
  static std::unique_ptr<ComgrMetadata> load(std::string& why) {
    void* library = dlopen("libamd_comgr.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      why = dlerror();
      return nullptr;
    }
    auto comgr = std::unique_ptr<ComgrMetadata>(new ComgrMetadata);
    bool ok = comgr->bind(library, "amd_comgr_create_data", comgr->create_data) &&
              comgr->bind(library, "amd_comgr_set_data", comgr->set_data) &&
              comgr->bind(library, "amd_comgr_release_data", comgr->release_data) &&
              comgr->bind(library, "amd_comgr_get_data_metadata", comgr->get_data_metadata) &&
              comgr->bind(library, "amd_comgr_destroy_metadata", comgr->destroy_metadata) &&
              comgr->bind(library, "amd_comgr_get_metadata_kind", comgr->get_metadata_kind) &&
              comgr->bind(library, "amd_comgr_get_metadata_string", comgr->get_metadata_string) &&
              comgr->bind(library, "amd_comgr_iterate_map_metadata", comgr->iterate_map_metadata) &&
              comgr->bind(library, "amd_comgr_get_metadata_list_size", comgr->get_metadata_list_size) &&
              comgr->bind(library, "amd_comgr_index_list_metadata", comgr->index_list_metadata);
    if (!ok) {
      why = "a metadata function is missing from libamd_comgr.so.2";
      return nullptr;
    }
    return comgr;
  }

  /// The metadata tree of a code object; nullopt (with comgr's status in `why`) when comgr refuses it.
  std::optional<Tree> read(const std::vector<std::byte>& elf, std::string& why) const {
    amd_comgr_data_t data;
    if (auto status = create_data(AMD_COMGR_DATA_KIND_EXECUTABLE, &data); status != AMD_COMGR_STATUS_SUCCESS) {
      why = "amd_comgr_create_data: status " + std::to_string(status);
      return std::nullopt;
    }
    std::optional<Tree> tree;
    if (auto status = set_data(data, elf.size(), reinterpret_cast<const char*>(elf.data()));
        status != AMD_COMGR_STATUS_SUCCESS) {
      why = "amd_comgr_set_data: status " + std::to_string(status);
    } else {
      amd_comgr_metadata_node_t root;
      if (auto status = get_data_metadata(data, &root); status != AMD_COMGR_STATUS_SUCCESS) {
        why = "amd_comgr_get_data_metadata: status " + std::to_string(status);
      } else {
        tree = convert(root);
        destroy_metadata(root);
      }
    }
    release_data(data);
    return tree;
  }

 private:
  template <class Function>
  bool bind(void* library, const char* name, Function& function) {
    function = reinterpret_cast<Function>(dlsym(library, name));
    return function != nullptr;
  }

  std::string text(amd_comgr_metadata_node_t node) const {
    std::size_t size = 0;
    if (get_metadata_string(node, &size, nullptr) != AMD_COMGR_STATUS_SUCCESS || size == 0) return {};
    std::string out(size, '\0');
    if (get_metadata_string(node, &size, out.data()) != AMD_COMGR_STATUS_SUCCESS) return {};
    out.resize(size - 1);  // the size counts the NUL
    return out;
  }

  Tree convert(amd_comgr_metadata_node_t node) const {
    Tree tree;
    amd_comgr_metadata_kind_t kind;
    EXPECT_EQ(get_metadata_kind(node, &kind), AMD_COMGR_STATUS_SUCCESS);
    if (kind == AMD_COMGR_METADATA_KIND_STRING) {
      tree.scalar = text(node);
    } else if (kind == AMD_COMGR_METADATA_KIND_MAP) {
      tree.kind = Tree::Kind::Map;
      struct Context {
        const ComgrMetadata* self;
        Tree* tree;
      } context{this, &tree};
      // The key and value handles belong to comgr and die after the callback.
      auto entry = [](amd_comgr_metadata_node_t key, amd_comgr_metadata_node_t value, void* user) {
        auto* c = static_cast<Context*>(user);
        c->tree->map[c->self->text(key)] = c->self->convert(value);
        return AMD_COMGR_STATUS_SUCCESS;
      };
      EXPECT_EQ(iterate_map_metadata(node, entry, &context), AMD_COMGR_STATUS_SUCCESS);
    } else if (kind == AMD_COMGR_METADATA_KIND_LIST) {
      tree.kind = Tree::Kind::List;
      std::size_t size = 0;
      EXPECT_EQ(get_metadata_list_size(node, &size), AMD_COMGR_STATUS_SUCCESS);
      for (std::size_t i = 0; i < size; ++i) {
        amd_comgr_metadata_node_t element;
        if (index_list_metadata(node, i, &element) != AMD_COMGR_STATUS_SUCCESS) {
          ADD_FAILURE() << "amd_comgr_index_list_metadata " << i;
          break;
        }
        tree.list.push_back(convert(element));
        destroy_metadata(element);
      }
    }
    return tree;
  }

  decltype(&amd_comgr_create_data) create_data = nullptr;
  decltype(&amd_comgr_set_data) set_data = nullptr;
  decltype(&amd_comgr_release_data) release_data = nullptr;
  decltype(&amd_comgr_get_data_metadata) get_data_metadata = nullptr;
  decltype(&amd_comgr_destroy_metadata) destroy_metadata = nullptr;
  decltype(&amd_comgr_get_metadata_kind) get_metadata_kind = nullptr;
  decltype(&amd_comgr_get_metadata_string) get_metadata_string = nullptr;
  decltype(&amd_comgr_iterate_map_metadata) iterate_map_metadata = nullptr;
  decltype(&amd_comgr_get_metadata_list_size) get_metadata_list_size = nullptr;
  decltype(&amd_comgr_index_list_metadata) index_list_metadata = nullptr;
};

TEST(MetadataDifferential, AgreesWithComgrOnEveryFixtureItReads) {
  std::string why;
  auto comgr = ComgrMetadata::load(why);
  if (!comgr) GTEST_SKIP() << "comgr unavailable (package libamd-comgr2 not installed?): " << why;
  std::size_t compared = 0;
  std::vector<std::string> refused;
  for (const Fixture& fixture : decoded_fixtures()) {
    auto tree = comgr->read(fixture.elf, why);
    if (!tree) {
      refused.push_back(fixture.path.filename().string() + " (" + why + ")");
      continue;
    }
    expect_same(fixture.metadata, *tree, "comgr vs " + fixture.path.lexically_relative(kFixtures).string());
    ++compared;
  }
  // docs/comgr.md ("Metadata"): comgr 5.2.3 reads v4, v5 and v6 notes.
  EXPECT_GE(compared, 14u);
  EXPECT_TRUE(refused.empty()) << refused.size() << " refused, first: " << refused.front();
}

// ---------------------------------------------------------------------------
// llvm-readelf-22 --notes: its YAML rendering of the note.

std::optional<std::string> readelf_program() {
  for (const char* candidate : {"/usr/lib/llvm-22/bin/llvm-readelf", "/usr/bin/llvm-readelf-22"}) {
    if (std::filesystem::exists(candidate)) return candidate;
  }
  return std::nullopt;
}

std::optional<std::string> run(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return std::nullopt;
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
  return out;
}

/// The YAML document between "AMDGPU Metadata:" / "---" and "..." in readelf's output.
std::string metadata_yaml(const std::string& notes) {
  std::size_t start = notes.find("AMDGPU Metadata:");
  if (start == std::string::npos) return {};
  start = notes.find("---\n", start);
  if (start == std::string::npos) return {};
  start += 4;
  std::size_t end = notes.find("\n...", start);
  return notes.substr(start, end == std::string::npos ? std::string::npos : end - start + 1);
}

Tree convert(llvm::yaml::Node* node) {
  Tree tree;
  if (auto* scalar = llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(node)) {
    llvm::SmallString<64> storage;
    tree.scalar = scalar->getValue(storage).str();
  } else if (auto* mapping = llvm::dyn_cast_or_null<llvm::yaml::MappingNode>(node)) {
    tree.kind = Tree::Kind::Map;
    for (auto& entry : *mapping) {
      auto* key = llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(entry.getKey());
      if (!key) continue;
      llvm::SmallString<64> storage;
      tree.map[key->getValue(storage).str()] = convert(entry.getValue());
    }
  } else if (auto* sequence = llvm::dyn_cast_or_null<llvm::yaml::SequenceNode>(node)) {
    tree.kind = Tree::Kind::List;
    for (auto& element : *sequence) tree.list.push_back(convert(&element));
  }
  return tree;
}

TEST(MetadataDifferential, AgreesWithLlvmReadelfNotes) {
  auto readelf = readelf_program();
  if (!readelf) GTEST_SKIP() << "llvm-readelf-22 not installed (package llvm-22)";
  std::size_t compared = 0;
  for (const Fixture& fixture : decoded_fixtures()) {
    auto output = run(*readelf + " --notes '" + fixture.path.string() + "' 2>&1");
    ASSERT_TRUE(output.has_value()) << fixture.path;
    std::string yaml = metadata_yaml(*output);
    ASSERT_FALSE(yaml.empty()) << fixture.path << ": no AMDGPU Metadata in\n" << *output;
    llvm::SourceMgr sources;
    llvm::yaml::Stream stream(yaml, sources);
    auto document = stream.begin();
    ASSERT_NE(document, stream.end()) << fixture.path;
    Tree tree = convert(document->getRoot());
    ASSERT_FALSE(stream.failed()) << fixture.path << ": readelf's YAML does not parse:\n" << yaml;
    expect_same(fixture.metadata, tree, "llvm-readelf vs " + fixture.path.lexically_relative(kFixtures).string());
    ++compared;
  }
  EXPECT_GE(compared, 14u);
}

}  // namespace
}  // namespace coload
