#include "flame/flamegraph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "flame/paths.hpp"
#include "flame/time_order.hpp"
#include "output/names.hpp"
#include "output/writers.hpp"
#include "trace/event.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::flame {

namespace {
// By Mode.
constexpr const char* kModeNames[] = {"on-cpu", "off-cpu", "mixed", "critical"};
}  // namespace

std::optional<Mode> parse_mode(const std::string& s) {
  for (size_t m = 0; m < std::size(kModeNames); ++m)
    if (s == kModeNames[m]) return static_cast<Mode>(m);
  return std::nullopt;
}

const char* mode_name(Mode m) {
  const auto i = static_cast<size_t>(m);
  return i < std::size(kModeNames) ? kModeNames[i] : "?";
}

const char* mode_unit(Mode m) {
  return m == Mode::on_cpu ? "samples" : "ns";
}

std::vector<double> mode_weights(const SampleSet& set, Mode mode) {
  if (mode == Mode::mixed && set.period_ns <= 0)
    throw UsageError({field("mode"),
                      " mixed needs the sampling period of the on-CPU samples (the runtime's ",
                      field("profile_hz"), ", or ", field("hz"), " for imported samples)"});
  std::vector<double> w(set.samples.size(), 0.0);
  for (size_t i = 0; i < w.size(); ++i) {
    const StackSample& s = set.samples[i];
    double c = static_cast<double>(s.count);
    bool on = s.kind == SampleKind::on_cpu;
    switch (mode) {
      case Mode::on_cpu:
        w[i] = on ? c : 0;
        break;
      case Mode::off_cpu:
        w[i] = on ? 0 : c;
        break;
      case Mode::mixed:
        w[i] = on ? c * static_cast<double>(set.period_ns) : c;
        break;
      case Mode::critical:
        w[i] = 0;
        break;
    }
  }
  return w;
}

std::string short_frame_name(const std::string& name) {
  // Drop the trailing parameter list: the last top-level "(...)" and what follows it
  // (" const", " &&"), unless the name ends in a bracket of its own like "{lambda()#1}".
  std::string s = name;
  size_t end = s.size();
  while (end > 0 && (s[end - 1] == ' ' || s[end - 1] == '&')) --end;
  if (end >= 6 && s.compare(end - 6, 6, " const") == 0) end -= 6;
  while (end > 0 && (s[end - 1] == ' ' || s[end - 1] == '&')) --end;
  if (end > 0 && s[end - 1] == ')') {
    int depth = 0;
    size_t i = end;
    while (i-- > 0) {
      if (s[i] == ')')
        ++depth;
      else if (s[i] == '(' && --depth == 0)
        break;
    }
    if (i != std::string::npos && i > 0 && depth == 0) s.resize(i);
  }
  // Collapse template arguments, keeping operator<, operator<<, operator->, ...
  std::string out;
  out.reserve(s.size());
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (depth == 0 && s.compare(i, 8, "operator") == 0) {
      size_t j = i + 8;
      while (j < s.size() && std::strchr("<>=-!+*/%^&|~[]()", s[j]) && j < i + 11) ++j;
      out.append(s, i, j - i);
      i = j - 1;
      continue;
    }
    char c = s[i];
    if (c == '<') {
      if (depth++ == 0) out += "<...>";
      continue;
    }
    if (c == '>' && depth > 0) {
      --depth;
      continue;
    }
    if (depth == 0) out += c;
  }
  if (depth != 0) return name;  // unbalanced: leave it alone
  return out;
}

