#include "scale/ds2_files.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "trace/trace.hpp"

namespace snailtrail::scale {
namespace {

namespace fs = std::filesystem;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Calls f(line_number, fields) for every line that is not empty or a comment.
template <class F>
void for_each_row(std::string_view text, F&& f) {
  size_t line = 0;
  std::vector<std::string_view> fields;
  while (!text.empty()) {
    ++line;
    const size_t nl = text.find('\n');
    std::string_view l = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (l.empty() || l.front() == '#') continue;
    fields.clear();
    while (true) {
      const size_t c = l.find(',');
      fields.push_back(trim(l.substr(0, c)));
      if (c == std::string_view::npos) break;
      l.remove_prefix(c + 1);
    }
    f(line, fields);
  }
}

std::string where(size_t line) {
  return "line " + std::to_string(line);
}

// Calls f(line_number, fields) for every data row of a CSV file whose columns are `header`
// (comma-separated): a header row (its first column's name first) is skipped, and a row of
// another width is an error.
template <class F>
void for_each_record(std::string_view text, const std::string& source, std::string_view header,
                     F&& f) {
  const auto width = static_cast<size_t>(std::count(header.begin(), header.end(), ',') + 1);
  const std::string_view first = header.substr(0, header.find(','));
  for_each_row(text, [&](size_t line, const std::vector<std::string_view>& x) {
    if (x[0] == first) return;
    if (x.size() != width)
      throw TraceError(source, where(line),
                       "expected " + std::to_string(width) + " fields (" + std::string(header) +
                           "), got " + std::to_string(x.size()));
    f(line, x);
  });
}

uint32_t parse_count(std::string_view s, const std::string& source, size_t line, const char* what) {
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw TraceError(source, where(line),
                     std::string(what) + " '" + std::string(s) + "' is not a whole number");
  return v;
}

// A rate: a finite number >= 0; NaN only where `nan_ok`.
double parse_rate(std::string_view s, const std::string& source, size_t line, const char* what,
                  bool nan_ok) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty())
    throw TraceError(source, where(line),
                     std::string(what) + " '" + std::string(s) + "' is not a number");
  if (std::isnan(v) && nan_ok) return v;
  if (!std::isfinite(v) || v < 0)
    throw TraceError(source, where(line),
                     std::string(what) + " '" + std::string(s) + "' must be a finite rate >= 0");
  return v;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, "open", "cannot read the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Row {
  uint32_t op;
  uint32_t instance;
  uint32_t total;
  std::string_view timestamp;
  double tp, to, opr, oo;
};

// Parses the rows of a rates file, in order.
template <class F>
void for_each_rate_row(std::string_view text, const std::string& source, const Topology& t, F&& f) {
  constexpr std::string_view kHeader =
      "operator_id,operator_instance_id,total_number_of_operator_instances,epoch_timestamp,"
      "true_processing_rate,true_output_rate,observed_processing_rate,observed_output_rate";
  for_each_record(text, source, kHeader, [&](size_t line, const std::vector<std::string_view>& x) {
    auto op = t.find_id(x[0]);
    if (!op)
      throw TraceError(source, where(line),
                       "operator '" + std::string(x[0]) + "' is not in the topology");
    Row r{*op,
          parse_count(x[1], source, line, "operator_instance_id"),
          parse_count(x[2], source, line, "total_number_of_operator_instances"),
          x[3],
          parse_rate(x[4], source, line, "true_processing_rate", true),
          parse_rate(x[5], source, line, "true_output_rate", true),
          parse_rate(x[6], source, line, "observed_processing_rate", false),
          parse_rate(x[7], source, line, "observed_output_rate", false)};
    if (r.total == 0)
      throw TraceError(source, where(line), "total_number_of_operator_instances must be >= 1");
    f(r);
  });
}

void add_row(RatesEpoch& e, const Row& r, RatesDiagnostics* diag, bool last_wins) {
  if (e.instances.empty()) e.timestamp = std::string(r.timestamp);
  InstanceRates x{r.op, r.instance, r.tp, r.to, r.opr, r.oo};
  if (std::isnan(r.tp) || std::isnan(r.to)) {
    x.true_processing = x.true_output = kUndefined;
    if (diag) ++diag->undefined_rates;
  }
  e.parallelism[r.op] = r.total;
  if (last_wins)
    for (InstanceRates& y : e.instances)
      if (y.op == r.op && y.instance == r.instance) {
        y = x;
        if (diag) ++diag->duplicate_rows;
        return;
      }
  e.instances.push_back(x);
}

