// Candidate heads: closed sets as bitsets, deduplicated in an ordered set.
#include "ralp/placement/heads.hpp"

#include <algorithm>

#include <bit>
#include <cstdint>
#include <set>

namespace ralp::placement {
namespace {

using Bits = std::vector<uint64_t>;
constexpr size_t kWordBits = 64;

Bits empty_bits(size_t n) { return Bits((n + kWordBits - 1) / kWordBits, 0); }
void set_bit(Bits& b, size_t i) { b[i / kWordBits] |= uint64_t{1} << (i % kWordBits); }
bool has_bit(const Bits& b, size_t i) { return (b[i / kWordBits] >> (i % kWordBits)) & 1U; }
void add_bits(Bits& into, const Bits& from) {
  for (size_t w = 0; w < into.size(); ++w) into[w] |= from[w];
}
size_t count_bits(const Bits& b) {
  size_t n = 0;
  for (const uint64_t w : b) n += static_cast<size_t>(std::popcount(w));
  return n;
}

std::vector<std::vector<LayerId>> successor_lists(const LayerGraph& model) {
  std::vector<std::vector<LayerId>> out(model.size());
  for (LayerId id = 0; id < model.size(); ++id) out[id] = model.successors(id);
  return out;
}

// Collects distinct proper non-empty sets in the order they are offered.
class HeadSet {
 public:
  explicit HeadSet(const LayerGraph& model) : model_(model) {}
  void offer(const Bits& bits) {
    const size_t count = count_bits(bits);
    if (count == 0 || count == model_.size()) return;
    if (!seen_.insert(bits).second) return;
    std::vector<LayerId> layers;
    layers.reserve(count);
    for (LayerId id = 0; id < model_.size(); ++id) {
      if (has_bit(bits, id)) layers.push_back(id);
    }
    // A suffix needs no closure check.
    const bool suffix = layers.front() + layers.size() == model_.size();
    heads_.push_back(suffix ? Head::suffix(model_, layers.front())
                            : Head::of_layers(model_, std::move(layers)));
  }
  std::vector<Head> take() { return std::move(heads_); }

 private:
  const LayerGraph& model_;
  std::set<Bits> seen_;
  std::vector<Head> heads_;
};

class Enumeration {
 public:
  Enumeration(const LayerGraph& model, size_t limit)
      : model_(model), successors_(successor_lists(model)), in_(model.size(), 0), limit_(limit) {}

  // Each set's sorted ids, or nullopt past the limit.
  std::optional<std::vector<std::vector<LayerId>>> run() {
    visit(model_.size());
    if (overflow_) return std::nullopt;
    return std::move(sets_);
  }

 private:
  // Decides layer `undecided - 1`; layers above it are decided.
  void visit(size_t undecided) {
    if (overflow_) return;
    if (undecided == 0) {
      record();
      return;
    }
    const LayerId id = undecided - 1;
    bool can_join = true;
    for (const LayerId next : successors_[id]) can_join = can_join && in_[next] != 0;
    if (can_join) {
      in_[id] = 1;
      visit(undecided - 1);
      in_[id] = 0;
    }
    visit(undecided - 1);
  }

  void record() {
    std::vector<LayerId> layers;
    for (LayerId id = 0; id < in_.size(); ++id) {
      if (in_[id] != 0) layers.push_back(id);
    }
    if (layers.empty() || layers.size() == in_.size()) return;
    if (sets_.size() == limit_) {
      overflow_ = true;
      return;
    }
    sets_.push_back(std::move(layers));
  }

  const LayerGraph& model_;
  std::vector<std::vector<LayerId>> successors_;
  std::vector<char> in_;
  size_t limit_;
  bool overflow_ = false;
  std::vector<std::vector<LayerId>> sets_;
};

}  // namespace

std::optional<std::vector<Head>> all_heads(const LayerGraph& model, size_t limit) {
  auto sets = Enumeration(model, limit).run();
  if (!sets) return std::nullopt;
  std::vector<Head> out;
  out.reserve(sets->size());
  for (auto& layers : *sets) out.push_back(Head::of_layers(model, std::move(layers)));
  return out;
}

bool holds_parameters(const LayerGraph& model, const Head& head) {
  return std::any_of(head.layers().begin(), head.layers().end(),
                     [&](LayerId id) { return model.layer(id).params() > 0; });
}

std::vector<Head> candidate_heads(const LayerGraph& model) {
  const size_t n = model.size();
  HeadSet heads(model);
  for (LayerId cut = 1; cut < n; ++cut) {
    Bits b = empty_bits(n);
    for (LayerId id = cut; id < n; ++id) set_bit(b, id);
    heads.offer(b);
  }
  // Descendant sets, from the last layer back: successors have larger ids.
  const std::vector<std::vector<LayerId>> successors = successor_lists(model);
  std::vector<Bits> descendants(n, empty_bits(n));
  for (LayerId id = n; id-- > 0;) {
    set_bit(descendants[id], id);
    for (const LayerId next : successors[id]) add_bits(descendants[id], descendants[next]);
  }
  for (LayerId id = 0; id < n; ++id) heads.offer(descendants[id]);
  for (LayerId id = 0; id < n; ++id) {
    const std::vector<LayerId>& s = successors[id];
    const size_t k = s.size();
    if (k < 2) continue;
    const auto offer_union = [&](const std::vector<size_t>& members) {
      Bits b = empty_bits(n);
      for (const size_t m : members) add_bits(b, descendants[s[m]]);
      heads.offer(b);
    };
    if (k <= kUnionSubsetSuccessors) {
      for (uint32_t mask = 1; mask < (1U << k); ++mask) {
        if (std::popcount(mask) < 2) continue;
        std::vector<size_t> members;
        for (size_t m = 0; m < k; ++m) {
          if ((mask >> m) & 1U) members.push_back(m);
        }
        offer_union(members);
      }
      continue;
    }
    for (size_t a = 0; a < k; ++a) {
      for (size_t b = a + 1; b < k; ++b) offer_union({a, b});
    }
    for (size_t missing = 0; missing < k; ++missing) {
      std::vector<size_t> members;
      for (size_t m = 0; m < k; ++m) {
        if (m != missing) members.push_back(m);
      }
      offer_union(members);
    }
  }
  if (const auto all = Enumeration(model, kAllHeadsLimit).run()) {
    for (const std::vector<LayerId>& layers : *all) {
      Bits b = empty_bits(n);
      for (const LayerId id : layers) set_bit(b, id);
      heads.offer(b);
    }
  }
  std::vector<Head> out;
  for (Head& head : heads.take()) {
    if (holds_parameters(model, head)) out.push_back(std::move(head));
  }
  return out;
}

}  // namespace ralp::placement
