#include "scale/control_loop.hpp"

#include "scale/ds2_files.hpp"

namespace snailtrail::scale {

uint32_t run_control_loop(ObservationSource& source, const LoopHooks& hooks) {
  Controller* controller = nullptr;
  std::vector<double> per_instance;
  auto start = [&] {
    per_instance.clear();
    if (hooks.source_rates) per_instance = hooks.source_rates(source.topology());
    controller = &hooks.controller(source.topology());
  };
  if (source.topology().size() > 0) start();
  uint32_t decisions = 0;
  while (std::optional<SourceInterval> in = source.next()) {
    if (source.restarted() || !controller) start();
    Observation& o = in->observation;
    if (o.source_target.empty()) o.source_target = total_source_rates(per_instance, o.parallelism);
    if (hooks.on_interval) hooks.on_interval(*in);
    if (!in->decide) continue;
    std::optional<Action> action = controller->observe(o);
    if (!action || !source.deploy(*action, *in)) continue;
    ++decisions;
    if (hooks.on_decision && !hooks.on_decision(*action, *in)) break;
  }
  return decisions;
}

}  // namespace snailtrail::scale
