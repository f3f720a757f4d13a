// The pipeline's ordered pool (for_each_in_order, coload/detail/ordered_pool.h): results
// taken in order, helpers held to a window ahead of a slow consumer, and a
// helper's exception handed to the caller instead of ending the process. Runs
// in coload_concurrency_test, so scripts/test.sh runs it under TSan as well.
#include "coload/detail/ordered_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace coload {
namespace {

std::vector<std::size_t> indices(std::size_t count) {
  std::vector<std::size_t> all(count);
  std::iota(all.begin(), all.end(), std::size_t{0});
  return all;
}

/// for_each_in_order over `all` with per-slot results, as the pipeline's callers use it.
template <class Work, class Take>
void in_order(const std::vector<std::size_t>& all, std::size_t threads, Work work, Take take) {
  using Result = decltype(work(std::size_t{}));
  std::vector<std::optional<Result>> made(all.size());
  for_each_in_order(
      all.size(), threads, [&](std::size_t slot) { made[slot].emplace(work(all[slot])); },
      [&](std::size_t slot) { return take(all[slot], *made[slot]); });
}

TEST(ForEachInOrder, ASlowConsumerHoldsAWindowOfResultsNotEveryOne) {
  for (std::size_t threads : {2u, 4u}) {
    const std::vector<std::size_t> all = indices(200);
    std::atomic<std::size_t> begun{0};
    std::size_t taken = 0, most_ahead = 0;
    std::vector<std::size_t> order;
    in_order(
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

TEST(ForEachInOrder, AnExceptionFromWorkReachesTheCallerAfterTheResultsBeforeIt) {
  const std::vector<std::size_t> all = indices(100);
  std::vector<std::size_t> order;
  EXPECT_THROW(in_order(
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

TEST(ForEachInOrder, AnExceptionFromTakeLetsTheHelpersFinish) {
  const std::vector<std::size_t> all = indices(100);
  EXPECT_THROW(in_order(
                   all, 4, [](std::size_t index) { return index; },
                   [](std::size_t index, std::size_t&) {
                     if (index == 3) throw std::runtime_error("a failed write");
                     return true;
                   }),
               std::runtime_error);
}

TEST(ForEachInOrder, StoppingSkipsTheRest) {
  const std::vector<std::size_t> all = indices(100);
  std::atomic<std::size_t> worked{0};
  std::vector<std::size_t> order;
  in_order(
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
}  // namespace coload
