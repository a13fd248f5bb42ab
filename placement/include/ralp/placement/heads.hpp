// The placement search's candidate heads on the layer DAG: every suffix of the file order, every
// layer with its descendants, their unions where the DAG branches, and, when the model has few
// enough successor-closed sets, all of them (a bounded enumeration). For a chain they are the
// suffixes. Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "ralp/spec/head.hpp"

namespace ralp::placement {

// All heads are candidates when the model has at most this many.
inline constexpr size_t kAllHeadsLimit = 4096;
// A layer with at most this many successors contributes the union of its successors'
// descendant sets for every subset of two or more of them (at most 2^6 - 7 = 57 unions); one
// with more, for every pair and every subset missing one successor.
inline constexpr size_t kUnionSubsetSuccessors = 6;

// Every head of the model (non-empty proper successor-closed set of layers), each once, or
// nullopt when there are more than `limit`. The enumeration decides the layers from the last to
// the first, a layer joining the set only when all its successors did, so each set is reached
// once and every branch ends in a set: it stops after limit + 1 sets, O(layers x limit) steps.
std::optional<std::vector<Head>> all_heads(const LayerGraph& model, size_t limit = kAllHeadsLimit);

// Whether any layer of the head has parameters. A head without (the loss alone, a softmax and
// the loss) keeps nothing on the parameter server: no cut to offer.
bool holds_parameters(const LayerGraph& model, const Head& head);

// The search's candidates, without duplicates, in this order: the suffixes (cut 1, 2, ...), each
// layer's descendant set (layer order), the unions at branches (layer order), then, when
// all_heads is within its limit, the remaining heads in its order; heads without parameters are
// left out.
std::vector<Head> candidate_heads(const LayerGraph& model);

}  // namespace ralp::placement