// "NAME-EPOCH.EXT" -> EPOCH, or -1.
int64_t epoch_of(const std::string& file) {
  const size_t dash = file.rfind('-');
  if (dash == std::string::npos || dash == 0) return -1;
  const size_t dot = file.find('.', dash);
  const std::string_view num(file.data() + dash + 1,
                             (dot == std::string::npos ? file.size() : dot) - dash - 1);
  int64_t v = -1;
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc() || p != num.data() + num.size() || num.empty() || v < 0) return -1;
  return v;
}

}  // namespace

Topology parse_topology_csv(std::string_view text, const std::string& source) {
  Topology t;
  constexpr std::string_view kHeader =
      "operator_id1,operator_name1,total_number_of_operator_instances1,operator_id2,"
      "operator_name2,total_number_of_operator_instances2";
  for_each_record(text, source, kHeader, [&](size_t line, const std::vector<std::string_view>& x) {
    uint32_t ends[2];
    for (int k = 0; k < 2; ++k) {
      const std::string_view id = x[3 * k], name = x[3 * k + 1];
      const uint32_t p =
          parse_count(x[3 * k + 2], source, line, "total_number_of_operator_instances");
      if (id.empty() || name.empty())
        throw TraceError(source, where(line), "empty operator id or name");
      if (p == 0)
        throw TraceError(source, where(line),
                         "operator '" + std::string(name) + "' has 0 instances");
      if (auto op = t.find_id(id)) {
        if (t.names[*op] != name)
          throw TraceError(source, where(line),
                           "operator id '" + std::string(id) + "' is named both '" + t.names[*op] +
                               "' and '" + std::string(name) + "'");
        if (t.parallelism[*op] != p)
          throw TraceError(source, where(line),
                           "operator '" + std::string(name) + "' has " +
                               std::to_string(t.parallelism[*op]) + " and " + std::to_string(p) +
                               " instances");
        ends[k] = *op;
      } else {
        if (t.find_name(name))
          throw TraceError(source, where(line),
                           "two operators are named '" + std::string(name) + "'");
        ends[k] = t.add_operator(std::string(name), p, std::string(id));
      }
    }
    if (ends[0] == ends[1]) throw TraceError(source, where(line), "an operator cannot feed itself");
    t.add_edge(ends[0], ends[1]);
  });
  if (t.size() == 0) throw TraceError(source, "input", "the topology has no edges");
  try {
    t.topological_order();
  } catch (const std::invalid_argument& e) {
    throw TraceError(source, "topology", e.what());
  }
  return t;
}

Topology read_topology_csv(const std::string& path) {
  return parse_topology_csv(read_all(path), path);
}

std::vector<RatesEpoch> parse_rates_csv(std::string_view text, const std::string& source,
                                        const Topology& t, RatesDiagnostics* diag) {
  std::vector<RatesEpoch> epochs;
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for_each_rate_row(text, source, t, [&](const Row& r) {
    if (epochs.empty() || !seen.insert({r.op, r.instance}).second) {
      seen.clear();
      seen.insert({r.op, r.instance});
      RatesEpoch e;
      e.epoch = static_cast<int64_t>(epochs.size());
      e.parallelism = t.parallelism;
      epochs.push_back(std::move(e));
    }
    add_row(epochs.back(), r, diag, false);
  });
  return epochs;
}

