// The styles of synthetic logs, for the generator (synthetic.cpp): what each style's
// nodes write for one request, its background lines, and its line header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "logs/synthetic.hpp"

namespace snailtrail::logs::synthetic {

struct Step {
  int role;            // index into the request's nodes
  int tmpl;            // template index
  int min_ms, max_ms;  // delay after the previous step
  double p = 1.0;      // probability that the step happens
};

struct Style {
  std::vector<std::string> nodes;       // file names
  std::vector<std::string> templates;   // with {var} placeholders
  std::vector<std::string> components;  // per template
  std::vector<Step> script;             // one request
  int roles = 1;                        // nodes per request: role 0 is fixed (node 0)
  std::vector<int> noise;               // templates of background lines
  int error_template = -1;              // followed by a stack trace

  // Adds a template with its logging component; returns its index.
  int add(std::string text, std::string comp);
};

Style make_style(LogStyle s);

// The header of a line at `ts` (ns since the epoch) in the style's format.
std::string header(LogStyle style, int64_t ts, const std::string& level, const std::string& thread,
                   const std::string& comp, const std::string& node);

}  // namespace snailtrail::logs::synthetic
