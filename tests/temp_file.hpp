// Files written by tests into gtest's temporary directory.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace snailtrail::testing {

// Writes `text` to a file named `name` in the temporary directory and returns its path.
// Named per process: the temporary directory is shared with other runs of the suite.
inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + std::to_string(::getpid()) + "-" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return path;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return path;
}

}  // namespace snailtrail::testing
