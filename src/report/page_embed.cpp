#include "report/page_embed.hpp"

namespace snailtrail::report {

void replace_once(std::string& s, std::string_view marker, std::string_view with) {
  const size_t at = s.find(marker);
  if (at != std::string::npos) s.replace(at, marker.size(), with);
}

std::string embed_page(std::string html, std::string_view js, std::string_view data_json) {
  std::string data;
  data.reserve(data_json.size() + 64);
  for (char c : data_json) {
    if (c == '<')
      data += "\\u003c";
    else
      data += c;
  }
  replace_once(html, "/*SNAILTRAIL_JS*/", js);
  replace_once(html, "/*SNAILTRAIL_DATA*/", data);
  return html;
}

}  // namespace snailtrail::report
