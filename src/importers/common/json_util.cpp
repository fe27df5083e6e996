// simdjson helpers (json_util.hpp).
#include "importers/common/json_util.hpp"

#include <charconv>
#include <cmath>
#include <vector>

#include "trace/trace.hpp"

namespace snailtrail::importers::json {
namespace {

namespace od = simdjson::ondemand;

// Values nested deeper than this are not walked: the walk's position there is the error's
// (a document nested this deep is already beyond what the importers read). Each level is
// a stack frame: without a limit, a file of thousands of '[' overflows the stack.
constexpr int kMaxWalkDepth = 256;

simdjson::error_code walk(od::value v, int depth = 0) {
  if (depth >= kMaxWalkDepth) return simdjson::DEPTH_ERROR;
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  switch (t) {
    case od::json_type::array: {
      od::array a;
      if (auto e = v.get_array().get(a)) return e;
      for (auto item : a) {
        od::value x;
        if (auto e = std::move(item).get(x)) return e;
        if (auto e = walk(x, depth + 1)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::object: {
      od::object o;
      if (auto e = v.get_object().get(o)) return e;
      for (auto field : o) {
        od::field f;
        if (auto e = std::move(field).get(f)) return e;
        std::string_view key;
        if (auto e = f.unescaped_key().get(key)) return e;
        if (auto e = walk(f.value(), depth + 1)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::number:
      return v.get_number().error();
    case od::json_type::string:
      return v.get_string().error();
    case od::json_type::boolean:
      return v.get_bool().error();
    case od::json_type::null:
      return v.is_null().error();
  }
  return simdjson::SUCCESS;
}

// Where the bracket structure breaks: the first closer that does not match, an
// unterminated string, or the end if something stays open. Used when simdjson's first
// stage rejects the input as a whole and gives no position.
size_t structure_error_offset(std::string_view text) {
  std::vector<char> open;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      if (i >= text.size()) return start;
    } else if (c == '{' || c == '[') {
      open.push_back(c);
    } else if (c == '}' || c == ']') {
      if (open.empty() || open.back() != (c == '}' ? '{' : '[')) return i;
      open.pop_back();
    }
  }
  return text.size();
}

}  // namespace

size_t error_offset(std::string_view text) {
  // A broken bracket structure is located exactly by the scan; simdjson's positions
  // are only meaningful once the structure is sound.
  const size_t structure = structure_error_offset(text);
  if (structure < text.size()) return structure;
  simdjson::padded_string padded(text);
  od::parser parser;
  od::document doc;
  if (parser.iterate(padded).get(doc)) return 0;
  od::value root;
  simdjson::error_code err = doc.get_value().get(root);
  if (!err) err = walk(root);
  const char* at = nullptr;
  if (doc.current_location().get(at) || at < padded.data()) return text.size();
  return std::min(static_cast<size_t>(at - padded.data()), text.size());
}

void throw_syntax_error(const std::string& source, std::string_view text,
                        simdjson::error_code error) {
  throw TraceError(source, "byte " + std::to_string(error_offset(text)),
                   std::string("invalid JSON: ") + simdjson::error_message(error));
}

bool number_to_ns(simdjson::dom::element e, int64_t unit, int64_t& out) {
  switch (e.type()) {
    case simdjson::dom::element_type::INT64: {
      const int64_t v = int64_t(e);
      return !__builtin_mul_overflow(v, unit, &out);
    }
    case simdjson::dom::element_type::DOUBLE: {
      const double v = double(e) * static_cast<double>(unit);
      if (!std::isfinite(v) || v >= 9.2e18 || v <= -9.2e18) return false;
      out = std::llround(v);
      return true;
    }
    default:
      return false;  // UINT64 above INT64_MAX, strings, ...
  }
}

bool integer_or_string(simdjson::dom::element e, int64_t& out) {
  if (e.type() == simdjson::dom::element_type::INT64) {
    out = int64_t(e);
    return true;
  }
  if (e.type() != simdjson::dom::element_type::STRING) return false;
  const std::string_view s = std::string_view(e);
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool scalar_text(simdjson::dom::element e, std::string& out) {
  switch (e.type()) {
    case simdjson::dom::element_type::STRING:
      out.assign(std::string_view(e));
      return true;
    case simdjson::dom::element_type::INT64:
      out = std::to_string(int64_t(e));
      return true;
    case simdjson::dom::element_type::UINT64:
      out = std::to_string(uint64_t(e));
      return true;
    case simdjson::dom::element_type::DOUBLE: {
      // Integral doubles (some exporters write 1.0) read as the integer.
      const double d = double(e);
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15)
        out = std::to_string(static_cast<int64_t>(d));
      else
        out = std::to_string(d);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace snailtrail::importers::json
