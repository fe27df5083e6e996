#include "scale/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace snailtrail::scale {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

// A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten.
double nice_max(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

// The plot's geometry: rates above, parallelism below, over the run's time.
struct Frame {
  double W = 720, H = 440, left = 70, right = 140, top = 40, gap = 40;
  double pw = W - left - right, ph = (H - top - gap - 40) / 2;
  double y1 = top, y2 = top + ph + gap;
  double t_end = 1, rate_max = 0, par_top = 1;
  double X(double t) const { return left + pw * t / t_end; }
  double Yr(double r) const { return y1 + ph - ph * r / rate_max; }
  double Yp(double p) const { return y2 + ph - ph * p / par_top; }
};

Frame frame_of(const ControlledRun& run) {
  Frame f;
  uint32_t par_max = 1;
  for (const TimelinePoint& p : run.timeline) {
    f.t_end = std::max(f.t_end, p.time_s);
    f.rate_max = std::max({f.rate_max, p.source_rate, p.target_rate});
    for (uint32_t x : p.parallelism) par_max = std::max(par_max, x);
  }
  f.rate_max = nice_max(f.rate_max * 1.05);
  f.par_top = nice_max(par_max * 1.1);
  return f;
}

// Axes, grid and labels.
void axes(std::string& s, const Frame& f) {
  const double left = f.left, pw = f.pw, ph = f.ph, y1 = f.y1, y2 = f.y2;
  for (int i = 0; i <= 4; ++i) {
    const double r = f.rate_max * i / 4, p = f.par_top * i / 4;
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:.6g}</text>\n"
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{6:.1f}\" y2=\"{6:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{7:.1f}\" text-anchor=\"end\">{8:.6g}</text>\n",
        left, left + pw, f.Yr(r), left - 5, f.Yr(r) + 4, r, f.Yp(p), f.Yp(p) + 4, p);
  }
  for (int i = 0; i <= 6; ++i) {
    const double t = f.t_end * i / 6;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:.0f} s</text>\n",
                     f.X(t), y2 + ph + 16, t);
  }
  s += fmt::format(
      "<text x=\"{}\" y=\"{}\" transform=\"rotate(-90 {} {})\" text-anchor=\"middle\">records/s"
      "</text>\n<text x=\"{}\" y=\"{}\" transform=\"rotate(-90 {} {})\" "
      "text-anchor=\"middle\">instances</text>\n",
      14, y1 + ph / 2, 14, y1 + ph / 2, 14, y2 + ph / 2, 14, y2 + ph / 2);
}

// Decisions (vertical lines at the halt, shaded pause), then each interval's rates and
// parallelism held over the interval.
void series(std::string& s, const Frame& f, const ControlledRun& run) {
  for (const DecisionRecord& d : run.decisions)
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"#f2f2f2\"/>"
        "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#999\" "
        "stroke-dasharray=\"3,3\"/>\n",
        f.X(d.time_s), f.y1, std::max(0.0, f.X(d.effective_s) - f.X(d.time_s)), f.y2 + f.ph - f.y1,
        f.X(d.time_s), f.X(d.time_s), f.y1, f.y2 + f.ph);
  auto steps = [&](auto value, auto ymap) {
    std::string pts = fmt::format("{:.1f},{:.1f}", f.X(0), ymap(value(run.timeline.front())));
    double t0 = 0;
    for (const TimelinePoint& p : run.timeline) {
      pts += fmt::format(" {:.1f},{:.1f} {:.1f},{:.1f}", f.X(t0), ymap(value(p)), f.X(p.time_s),
                         ymap(value(p)));
      t0 = p.time_s;
    }
    return pts;
  };
  if (run.timeline.empty()) return;
  auto Yr = [&](double r) { return f.Yr(r); };
  auto Yp = [&](double p) { return f.Yp(p); };
  s += fmt::format(
      "<polyline fill=\"none\" stroke=\"#333\" stroke-dasharray=\"6,3\" points=\"{}\"/>\n",
      steps([](const TimelinePoint& p) { return p.target_rate; }, Yr));
  s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                   kColors[0], steps([](const TimelinePoint& p) { return p.source_rate; }, Yr));
  for (size_t op = 0; op < run.topology.size(); ++op)
    s += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
        kColors[(op + 1) % 8],
        steps([&](const TimelinePoint& p) { return static_cast<double>(p.parallelism[op]); }, Yp));
}

void legends(std::string& s, const Frame& f, const ControlledRun& run) {
  const double lx = f.left + f.pw + 12, y1 = f.y1;
  s += fmt::format(
      "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#333\" "
      "stroke-dasharray=\"6,3\"/><text x=\"{3}\" y=\"{4}\">target (offered)</text>\n"
      "<line x1=\"{0}\" x2=\"{1}\" y1=\"{5}\" y2=\"{5}\" stroke=\"{6}\" stroke-width=\"2\"/>"
      "<text x=\"{3}\" y=\"{7}\">achieved</text>\n",
      lx, lx + 20, y1 + 10, lx + 25, y1 + 14, y1 + 28, kColors[0], y1 + 32);
  for (size_t op = 0; op < run.topology.size(); ++op) {
    const double y = f.y2 + 10 + 18 * static_cast<double>(op);
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"2\"/>"
        "<text x=\"{4}\" y=\"{5}\">{6}</text>\n",
        lx, lx + 20, y, kColors[(op + 1) % 8], lx + 25, y + 4, escape(run.topology.names[op]));
  }
}

}  // namespace

std::string timeline_svg(const ControlledRun& run, const std::string& title) {
  const Frame f = frame_of(run);
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"13\">{}</text>\n",
      f.W, f.H, f.left, escape(title));
  axes(s, f);
  series(s, f, run);
  legends(s, f, run);
  s += "</svg>\n";
  return s;
}

}  // namespace snailtrail::scale
