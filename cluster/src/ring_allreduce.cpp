// Fusion negotiation and the ring all-reduce state machine.
#include "ring_allreduce.hpp"

#include <algorithm>
#include <cstring>

#include "ralp/cluster/fusion.hpp"

namespace ralp::cluster {

RingAllreduce::RingAllreduce(StrategyContext& context, SegmentedNetwork& network, int64_t worker)
    : ctx_(context),
      worker_(worker),
      members_(context.workers()),
      threshold_(context.spec.fusion_threshold.value()),
      cycle_(context.spec.cycle_time.value()) {
  // Model order, weight before bias, as the simulator lists a plan's tensors.
  for (SegmentedNetwork::Parameter* p : network.parameters()) {
    tensors_.push_back({p->layer, p, p->gradient->elements(),
                        std::make_unique<HostView>(ctx_.backend, *p->gradient)});
  }
  for (size_t end = tensors_.size(); end > 0;) {
    size_t first = end - 1;
    while (first > 0 && tensors_[first - 1].layer == tensors_[end - 1].layer) --first;
    for (size_t i = first; i < end; ++i) production_order_.push_back(i);
    end = first;
  }
  ready_count_.assign(tensors_.size(), 0);
  plan_.assign(tensors_.size(), -1);
  readiness_in_.resize(static_cast<size_t>(members_));
  readiness_next_.assign(static_cast<size_t>(members_), 0);
  next_tick_ = monotonic_seconds();
}

void RingAllreduce::begin_step(int64_t step) {
  end_step();
  step_ = step;
  reduced_ = 0;
  std::fill(ready_count_.begin(), ready_count_.end(), 0);
  ready_queue_.clear();
  if (members_ == 1) return;
  if (coordinator()) {
    // One readiness message per layer with parameters from every other worker.
    size_t layers = 0;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      layers += i == 0 || tensors_[i - 1].layer != tensors_[i].layer ? 1 : 0;
    }
    for (int64_t w = 1; w < members_; ++w) {
      auto& in = readiness_in_[static_cast<size_t>(w)];
      in.clear();
      readiness_next_[static_cast<size_t>(w)] = 0;
      for (size_t i = 0; i < layers; ++i) {
        in.push_back(
            ctx_.transport.receive(ctx_.roles().worker_rank(w), MessageKind::readiness, step, {}));
      }
    }
  } else {
    post_plan_receive();
  }
}

void RingAllreduce::end_step() {
  ctx_.transport.wait_all(readiness_out_);
  ctx_.transport.wait_all(plan_sends_);
  sent_plans_.clear();
}

void RingAllreduce::post_plan_receive() {
  plan_receive_ = ctx_.transport.receive(ctx_.roles().worker_rank(0), MessageKind::fusion_plan,
                                         step_, {{plan_.data(), plan_.size() * sizeof(int32_t)}});
  plan_pending_ = true;
}

void RingAllreduce::note_ready(size_t tensor) {
  if (++ready_count_[tensor] != members_) return;
  if (ready_queue_.empty()) cycle_start_ = monotonic_seconds();
  ready_queue_.push_back(tensor);
}

void RingAllreduce::produced(LayerId layer) {
  if (members_ == 1) {
    // One worker holds the sum already.
    for (const Gradient& g : tensors_) reduced_ += g.layer == layer ? 1 : 0;
    return;
  }
  if (coordinator()) {
    for (size_t i = 0; i < tensors_.size(); ++i) {
      if (tensors_[i].layer == layer) note_ready(i);
    }
    return;
  }
  PhaseScope sending(ctx_.clock, Phase::send);
  readiness_out_.push_back(ctx_.transport.send(ctx_.roles().worker_rank(0), MessageKind::readiness,
                                               step_, static_cast<int64_t>(layer), {}));
}

bool RingAllreduce::cycle_due() const {
  if (!coordinator() || cycle_in_flight_ || ready_queue_.empty()) return false;
  return monotonic_seconds() >= next_cycle_start(next_tick_, cycle_start_, cycle_);
}

