#include "scale/topology.hpp"

#include <algorithm>
#include <queue>
#include <stdexcept>

namespace snailtrail::scale {

uint32_t Topology::add_operator(std::string name, uint32_t p, std::string id) {
  if (id.empty()) id = name;
  const auto index = static_cast<uint32_t>(names.size());
  id_index_.add(id, index);
  name_index_.add(name, index);
  names.push_back(std::move(name));
  ids.push_back(std::move(id));
  parallelism.push_back(p);
  return index;
}

void Topology::add_edge(uint32_t from, uint32_t to) {
  if (from == to) return;
  const std::pair<uint32_t, uint32_t> e{from, to};
  const uint64_t key = (uint64_t{from} << 32) | to;
  if (edge_index_.size() == edges.size()) {
    if (edge_index_.insert(key).second) edges.push_back(e);
    return;
  }
  if (std::find(edges.begin(), edges.end(), e) == edges.end()) edges.push_back(e);
}

void Topology::ColumnIndex::add(const std::string& value, uint32_t index) {
  if (first.size() == index - dups && !first.try_emplace(value, index).second) ++dups;
}

std::optional<uint32_t> Topology::ColumnIndex::find(const std::vector<std::string>& column,
                                                    std::string_view value) const {
  if (first.size() + dups == column.size()) {
    auto it = first.find(std::string(value));
    if (it == first.end()) return std::nullopt;
    return it->second;
  }
  for (uint32_t i = 0; i < column.size(); ++i)
    if (column[i] == value) return i;
  return std::nullopt;
}

std::optional<uint32_t> Topology::find_name(std::string_view name) const {
  return name_index_.find(names, name);
}

std::optional<uint32_t> Topology::find_id(std::string_view id) const {
  return id_index_.find(ids, id);
}

bool Topology::is_source(uint32_t op) const {
  return std::none_of(edges.begin(), edges.end(), [&](const auto& e) { return e.second == op; });
}

std::vector<uint32_t> Topology::upstream(uint32_t op) const {
  std::vector<uint32_t> up;
  for (const auto& [from, to] : edges)
    if (to == op) up.push_back(from);
  return up;
}

std::vector<uint32_t> Topology::topological_order() const {
  std::vector<uint32_t> indegree(size(), 0);
  for (const auto& e : edges) ++indegree[e.second];
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t i = 0; i < size(); ++i)
    if (indegree[i] == 0) ready.push(i);
  std::vector<uint32_t> order;
  while (!ready.empty()) {
    const uint32_t op = ready.top();
    ready.pop();
    order.push_back(op);
    for (const auto& [from, to] : edges)
      if (from == op && --indegree[to] == 0) ready.push(to);
  }
  if (order.size() != size())
    throw std::invalid_argument("the dataflow has a cycle; DS2 needs a DAG");
  return order;
}

}  // namespace snailtrail::scale
