// coload_kpack_list and coload_kpack_extract through libcoload.so, on the
// kpack'd fixtures (docs/fixtures.md, "kpack'd host images"): every entry of
// an archive of each scheme with its key, target, ordinal and sizes; each
// code object extracted byte-identical to what the original library's
// wrapper holds for the target (and, for `none`, to the archive's stored
// bytes); a missing key or target and a broken header refused with their
// location.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "c_api_test_support.h"
#include "coload/coload.h"
#include "coload/detail/wrapper.h"

namespace {

using coload::testing::dry_run_options;
using coload::testing::last_error_location;
using Bytes = std::vector<char>;

const std::string kHipk = COLOAD_HIPK_FIXTURE_DIR;
const std::string kLibrary = "consistent/lib/libconsistent.so";
const std::string kApp = "consistent/bin/app_consistent";
constexpr const char* kTarget = "gfx942";
constexpr const char* kEntryId = "hipv4-amdgcn-amd-amdhsa--gfx942";

std::string archive(const std::string& scheme) {
  return kHipk + "/" + scheme + "/consistent/.kpack/consistent_gfx942.kpack";
}

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

/// What a dry-run gfx942 registry chooses in each bundle of the original
/// (un-kpack'd) image `relative`, by bundle index.
std::vector<Bytes> original_choices(const std::string& relative) {
  const coload_registry_options options = dry_run_options(kTarget);
  coload_registry* registry = nullptr;
  EXPECT_EQ(coload_registry_create(&options, &registry), COLOAD_OK) << coload_last_error_message();
  coload_binary binary = 0;
  const std::string path = kHipk + "/orig/" + relative;
  EXPECT_EQ(coload_register_file(registry, path.c_str(), &binary), COLOAD_OK) << coload_last_error_message();
  std::vector<Bytes> chosen;
  auto take = +[](void* user_data, const coload_choice* choice) {
    auto& out = *static_cast<std::vector<Bytes>*>(user_data);
    const char* bytes = static_cast<const char*>(choice->bytes);
    out.emplace_back(bytes, bytes + choice->size);
    return 1;
  };
  EXPECT_EQ(coload_choose(registry, binary, 0, take, &chosen), COLOAD_OK) << coload_last_error_message();
  coload_registry_destroy(registry);
  return chosen;
}

Bytes extracted(const std::string& path, const std::string& key, const char* target = kTarget) {
  coload_kpack_object* object = nullptr;
  EXPECT_EQ(coload_kpack_extract(path.c_str(), key.c_str(), target, &object), COLOAD_OK) << coload_last_error_message();
  if (!object) return {};
  EXPECT_EQ(object->struct_size, sizeof(coload_kpack_object));
  EXPECT_STREQ(object->entry_id, kEntryId);
  const char* bytes = static_cast<const char*>(object->bytes);
  Bytes copy(bytes, bytes + object->size);
  coload_kpack_object_free(object);
  return copy;
}

TEST(CApiKpackTest, ListsEveryEntryOfBothSchemes) {
  const std::vector<Bytes> library = original_choices(kLibrary);
  const std::vector<Bytes> app = original_choices(kApp);
  ASSERT_EQ(library.size(), 3u);
  ASSERT_EQ(app.size(), 3u);
  for (const char* scheme : {"none", "zstd-per-kernel"}) {
    SCOPED_TRACE(scheme);
    const std::string path = archive(scheme);
    const Bytes file = read_file(path);
    coload_kpack_listing* listing = nullptr;
    ASSERT_EQ(coload_kpack_list(path.c_str(), &listing), COLOAD_OK) << coload_last_error_message();
    EXPECT_EQ(listing->struct_size, sizeof(coload_kpack_listing));
    const bool zstd = std::string(scheme) != "none";
    EXPECT_EQ(listing->scheme, zstd ? COLOAD_KPACK_SCHEME_ZSTD_PER_KERNEL : COLOAD_KPACK_SCHEME_NONE);
    EXPECT_STREQ(listing->group_name, "consistent");
    EXPECT_STREQ(listing->gfx_arch_family, "gfx942");
    ASSERT_EQ(listing->gfx_arch_count, 1u);
    EXPECT_STREQ(listing->gfx_arches[0], "gfx942");
    EXPECT_EQ(listing->code_objects, 6u);
    ASSERT_EQ(listing->count, 6u);
    for (std::size_t i = 0; i < listing->count; ++i) {
      SCOPED_TRACE(i);
      const coload_kpack_entry& entry = *listing->entries[i];
      const std::string binary = i < 3 ? kLibrary : kApp;
      const Bytes& original = (i < 3 ? library : app)[i % 3];
      EXPECT_EQ(entry.struct_size, sizeof(coload_kpack_entry));
      EXPECT_EQ(entry.bundle, i);  // as `coload ls` numbers the keys
      EXPECT_EQ(entry.key, binary + "#" + std::to_string(i % 3));
      EXPECT_EQ(entry.binary, binary);
      EXPECT_EQ(entry.has_index, 1);
      EXPECT_EQ(entry.index, i % 3);
      EXPECT_STREQ(entry.target, kTarget);
      EXPECT_STREQ(entry.entry_id, kEntryId);
      EXPECT_EQ(entry.ordinal, i);  // the packer's order
      EXPECT_EQ(entry.original_size, original.size());
      ASSERT_LE(entry.stored_offset + entry.stored_size, file.size());
      const Bytes stored(file.begin() + entry.stored_offset, file.begin() + entry.stored_offset + entry.stored_size);
      if (zstd) {
        EXPECT_LT(entry.stored_size, entry.original_size);
        EXPECT_EQ(Bytes(stored.begin(), stored.begin() + 4), (Bytes{'\x28', '\xb5', '\x2f', '\xfd'}));
      } else {
        EXPECT_EQ(entry.stored_size, entry.original_size);
        EXPECT_EQ(stored, original);  // stored as they are
      }
      if (i == 0 && !zstd) EXPECT_EQ(entry.stored_offset, 64u);  // code objects start after the header's padding
      // Extraction: the original wrapper's code object, byte for byte.
      EXPECT_EQ(extracted(path, entry.key), original);
    }
    coload_kpack_listing_free(listing);
  }
  coload_kpack_listing_free(nullptr);
  coload_kpack_object_free(nullptr);
}

TEST(CApiKpackTest, MissingKeyOrTargetIsNotFound) {
  const std::string path = archive("zstd-per-kernel");
  coload_kpack_object* object = reinterpret_cast<coload_kpack_object*>(8);
  const std::string absent = kLibrary + "#7";
  EXPECT_EQ(coload_kpack_extract(path.c_str(), absent.c_str(), kTarget, &object), COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(object, nullptr);
  EXPECT_NE(std::string(coload_last_error_message()).find(absent), std::string::npos) << coload_last_error_message();
  coload_error_location location = last_error_location();
  EXPECT_EQ(location.status, COLOAD_ERROR_NOT_FOUND);
  EXPECT_STREQ(location.file, path.c_str());
  EXPECT_STREQ(location.field, "key");
  EXPECT_EQ(location.has & COLOAD_LOCATION_HAS_BUNDLE, 0u);

  const std::string key = kLibrary + "#1";
  EXPECT_EQ(coload_kpack_extract(path.c_str(), key.c_str(), "gfx90a", &object), COLOAD_ERROR_NOT_FOUND);
  const std::string message = coload_last_error_message();
  EXPECT_NE(message.find("\"gfx90a\""), std::string::npos) << message;
  EXPECT_NE(message.find("targets: gfx942"), std::string::npos) << message;
  location = last_error_location();
  EXPECT_STREQ(location.file, path.c_str());
  EXPECT_STREQ(location.field, "target");
  EXPECT_NE(location.has & COLOAD_LOCATION_HAS_BUNDLE, 0u);
  EXPECT_EQ(location.bundle, 1u);
  // The target is the TOC's, compared exactly: not an entry ID.
  EXPECT_EQ(coload_kpack_extract(path.c_str(), key.c_str(), kEntryId, &object), COLOAD_ERROR_NOT_FOUND);
}

TEST(CApiKpackTest, NullArguments) {
  const std::string path = archive("none");
  const std::string key = kLibrary + "#0";
  coload_kpack_listing* listing = nullptr;
  coload_kpack_object* object = nullptr;
  EXPECT_EQ(coload_kpack_list(path.c_str(), nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_kpack_list(nullptr, &listing), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("path"), std::string::npos);
  EXPECT_EQ(listing, nullptr);
  EXPECT_EQ(coload_kpack_extract(path.c_str(), key.c_str(), kTarget, nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_kpack_extract(nullptr, key.c_str(), kTarget, &object), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_kpack_extract(path.c_str(), nullptr, kTarget, &object), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("key"), std::string::npos);
  EXPECT_EQ(coload_kpack_extract(path.c_str(), key.c_str(), nullptr, &object), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("target"), std::string::npos);
  EXPECT_EQ(object, nullptr);
  const coload_error_location location = last_error_location();
  EXPECT_EQ(location.status, COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(location.has, 0u);
}

TEST(CApiKpackTest, BrokenOrOtherFilesAreRefused) {
  // The header's version (bytes 4..8) set to 2: UnsupportedVersion at field "version".
  Bytes file = read_file(archive("none"));
  const std::uint32_t version = 2;
  std::memcpy(file.data() + 4, &version, sizeof version);
  const std::string broken =
      (std::filesystem::temp_directory_path() / ("coload_c_api_kpack_" + std::to_string(::getpid()) + ".kpack"))
          .string();
  std::ofstream(broken, std::ios::binary).write(file.data(), static_cast<std::streamsize>(file.size()));
  coload_kpack_listing* listing = nullptr;
  coload_kpack_object* object = nullptr;
  const std::string key = kLibrary + "#0";
  for (int extract = 0; extract < 2; ++extract) {
    SCOPED_TRACE(extract);
    const coload_status status = extract ? coload_kpack_extract(broken.c_str(), key.c_str(), kTarget, &object)
                                         : coload_kpack_list(broken.c_str(), &listing);
    EXPECT_EQ(status, COLOAD_ERROR_UNSUPPORTED_VERSION) << coload_last_error_message();
    const coload_error_location location = last_error_location();
    EXPECT_STREQ(location.file, broken.c_str());
    EXPECT_STREQ(location.field, "version");
    EXPECT_NE(location.has & COLOAD_LOCATION_HAS_VALUE, 0u);
    EXPECT_EQ(location.value, 2u);
  }
  EXPECT_EQ(listing, nullptr);
  EXPECT_EQ(object, nullptr);
  std::filesystem::remove(broken);

  // Not an archive: the original host image is BadMagic, saying what it is.
  const std::string original = kHipk + "/orig/" + kLibrary;
  EXPECT_EQ(coload_kpack_list(original.c_str(), &listing), COLOAD_ERROR_BAD_MAGIC);
  EXPECT_NE(std::string(coload_last_error_message()).find("no kpack archive"), std::string::npos)
      << coload_last_error_message();
  EXPECT_STREQ(last_error_location().file, original.c_str());
  // A file that is not there is Io naming it.
  const std::string absent = kHipk + "/absent.kpack";
  EXPECT_EQ(coload_kpack_list(absent.c_str(), &listing), COLOAD_ERROR_IO);
  EXPECT_STREQ(last_error_location().file, absent.c_str());
}

/// A HIPK record in no file's mapping (on the heap), naming wrapper 1.
struct HeapRecord {
  std::uint32_t magic = coload::kHipKpackWrapperMagic, version = 1;
  const void* binary = nullptr;
  std::uint64_t reserved = 1;
};

/// What a dry-run gfx942 registry made with `options` chooses for the heap record.
struct HeapChoice {
  coload_status status = COLOAD_ERROR_NOT_FOUND;
  std::string message;
  Bytes bytes;
};

HeapChoice chosen_for_heap_record(const coload_registry_options& options) {
  HeapRecord record;
  coload_registry* registry = nullptr;
  EXPECT_EQ(coload_registry_create(&options, &registry), COLOAD_OK) << coload_last_error_message();
  coload_binary binary = 0;
  EXPECT_EQ(coload_register_wrapper(registry, &record, "heap", &binary), COLOAD_OK) << coload_last_error_message();
  HeapChoice chosen;
  auto take = +[](void* user_data, const coload_choice* choice) {
    auto& out = *static_cast<HeapChoice*>(user_data);
    out.status = choice->status;
    if (choice->message) out.message = choice->message;
    const char* bytes = static_cast<const char*>(choice->bytes);
    if (choice->status == COLOAD_OK) out.bytes.assign(bytes, bytes + choice->size);
    return 1;
  };
  // A binary that cannot be opened fails the call itself; a bundle with no fit, its choice.
  if (coload_status status = coload_choose(registry, binary, 0, take, &chosen); status != COLOAD_OK) {
    chosen.status = status;
    chosen.message = coload_last_error_message();
  }
  coload_registry_destroy(registry);
  return chosen;
}

TEST(CApiKpackTest, RegistryOptionsNameAHipkRecordsBinaryAndRoot) {
  const Bytes original = original_choices(kLibrary).at(1);
  const std::string library = kHipk + "/none/" + kLibrary;
  // Neither the loaded objects nor /proc/self/maps name the heap's file.
  HeapChoice lost = chosen_for_heap_record(dry_run_options(kTarget));
  EXPECT_EQ(lost.status, COLOAD_ERROR_NOT_FOUND);
  EXPECT_NE(lost.message.find("kpack_binary_path"), std::string::npos) << lost.message;

  coload_registry_options told = dry_run_options(kTarget);
  told.kpack_binary_path = library.c_str();
  HeapChoice known = chosen_for_heap_record(told);
  ASSERT_EQ(known.status, COLOAD_OK) << known.message;
  EXPECT_EQ(known.bytes, original);

  // A copy of the image away from its archives finds them through kpack_root,
  // where its marker's relative paths ("../.kpack/...") start.
  const std::filesystem::path moved =
      std::filesystem::temp_directory_path() / ("coload_c_api_kpack_moved_" + std::to_string(::getpid()));
  std::filesystem::create_directories(moved);
  const std::string copy = (moved / "libconsistent.so").string();
  std::filesystem::copy_file(library, copy, std::filesystem::copy_options::overwrite_existing);
  told.kpack_binary_path = copy.c_str();
  HeapChoice without_root = chosen_for_heap_record(told);
  EXPECT_EQ(without_root.status, COLOAD_ERROR_NOT_FOUND);
  const std::string looked_at = (moved.parent_path() / ".kpack").string();
  EXPECT_NE(without_root.message.find("no kpack archive found"), std::string::npos) << without_root.message;
  EXPECT_NE(without_root.message.find(looked_at), std::string::npos) << without_root.message;
  const std::string root = kHipk + "/none/consistent/lib";
  told.kpack_root = root.c_str();
  HeapChoice rooted = chosen_for_heap_record(told);
  ASSERT_EQ(rooted.status, COLOAD_OK) << rooted.message;
  EXPECT_EQ(rooted.bytes, original);
  // A caller built against 0.4's header (struct_size without the kpack
  // fields) gets their defaults, not the bytes past its struct.
  told.struct_size = offsetof(coload_registry_options, kpack_root);
  EXPECT_EQ(chosen_for_heap_record(told).status, COLOAD_ERROR_NOT_FOUND);
  std::filesystem::remove_all(moved);
}

}  // namespace
