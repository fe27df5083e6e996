// Names of interrupt contexts (irq_context.hpp).
#include "kernel/irq_context.hpp"

#include <array>

namespace snailtrail::kernel {

std::string_view softirq_name(int32_t vec) {
  // include/linux/interrupt.h, enum { HI_SOFTIRQ = 0, ... RCU_SOFTIRQ }.
  static constexpr std::array<std::string_view, 10> kNames = {
      "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"};
  return vec >= 0 && vec < static_cast<int32_t>(kNames.size()) ? kNames[vec] : "";
}

std::string irq_label(const StringTable& strings, const IrqContext& c) {
  switch (c.kind) {
    case IrqKind::none:
      return "";
    case IrqKind::irq: {
      std::string s = "irq " + std::to_string(c.num);
      if (c.name != 0 && c.name < strings.size()) s += " (" + strings.str(c.name) + ")";
      return s;
    }
    case IrqKind::softirq: {
      const std::string_view n = softirq_name(c.num);
      return "softirq " + (n.empty() ? std::to_string(c.num) : std::string(n));
    }
    case IrqKind::hrtimer:
      return "hrtimer";
  }
  return "";
}

}  // namespace snailtrail::kernel
