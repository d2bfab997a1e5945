#include "schedules/detail.h"

#include <algorithm>
#include <utility>

#include "common/model/precision.h"
#include "common/strings.h"

namespace tawpipe::schedules::detail {

Expected<Context> make_context(std::string method, const ScheduleInput& input,
                               std::int64_t (*workers)(std::int32_t world, std::int32_t dp)) {
  Context ctx;
  ctx.input = &input;
  ctx.method = std::move(method);
  const std::string& m = ctx.method;
  if (input.node_of_rank.empty()) return make_error(m + ": the topology has no ranks");
  if (input.node_of_rank.size() > 1u << 24) return make_error(m + ": too many ranks");
  ctx.world = static_cast<std::int32_t>(input.node_of_rank.size());
  if (Status s = model::validate(input.model); !s.ok()) {
    return make_error(m + ": model '" + input.model.name + "': " + s.error().message);
  }
  if (input.model.layers > (1 << 20)) return make_error(m + ": too many layers");
  if (input.dp <= 0 || ctx.world % input.dp != 0) {
    return make_error(m + ": dp=" + std::to_string(input.dp) + " does not divide the " +
                      std::to_string(ctx.world) +
                      " ranks; valid dp: " + join_numbers(divisors(ctx.world)));
  }
  ctx.dp = input.dp;
  ctx.replica_ranks = ctx.world / ctx.dp;
  ctx.stored_ranks = input.replica_only && ctx.dp > 1 ? ctx.replica_ranks : 0;
  ctx.layers = static_cast<std::int32_t>(input.model.layers);
  const model::ParamCounts counts = model::param_counts(input.model);
  ctx.layer_params = counts.per_layer;
  ctx.embedding_params = counts.total - counts.decoder;
  ctx.weight_bytes = model::dtype_bytes(input.train.compute_dtype);
  ctx.shape = input.train.shape();
  auto batch = model::resolve_batch(input.train, workers(ctx.world, ctx.dp));
  if (!batch.ok()) return make_error(m + ": " + batch.error().message);
  ctx.batch = *batch;
  if (ctx.batch.micro_batches <= 0) return make_error(m + ": needs at least one micro-batch");
  if (ctx.batch.micro_batches * ctx.world > (std::int64_t{1} << 30)) {
    return make_error(m + ": too many micro-batches for 32-bit sample ids");
  }
  ctx.activation_bytes = static_cast<std::uint64_t>(
      model::activation_bytes_per_token_boundary(input.model, ctx.weight_bytes) *
      ctx.shape.tokens());
  return ctx;
}

Status check_options(const Context& ctx, std::initializer_list<std::string_view> known) {
  std::vector<std::string> names(known.begin(), known.end());
  for (const auto& [key, value] : ctx.input->options) {
    if (std::find(names.begin(), names.end(), key) == names.end()) {
      return make_error(
          ctx.method + ": unknown option '" + key + "'" + did_you_mean(key, names) +
          (names.empty() ? "; this method takes no options" : "; known: " + join(names, ", ")));
    }
  }
  return Status::success();
}

std::string option(const Context& ctx, std::string_view key, std::string_view fallback) {
  auto it = ctx.input->options.find(std::string(key));
  return it == ctx.input->options.end() ? std::string(fallback) : it->second;
}

Expected<bool> on_off_option(const Context& ctx, std::string_view key, bool fallback) {
  const std::string v = option(ctx, key, fallback ? "on" : "off");
  if (v == "on") return true;
  if (v == "off") return false;
  return make_error(ctx.method + ": option " + std::string(key) + "=" + v +
                    " must be 'on' or 'off'");
}

ir::Header make_header(const Context& ctx, std::string_view recompute) {
  const ScheduleInput& in = *ctx.input;
  ir::Header h;
  h.schedule = ctx.method;
  h.options = in.options;
  if (ctx.dp != 1) h.options["dp"] = std::to_string(ctx.dp);
  h.model = in.model.name;
  h.layers = ctx.layers;
  h.model_params = static_cast<std::uint64_t>(model::param_counts(in.model).total);
  h.seq_len = static_cast<std::int32_t>(in.train.seq_len);
  h.micro_batch_size = static_cast<std::int32_t>(ctx.batch.micro_batch_size);
  h.micro_batches = static_cast<std::int32_t>(ctx.batch.micro_batches);
  h.global_batch = ctx.batch.global_batch;
  h.dtype = std::string(model::to_string(in.train.compute_dtype));
  h.recompute = std::string(recompute);
  h.topology = in.topology_name;
  h.topology_hash = in.topology_hash;
  h.placement.resize(static_cast<std::size_t>(ctx.world));
  for (std::int32_t r = 0; r < ctx.world; ++r)
    h.placement[static_cast<std::size_t>(r)] = r;
  return h;
}

ir::Cost to_ir(const model::OpCost& cost, const model::OpCost& recompute,
               std::uint64_t workspace_bytes) {
  const model::OpCost all = cost + recompute;
  ir::Cost c;
  c.flops = {all.gemm_flops, all.attention_flops, all.elementwise_flops};
  c.bytes = {all.gemm_bytes, all.attention_bytes, all.elementwise_bytes};
  c.recompute_flops = recompute.total_flops();
  c.workspace_bytes = workspace_bytes;
  // Execution order: the replayed forward kernels, then the op's own.
  c.kernels = recompute.kernels;
  c.kernels.insert(c.kernels.end(), cost.kernels.begin(), cost.kernels.end());
  return c;
}

ir::Cost head_cost(const Context& ctx) {
  const model::ModelConfig& mc = ctx.input->model;
  return to_ir(model::head_forward_cost(mc, ctx.shape) + model::head_backward_cost(mc, ctx.shape),
               {},
               static_cast<std::uint64_t>(
                   model::head_working_set_bytes(mc, ctx.shape, ctx.input->train.loss_kernel)));
}

ir::Cost accumulate_cost(std::int64_t elements, std::int64_t element_bytes) {
  // One add kernel: reads both operands, writes the sum.
  return to_ir(model::cost_of(model::accumulate_kernels(elements, element_bytes)));
}

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

std::string join_numbers(const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(values[i]);
  }
  return out;
}