bool RingAllreduce::has_work() {
  const Transport& t = ctx_.transport;
  if (coordinator()) {
    for (int64_t w = 1; w < members_; ++w) {
      const auto& in = readiness_in_[static_cast<size_t>(w)];
      const size_t next = readiness_next_[static_cast<size_t>(w)];
      if (next < in.size() && t.done(in[next])) return true;
    }
    if (cycle_due()) return true;
  } else if (plan_pending_ && t.done(plan_receive_)) {
    return true;
  }
  if (!active_) return !buffers_.empty();
  if (ctx_.allreduce == AllreduceImplementation::mpi) return t.done(phase_receive_);
  return t.done(phase_send_) && t.done(phase_receive_);
}

void RingAllreduce::advance() {
  Transport& t = ctx_.transport;
  while (has_work()) {
    if (coordinator()) {
      // Each worker's readiness messages arrive in its backward order.
      for (int64_t w = 1; w < members_; ++w) {
        auto& in = readiness_in_[static_cast<size_t>(w)];
        size_t& next = readiness_next_[static_cast<size_t>(w)];
        while (next < in.size() && t.done(in[next])) {
          const auto layer = static_cast<LayerId>(t.header(in[next]).item);
          t.release(in[next++]);
          for (size_t i = 0; i < tensors_.size(); ++i) {
            if (tensors_[i].layer == layer) note_ready(i);
          }
        }
      }
      if (cycle_due()) start_cycle();
    } else if (plan_pending_ && t.done(plan_receive_)) {
      take_plan();
    }
    if (!active_) {
      if (!buffers_.empty()) start_buffer();
    } else if (ctx_.allreduce == AllreduceImplementation::mpi) {
      if (t.done(phase_receive_)) {
        t.release(phase_receive_);
        finish_buffer();
      }
    } else if (t.done(phase_send_) && t.done(phase_receive_)) {
      finish_phase();
    }
  }
}

void RingAllreduce::take_plan() {
  ctx_.transport.release(plan_receive_);
  plan_pending_ = false;
  int32_t buffers = 0;
  for (const int32_t b : plan_) buffers = std::max(buffers, b + 1);
  // Every worker produces gradients in the same order, so tensors become ready on all of them in
  // that order too: it is the order the coordinator fused them in.
  for (int32_t b = 0; b < buffers; ++b) {
    Buffer buffer;
    for (const size_t i : production_order_) {
      if (plan_[i] != b) continue;
      buffer.tensors.push_back(i);
      buffer.elements += tensors_[i].elements;
    }
    buffers_.push_back(std::move(buffer));
  }
  size_t announced = reduced_;
  for (const Buffer& b : buffers_) announced += b.tensors.size();
  if (announced < tensors_.size()) post_plan_receive();
}

void RingAllreduce::start_cycle() {
  Transport& t = ctx_.transport;
  tick_ = monotonic_seconds();
  std::vector<int64_t> bytes;
  for (const size_t i : ready_queue_) {
    bytes.push_back(tensors_[i].elements * static_cast<int64_t>(sizeof(float)));
  }
  std::fill(plan_.begin(), plan_.end(), -1);
  const auto fused = fuse_tensors(bytes, threshold_);
  for (size_t b = 0; b < fused.size(); ++b) {
    Buffer buffer;
    for (const size_t position : fused[b]) {
      const size_t i = ready_queue_[position];
      plan_[i] = static_cast<int32_t>(b);
      buffer.tensors.push_back(i);
      buffer.elements += tensors_[i].elements;
    }
    buffers_.push_back(std::move(buffer));
  }
  ready_queue_.clear();
  cycle_in_flight_ = true;
  cycle_buffers_left_ = fused.size();
  ++cycles_;
  PhaseScope sending(ctx_.clock, Phase::send);
  sent_plans_.push_back(plan_);
  std::vector<int32_t>& sent = sent_plans_.back();
  for (int64_t w = 1; w < members_; ++w) {
    plan_sends_.push_back(t.send(ctx_.roles().worker_rank(w), MessageKind::fusion_plan, step_,
                                 cycles_, {{sent.data(), sent.size() * sizeof(int32_t)}}));
  }
}

