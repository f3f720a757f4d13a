// kpack archives made from the toolchain-built fixtures: what coload chooses
// from an archive is byte-identical to what it chooses from the original, for
// every fixture, both schemes and a list of devices covering the fixtures'
// targets; and the archives tests/fixtures/kpack_fixtures.sh packed with
// kpack_pack hold every device entry of their fixture, the per-target split
// as TheRock ships it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "coload/detail/kpack_archive.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "support/kpack_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using Bytes = std::vector<std::byte>;
using testing::Succeeds;
using testing::kpack::Object;
using testing::kpack::Scheme;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;
const std::filesystem::path kKpackFixtures = COLOAD_KPACK_FIXTURE_DIR;

// Every processor the fixtures are built for, with feature variants.
constexpr std::string_view kDevices[] = {
    "gfx900",          "gfx906",        "gfx908",        "gfx908:sramecc+:xnack-",
    "gfx90a",          "gfx90a:xnack+", "gfx90a:xnack-", "gfx942",
    "gfx942:sramecc+", "gfx1010",       "gfx1030",       "gfx1031",
    "gfx1100",         "gfx1101",       "gfx1102",       "gfx1200",
    "gfx1201",         "gfx1250",
};

bool is_device_entry(std::string_view id) { return !id.starts_with("host-") && id.find("--") != std::string::npos; }

/// One bundle's outcome for a device: an error, nothing chosen, or the chosen bytes.
struct Outcome {
  std::optional<ErrorKind> error;
  std::string message;
  std::optional<Bytes> chosen;
};

std::vector<Outcome> choose_all(const FatBinary& binary, const Device& device) {
  std::vector<std::size_t> every(binary.bundles().size());
  std::iota(every.begin(), every.end(), std::size_t{0});
  std::vector<Outcome> outcomes(every.size());
  choose_in_binary(binary, every, device, {.threads = 1}, [&](std::size_t index, Expected<BundleChoice>& choice) {
    Outcome& out = outcomes[index];
    if (!choice) {
      out.error = choice.error().kind();
      out.message = choice.error().message();
    } else if (choice->selection.selected) {
      out.chosen = Bytes(choice->chosen_bytes().begin(), choice->chosen_bytes().end());
    }
    return true;
  });
  return outcomes;
}

/// A fixture packed as a correct packer would: bundle i under key
/// "<path>#i" (the wrapper index), each device entry under its target.
struct Packed {
  std::vector<Object> objects;
  std::vector<std::size_t> bundle_of_key;  // archive bundle j holds original bundle bundle_of_key[j]
  std::size_t skipped = 0;                 // bundles with two entries for one target: no TOC can hold them
};

Packed pack(const FatBinary& binary, const std::string& name) {
  Packed out;
  for (std::size_t i = 0; i < binary.bundles().size(); ++i) {
    auto bundle = binary.read(i);
    EXPECT_TRUE(Succeeds(bundle)) << name << " bundle " << i;
    if (!bundle) continue;
    std::vector<Object> mine;
    bool duplicate = false;
    for (const BundleEntry& entry : bundle->entries()) {
      if (!is_device_entry(entry.id)) continue;
      const std::string target = testing::kpack::target_of(entry.id);
      duplicate |= std::ranges::any_of(mine, [&](const Object& object) { return object.target == target; });
      mine.push_back({name + "#" + std::to_string(i), target, Bytes(entry.bytes.begin(), entry.bytes.end()),
                      std::string(entry.id), "fixtures"});
    }
    if (duplicate) ++out.skipped;
    if (duplicate || mine.empty()) continue;
    out.bundle_of_key.push_back(i);
    out.objects.insert(out.objects.end(), mine.begin(), mine.end());
  }
  return out;
}

