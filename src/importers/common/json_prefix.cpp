// Closing a JSON document cut off at its end (json_prefix.hpp).
#include "importers/common/json_prefix.hpp"

#include <algorithm>
#include <vector>

#include "importers/common/json_util.hpp"

namespace snailtrail::importers::json {
namespace {

struct Frame {
  bool object = false;      // else an array
  bool record = false;      // an array whose elements are records
  bool expect_key = false;  // object: the next string is a member name
  std::string_view key;     // object: the name of the member being read
};

bool is_record_array(std::string_view key, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

}  // namespace

std::optional<CutDocument> close_cut_document(
    std::string_view text, std::initializer_list<std::string_view> record_arrays) {
  std::vector<Frame> stack;
  bool done = false;    // the top-level value is complete
  size_t cut = 0;       // bytes kept: 0 = no cut point yet
  std::string closers;  // what closes the brackets open at `cut`, innermost first
  auto remember_cut = [&](size_t at) {
    cut = at;
    closers.clear();
    for (auto f = stack.rbegin(); f != stack.rend(); ++f) closers += f->object ? '}' : ']';
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (done) return std::nullopt;  // text after the complete value: not a cut
    if (c == '"') {
      const size_t begin = ++i;
      while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      if (i >= text.size()) break;  // cut inside a string
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        stack.back().key = text.substr(begin, i - begin);
        stack.back().expect_key = false;
      }
      if (stack.empty()) done = true;
    } else if (c == '{' || c == '[') {
      Frame f;
      f.object = c == '{';
      f.expect_key = f.object;
      if (!f.object) {
        const std::string_view key =
            stack.empty() ? std::string_view() : (stack.back().object ? stack.back().key : "\x01");
        f.record = is_record_array(key, record_arrays);
      }
      stack.push_back(f);
      if (f.record) remember_cut(i + 1);
    } else if (c == '}' || c == ']') {
      if (stack.empty() || stack.back().object != (c == '}')) return std::nullopt;
      stack.pop_back();
      if (stack.empty())
        done = true;
      else if (stack.back().record)
        remember_cut(i + 1);
    } else if (c == ',') {
      if (!stack.empty() && stack.back().object) stack.back().expect_key = true;
    } else if (stack.empty()) {
      done = true;  // a top-level literal: nothing to cut
    }
  }
  if (stack.empty() || cut == 0) return std::nullopt;
  CutDocument out;
  out.kept = cut;
  out.closed.reserve(cut + closers.size());
  out.closed.assign(text.substr(0, cut));
  out.closed += closers;
  return out;
}

size_t parse_cut_document(simdjson::dom::parser& parser, std::string_view text,
                          const std::string& source,
                          std::initializer_list<std::string_view> record_arrays,
                          simdjson::error_code error, simdjson::dom::element& root) {
  const std::optional<CutDocument> cut = close_cut_document(text, record_arrays);
  if (!cut) throw_syntax_error(source, text, error);
  const simdjson::padded_string padded(cut->closed);
  if (parser.parse(padded).get(root)) throw_syntax_error(source, text, error);
  return cut->kept;
}

}  // namespace snailtrail::importers::json
