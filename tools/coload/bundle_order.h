// Work on a fat binary's bundles on several threads, results handed over in
// bundle order on the calling thread: what the CLI's subcommands print and
// write stays exactly what one thread would produce.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

namespace coload::cli {

/// Calls `work(index)` for each of `indices` on up to `threads` threads (this
/// one included) and `take(index, result)` on this thread, in the order of
/// `indices`, each as soon as its result and those before it are made; only
/// results made ahead of the next one to take are held. `take` returns false
/// to stop: work not begun is skipped, results made ahead are dropped. `work`
/// must not throw (an exception would end a helper thread: std::terminate).
template <class Work, class Take>
void in_bundle_order(std::span<const std::size_t> indices, std::size_t threads, Work work, Take take) {
  using Result = decltype(work(std::size_t{}));
  if (threads < 2 || indices.size() < 2) {
    for (std::size_t index : indices) {
      Result result = work(index);
      if (!take(index, result)) return;
    }
    return;
  }
  std::vector<std::optional<Result>> made(indices.size());
  std::mutex mutex;
  std::condition_variable ready;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  auto make_next = [&]() -> bool {
    if (stop.load(std::memory_order_relaxed)) return false;
    std::size_t slot = next.fetch_add(1, std::memory_order_relaxed);
    if (slot >= indices.size()) return false;
    Result result = work(indices[slot]);
    {
      std::lock_guard lock(mutex);
      made[slot].emplace(std::move(result));
    }
    ready.notify_all();
    return true;
  };
  std::vector<std::jthread> helpers;
  for (std::size_t t = 1; t < std::min(threads, indices.size()); ++t) {
    try {
      helpers.emplace_back([&] {
        while (make_next()) {
        }
      });
    } catch (const std::system_error&) {
      break;  // no more threads: the ones running share the rest
    }
  }
  // Takes what is ready, in order; with `wait`, waits for the next one first
  // (once this thread begins nothing more, every slot is some thread's).
  std::size_t taken = 0;
  auto take_ready = [&](bool wait) -> bool {
    while (taken < indices.size()) {
      std::unique_lock lock(mutex);
      if (wait) ready.wait(lock, [&] { return made[taken].has_value(); });
      if (!made[taken]) return true;
      Result result = std::move(*made[taken]);
      made[taken].reset();
      lock.unlock();
      wait = false;
      if (!take(indices[taken], result)) return false;
      ++taken;
    }
    return true;
  };
  bool going = true;
  while (going && make_next()) going = take_ready(false);
  // This thread found nothing left to begin: the rest is the helpers'.
  while (going && taken < indices.size()) going = take_ready(true);
  stop = true;
  helpers.clear();  // joins
}

}  // namespace coload::cli
