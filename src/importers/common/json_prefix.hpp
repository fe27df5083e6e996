// The complete part of a JSON document cut off at its end (a trace file still being
// written, or copied while it was): used by the chrome, otlp and jaeger importers to
// import every complete record before the cut (docs/IMPORTERS.md, "Files cut short").
#pragma once

#include <simdjson.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace snailtrail::importers::json {

struct CutDocument {
  std::string closed;  // the text up to the last complete record, brackets closed
  size_t kept = 0;     // bytes of the original text before the cut point
};

// `text` must be one JSON value that ends early: its brackets are balanced up to the end
// of the text and some stay open (or a string or literal is unterminated there). The
// records are the elements of the arrays at the paths `record_arrays` from the top:
// member names joined by '.', "[]" for an element of an array ("" for an array at the
// top level, "data[].spans" for the member "spans" of the elements of the top-level
// member "data"; an array of that name anywhere else holds no records, e.g. a member
// "spans" inside a span). The cut point is right
// after the last complete record, or after the opening bracket of the innermost record
// array if none of its records is complete. The returned text is the prefix up to that
// point with the open arrays and objects closed, so that it parses as JSON if the prefix
// did. Enclosing objects are closed as they are: their members after the cut are lost.
//
// nullopt if the text is not a cut document: a closing bracket that does not match, text
// after the complete top-level value, nothing open at the end, or no record array open
// at the cut. Then the caller reports its parse error; only a cut at the very end of the
// text is forgiven, never damage before it.
std::optional<CutDocument> close_cut_document(
    std::string_view text, std::initializer_list<std::string_view> record_arrays);

// True if `text` is the start of one JSON value cut off inside it: brackets balanced so
// far and some still open (or a string unterminated) at the end, nothing after the value.
bool ends_inside_value(std::string_view text);

// For a text whose parse failed with `error`: parses its complete records
// (close_cut_document) into `root` and returns the number of bytes kept. Throws the
// syntax error of the whole text (TraceError "byte N: invalid JSON") if it is not a cut
// document or its complete part does not parse either (damage before the cut).
size_t parse_cut_document(simdjson::dom::parser& parser, std::string_view text,
                          const std::string& source,
                          std::initializer_list<std::string_view> record_arrays,
                          simdjson::error_code error, simdjson::dom::element& root);

}  // namespace snailtrail::importers::json
