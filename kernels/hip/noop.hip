// noop: an empty dispatch (one block); measures launch overhead.
#include "common.h"

extern "C" __global__ void greta_noop() {}

// Not an op: holds the stream for about `cycles` GPU clock cycles (one
// thread spinning on the clock). The runtime launches it before a timed
// batch of noops, so the batch is queued in full while this runs and the
// events around the batch time the GPU's dispatches, not the host's
// enqueueing (Vulkan records the batch in one command buffer for the same
// reason).
extern "C" __global__ void greta_noop_hold(uint32_t cycles) {
    const long long start = clock64();
    while (clock64() - start < (long long)cycles) {
    }
}
