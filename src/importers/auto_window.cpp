#include "importers/auto_window.hpp"

#include "importers/importer.hpp"

namespace snailtrail::importers {

AutoWindow choose_auto_window(std::string_view importer) {
  AutoWindow w;
  const Importer* imp = importer.empty() ? nullptr : find_importer(importer);
  if (imp && imp->whole_window) {  // inputs that end: the whole run's critical path
    w.whole = true;
    w.label = "whole";
    w.reason = std::string(imp->window_reason);
    return w;
  }
  w.width_ns = kAutoStreamWindowNs;
  w.label = "1s";
  if (imp && !imp->window_reason.empty())
    w.reason = std::string(imp->window_reason);
  else if (importer.empty())
    w.reason = "an unknown kind of trace is read as a stream";
  else
    w.reason = "a " + std::string(importer) + " trace is a stream";
  return w;
}

}  // namespace snailtrail::importers