ir::TensorRef weights_ref(std::int32_t begin, std::int32_t end, std::int32_t piece,
                          std::int32_t pieces) {
  ir::TensorRef t;
  t.kind = ir::TensorKind::weights;
  t.layer_begin = begin;
  t.layer_end = end;
  t.piece = piece;
  t.pieces = pieces;
  return t;
}

ir::TensorRef embedding_ref(std::int32_t piece, std::int32_t pieces) {
  return weights_ref(ir::kEmbeddingLayer, 0, piece, pieces);
}

Emitter::Emitter(ir::Header header, std::int32_t ranks, std::int32_t stored_ranks)
    : b_(std::move(header), ranks, stored_ranks),
      last_free_(static_cast<std::size_t>(stored_ranks > 0 ? stored_ranks : ranks)) {}

ir::BufferId Emitter::buffer(ir::Rank rank, std::string name, std::uint64_t bytes,
                             ir::BufferRole role, bool persistent, ir::TensorRef initial) {
  const ir::BufferId id = b_.buffer(rank, std::move(name), Bytes(bytes), role, persistent, initial);
  if (!b_.stored(rank)) return id;
  // Ids come one at a time: push_back, not resize(id + 1) (a fill-insert call per buffer, ~1 %
  // of generating a 1F1B probe).
  auto& frees = last_free_[static_cast<std::size_t>(rank)];
  while (frees.size() <= static_cast<std::size_t>(id))
    frees.push_back(ir::kNone);
  return id;
}

// One buffer: straight to the span forms below (the most common ops of the pipeline
// generators; the initializer-list forms add a layer).
ir::OpIndex Emitter::alloc(ir::Rank rank, ir::StreamId stream, ir::BufferId buf, Deps deps) {
  return alloc(rank, stream, std::span<const ir::BufferId>(&buf, 1), deps);
}

