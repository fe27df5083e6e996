// `snailtrail flamegraph`'s options (flamegraph_command.cpp, docs/FLAME.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace snailtrail::cli {

struct FlameArgs {
  std::string input;
  std::string trace;
  std::string input_format = "auto";
  std::string mode = "on-cpu";
  std::string format = "folded";
  std::string output;
  std::string op;
  int64_t worker = -1;
  std::string window;
  std::vector<std::string> thread_worker;
  std::string perf_event;
  std::string weight = "samples";
  bool kernel = false;
  bool pid_root = false;
  bool tid_root = false;
  bool no_process_root = false;
  bool perf_input = false;  // set when the input is read as perf script text
  double hz = 0;
  bool no_operator_root = false;
  bool thread_root = false;
  bool full_names = false;
  std::string title;
  bool quiet = false;
};

}  // namespace snailtrail::cli
