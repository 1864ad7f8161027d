// The independent reference for multi-rank tests: every rank's input is a function of (rank,
// index), so every rank can compute what every output element must be, in double precision,
// without the library. Inputs are small integers, so sums and products stay exact in every
// type (even half and bfloat16) and the results can be compared exactly, whatever order the
// library reduces in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collective.h"

namespace colltest {

size_t typeSize(collDataType_t type);
const char* typeName(collDataType_t type);
const char* opName(collRedOp_t op);
bool isFloatType(collDataType_t type);

// The input value of element `index` on `rank` for a reduction `op` (sum-like ops use [-2, 2],
// products use {-1, 1, 2} with few factors of 2; unsigned types stay non-negative).
double inputValue(int rank, size_t index, collDataType_t type, collRedOp_t op);

// The exact reduction of inputValue over ranks 0..nranks-1 at `index`, rounded as the type stores it.
double reducedValue(int nranks, size_t index, collDataType_t type, collRedOp_t op);

void storeValue(void* base, size_t index, collDataType_t type, double value);
double loadValue(const void* base, size_t index, collDataType_t type);

// Fills [0, bytes) with a byte pattern no test value has.
void poison(void* base, size_t bytes);
bool isPoisoned(const void* base, size_t bytes);

// Compares element `index` of `base` with `expected` (avg on float types allows one unit in the
// last place: the library divides in float, the reference in double).
bool valueMatches(const void* base, size_t index, collDataType_t type, collRedOp_t op, double expected);

}  // namespace colltest
