// The CLI's in_bundle_order (tools/coload/bundle_order.h): results taken in
// order, helpers held to a window ahead of a slow consumer, and a helper's
// exception handed to the caller instead of ending the process. Runs in
// coload_concurrency_test, so scripts/test.sh runs it under TSan as well.
#include "bundle_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

namespace coload::cli {
namespace {

std::vector<std::size_t> indices(std::size_t count) {
  std::vector<std::size_t> all(count);
  std::iota(all.begin(), all.end(), std::size_t{0});
  return all;
}

TEST(InBundleOrder, ASlowConsumerHoldsAWindowOfResultsNotEveryOne) {
  for (std::size_t threads : {2u, 4u}) {
    const std::vector<std::size_t> all = indices(200);
    std::atomic<std::size_t> begun{0};
    std::size_t taken = 0, most_ahead = 0;
    std::vector<std::size_t> order;
    in_bundle_order(
        all, threads,
        [&](std::size_t index) {
          begun.fetch_add(1);
          return index * 10;
        },
        [&](std::size_t index, std::size_t& result) {
          EXPECT_EQ(result, index * 10);
          order.push_back(index);
          most_ahead = std::max(most_ahead, begun.load() - taken);
          ++taken;
          std::this_thread::sleep_for(std::chrono::microseconds(300));  // a full pipe
          return true;
        });
    EXPECT_EQ(order, all);
    // Waiting results stay under 8 x threads; each thread may have one more in hand, and one is being taken.
    EXPECT_LE(most_ahead, 9 * threads + 1) << threads;
  }
}

TEST(InBundleOrder, AnExceptionFromWorkReachesTheCallerAfterTheResultsBeforeIt) {
  const std::vector<std::size_t> all = indices(100);
  std::vector<std::size_t> order;
  EXPECT_THROW(in_bundle_order(
                   all, 4,
                   [&](std::size_t index) {
                     if (index == 50) throw std::runtime_error("out of memory, say");
                     return index;
                   },
                   [&](std::size_t index, std::size_t&) {
                     order.push_back(index);
                     return true;
                   }),
               std::runtime_error);
  EXPECT_EQ(order, indices(50));
}

TEST(InBundleOrder, AnExceptionFromTakeLetsTheHelpersFinish) {
  const std::vector<std::size_t> all = indices(100);
  EXPECT_THROW(in_bundle_order(
                   all, 4, [](std::size_t index) { return index; },
                   [](std::size_t index, std::size_t&) {
                     if (index == 3) throw std::runtime_error("a failed write");
                     return true;
                   }),
               std::runtime_error);
}

TEST(InBundleOrder, StoppingSkipsTheRest) {
  const std::vector<std::size_t> all = indices(100);
  std::atomic<std::size_t> worked{0};
  std::vector<std::size_t> order;
  in_bundle_order(
      all, 4,
      [&](std::size_t index) {
        worked.fetch_add(1);
        return index;
      },
      [&](std::size_t index, std::size_t&) {
        order.push_back(index);
        return index < 9;
      });
  EXPECT_EQ(order, indices(10));
  EXPECT_LE(worked.load(), 10u + 9 * 4 + 1);  // the taken, then at most the window and one in hand per thread
}

}  // namespace
}  // namespace coload::cli
