// Reading typed values out of a scenario's TOML document (scenario_parse.cpp), with
// errors as "FILE:LINE:COL: key: what". Internal to src/sim.
#pragma once

#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sim/scenario.hpp"
#include "sim/units.hpp"

namespace snailtrail::sim::detail {

// Walks the TOML document and reports problems as "FILE:LINE:COL: key: what".
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const toml::node* n, const std::string& key,
                         const std::string& what) const {
    std::string where = file_;
    if (n && n->source().begin.line > 0)
      where += ":" + std::to_string(n->source().begin.line) + ":" +
               std::to_string(n->source().begin.column);
    throw ScenarioError(where + ": " + (key.empty() ? "" : "key '" + key + "': ") + what);
  }

  void check_keys(const toml::table& t, const std::string& prefix,
                  std::initializer_list<std::string_view> allowed) const {
    for (auto&& [k, v] : t) {
      if (std::find(allowed.begin(), allowed.end(), k.str()) != allowed.end()) continue;
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(&v, join(prefix, k.str()), "unknown key (expected one of: " + list + ")");
    }
  }

  static std::string join(const std::string& prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
  }

  const toml::table* table(const toml::table& t, std::string_view key,
                           const std::string& prefix) const {
    const toml::node* n = t.get(key);
    if (!n) return nullptr;
    if (!n->is_table()) fail(n, join(prefix, key), "must be a table");
    return n->as_table();
  }

  std::optional<std::string> string(const toml::table& t, std::string_view key,
                                    const std::string& prefix) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_string()) fail(n, join(prefix, key), "must be a string");
    return n->as_string()->get();
  }

  std::optional<double> number(const toml::table& t, std::string_view key,
                               const std::string& prefix) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    return number_of(*n, join(prefix, key));
  }

  double number_of(const toml::node& n, const std::string& key) const {
    if (n.is_integer()) return static_cast<double>(n.as_integer()->get());
    if (n.is_floating_point()) {
      double v = n.as_floating_point()->get();
      if (!std::isfinite(v)) fail(&n, key, "must be a finite number");
      return v;
    }
    fail(&n, key, "must be a number");
  }

  std::optional<uint64_t> count(const toml::table& t, std::string_view key,
                                const std::string& prefix, uint64_t min, uint64_t max) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_integer()) fail(n, join(prefix, key), "must be an integer");
    int64_t v = n->as_integer()->get();
    if (v < 0 || static_cast<uint64_t>(v) < min || static_cast<uint64_t>(v) > max)
      fail(n, join(prefix, key),
           "must be between " + std::to_string(min) + " and " + std::to_string(max));
    return static_cast<uint64_t>(v);
  }

  std::optional<bool> boolean(const toml::table& t, std::string_view key,
                              const std::string& prefix) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_boolean()) fail(n, join(prefix, key), "must be true or false");
    return n->as_boolean()->get();
  }

  // A duration: a string with a unit ("250us") or a number of nanoseconds.
  double duration_of(const toml::node& n, const std::string& key) const {
    double v;
    if (n.is_string()) {
      try {
        v = static_cast<double>(parse_duration_text(n.as_string()->get()));
      } catch (const std::invalid_argument& e) {
        fail(&n, key, e.what());
      }
    } else if (n.is_integer() || n.is_floating_point()) {
      v = number_of(n, key);
    } else {
      fail(&n, key, "must be a duration such as \"250us\" or a number of nanoseconds");
    }
    if (v < 0) fail(&n, key, "must not be negative");
    return v;
  }

  std::optional<int64_t> duration(const toml::table& t, std::string_view key,
                                  const std::string& prefix) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    return static_cast<int64_t>(std::llround(duration_of(*n, join(prefix, key))));
  }

  // A distribution of durations (is_duration) or of plain numbers: a single value means
  // "fixed"; a table {dist = "...", ...} names the distribution and its parameters.
  Distribution distribution_of(const toml::node& n, const std::string& key,
                               bool is_duration) const {
    auto value = [&](const toml::node& v, const std::string& k) {
      if (is_duration) return duration_of(v, k);
      double x = number_of(v, k);
      if (x < 0) fail(&v, k, "must not be negative");
      return x;
    };
    if (!n.is_table()) return Distribution::constant(value(n, key));
    const toml::table& t = *n.as_table();
    check_keys(t, key, {"dist", "value", "min", "max", "mean", "stddev"});
    auto kind_name = string(t, "dist", key);
    if (!kind_name)
      fail(&n, key + ".dist", "missing (fixed, uniform, exponential, normal, lognormal)");
    auto need = [&](std::string_view k) {
      const toml::node* v = t.get(k);
      if (!v) fail(&n, join(key, k), "missing for dist = \"" + *kind_name + "\"");
      return value(*v, join(key, k));
    };
    auto forbid = [&](std::initializer_list<std::string_view> ks) {
      for (std::string_view k : ks)
        if (t.get(k))
          fail(t.get(k), join(key, k), "not a parameter of dist = \"" + *kind_name + "\"");
    };
    Distribution d;
    if (*kind_name == "fixed") {
      forbid({"min", "max", "mean", "stddev"});
      d = Distribution::constant(need("value"));
    } else if (*kind_name == "uniform") {
      forbid({"value", "mean", "stddev"});
      d = {DistKind::uniform, need("min"), need("max")};
      if (d.p2 < d.p1) fail(t.get("max"), join(key, "max"), "must not be less than min");
    } else if (*kind_name == "exponential") {
      forbid({"value", "min", "max", "stddev"});
      d = {DistKind::exponential, need("mean"), 0};
    } else if (*kind_name == "normal" || *kind_name == "lognormal") {
      forbid({"value", "min", "max"});
      d = {*kind_name == "normal" ? DistKind::normal : DistKind::lognormal, need("mean"),
           need("stddev")};
    } else {
      fail(t.get("dist"), join(key, "dist"),
           "unknown distribution \"" + *kind_name +
               "\" (expected fixed, uniform, exponential, normal, lognormal)");
    }
    return d;
  }

  std::optional<Distribution> distribution(const toml::table& t, std::string_view key,
                                           const std::string& prefix, bool is_duration) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    return distribution_of(*n, join(prefix, key), is_duration);
  }

  std::optional<Partitioning> partitioning(const toml::table& t, std::string_view key,
                                           const std::string& prefix) const {
    auto s = string(t, key, prefix);
    if (!s) return std::nullopt;
    if (*s == "forward") return Partitioning::forward;
    if (*s == "round_robin" || *s == "rebalance" || *s == "shuffle")
      return Partitioning::round_robin;
    if (*s == "hash" || *s == "key") return Partitioning::hash;
    fail(t.get(key), join(prefix, key),
         "unknown partitioning \"" + *s + "\" (expected forward, round_robin, hash)");
  }

  double rate_of(const toml::node& n, const std::string& key) const {
    double v;
    if (n.is_string()) {
      try {
        v = parse_rate_text(n.as_string()->get());
      } catch (const std::invalid_argument& e) {
        fail(&n, key, e.what());
      }
    } else {
      v = number_of(n, key);
    }
    if (v < 0) fail(&n, key, "must not be negative");
    return v;
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

}  // namespace snailtrail::sim::detail
