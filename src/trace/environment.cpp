#include "trace/environment.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

extern char** environ;

namespace snailtrail {
namespace {

// "NAME=value" entries as they were when frozen; never changed after.
std::vector<std::string>* frozen_copy = nullptr;
std::atomic<bool> frozen{false};
std::once_flag freeze_once;

}  // namespace

void freeze_environment() {
  std::call_once(freeze_once, [] {
    auto* copy = new std::vector<std::string>();  // lives as long as the process
    for (char** e = environ; e && *e; ++e) copy->emplace_back(*e);
    frozen_copy = copy;
    frozen.store(true, std::memory_order_release);
  });
}

const char* environment_value(const char* name) {
  if (!frozen.load(std::memory_order_acquire)) return std::getenv(name);
  const size_t n = std::strlen(name);
  for (const std::string& entry : *frozen_copy)
    if (entry.size() > n && entry[n] == '=' && entry.compare(0, n, name) == 0)
      return entry.c_str() + n + 1;
  return nullptr;
}

}  // namespace snailtrail
