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

// True if the array opening inside `stack` (the containers open around it, outermost
// first) is at `path`: member names joined by '.', "[]" for an array's element ("" is
// the top-level value, "data[].spans" the member "spans" of an element of the top-level
// member "data"). A name is matched whole: a member named "a.b" is not the path "a.b".
bool at_path(const std::vector<Frame>& stack, std::string_view path) {
  size_t at = 0;
  for (size_t i = 0; i < stack.size(); ++i) {
    if (stack[i].object) {
      if (at == path.size()) return false;  // "" is the top-level value, no member of it
      if (i > 0) {
        if (at >= path.size() || path[at] != '.') return false;
        ++at;
      }
      const size_t end = std::min(path.find_first_of(".[", at), path.size());
      if (path.substr(at, end - at) != stack[i].key) return false;
      at = end;
    } else {
      if (path.substr(at, 2) != "[]") return false;
      at += 2;
    }
  }
  return at == path.size();
}

bool is_record_array(const std::vector<Frame>& stack,
                     std::initializer_list<std::string_view> paths) {
  return std::any_of(paths.begin(), paths.end(),
                     [&](std::string_view p) { return at_path(stack, p); });
}

struct Scan {
  bool ends_inside = false;  // balanced so far, something still open at the end
  size_t cut = 0;            // after the last complete record; 0 = none
  std::string closers;       // what closes the brackets open at `cut`, innermost first
};

Scan scan(std::string_view text, std::initializer_list<std::string_view> record_arrays) {
  Scan out;
  std::vector<Frame> stack;
  bool done = false;  // the top-level value is complete
  auto remember_cut = [&](size_t at) {
    out.cut = at;
    out.closers.clear();
    for (auto f = stack.rbegin(); f != stack.rend(); ++f) out.closers += f->object ? '}' : ']';
  };
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (done) return Scan{};  // text after the complete value: not a cut
    if (c == '"') {
      const size_t begin = ++i;
      while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      if (i >= text.size()) {
        in_string = true;  // cut inside a string
        break;
      }
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        stack.back().key = text.substr(begin, i - begin);
        stack.back().expect_key = false;
      }
      if (stack.empty()) done = true;
    } else if (c == '{' || c == '[') {
      Frame f;
      f.object = c == '{';
      f.expect_key = f.object;
      if (!f.object) f.record = is_record_array(stack, record_arrays);
      stack.push_back(f);
      if (f.record) remember_cut(i + 1);
    } else if (c == '}' || c == ']') {
      if (stack.empty() || stack.back().object != (c == '}')) return Scan{};
      stack.pop_back();
      if (stack.empty())
        done = true;
      else if (stack.back().record)
        remember_cut(i + 1);
    } else if (c == ',') {
      if (!stack.empty() && stack.back().object) stack.back().expect_key = true;
    } else if (stack.empty()) {
      done = true;  // a top-level literal
    }
  }
  out.ends_inside = !stack.empty() || (in_string && !done);
  return out;
}

}  // namespace

bool ends_inside_value(std::string_view text) {
  return scan(text, {}).ends_inside;
}

std::optional<CutDocument> close_cut_document(
    std::string_view text, std::initializer_list<std::string_view> record_arrays) {
  const Scan s = scan(text, record_arrays);
  if (!s.ends_inside || s.cut == 0) return std::nullopt;
  CutDocument out;
  out.kept = s.cut;
  out.closed.reserve(s.cut + s.closers.size());
  out.closed.assign(text.substr(0, s.cut));
  out.closed += s.closers;
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
