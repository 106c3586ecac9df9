// noop: an empty dispatch (one block); measures launch overhead.
#include "common.h"

extern "C" __global__ void greta_noop() {}
