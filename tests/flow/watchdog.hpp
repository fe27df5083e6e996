// Runs a test body that may hang (a dataflow that never terminates) on its own thread:
// if it has not finished within the limit, the test fails and the process exits at once,
// since a hung runtime cannot be stopped from outside.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <string>
#include <thread>

namespace snailtrail::flow {

inline void finishes_within(std::chrono::seconds limit, const std::string& what,
                            const std::function<void()>& body) {
  std::packaged_task<void()> task(body);
  std::future<void> done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << what << ": not finished after " << limit.count() << " s (a hang)";
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  }
  runner.join();
  done.get();  // rethrows the body's exception
}

}  // namespace snailtrail::flow
