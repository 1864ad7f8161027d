#include "perf_data.h"

#include <algorithm>

namespace collperf {

Pattern patternFor(bool hasOp, collRedOp_t op) {
  if (!hasOp) return Pattern::kWide;
  switch (op) {
    case collSum:
    case collAvg:
      return Pattern::kSum;
    case collProd:
      return Pattern::kProd;
    default:
      return Pattern::kWide;
  }
}

namespace {

// The exact result of reducing element i over every rank, in 64-bit integer arithmetic (the
// values are small, so nothing overflows); avg is returned as a sum, divided by the caller.
int64_t reduceExact(const DataSpec& s, uint64_t i) {
  int64_t acc = patternValue(s.pattern, 0, i, s.nranks, s.type->isSigned);
  for (int r = 1; r < s.nranks; ++r) {
    int64_t v = patternValue(s.pattern, r, i, s.nranks, s.type->isSigned);
    switch (s.op) {
      case collProd:
        acc *= v;
        break;
      case collMax:
        acc = std::max(acc, v);
        break;
      case collMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  return acc;
}

template <typename T>
bool sameBits(const T& a, const T& b) {
  return memcmp(&a, &b, sizeof(T)) == 0;
}

template <typename T>
size_t countWrongTyped(const DataSpec& s, const T* out, const std::vector<Segment>& segments) {
  const bool isFloat = s.type->isFloat;
  const bool floatAvg = isFloat && s.op == collAvg;
  // avg in floating point: the library may divide the sum or pre-multiply by 1/nranks, so allow
  // a few roundings of the largest input magnitude (4) per rank.
  const double tolerance = 4.0 * (s.nranks + 1) * s.type->unitRoundoff * 4.0;
  size_t wrong = 0;
  for (const Segment& seg : segments) {
    for (size_t j = 0; j < seg.length; ++j) {
      uint64_t src = seg.srcOffset + j;
      const T& got = out[seg.offset + j];
      if (seg.srcRank != kAllRanks) {
        T want = Codec<T>::fromInt(patternValue(s.pattern, seg.srcRank, src, s.nranks, s.type->isSigned));
        if (!sameBits(got, want)) ++wrong;
        continue;
      }
      int64_t exact = reduceExact(s, src);
      if (floatAvg) {
        double want = static_cast<double>(exact) / s.nranks;
        double g = Codec<T>::toDouble(got);
        if (!(std::fabs(g - want) <= tolerance)) ++wrong;
        continue;
      }
      if (s.op == collAvg) exact /= s.nranks;  // integers: C division of the exact sum
      T want = Codec<T>::fromInt(exact);
      // Compare floating-point values by value, so that -0 and +0 are equal.
      bool ok = isFloat ? Codec<T>::toDouble(got) == Codec<T>::toDouble(want) : sameBits(got, want);
      if (!ok) ++wrong;
    }
  }
  return wrong;
}

}  // namespace

void fillInput(const DataSpec& s, void* buf, size_t count) {
  withType(s.type->type, [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(buf);
    for (size_t i = 0; i < count; ++i) {
      p[i] = Codec<T>::fromInt(patternValue(s.pattern, s.rank, i, s.nranks, s.type->isSigned));
    }
    return 0;
  });
}

void fillPoison(const TypeInfo& type, void* buf, size_t count) {
  withType(type.type, [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(buf);
    std::fill(p, p + count, Codec<T>::poison());
    return 0;
  });
}

size_t countWrong(const DataSpec& s, const void* buf, const std::vector<Segment>& segments) {
  return withType(s.type->type, [&](auto zero) {
    using T = decltype(zero);
    return countWrongTyped(s, static_cast<const T*>(buf), segments);
  });
}

}  // namespace collperf