FlameTree build_tree(const SampleSet& set, const std::vector<double>& weights,
                     const TreeOptions& options) {
  const PathSet ps = collect_paths(set, weights, options);
  FlameTree tree;
  tree.nodes.push_back({"all", 0, 0, ps.total, 0, {}});
  const double min_value = options.min_share * ps.total;
  // The sweep over the sorted paths: open[d] is the node at depth d + 1 of the current
  // path; a node is complete when a path leaves it, and then dropped if too narrow (its
  // subtree, narrower still, is gone already, so it is the last node).
  std::vector<uint32_t> open, open_names, names;
  auto close_to = [&](size_t depth) {
    while (open.size() > depth) {
      const uint32_t n = open.back();
      open.pop_back();
      open_names.pop_back();
      if (tree.nodes[n].value < min_value && n + 1 == tree.nodes.size()) {
        tree.nodes[tree.nodes[n].parent].children.pop_back();
        tree.nodes.pop_back();
      } else {
        tree.max_depth = std::max(tree.max_depth, tree.nodes[n].depth);
      }
    }
  };
  for (const PathSet::Path& p : ps.paths) {
    ps.names_of(set, p, names);
    size_t common = 0;
    while (common < open.size() && common < names.size() && names[common] == open_names[common])
      ++common;
    close_to(common);
    for (size_t d = common; d < names.size(); ++d) {
      const uint32_t parent = d == 0 ? 0 : open[d - 1];
      const auto n = static_cast<uint32_t>(tree.nodes.size());
      tree.nodes.push_back({ps.names[names[d]], parent, static_cast<uint32_t>(d + 1), 0, 0, {}});
      tree.nodes[parent].children.push_back(n);
      open.push_back(n);
      open_names.push_back(names[d]);
    }
    for (uint32_t n : open) tree.nodes[n].value += p.weight;
    (open.empty() ? tree.nodes[0] : tree.nodes[open.back()]).self += p.weight;
  }
  close_to(0);
  return tree;
}

namespace {

// `s` as XML text: markup characters as entities, control characters as spaces, each
// byte of invalid UTF-8 as U+FFFD (so the SVG is well-formed whatever the names hold).
void append_xml(std::string& out, std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const size_t len = p[i] < 0x80 ? 1 : utf8_sequence_length(p + i, s.size() - i);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (len == 0)
          out += "\xEF\xBF\xBD";
        else if (p[i] < 0x20)
          out += ' ';
        else
          out.append(s.substr(i, len));
    }
    i += len == 0 ? 1 : len;
  }
}

uint32_t hash_name(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

std::string color_of(const std::string& name) {
  uint32_t h = hash_name(name);
  double v1 = (h & 0xff) / 255.0, v2 = ((h >> 8) & 0xff) / 255.0, v3 = ((h >> 16) & 0xff) / 255.0;
  int r, g, b;
  if (name.starts_with("[op ") || name.starts_with("[thread ")) {
    r = 80 + int(50 * v1), g = 150 + int(60 * v2), b = 200 + int(55 * v3);  // blue: who
  } else if (name.size() > 4 && name.ends_with("_[k]")) {
    r = 210 + int(45 * v1), g = 140 + int(50 * v2), b = 40 + int(30 * v3);  // orange: kernel
  } else if (!name.empty() && name.front() == '[') {
    r = g = b = 170 + int(40 * v1);  // grey: unknown / DSO only
  } else {
    r = 205 + int(50 * v3), g = int(230 * v1), b = int(55 * v2);  // flamegraph's "hot"
  }
  return fmt::format("rgb({},{},{})", r, g, b);
}

std::string format_value(double v, const std::string& unit) {
  if (unit == "ns") {
    if (v >= 1e9) return fmt::format("{:.3f} s", v / 1e9);
    if (v >= 1e6) return fmt::format("{:.3f} ms", v / 1e6);
    if (v >= 1e3) return fmt::format("{:.3f} us", v / 1e3);
    return fmt::format("{:.0f} ns", v);
  }
  return fmt::format("{:.0f} {}", v, unit);
}

}  // namespace

