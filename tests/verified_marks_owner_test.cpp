// Verified marks are trusted only from a cache folder and mark files that
// belong to the effective user and that nobody else may write, and only when
// they are regular files (docs/reading-rules.md, "Files"). The forged mark
// here names a CCOB whose stored hash is wrong: trusting it would pass what a
// full check refuses.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "ccob/ccob_layout.h"
#include "ccob/verified_marks.h"
#include "coload/detail/stream_select.h"
#include "fifo_watchdog.h"
#include "stream_select_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace stream_select_test;
using testing::file_names;

constexpr uid_t kNobody = 65534;

/// A v3 zstd CCOB whose stored hash has one bit flipped, and its header.
struct WrongHash {
  Bytes ccob;
  CompressedHeader header;
};

WrongHash wrong_hash_ccob() {
  Bytes ccob = testing::write_ccob(three_entry_bundle(), 3, CcobMethod::Zstd);
  ccob[detail::ccob_layout(3).hash.offset] ^= std::byte{1};
  auto header = parse_compressed_header(ccob, {});
  EXPECT_TRUE(Succeeds(header));
  return {ccob, *header};
}

// Selecting with the forged mark in place must still check the hash.
void expect_refused(const WrongHash& wrong, const std::string& cache) {
  auto selected = select_ccob(wrong.ccob, "gfx90a", {.read = {.verified_cache = cache}});
  EXPECT_TRUE(FailsWith(selected, ErrorKind::HashMismatch));
}

TEST(VerifiedMarkOwner, AMarkAnotherUserWroteInASharedFolderIsIgnored) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a second user (nobody, 65534) writes the mark";
  WrongHash wrong = wrong_hash_ccob();
  testing::ScratchDirectory scratch;
  std::string shared = (scratch.path() / "shared").string();
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);  // as /tmp: anyone may add files
  ASSERT_EQ(::chmod(scratch.str().c_str(), 0755), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setresgid(kNobody, kNobody, kNobody) != 0 || ::setresuid(kNobody, kNobody, kNobody) != 0) ::_exit(2);
    // Made in a folder of its own, which it trusts, then moved into the shared one.
    std::string own = shared + "/own";
    detail::VerifiedMark(own, wrong.ccob, wrong.header).record();
    std::vector<std::string> made = file_names(own);
    if (made.size() != 1 || ::rename((own + "/" + made[0]).c_str(), (shared + "/" + made[0]).c_str()) != 0) ::_exit(1);
    ::rmdir(own.c_str());
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(file_names(shared).size(), 1u);  // nobody's mark is there
  ::testing::internal::CaptureStderr();
  expect_refused(wrong, shared);
  std::string warned = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find(shared), std::string::npos) << warned;
}

TEST(VerifiedMarkOwner, AMarkOwnedByAnotherUserIsIgnored) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the mark is given to nobody (65534) with chown";
  WrongHash wrong = wrong_hash_ccob();
  testing::ScratchDirectory cache;
  detail::VerifiedMark(cache.str(), wrong.ccob, wrong.header).record();
  std::vector<std::string> names = file_names(cache.path());
  ASSERT_EQ(names.size(), 1u);
  ASSERT_EQ(::chown((cache.path() / names[0]).c_str(), kNobody, kNobody), 0);
  expect_refused(wrong, cache.str());
}

TEST(VerifiedMarkOwner, AMarkOthersMayWriteIsIgnored) {
  WrongHash wrong = wrong_hash_ccob();
  testing::ScratchDirectory cache;
  detail::VerifiedMark(cache.str(), wrong.ccob, wrong.header).record();
  std::vector<std::string> names = file_names(cache.path());
  ASSERT_EQ(names.size(), 1u);
  ASSERT_EQ(::chmod((cache.path() / names[0]).c_str(), 0666), 0);
  expect_refused(wrong, cache.str());
}

TEST(VerifiedMarkOwner, AFolderOthersMayWriteIsIgnored) {
  WrongHash wrong = wrong_hash_ccob();
  testing::ScratchDirectory cache;
  detail::VerifiedMark(cache.str(), wrong.ccob, wrong.header).record();
  ASSERT_EQ(::chmod(cache.str().c_str(), 0777), 0);
  ::testing::internal::CaptureStderr();
  expect_refused(wrong, cache.str());
  ::testing::internal::GetCapturedStderr();
}

// A FIFO (or a symlink to one) at a mark's name is a miss at once, not an
// open that waits for a writer. Should it wait, a watchdog opens the write
// end after 5 s so the test ends, and fails on the time.
TEST(VerifiedMarkOwner, AFifoAtAMarksNameIsAMiss) {
  Bytes ccob = testing::write_ccob(three_entry_bundle(), 3, CcobMethod::Zstd);
  for (bool through_symlink : {false, true}) {
    testing::ScratchDirectory cache;
    StreamOptions marked{.read = {.verified_cache = cache.str()}};
    ASSERT_TRUE(Succeeds(select_ccob(ccob, "gfx90a", marked)));
    std::vector<std::string> names = file_names(cache.path());
    ASSERT_EQ(names.size(), 1u);
    std::string mark = (cache.path() / names[0]).string();
    std::string fifo = through_symlink ? (cache.path() / "elsewhere").string() : mark;
    ASSERT_EQ(::unlink(mark.c_str()), 0);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    if (through_symlink) ASSERT_EQ(::symlink(fifo.c_str(), mark.c_str()), 0);
    testing::FifoWatchdog watchdog(fifo);
    auto selected = select_ccob(ccob, "gfx90a", marked);
    auto elapsed = watchdog.stop();
    EXPECT_LT(elapsed, testing::FifoWatchdog::kPatience) << "the mark's open waited for a writer";
    ASSERT_TRUE(Succeeds(selected));
    EXPECT_EQ(selected->hash, StreamSelection::Hash::Checked) << through_symlink;
  }
}

}  // namespace
}  // namespace coload
