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
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace snailtrail::scale {

// Fill it with add_operator/add_edge; the vectors are public for reading (an element
// changed in place is not seen by find_id/find_name).
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

 private:
  // Hash indexes kept by add_operator/add_edge, so that building a topology of n operators
  // and looking them up is O(n), not O(n^2) (live rates with 100 k operators). Code that
  // fills the public vectors directly is still served: the lookups fall back to a scan
  // when an index does not cover the vectors.
  // The index of one column (ids or names): the first operator of a value wins, as the
  // scan finds it.
  struct ColumnIndex {
    std::unordered_map<std::string, uint32_t> first;
    size_t dups = 0;  // operators whose value an earlier one has
    // Indexes `value` of operator `index` while every operator so far is indexed.
    void add(const std::string& value, uint32_t index);
    std::optional<uint32_t> find(const std::vector<std::string>& column,
                                 std::string_view value) const;
  };
  ColumnIndex id_index_, name_index_;
  std::unordered_set<uint64_t> edge_index_;
};

}  // namespace snailtrail::scale
