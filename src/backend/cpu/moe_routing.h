// The routing of one token to its experts, as the CPU backend runs it (and the
// reference the GPU's routing is tested against).
#pragma once
#include <cstdint>

#include "model/descriptor.h"

namespace ember::cpu {

// Picks the n_experts_used experts of one token from its n_experts router
// logits, and their weights, in the descriptor's routing order: ids[j] is the
// j-th choice (ties to the lower index). scores must hold n_experts floats.
void route_token(const ModelDesc& d, const float* logits, int32_t* ids, float* weights, float* scores);

}  // namespace ember::cpu
