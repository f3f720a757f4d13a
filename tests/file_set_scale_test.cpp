// File sets at scale (docs/loading.md, "File sets"): a deep tree walked with
// bounded descriptors, path patterns that keep the walk out of subfolders,
// an unreadable subfolder named, and a set larger than the mappings the
// process has left refused before anything is mapped.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "coload/fat_binary.h"
#include "io/map_budget.h"
#include "registry_test_support.h"
#include "test_util.h"

namespace coload {
namespace {

namespace fs = std::filesystem;
using testing::FailsWith;
using testing::fixture;
using testing::ScratchDirectory;
using testing::Succeeds;

const std::string kHsa = fixture("filesets/hsa");

/// A chain top/d/d/.../d of `depth` folders, with an empty "k.co" every
/// `every` levels and at the bottom; made and removed through descriptors,
/// as its paths pass PATH_MAX.
class DeepTree {
 public:
  DeepTree(const fs::path& top, int depth, int every) : top_(top) {
    int fd = ::open(top.c_str(), O_RDONLY | O_DIRECTORY);
    for (int level = 1; level <= depth && fd >= 0; ++level) {
      ::mkdirat(fd, "d", 0755);
      int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY);
      ::close(fd);
      fd = next;
      if (fd >= 0 && (level % every == 0 || level == depth)) ::close(::openat(fd, "k.co", O_CREAT | O_WRONLY, 0644));
    }
    if (fd >= 0) ::close(fd);
  }
  // Each step moves the second level up: no path grows with the depth.
  ~DeepTree() {
    const fs::path d = top_ / "d", next = top_ / "next";
    while (fs::exists(d)) {
      ::unlink((d / "k.co").c_str());
      if (::rename((d / "d").c_str(), next.c_str()) != 0) {
        ::rmdir(d.c_str());
        break;
      }
      ::rmdir(d.c_str());
      ::rename(next.c_str(), d.c_str());
    }
  }

 private:
  fs::path top_;
};

TEST(FileSetScale, ADeepTreeIsWalkedWithAFewDescriptors) {
  ScratchDirectory scratch;
  constexpr int kDepth = 1000;
  DeepTree tree(scratch.path(), kDepth, 250);
  // One descriptor per level (recursive_directory_iterator's) would need 1 000.
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit low = before;
  low.rlim_cur = 128;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  auto files = list_directory(scratch.str(), {.pattern = "*.co", .recursive = true});
  ::setrlimit(RLIMIT_NOFILE, &before);
  ASSERT_TRUE(Succeeds(files));
  ASSERT_EQ(files->size(), 4u);  // levels 250, 500, 750 and 1000
  std::string deepest = scratch.str();
  for (int level = 0; level < kDepth; ++level) deepest += "/d";
  EXPECT_EQ(std::count(files->begin(), files->end(), deepest + "/k.co"), 1);
}

TEST(FileSetScale, APatternWithASlashMatchesRelativePathsAndEntersOnlyWhatItCanReach) {
  auto gfx95 = list_directory(kHsa, {.pattern = "gfx95*/*.co", .recursive = true});
  ASSERT_TRUE(Succeeds(gfx95));
  EXPECT_EQ(*gfx95, (std::vector<std::string>{kHsa + "/gfx950/fmha_fwd.co", kHsa + "/gfx950/gemm.co",
                                              kHsa + "/gfx950/gemm_lds96.co"}));
  auto names = list_directory(kHsa, {.pattern = "gemm.co", .recursive = true});  // no '/': names, at any depth
  ASSERT_TRUE(Succeeds(names));
  EXPECT_EQ(names->size(), 5u);
  auto too_deep = list_directory(kHsa, {.pattern = "*/*/*.co", .recursive = true});
  ASSERT_TRUE(Succeeds(too_deep));
  EXPECT_TRUE(too_deep->empty());
}

TEST(FileSetScale, LinksAreFollowedToFilesNotToFoldersAndDanglingOnesAreNoMembers) {
  ScratchDirectory scratch;
  fs::create_directories(scratch.path() / "sub");
  fs::copy_file(kHsa + "/gfx942/gemm.co", scratch.path() / "sub" / "gemm.co");
  fs::create_symlink(scratch.path() / "sub" / "gemm.co", scratch.path() / "linked.co");
  fs::create_directory_symlink(scratch.path(), scratch.path() / "sub" / "loop");  // an ancestor
  for (int i = 0; i < 8; ++i) fs::create_symlink("missing", scratch.path() / ("dangling" + std::to_string(i) + ".co"));
  auto files = list_directory(scratch.str(), {.pattern = "*.co", .recursive = true});
  ASSERT_TRUE(Succeeds(files));
  EXPECT_EQ(*files, (std::vector<std::string>{scratch.str() + "/linked.co", scratch.str() + "/sub/gemm.co"}));
}

// As root, a folder no one may read is still readable: the walk runs in a
// child that gives root up. Exit status: 0 as expected, 2 could not drop
// root, 3 the folder was readable, 4 the error did not name it, 5 a pattern
// that excludes it still failed.
TEST(FileSetScale, AnUnreadableSubfolderIsNamedAndAPatternThatExcludesItIsNotFailed) {
  ScratchDirectory scratch;
  fs::permissions(scratch.path(), fs::perms(0755));
  fs::create_directories(scratch.path() / "gfx942");
  fs::copy_file(kHsa + "/gfx942/gemm.co", scratch.path() / "gfx942" / "gemm.co");
  fs::create_directories(scratch.path() / "private");
  fs::permissions(scratch.path() / "private", fs::perms::none);
  const std::string top = scratch.str();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0) {
      constexpr uid_t kNobody = 65534;
      if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) _exit(2);
    }
    if (::access((top + "/private").c_str(), R_OK) == 0) _exit(3);
    auto all = list_directory(top, {.pattern = "*.co", .recursive = true});
    if (all || all.error().kind() != ErrorKind::Io ||
        all.error().message().find(top + "/private: cannot open directory") == std::string::npos) {
      std::fprintf(stderr, "%s\n", all ? "listed" : all.error().message().c_str());
      _exit(4);
    }
    auto one_arch = list_directory(top, {.pattern = "gfx942/*.co", .recursive = true});
    _exit(one_arch && one_arch->size() == 1 ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  fs::permissions(scratch.path() / "private", fs::perms(0755));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the exit statuses above the test";
}

TEST(FileSetScale, ASetLargerThanTheMappingsLeftIsRefusedNamingTheLimit) {
  std::vector<std::string> paths{kHsa + "/gfx942/gemm.co", kHsa + "/gfx950/gemm.co", kHsa + "/gfx90a/gemm.co"};
  auto budget = detail::map_budget();
  ASSERT_TRUE(budget.has_value());
  {
    // Room for one more mapping past the reserve (the count in use may move by one).
    detail::ScopedMaxMapCount lowered(budget->in_use + detail::kReservedMappings + 1);
    auto refused = FatBinary::open_files(paths, "three");
    ASSERT_TRUE(FailsWith(refused, ErrorKind::LimitExceeded));
    EXPECT_EQ(refused.error().location().field, "vm.max_map_count");
    EXPECT_EQ(refused.error().location().value, std::optional<std::uint64_t>(3));
    EXPECT_NE(refused.error().message().find("a file set of 3 files maps each one"), std::string::npos)
        << refused.error().message();
  }
  EXPECT_TRUE(Succeeds(FatBinary::open_files(paths, "three")));
}

}  // namespace
}  // namespace coload
