// Helpers that the output formats share (private to src/output): appending text, the
// number formats of the table and the verdict sentences, and the names of what-if items.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "output/names.hpp"
#include "summary/summary.hpp"

namespace snailtrail::output_detail {

inline void put(fmt::memory_buffer& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

// An activity type is listed in a window when it has a CP or a conventional share.
inline bool active_type(const WindowSummary& w, int a) {
  return w.cp.activity[a] != 0 || w.conventional.activity[a] != 0;
}

// A share as " 12.3%" (6 columns), the table's value format.
std::string percent(double v);

// At most 4 significant digits and a unit: "423us", "3.096ms", "12.5s", "2.8h".
std::string format_ns(int64_t ns);

// Which part of the application the run's windows cover (docs/OUTPUT.md "Coverage"),
// e.g. "over 62.1s of the application's 142.5s (from +80s to +142.1s)"; "" when the
// windows cover nothing.
std::string application_coverage(const Aggregate& agg, const Trace::Application& app);
// The worker, operator or activity type a what-if item speeds up.
std::string what_if_name(const WhatIf& x, const Names& names);

// The names as the human-readable writers show them: printable() at each use (names
// come from untrusted traces). A view of Names, so a table pays only for the names it
// shows; the table's sections take it instead of Names, so none prints a raw name.
class ShownNames {
 public:
  explicit ShownNames(const Names& names) : names_(names) {}
  std::string worker(size_t k) const { return printable(names_.worker[k]); }
  std::string op(uint32_t id) const { return printable(names_.op(id)); }
  std::string what_if(const WhatIf& x) const { return printable(what_if_name(x, names_)); }

 private:
  const Names& names_;
};

}  // namespace snailtrail::output_detail