void RingAllreduce::start_buffer() {
  const Buffer& buffer = buffers_.front();
  ctx_.faults.at("ring", step_);
  active_ = true;
  {
    PhaseScope packing(ctx_.clock, Phase::aggregation);
    fused_.resize(static_cast<size_t>(buffer.elements));
    size_t offset = 0;
    for (const size_t i : buffer.tensors) {
      Gradient& g = tensors_[i];
      g.view->download();
      std::memcpy(fused_.data() + offset, g.view->data(),
                  static_cast<size_t>(g.elements) * sizeof(float));
      offset += static_cast<size_t>(g.elements);
    }
  }
  if (ctx_.allreduce == AllreduceImplementation::mpi) {
    PhaseScope sending(ctx_.clock, Phase::send);
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(MPI_IN_PLACE, fused_.data(), static_cast<int>(buffer.elements), MPI_FLOAT,
                   MPI_SUM, ctx_.workers_comm, &request);
    phase_receive_ = ctx_.transport.track(request, MessageKind::ring, step_);
    // Counted as a ring would move them; the library's algorithm may move more or less.
    const double chunk =
        static_cast<double>((buffer.elements + members_ - 1) / members_) * sizeof(float);
    const double bytes = 2.0 * static_cast<double>(members_ - 1) * chunk;
    ctx_.transport.count(step_, bytes, bytes);
    return;
  }
  phase_ = 0;
  post_phase();
}

void RingAllreduce::post_phase() {
  Transport& t = ctx_.transport;
  const Roles& roles = ctx_.roles();
  const int64_t elements = buffers_.front().elements;
  const RingPhase p = ring_phase(worker_, members_, phase_);
  const ChunkRange out = chunk_range(elements, members_, p.send_chunk);
  const ChunkRange in = chunk_range(elements, members_, p.receive_chunk);
  PhaseScope sending(ctx_.clock, Phase::send);
  float* landing = fused_.data() + in.begin;
  if (p.reduce) {
    incoming_.resize(static_cast<size_t>(in.size()));
    landing = incoming_.data();
  }
  const int previous = roles.worker_rank((worker_ + members_ - 1) % members_);
  const int next = roles.worker_rank((worker_ + 1) % members_);
  phase_receive_ = t.receive(previous, MessageKind::ring, step_,
                             {{landing, static_cast<size_t>(in.size()) * sizeof(float)}});
  phase_send_ =
      t.send(next, MessageKind::ring, step_, phase_,
             {{fused_.data() + out.begin, static_cast<size_t>(out.size()) * sizeof(float)}});
}

void RingAllreduce::finish_phase() {
  Transport& t = ctx_.transport;
  t.release(phase_send_);
  t.release(phase_receive_);
  const RingPhase p = ring_phase(worker_, members_, phase_);
  if (p.reduce) {
    PhaseScope reducing(ctx_.clock, Phase::aggregation);
    const ChunkRange in = chunk_range(buffers_.front().elements, members_, p.receive_chunk);
    float* own = fused_.data() + in.begin;
    for (int64_t i = 0; i < in.size(); ++i) own[i] += incoming_[static_cast<size_t>(i)];
  }
  if (++phase_ < 2 * (members_ - 1)) {
    post_phase();
  } else {
    finish_buffer();
  }
}

void RingAllreduce::finish_buffer() {
  const Buffer& buffer = buffers_.front();
  {
    PhaseScope unpacking(ctx_.clock, Phase::aggregation);
    size_t offset = 0;
    for (const size_t i : buffer.tensors) {
      Gradient& g = tensors_[i];
      std::memcpy(g.view->data(), fused_.data() + offset,
                  static_cast<size_t>(g.elements) * sizeof(float));
      g.view->upload();
      offset += static_cast<size_t>(g.elements);
    }
  }
  reduced_ += buffer.tensors.size();
  buffers_.pop_front();
  active_ = false;
  if (coordinator() && cycle_in_flight_ && --cycle_buffers_left_ == 0) {
    // The next cycle starts a cycle time after this one began, or now if it ran longer.
    cycle_in_flight_ = false;
    next_tick_ = std::max(tick_ + cycle_, monotonic_seconds());
  }
}

}  // namespace ralp::cluster
