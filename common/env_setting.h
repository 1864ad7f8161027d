// Reading one COLL_* variable: one grammar and one message for a bad value wherever the variable
// is read (src/params.cc for the core's variables, each transport's folder for its own), so that
// a setting moved between layers is refused in the same words.
#pragma once

namespace coll {

// Set, and not to the empty string (which means unset, as for every variable here).
bool envIsSet(const char* name);
// An integer in [minValue, maxValue], with an optional k/K or m/M suffix; `fallback` when unset.
// Throws CollError(collInvalidUsage) naming the variable, its value and the range.
long long envInteger(const char* name, long long minValue, long long maxValue, long long fallback);
// 1/true/yes/on or 0/false/no/off, any case; `fallback` when unset. Throws like envInteger.
bool envBool(const char* name, bool fallback);

}  // namespace coll
