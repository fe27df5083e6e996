// The logical dataflow DS2 reasons about: named operators, their current parallelism and
// the edges between them (thesis §4.2.1: a DAG, sources have no incoming edge).
//
//   Topology t;
//   uint32_t src = t.add_operator("source", 1), map = t.add_operator("map", 2);
//   t.add_edge(src, map);
//   for (uint32_t op : t.topological_order()) ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace snailtrail::scale {

struct Topology {
  std::vector<std::string> names;                    // operator index -> display name
  std::vector<std::string> ids;                      // operator index -> external id (DS2 files)
  std::vector<uint32_t> parallelism;                 // current instances per operator
  std::vector<std::pair<uint32_t, uint32_t>> edges;  // (from, to), no duplicates

  size_t size() const { return names.size(); }
  // Adds an operator (id defaults to the name); returns its index.
  uint32_t add_operator(std::string name, uint32_t parallelism, std::string id = {});
  // Adds from -> to unless present; self-loops are ignored.
  void add_edge(uint32_t from, uint32_t to);
  std::optional<uint32_t> find_name(std::string_view name) const;
  std::optional<uint32_t> find_id(std::string_view id) const;

  bool is_source(uint32_t op) const;  // no incoming edge
  std::vector<uint32_t> upstream(uint32_t op) const;
  // Kahn's algorithm, sources first, ties by index. Throws std::invalid_argument on a
  // cycle (DS2 needs a DAG).
  std::vector<uint32_t> topological_order() const;
};

}  // namespace snailtrail::scale
