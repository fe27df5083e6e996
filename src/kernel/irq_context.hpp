// The interrupt context a wake-up came from (the innermost one on the waking CPU), so
// that a wait names its IRQ or softirq as Trace Compass's critical path does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernel/kernel_event.hpp"

namespace snailtrail::kernel {

enum class IrqKind : uint8_t { none, irq, softirq, hrtimer };

struct IrqContext {
  IrqKind kind = IrqKind::none;
  int32_t num = -1;   // irq: the IRQ number; softirq: the vector
  uint32_t name = 0;  // irq: irq_handler_entry's `name` (string id), 0 = not traced
  bool operator==(const IrqContext&) const = default;
};

// The kernel's name of a softirq vector (HI, TIMER, NET_TX, ... RCU), "" if unknown.
std::string_view softirq_name(int32_t vec);

// "irq 16 (ahci)", "irq 16", "softirq NET_RX", "softirq 12", "hrtimer"; "" for none.
std::string irq_label(const StringTable& strings, const IrqContext& c);

}  // namespace snailtrail::kernel