ir::OpIndex Emitter::free(ir::Rank rank, ir::StreamId stream, ir::BufferId buf, Deps deps) {
  return free(rank, stream, std::span<const ir::BufferId>(&buf, 1), deps);
}

ir::OpIndex Emitter::alloc(ir::Rank rank, ir::StreamId stream,
                           std::initializer_list<ir::BufferId> bufs, Deps deps) {
  return alloc(rank, stream, std::span<const ir::BufferId>(bufs.begin(), bufs.size()), deps);
}

ir::OpIndex Emitter::free(ir::Rank rank, ir::StreamId stream,
                          std::initializer_list<ir::BufferId> bufs, Deps deps) {
  return free(rank, stream, std::span<const ir::BufferId>(bufs.begin(), bufs.size()), deps);
}

ir::OpIndex Emitter::alloc(ir::Rank rank, ir::StreamId stream, std::span<const ir::BufferId> bufs,
                           Deps deps) {
  if (!b_.stored(rank)) return b_.alloc(rank, stream, bufs, deps.span());  // only counted
  for (ir::BufferId buf : bufs)
    deps.add(last_free_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(buf)]);
  return b_.alloc(rank, stream, bufs, deps.span());
}

ir::OpIndex Emitter::free(ir::Rank rank, ir::StreamId stream, std::span<const ir::BufferId> bufs,
                          Deps deps) {
  const ir::OpIndex op = b_.free(rank, stream, bufs, deps.span());
  if (!b_.stored(rank)) return op;  // only counted
  for (ir::BufferId buf : bufs)
    last_free_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(buf)] = op;
  return op;
}

Owned declare_owned(Emitter& e, ir::Rank rank, const std::string& prefix, ir::TensorRef block,
                    std::int64_t params, std::int64_t weight_bytes_per_param,
                    std::int64_t grad_bytes_per_param) {
  Owned o;
  o.layer_begin = block.layer_begin;
  o.layer_end = block.layer_end;
  o.params = params;
  o.weight_bytes = static_cast<std::uint64_t>(params * weight_bytes_per_param);
  o.grad_bytes = static_cast<std::uint64_t>(params * grad_bytes_per_param);
  const auto n = static_cast<std::uint64_t>(params);
  o.weights = e.buffer(rank, "w." + prefix, o.weight_bytes, ir::BufferRole::weights, true, block);
  o.master = e.buffer(rank, "master." + prefix, 4 * n, ir::BufferRole::master_weights, true, block);
  o.state = e.buffer(rank, "adam." + prefix, 8 * n, ir::BufferRole::optimizer_state, true);
  o.grad = e.buffer(rank, "grad." + prefix, o.grad_bytes, ir::BufferRole::gradient, true);
  return o;
}

ir::OpIndex emit_optimizer(Emitter& e, ir::Rank rank, ir::StreamId stream, const Owned& block,
                           std::int64_t compute_dtype_bytes, Deps deps) {
  const ir::CostId cost =
      e.cost(to_ir(model::optimizer_step_cost(block.params, compute_dtype_bytes)));
  return e.builder().compute(rank, stream, ir::ComputeKind::optimizer, block.layer_begin,
                             block.layer_end, ir::kNone, cost, {block.grad, block.state},
                             {block.weights, block.master, block.state}, deps.span());
}

ir::CommId replica_peers(Emitter& e, const Context& ctx, std::int32_t replica_size,
                         std::int32_t local, const std::string& prefix) {
  std::vector<ir::Rank> peers;
  peers.reserve(static_cast<std::size_t>(ctx.dp));
  for (std::int32_t d = 0; d < ctx.dp; ++d)
    peers.push_back(d * replica_size + local);
  return e.builder().communicator(prefix + std::to_string(local), std::move(peers));
}

ir::OpIndex all_reduce_grad(Emitter& e, ir::Rank rank, ir::StreamId stream, ir::CommId comm,
                            const Owned& block, Deps deps) {
  return e.builder().collective(rank, stream, ir::CollectiveKind::all_reduce, comm, ir::kNone,
                                Bytes(block.grad_bytes), block.grad, block.grad, deps.span());
}

}  // namespace tawpipe::schedules::detail
