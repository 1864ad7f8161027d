// Fault injection (emu_faults.h): each variable is read once per process, since a test sets it
// before the process first uses the emulator.
#include "emu_faults.h"

#include <cstdlib>
#include <cstring>

namespace verbs_emu {
namespace {

long numberFrom(const char* name, int base = 10) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  long value = std::strtol(text, &end, base);
  return *end == '\0' && value >= 0 ? value : -1;
}

}  // namespace

bool corruptRkey() {
  static const bool on = numberFrom("COLL_VERBS_EMU_CORRUPT_RKEY") == 1;
  return on;
}

long failAfterWrites() {
  static const long n = numberFrom("COLL_VERBS_EMU_FAIL_AFTER");
  return n;
}

long maxMemoryRegions() {
  static const long n = numberFrom("COLL_VERBS_EMU_MAX_MRS");
  return n;
}

uint32_t immediateOr() {
  static const long mask = numberFrom("COLL_VERBS_EMU_IMM_OR", 0);
  return mask > 0 ? static_cast<uint32_t>(mask) : 0;
}

bool delayedQp(int creationIndex) {
  static const long k = numberFrom("COLL_VERBS_EMU_DELAY_QP");
  return (k == 0 || k == 1) && creationIndex % 2 == k;
}

}  // namespace verbs_emu
