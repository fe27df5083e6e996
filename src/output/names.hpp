// Display names of workers and operators: metadata name when present, else the id.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "pag/timeline.hpp"
#include "trace/trace.hpp"

namespace snailtrail {

// Appends `s` as a JSON string literal (quoted, escaped). In writers.cpp.
void append_json_string(fmt::memory_buffer& out, std::string_view s);

struct Names {
  std::vector<std::string> worker;       // by dense worker index
  std::vector<std::string> worker_json;  // the same as JSON string literals
  std::unordered_map<uint32_t, std::string> op_names;
  std::vector<uint32_t> worker_ids;

  Names(const Trace& trace, const Pag& pag)
      : op_names(trace.operator_names), worker_ids(pag.worker_ids) {
    worker.reserve(pag.worker_ids.size());
    for (uint32_t id : pag.worker_ids) worker.push_back(trace.worker_name(id));
    worker_json.reserve(worker.size());
    for (const std::string& name : worker) {
      fmt::memory_buffer quoted;
      append_json_string(quoted, name);
      worker_json.emplace_back(quoted.data(), quoted.size());
    }
  }
  std::string op(uint32_t id) const {
    auto it = op_names.find(id);
    return it != op_names.end() ? it->second : std::to_string(id);
  }
};

}  // namespace snailtrail
