// Display names of workers and operators: metadata name when present, else the id.
#pragma once

#include <string>
#include <vector>

#include "pag/timeline.hpp"
#include "trace/trace.hpp"

namespace snailtrail {

struct Names {
  std::vector<std::string> worker;  // by dense worker index
  std::unordered_map<uint32_t, std::string> op_names;
  std::vector<uint32_t> worker_ids;

  Names(const Trace& trace, const Pag& pag)
      : op_names(trace.operator_names), worker_ids(pag.worker_ids) {
    worker.reserve(pag.worker_ids.size());
    for (uint32_t id : pag.worker_ids) worker.push_back(trace.worker_name(id));
  }
  std::string op(uint32_t id) const {
    auto it = op_names.find(id);
    return it != op_names.end() ? it->second : std::to_string(id);
  }
};

}  // namespace snailtrail