namespace {

// The directory's files grouped by epoch (sorted).
std::map<int64_t, std::vector<fs::path>> epoch_files(const std::string& dir,
                                                     RatesDiagnostics* diag) {
  std::map<int64_t, std::vector<fs::path>> by_epoch;
  std::error_code ec;
  for (const fs::directory_entry& f : fs::directory_iterator(dir, ec)) {
    if (!f.is_regular_file()) continue;
    const int64_t e = epoch_of(f.path().filename().string());
    if (e < 0) {
      if (diag) ++diag->skipped_files;
      continue;
    }
    by_epoch[e].push_back(f.path());
  }
  if (ec) throw TraceError(dir, "directory", ec.message());
  for (auto& [e, files] : by_epoch) std::sort(files.begin(), files.end());
  return by_epoch;
}

RatesEpoch read_epoch(int64_t epoch, const std::vector<fs::path>& files, const Topology& t,
                      RatesDiagnostics* diag, bool complete_lines_only) {
  RatesEpoch e;
  e.epoch = epoch;
  e.parallelism = t.parallelism;
  for (const fs::path& p : files) {
    std::string text = read_all(p.string());
    if (complete_lines_only)
      text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    for_each_rate_row(text, p.string(), t, [&](const Row& r) { add_row(e, r, diag, true); });
  }
  return e;
}

}  // namespace

std::vector<RatesEpoch> read_rates(const std::string& path, const Topology& t,
                                   RatesDiagnostics* diag) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return parse_rates_csv(read_all(path), path, t, diag);
  std::vector<RatesEpoch> out;
  for (const auto& [e, files] : epoch_files(path, diag))
    out.push_back(read_epoch(e, files, t, diag, false));
  return out;
}

std::vector<double> parse_source_rates_csv(std::string_view text, const std::string& source,
                                           const Topology& t) {
  std::vector<double> rates(t.size(), kUndefined);
  constexpr std::string_view kHeader = "source_operator_name,output_rate_per_instance";
  for_each_record(text, source, kHeader, [&](size_t line, const std::vector<std::string_view>& x) {
    auto op = t.find_name(x[0]);
    if (!op) op = t.find_id(x[0]);
    if (!op)
      throw TraceError(source, where(line),
                       "operator '" + std::string(x[0]) + "' is not in the topology");
    if (!t.is_source(*op))
      throw TraceError(source, where(line),
                       "operator '" + std::string(x[0]) + "' is not a source (it has inputs)");
    rates[*op] = parse_rate(x[1], source, line, "output_rate_per_instance", false);
  });
  return rates;
}

std::vector<double> read_source_rates_csv(const std::string& path, const Topology& t) {
  return parse_source_rates_csv(read_all(path), path, t);
}

std::vector<double> total_source_rates(const std::vector<double>& per_instance,
                                       const std::vector<uint32_t>& parallelism) {
  std::vector<double> out(parallelism.size(), kUndefined);
  for (size_t i = 0; i < out.size() && i < per_instance.size(); ++i)
    out[i] = per_instance[i] * parallelism[i];
  return out;
}

RatesDirectoryWatcher::RatesDirectoryWatcher(std::string dir, const Topology& topology)
    : dir_(std::move(dir)), topology_(topology) {}

std::vector<RatesEpoch> RatesDirectoryWatcher::poll() {
  return collect(false);
}
std::vector<RatesEpoch> RatesDirectoryWatcher::flush() {
  return collect(true);
}

std::vector<RatesEpoch> RatesDirectoryWatcher::collect(bool all) {
  RatesDiagnostics scratch;  // file-name problems are counted once, below
  auto by_epoch = epoch_files(dir_, &scratch);
  diag_.skipped_files = scratch.skipped_files;
  std::vector<RatesEpoch> out;
  for (auto it = by_epoch.begin(); it != by_epoch.end(); ++it) {
    if (done_.count(it->first)) continue;
    const bool later = std::next(it) != by_epoch.end();
    RatesDiagnostics d;
    RatesEpoch e = read_epoch(it->first, it->second, topology_, &d, true);
    // Complete: every operator reported as many instances as it says it has.
    bool complete = true;
    for (uint32_t op = 0; op < topology_.size() && complete; ++op) {
      std::set<uint32_t> inst;
      for (const InstanceRates& x : e.instances)
        if (x.op == op) inst.insert(x.instance);
      complete = !inst.empty() && inst.size() >= e.parallelism[op];
    }
    if (!complete && !later && !all) break;  // wait for the rest of this epoch
    done_.insert(it->first);
    if (e.instances.empty()) continue;
    diag_.duplicate_rows += d.duplicate_rows;
    diag_.undefined_rates += d.undefined_rates;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace snailtrail::scale
