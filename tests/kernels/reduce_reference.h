// A scalar reference for reduceCopy, written straight from the contract in kernels/cpu/reduce.h
// and independent of the kernels' code: integers wrap (computed modulo 2^64, then truncated) and
// avg is C division of the wrapped sum; float and double combine in their own type from the
// first source to the last; half and bfloat16 combine in float and round once per result.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "collective.h"
#include "kernels/cpu/half.h"

namespace coll {
namespace kernels {
namespace testing {

enum class Kind { Int, Float, Half, Bf16 };

// Small deterministic generator (splitmix64): the tests draw millions of values.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform integer in [lo, hi].
  int range(int lo, int hi) { return lo + int(next() % uint64_t(hi - lo + 1)); }
  // Uniform in [-1, 1).
  double unit() { return double(next() >> 11) * 0x1p-52 - 1.0; }

 private:
  uint64_t state_;
};

template <typename S, Kind K>
struct Ref {
  using Storage = S;
  using Compute = std::conditional_t<K == Kind::Half || K == Kind::Bf16, float, S>;
  static constexpr Kind kKind = K;

  static Compute widen(S s) {
    if constexpr (K == Kind::Half) {
      return halfToFloat(s);
    } else if constexpr (K == Kind::Bf16) {
      return bfloat16ToFloat(s);
    } else {
      return s;
    }
  }
  static S narrow(Compute c) {
    if constexpr (K == Kind::Half) {
      return floatToHalf(c);
    } else if constexpr (K == Kind::Bf16) {
      return floatToBfloat16(c);
    } else {
      return c;
    }
  }

  static Compute combine(collRedOp_t op, Compute a, Compute b) {
    if constexpr (K == Kind::Int) {
      using U = std::make_unsigned_t<S>;
      const uint64_t x = uint64_t(a), y = uint64_t(b);
      switch (op) {
        case collProd: return S(U(x * y));
        case collMax: return b > a ? b : a;
        case collMin: return b < a ? b : a;
        default: return S(U(x + y));
      }
    } else {
      const Compute nan = std::numeric_limits<Compute>::quiet_NaN();
      switch (op) {
        case collProd: return a * b;
        case collMax: return std::isnan(a) || std::isnan(b) ? nan : (b > a ? b : a);
        case collMin: return std::isnan(a) || std::isnan(b) ? nan : (b < a ? b : a);
        default: return a + b;
      }
    }
  }

  static Compute divide(Compute x, int d) {
    if constexpr (K != Kind::Int) {
      return x / Compute(d);
    } else if constexpr (std::is_signed_v<S>) {
      return S(int64_t(x) / int64_t(d));
    } else {
      return S(uint64_t(x) / uint64_t(d));
    }
  }

  // out[i] for i < count.
  static void reduce(collRedOp_t op, const std::vector<std::vector<S>>& srcs, size_t count, int divisor,
                     std::vector<S>* out) {
    out->resize(count);
    for (size_t i = 0; i < count; ++i) {
      Compute acc = widen(srcs[0][i]);
      for (size_t s = 1; s < srcs.size(); ++s) acc = combine(op, acc, widen(srcs[s][i]));
      if (op == collAvg && divisor > 0) acc = divide(acc, divisor);
      (*out)[i] = narrow(acc);
    }
  }

  static bool isNan(S s) {
    if constexpr (K == Kind::Int) {
      return false;
    } else {
      return std::isnan(widen(s));
    }
  }
  // Bit-exact, except that any NaN matches any NaN (the payload is not part of the contract).
  static bool same(S x, S y) { return std::memcmp(&x, &y, sizeof(S)) == 0 || (isNan(x) && isNan(y)); }

  // Integers: any bit pattern (exercises wrapping). Floating types: small integers, so that every
  // sum and product in the tests is exact and the result does not depend on evaluation order.
  static S smallValue(Rng& rng, collRedOp_t op) {
    if constexpr (K == Kind::Int) {
      return S(rng.next());
    } else {
      const int v = op == collProd ? rng.range(-2, 2) : rng.range(-8, 8);
      return narrow(Compute(v));
    }
  }
  // Finite values with full mantissas, for the bit-exact same-order comparison. Factors stay
  // near 1 so that products of many sources stay finite.
  static S randomValue(Rng& rng, collRedOp_t op) {
    if constexpr (K == Kind::Int) {
      return S(rng.next());
    } else {
      return narrow(Compute(op == collProd ? 1.0 + 0.5 * rng.unit() : 100.0 * rng.unit()));
    }
  }
};

// Calls f(Ref<...>{}) for the reference matching type.
template <class F>
void withReference(collDataType_t type, F&& f) {
  switch (type) {
    case collInt8: return f(Ref<int8_t, Kind::Int>{});
    case collUint8: return f(Ref<uint8_t, Kind::Int>{});
    case collInt32: return f(Ref<int32_t, Kind::Int>{});
    case collUint32: return f(Ref<uint32_t, Kind::Int>{});
    case collInt64: return f(Ref<int64_t, Kind::Int>{});
    case collUint64: return f(Ref<uint64_t, Kind::Int>{});
    case collFloat16: return f(Ref<uint16_t, Kind::Half>{});
    case collFloat32: return f(Ref<float, Kind::Float>{});
    case collFloat64: return f(Ref<double, Kind::Float>{});
    case collBfloat16: return f(Ref<uint16_t, Kind::Bf16>{});
    default: return;
  }
}

}  // namespace testing
}  // namespace kernels
}  // namespace coll