namespace {

constexpr int kSvgPad = 10, kSvgTitleHeight = 44;

// The frames, depth first: x offsets in fractions of the total (> 0).
void append_frames(std::string& out, const FlameTree& tree, const SvgOptions& o, int depth,
                   double total) {
  const int pad = kSvgPad, title_h = kSvgTitleHeight, fh = o.frame_height;
  const double width_px = o.width - 2 * pad;
  std::vector<std::pair<uint32_t, double>> todo{{0, 0.0}};
  while (!todo.empty()) {
    auto [n, x] = todo.back();
    todo.pop_back();
    const FlameTree::Node& node = tree.nodes[n];
    double fx = x / total, fw = node.value / total;
    double px = pad + fx * width_px, pw = fw * width_px;
    if (pw < o.min_width_px) continue;
    int y = title_h + pad + (depth - 1 - static_cast<int>(node.depth)) * fh;
    std::string label;
    append_xml(label, node.name);
    std::string tip;
    append_xml(tip, fmt::format("{} ({}, {:.2f} %)", node.name, format_value(node.value, o.unit),
                                100.0 * node.value / total));
    out += fmt::format(
        "<g class=\"f\" data-x=\"{:.9f}\" data-w=\"{:.9f}\" data-d=\"{}\" data-n=\"{}\">"
        "<title>{}</title><rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" "
        "fill=\"{}\" rx=\"2\"/>",
        fx, fw, node.depth, label, tip, px, y, pw, fh - 1, color_of(node.name));
    size_t fit = pw > 12 ? static_cast<size_t>((pw - 6) / 7.2) : 0;
    std::string text;
    if (fit >= node.name.size()) {
      text = label;
    } else if (fit >= 3) {
      size_t cut = fit - 2;  // not inside a UTF-8 sequence
      while (cut > 0 && (static_cast<unsigned char>(node.name[cut]) & 0xC0) == 0x80) --cut;
      append_xml(text, std::string_view(node.name).substr(0, cut));
      text += "..";
    }
    out += fmt::format("<text x=\"{:.2f}\" y=\"{}\">{}</text></g>\n", px + 3, y + fh - 4, text);
    double cx = x;
    std::vector<std::pair<uint32_t, double>> kids;
    for (uint32_t c : node.children) {
      kids.emplace_back(c, cx);
      cx += tree.nodes[c].value;
    }
    todo.insert(todo.end(), kids.rbegin(), kids.rend());
  }
}

}  // namespace

std::string to_svg(const FlameTree& tree, const SvgOptions& o) {
  const int pad = kSvgPad, title_h = kSvgTitleHeight, fh = o.frame_height;
  const double width_px = o.width - 2 * pad;
  const int depth = static_cast<int>(tree.max_depth) + 1;
  const int height = title_h + depth * fh + 2 * pad + 16;
  const double total = tree.total();
  std::string out;
  out += fmt::format(
      "<?xml version=\"1.0\" standalone=\"no\"?>\n"
      "<svg version=\"1.1\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "xmlns=\"http://www.w3.org/2000/svg\">\n",
      o.width, height, o.width, height);
  out += fmt::format(
      "<style>text{{font-family:monospace;font-size:12px;fill:#000}} g.f:hover rect{{stroke:#000;"
      "stroke-width:0.5}} g.f{{cursor:pointer}} .t{{font-size:17px;text-anchor:middle}}</style>\n"
      "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#f8f8f2\"/>\n",
      o.width, height);
  out += fmt::format("<text class=\"t\" x=\"{}\" y=\"24\">", o.width / 2);
  append_xml(out, o.title);
  out += "</text>\n";
  out += fmt::format("<text x=\"{}\" y=\"40\">", pad);
  append_xml(out, o.subtitle.empty() ? fmt::format("total {}", format_value(total, o.unit))
                                     : o.subtitle + ", total " + format_value(total, o.unit));
  out += "</text>\n";
  out += fmt::format("<text id=\"details\" x=\"{}\" y=\"{}\"> </text>\n", pad, height - 8);
  if (total > 0) append_frames(out, tree, o, depth, total);
  out += fmt::format(
      "<script type=\"text/ecmascript\"><![CDATA[\n"
      "var P={},S={};\n"
      "function fit(n,w){{var k=Math.floor((w-6)/7.2);if(k>=n.length)return n;"
      "return k>=3?n.substring(0,k-2)+'..':'';}}\n"
      "function zoom(g){{var x=+g.dataset.x,w=+g.dataset.w,d=+g.dataset.d;\n"
      " document.querySelectorAll('g.f').forEach(function(n){{var nx=+n.dataset.x,"
      "nw=+n.dataset.w,nd=+n.dataset.d,e=1e-9;\n"
      "  var sub=nd>=d&&nx>=x-e&&nx+nw<=x+w+e, anc=nd<d&&nx<=x+e&&nx+nw>=x+w-e;\n"
      "  if(!sub&&!anc){{n.style.display='none';return;}} n.style.display='';\n"
      "  var X=sub?P+(nx-x)*S/w:P, W=sub?nw*S/w:S;\n"
      "  var r=n.querySelector('rect'),t=n.querySelector('text');\n"
      "  r.setAttribute('x',X);r.setAttribute('width',W);t.setAttribute('x',X+3);"
      "t.textContent=fit(n.dataset.n,W);}});}}\n"
      "document.querySelectorAll('g.f').forEach(function(g){{"
      "g.addEventListener('click',function(){{zoom(g);}});"
      "g.addEventListener('mouseover',function(){{document.getElementById('details')"
      ".textContent=g.querySelector('title').textContent;}});}});\n"
      "]]></script>\n</svg>\n",
      pad, width_px);
  return out;
}

