// The codebooks of the IQ formats: the grids are compile-time data
// (iq_grids.h, shared with the GPU's kernels).
#include "quant/iq_tables.h"

#include "quant/iq_grids.h"

namespace ember::quant::iq {

const uint64_t* iq2xxs_grid() { return kIQ2XXSGrid.v; }
const uint64_t* iq2xs_grid() { return kIQ2XSGrid.v; }
const uint64_t* iq2s_grid() { return kIQ2SGrid.v; }
const uint32_t* iq3xxs_grid() { return kIQ3XXSGrid.v; }
const uint32_t* iq3s_grid() { return kIQ3SGrid.v; }
const uint64_t* iq1s_grid() { return kIQ1SGrid.v; }

}  // namespace ember::quant::iq
