// Display names of workers and operators: metadata name when present, else the id.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "pag/timeline.hpp"
#include "trace/json_text.hpp"
#include "trace/trace.hpp"

namespace snailtrail {

// append_json_string (quoted, escaped; output documents use kJsonOutput, its default)
// and append_json_number are in trace/json_text.hpp.

// Names in output documents: they come from untrusted traces, so invalid UTF-8 becomes
// \ufffd (kJsonOutput would copy it and make the document invalid JSON).
inline constexpr JsonEscape kJsonNames{true, false, "\\ufffd"};

// `s` as the human-readable outputs show it (tables, verdict sentences): names come from
// untrusted traces, and a newline would split a row, an escape sequence drive the
// terminal. Control characters become escapes: \n \r \t, the other C0 ones and DEL
// \xHH (\x00, \x1b, \x7f), C1 ones and the line, paragraph and bidirectional controls
// \uHHHH; each byte of invalid UTF-8 becomes U+FFFD. The result is valid UTF-8 without
// controls, so display_width() measures it right; text without any of these is returned
// unchanged (a backslash too, so printable(printable(s)) == printable(s)). In
// text_width.cpp.
std::string printable(std::string_view s);

// Terminal columns `s` takes: UTF-8 code points, East Asian wide ones count 2, combining
// marks 0; invalid bytes count 1 each. In text_width.cpp.
size_t display_width(std::string_view s);

// Shortens a name to at most `width` columns (never more), keeping what tells names apart:
// the leading identifier with its number ("stage 50", "exec 3") and the informative end
// ("stage 50 (…at <console>:24)"); names without a number near the start keep a short
// head up to its first delimiter ("Source:", "Window(") or only their end ("…Sink:
// Print"). Whichever candidate keeps more whole numbers wins. The cut is marked with
// "…" (one column). Names that fit are returned unchanged. In text_width.cpp.
std::string abbreviate(std::string_view name, size_t width);

// abbreviate() then padded with spaces to exactly `width` columns.
std::string fit_column(std::string_view name, size_t width);

// "a<sep>b" in at most `width` columns, shortening each side with abbreviate() so that
// both stay recognisable (the shorter side keeps its full name when it can).
std::string abbreviate_pair(std::string_view a, std::string_view sep, std::string_view b,
                            size_t width);

struct Names {
  std::vector<std::string> worker;       // by dense worker index
  std::vector<std::string> worker_json;  // the same as JSON string literals
  std::unordered_map<uint32_t, std::string> op_names;
  std::vector<uint32_t> worker_ids;
  // The application the trace is a part of (Trace::application): the outputs' coverage
  // says which part of it was analyzed.
  std::optional<Trace::Application> application;

  Names(const Trace& trace, const Pag& pag)
      : op_names(trace.operator_names), worker_ids(pag.worker_ids), application(trace.application) {
    worker.reserve(pag.worker_ids.size());
    for (uint32_t id : pag.worker_ids) worker.push_back(trace.worker_name(id));
    worker_json.reserve(worker.size());
    for (const std::string& name : worker) {
      fmt::memory_buffer quoted;
      append_json_string(quoted, name, kJsonNames);
      worker_json.emplace_back(quoted.data(), quoted.size());
    }
  }
  std::string op(uint32_t id) const {
    auto it = op_names.find(id);
    return it != op_names.end() ? it->second : std::to_string(id);
  }
};

}  // namespace snailtrail
