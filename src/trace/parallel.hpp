// Fork-join helper for the stages' data-parallel loops.
#pragma once

#include <thread>
#include <vector>

namespace snailtrail {

// Calls f(0), ..., f(threads - 1) concurrently, f(0) on the calling thread, and returns
// when all are done. f must not throw.
template <typename F>
void run_parallel(unsigned threads, F&& f) {
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back([&f, t] { f(t); });
  f(0u);
  for (std::thread& th : pool) th.join();
}

}  // namespace snailtrail
