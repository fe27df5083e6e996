// The report's self-contained pages: a web/ template with its script and data put in at
// their markers (report.cpp, waterfall.cpp, stages.cpp).
#pragma once

#include <string>
#include <string_view>

namespace snailtrail::report {

// Replaces the first `marker` in `s` with `with` (none: unchanged).
void replace_once(std::string& s, std::string_view marker, std::string_view with);

// `html` with `js` at /*SNAILTRAIL_JS*/ and `data_json` at /*SNAILTRAIL_DATA*/. The script
// goes in first, so that text in the data is never taken for a marker; '<' in the data
// is written \u003c: inside <script>, "</script>" or "<!--" would end or confuse the
// element, and '<' only occurs inside JSON strings, where \u003c means the same character.
std::string embed_page(std::string html, std::string_view js, std::string_view data_json);

}  // namespace snailtrail::report
