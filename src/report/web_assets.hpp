// The web sources of the report (web/), embedded at build time: CMake runs
// web/embed.cmake, which writes these definitions into the build directory.
#pragma once

#include <string_view>

namespace snailtrail::report::assets {

extern const std::string_view kReportHtml;  // web/report.html: the page with its markers
extern const std::string_view kReportCss;   // web/report.css
extern const std::string_view kReportJs;    // web/report.js
extern const std::string_view kJobGraphJs;  // web/jobgraph.js: the report's Job graph section
// web/timeline.html: `run --http`'s live dashboard, one self-contained page.
extern const std::string_view kTimelineHtml;
// web/waterfall.{html,js}: `report`'s page for span traces (report/waterfall.hpp).
extern const std::string_view kWaterfallHtml;
extern const std::string_view kWaterfallJs;
// web/stages.{html,js}: `report`'s "Tasks per stage" page for Spark logs (report/stages.hpp).
extern const std::string_view kStagesHtml;
extern const std::string_view kStagesJs;
// web/critical_flow.{html,js}: `report`'s "Critical flow" page for kernel traces
// (report/critical_flow.hpp).
extern const std::string_view kCriticalFlowHtml;
extern const std::string_view kCriticalFlowJs;

}  // namespace snailtrail::report::assets