namespace {

// {"id": ID or null, ..., "value": V, "share": V / sum} per id; `more(id)` writes the
// "..." (", \"name\": ..." or nothing).
template <typename More>
void put_shares(fmt::memory_buffer& out, const std::map<uint32_t, double>& values, double sum,
                More&& more) {
  auto it = std::back_inserter(out);
  bool first = true;
  for (const auto& [id, v] : values) {
    fmt::format_to(it, "{}{{\"id\": ", first ? "" : ", ");
    if (id == kNoId)
      fmt::format_to(it, "null");
    else
      fmt::format_to(it, "{}", id);
    more(id);
    fmt::format_to(it, ", \"value\": {}, \"share\": {}}}", v, sum > 0 ? v / sum : 0.0);
    first = false;
  }
}

}  // namespace

std::string to_json(const FlameTree& tree, const SampleSet& set, const std::vector<double>& weights,
                    Mode mode, const TimeOrder* time_order) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\"mode\": \"{}\", \"unit\": \"{}\", \"total\": {}, \"operators\": [",
                 mode_name(mode), mode_unit(mode), tree.total());
  std::map<uint32_t, double> per_op;
  double sum = 0;
  for (size_t i = 0; i < set.samples.size() && i < weights.size(); ++i)
    if (weights[i] > 0) {
      per_op[set.samples[i].op] += weights[i];
      sum += weights[i];
    }
  put_shares(out, per_op, sum, [&](uint32_t op) {
    fmt::format_to(it, ", \"name\": ");
    auto n = set.operator_names.find(op);
    append_json_string(out,
                       op == kNoId                     ? std::string("")
                       : n != set.operator_names.end() ? n->second
                                                       : std::to_string(op),
                       kJsonNames);
  });
  std::map<uint32_t, double> per_worker;
  for (size_t i = 0; i < set.samples.size() && i < weights.size(); ++i)
    if (weights[i] > 0) {
      const StackSample& s = set.samples[i];
      per_worker[s.worker != kNoId ? s.worker : s.thread] += weights[i];
    }
  fmt::format_to(it, "], \"workers\": [");
  put_shares(out, per_worker, sum, [](uint32_t) {});
  fmt::format_to(it, "], \"diagnostics\": ");
  put_counts(out, set.diagnostics);
  fmt::format_to(it, ", \"root\": ");
  // Iterative pre-order writer: (node, state) with state 0 = open, 1 = close.
  std::vector<std::pair<uint32_t, int>> todo;
  if (!tree.nodes.empty()) todo.emplace_back(0, 0);
  std::vector<bool> first_child(tree.nodes.size(), true);
  while (!todo.empty()) {
    auto [n, state] = todo.back();
    todo.pop_back();
    const FlameTree::Node& node = tree.nodes[n];
    if (state == 1) {
      fmt::format_to(it, "]}}");
      continue;
    }
    if (n != 0) {
      if (!first_child[node.parent]) fmt::format_to(it, ", ");
      first_child[node.parent] = false;
    }
    fmt::format_to(it, "{{\"name\": ");
    append_json_string(out, node.name, kJsonNames);
    fmt::format_to(it, ", \"value\": {}, \"self\": {}, \"children\": [", node.value, node.self);
    todo.emplace_back(n, 1);
    for (auto c = node.children.rbegin(); c != node.children.rend(); ++c) todo.emplace_back(*c, 0);
  }
  if (tree.nodes.empty()) fmt::format_to(it, "null");
  if (time_order) fmt::format_to(it, ", \"time_order\": {}", time_order_json(*time_order));
  fmt::format_to(it, "}}\n");
  return std::string(out.data(), out.size());
}

}  // namespace snailtrail::flame