TEST(KpackFixtures, ChoicesFromAnArchiveEqualChoicesFromTheOriginal) {
  const auto rows = testing::read_tsv(kFixtures / "fixtures.tsv");
  ASSERT_GE(rows.size(), 40u);
  std::size_t compared = 0, chosen = 0, errors = 0;
  std::set<std::string> targets_chosen;
  for (const auto& row : rows) {
    const std::string& path = row[0];
    auto original = FatBinary::open((kFixtures / path).string());
    ASSERT_TRUE(Succeeds(original)) << path;
    const Packed packed = pack(*original, path);
    EXPECT_EQ(packed.skipped, 0u) << path;
    if (packed.objects.empty()) continue;
    std::vector<std::vector<Outcome>> expected;
    for (std::string_view spec : kDevices) expected.push_back(choose_all(*original, testing::device(spec)));
    for (Scheme scheme : {Scheme::None, Scheme::ZstdPerKernel}) {
      const Bytes file = testing::kpack::write(packed.objects, {.scheme = scheme, .group_name = "fixtures"});
      auto archive = FatBinary::from_memory(file, path + ".kpack");
      ASSERT_TRUE(Succeeds(archive)) << path;
      ASSERT_EQ(archive->bundles().size(), packed.bundle_of_key.size()) << path;
      for (std::size_t d = 0; d < std::size(kDevices); ++d) {
        const std::vector<Outcome> got = choose_all(*archive, testing::device(kDevices[d]));
        for (std::size_t j = 0; j < got.size(); ++j) {
          const Outcome& want = expected[d][packed.bundle_of_key[j]];
          const std::string where = path + " bundle " + std::to_string(packed.bundle_of_key[j]) + " on " +
                                    std::string(kDevices[d]) + " (" + std::string(testing::kpack::scheme_name(scheme)) +
                                    ")";
          EXPECT_EQ(got[j].error.has_value(), want.error.has_value())
              << where << ": archive: " << got[j].message << "; original: " << want.message;
          EXPECT_EQ(got[j].chosen.has_value(), want.chosen.has_value()) << where;
          errors += want.error.has_value();
          if (got[j].chosen && want.chosen) {
            EXPECT_TRUE(*got[j].chosen == *want.chosen) << where;
            ++chosen;
            targets_chosen.insert(std::string(kDevices[d]));
          }
          ++compared;
        }
      }
    }
  }
  RecordProperty("compared", std::to_string(compared));
  RecordProperty("chosen", std::to_string(chosen));
  RecordProperty("errors", std::to_string(errors));
  EXPECT_GT(compared, 3000u);
  EXPECT_GT(chosen, 600u);
  EXPECT_GE(targets_chosen.size(), 12u);
}

/// Every device entry of `binary`, as (ID, bytes), sorted.
std::vector<std::pair<std::string, Bytes>> device_entries(const FatBinary& binary) {
  std::vector<std::pair<std::string, Bytes>> out;
  for (std::size_t i = 0; i < binary.bundles().size(); ++i) {
    auto bundle = binary.read(i);
    EXPECT_TRUE(Succeeds(bundle)) << binary.name() << " bundle " << i;
    if (!bundle) continue;
    for (const BundleEntry& entry : bundle->entries()) {
      if (is_device_entry(entry.id))
        out.emplace_back(std::string(entry.id), Bytes(entry.bytes.begin(), entry.bytes.end()));
    }
  }
  std::ranges::sort(out);
  return out;
}

// kpack_pack's archives hold every device entry of their fixture, under its
// own ID, with its bytes; keys are numbered per target as the packer does.
TEST(KpackFixtures, PackedArchivesHoldEveryDeviceEntry) {
  const auto rows = testing::read_tsv(kKpackFixtures / "kpack.tsv");
  ASSERT_GE(rows.size(), 90u) << "kpack.tsv is missing or nearly empty";
  std::map<std::string, std::vector<std::pair<std::string, Bytes>>> split;  // fixture -> entries of its split archives
  for (const auto& row : rows) {
    const std::string& kpack_path = row[0];
    auto archive = FatBinary::open((kKpackFixtures / kpack_path).string());
    ASSERT_TRUE(Succeeds(archive)) << kpack_path;
    const auto members = archive->kpack_members(0);
    ASSERT_NE(members, nullptr) << kpack_path;
    ASSERT_FALSE(members->members.empty()) << kpack_path;
    const detail::kpack::Archive* const archive_toc = members->members[0].file->archive.get();
    EXPECT_EQ(detail::kpack::to_string(archive_toc->scheme()), row[1]) << kpack_path;
    for (const auto& entry : archive_toc->entries()) {
      ASSERT_TRUE(entry.index.has_value()) << kpack_path << ": " << entry.key;
    }
    auto entries = device_entries(*archive);
    if (row[3] == "-") {
      auto original = FatBinary::open((kFixtures / row[2]).string());
      ASSERT_TRUE(Succeeds(original)) << row[2];
      EXPECT_TRUE(entries == device_entries(*original)) << kpack_path;
      EXPECT_EQ(archive_toc->group_name(), "fixtures");
      continue;
    }
    // One archive of the split: only its target, named as TheRock names it.
    EXPECT_EQ(kpack_path, "split/kernels_" + row[3] + ".kpack");
    EXPECT_EQ(archive_toc->group_name(), "kernels");
    EXPECT_EQ(archive_toc->gfx_arch_family(), row[3]);
    ASSERT_EQ(archive_toc->gfx_arches().size(), 1u);
    EXPECT_EQ(archive_toc->gfx_arches()[0], row[3]);
    for (const auto& entry : archive_toc->entries()) {
      EXPECT_EQ(entry.target, row[3]) << kpack_path;
      EXPECT_EQ(entry.binary, "lib/libkernels.so") << kpack_path;
    }
    auto& all = split[row[2]];
    all.insert(all.end(), entries.begin(), entries.end());
  }
  ASSERT_EQ(split.size(), 1u);
  for (auto& [fixture, entries] : split) {
    auto original = FatBinary::open((kFixtures / fixture).string());
    ASSERT_TRUE(Succeeds(original)) << fixture;
    std::ranges::sort(entries);
    EXPECT_TRUE(entries == device_entries(*original)) << fixture;
  }
}

}  // namespace
}  // namespace coload
