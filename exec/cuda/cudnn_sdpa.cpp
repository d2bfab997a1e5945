// cuDNN fused SDPA through the backend API: the graph of exec/device/sdpa_graph.h becomes one
// backend descriptor per tensor and operation, an operation graph, heuristics (mode A, then the
// fallback list), and the first engine configuration whose execution plan finalises. Plans are
// cached per key; at run time a variant pack binds the launch's pointers.
#include "exec/cuda/cudnn_sdpa.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "exec/cuda/check.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/owners.h"
#ifdef TAWPIPE_HAVE_CUDNN
#include "exec/cuda/cudnn_desc.h"
#endif

namespace tawpipe::exec::cuda {

using device::AttentionPath;
using device::Binding;
using device::DevicePtr;
using device::DType;
using device::KernelLaunch;
using device::SdpaDirection;
using device::SdpaKey;

device::SdpaKey sdpa_key(const KernelLaunch& k) {
  SdpaKey key;
  key.batch = k.s[0];
  key.heads = k.s[1];
  key.head_dim = k.s[2];
  key.seq = k.s[3];
  key.causal = k.s[4] == 0;
  key.dtype = k.dtype;
  key.direction = k.kernel == device::Kernel::attention_forward ? SdpaDirection::forward
                                                                : SdpaDirection::backward;
  return key;
}

namespace {

#ifdef TAWPIPE_HAVE_CUDNN

void* raw(DevicePtr p) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
}

/// The workspace an attention launch lends: the forward's slot 5, the backward's delta (slot 9).
DevicePtr lent_workspace(const KernelLaunch& k) {
  return k.kernel == device::Kernel::attention_forward ? k.p[5] : k.p[9];
}

cudnnDataType_t data_type(device::ElemType t, DType io) {
  switch (t) {
    case device::ElemType::io:
      return io == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
    case device::ElemType::f32:
      return CUDNN_DATA_FLOAT;
    case device::ElemType::i32:
      return CUDNN_DATA_INT32;
    case device::ElemType::boolean:
      return CUDNN_DATA_BOOLEAN;
  }
  return CUDNN_DATA_FLOAT;
}

cudnnPointwiseMode_t pointwise_mode(device::PointwiseMode m) {
  using device::PointwiseMode;
  switch (m) {
    case PointwiseMode::add:
      return CUDNN_POINTWISE_ADD;
    case PointwiseMode::sub:
      return CUDNN_POINTWISE_SUB;
    case PointwiseMode::mul:
      return CUDNN_POINTWISE_MUL;
    case PointwiseMode::div:
      return CUDNN_POINTWISE_DIV;
    case PointwiseMode::exp:
      return CUDNN_POINTWISE_EXP;
    case PointwiseMode::log:
      return CUDNN_POINTWISE_LOG;
    case PointwiseMode::identity:
      return CUDNN_POINTWISE_IDENTITY;
    case PointwiseMode::gen_index:
      return CUDNN_POINTWISE_GEN_INDEX;
    case PointwiseMode::cmp_ge:
      return CUDNN_POINTWISE_CMP_GE;
    case PointwiseMode::binary_select:
      return CUDNN_POINTWISE_BINARY_SELECT;
  }
  return CUDNN_POINTWISE_IDENTITY;
}

void destroy_cudnn(cudnnHandle_t h) {
  static_cast<void>(cudnnDestroy(h));
}
using CudnnOwner = Owner<cudnnHandle_t, destroy_cudnn>;

/// A finalised execution plan with everything it refers to kept alive.
struct CudnnPlan {
  device::SdpaGraph graph;
  std::vector<BackendDesc> keep;  // tensors, operation descriptors, the operation graph
  BackendDesc plan;
  std::uint64_t plan_workspace_bytes = 0;
  std::uint64_t needed_bytes = 0;  // dQ accumulator + plan workspace
  float lowest = -3.402823466e38f, one = 1.0f;
};

Expected<BackendDesc> make_tensor(const device::GraphTensor& t, DType io) {
  auto d = BackendDesc::make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, std::string("tensor ") + t.name);
  if (!d.ok()) return d.error();
  const cudnnDataType_t type = data_type(t.type, io);
  const std::int64_t align = 16;
  const bool is_virtual = t.is_virtual, by_value = t.by_value;
  TAWPIPE_TRY(d->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  TAWPIPE_TRY(d->set_i64(CUDNN_ATTR_TENSOR_DIMENSIONS, {t.dims.begin(), t.dims.end()}));
  TAWPIPE_TRY(d->set_i64(CUDNN_ATTR_TENSOR_STRIDES, {t.strides.begin(), t.strides.end()}));
  TAWPIPE_TRY(d->set_i64(CUDNN_ATTR_TENSOR_UNIQUE_ID, {t.uid}));
  TAWPIPE_TRY(d->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
  TAWPIPE_TRY(d->set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual));
  if (by_value)
    TAWPIPE_TRY(d->set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value));
  if (t.reorder_f16x16) {
    const cudnnBackendTensorReordering_t r = CUDNN_TENSOR_REORDERING_F16x16;
    TAWPIPE_TRY(
        d->set(CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, 1, &r));
  }
  TAWPIPE_TRY(d->finalize());
  return d;
}

/// One operation descriptor (plus its matmul/pointwise/reduction descriptor, kept in `keep`).
Expected<BackendDesc> make_op(const device::GraphOp& op,
                              const std::map<std::int64_t, BackendDesc>& t,
                              std::vector<BackendDesc>& keep) {
  using device::OpKind;
  const std::string what = std::string("operation ") + op.name;
  const cudnnDataType_t compute = data_type(op.compute, DType::f32);
  auto in = [&](int i) -> const BackendDesc& { return t.at(op.in[static_cast<std::size_t>(i)]); };
  const BackendDesc& out = t.at(op.out);
  switch (op.kind) {
    case OpKind::matmul: {
      auto mm = BackendDesc::make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, what + " (matmul)");
      if (!mm.ok()) return mm.error();
      TAWPIPE_TRY(mm->set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
      TAWPIPE_TRY(mm->finalize());
      auto d = BackendDesc::make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, what);
      if (!d.ok()) return d.error();
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, in(0)));
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, in(1)));
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, out));
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, *mm));
      TAWPIPE_TRY(d->finalize());
      keep.push_back(std::move(*mm));
      return d;
    }
    case OpKind::pointwise: {
      auto pw = BackendDesc::make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what + " (pointwise)");
      if (!pw.ok()) return pw.error();
      const cudnnPointwiseMode_t mode = pointwise_mode(op.pointwise);
      TAWPIPE_TRY(pw->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
      TAWPIPE_TRY(pw->set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute));
      if (op.axis >= 0) TAWPIPE_TRY(pw->set_i64(CUDNN_ATTR_POINTWISE_AXIS, {op.axis}));
      TAWPIPE_TRY(pw->finalize());
      auto d = BackendDesc::make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, what);
      if (!d.ok()) return d.error();
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw));
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, in(0)));
      if (op.in[1] != 0) TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, in(1)));
      if (op.in[2] != 0) TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, in(2)));
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, out));
      TAWPIPE_TRY(d->finalize());
      keep.push_back(std::move(*pw));
      return d;
    }
    case OpKind::reduction: {
      auto r = BackendDesc::make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, what + " (reduction)");
      if (!r.ok()) return r.error();
      const cudnnReduceTensorOp_t mode = op.reduction == device::ReductionMode::max
                                             ? CUDNN_REDUCE_TENSOR_MAX
                                             : CUDNN_REDUCE_TENSOR_ADD;
      TAWPIPE_TRY(
          r->set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode));
      TAWPIPE_TRY(r->set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
      TAWPIPE_TRY(r->finalize());
      auto d = BackendDesc::make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, what);
      if (!d.ok()) return d.error();
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, in(0)));
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, out));
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, *r));
      TAWPIPE_TRY(d->finalize());
      keep.push_back(std::move(*r));
      return d;
    }
    case OpKind::reshape: {
      auto d = BackendDesc::make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, what);
      if (!d.ok()) return d.error();
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, in(0)));
      TAWPIPE_TRY(d->set_desc(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, out));
      TAWPIPE_TRY(d->finalize());
      return d;
    }
  }
  return make_error(what + ": unknown kind");
}

/// Heuristics in `mode`, then the first configuration whose plan finalises.
Status find_plan(cudnnHandle_t h, const BackendDesc& graph, cudnnBackendHeurMode_t mode,
                 CudnnPlan& out, std::string& tried) {
  auto heur = BackendDesc::make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics");
  if (!heur.ok()) return heur.error();
  TAWPIPE_TRY(heur->set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph));
  TAWPIPE_TRY(heur->set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  TAWPIPE_TRY(heur->finalize());
  std::int64_t count = 0;
  TAWPIPE_CUDNN_CHECK(cudnnBackendGetAttribute(heur->get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                      "cudnnBackendGetAttribute(heuristics results count)");
  std::vector<BackendDesc> configs;
  std::vector<cudnnBackendDescriptor_t> raw_configs;
  for (std::int64_t i = 0; i < count; ++i) {
    auto c = BackendDesc::make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config");
    if (!c.ok()) return c.error();
    raw_configs.push_back(c->get());
    configs.push_back(std::move(*c));
  }
  std::int64_t got = 0;
  if (count > 0)
    TAWPIPE_CUDNN_CHECK(
        cudnnBackendGetAttribute(heur->get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw_configs.data()),
        "cudnnBackendGetAttribute(heuristics results)");
  for (std::int64_t i = 0; i < got; ++i) {
    auto plan = BackendDesc::make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
    if (!plan.ok()) return plan.error();
    TAWPIPE_TRY(plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    TAWPIPE_TRY(plan->set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                               configs[static_cast<std::size_t>(i)]));
    Status fin = plan->finalize();
    if (!fin.ok()) {
      if (tried.empty()) tried = fin.error().message;
      continue;
    }
    std::int64_t ws = 0, one = 0;
    TAWPIPE_CUDNN_CHECK(
        cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                 CUDNN_TYPE_INT64, 1, &one, &ws),
        "cudnnBackendGetAttribute(plan workspace size)");
    out.plan = std::move(*plan);
    out.plan_workspace_bytes = static_cast<std::uint64_t>(ws);
    return Status::success();
  }
  return make_error("no engine configuration (" + std::to_string(got) + " proposed" +
                    (tried.empty() ? std::string() : ", first refusal: " + tried) + ")");
}

/// The tensor and operation descriptors of `g`, finalised (no handle or device needed).
struct GraphDescriptors {
  std::map<std::int64_t, BackendDesc> tensors;
  std::vector<BackendDesc> ops;
  std::vector<BackendDesc> inner;  // the operations' matmul/pointwise/reduction descriptors
};

Expected<GraphDescriptors> make_descriptors(const device::SdpaGraph& g) {
  TAWPIPE_TRY(device::check_sdpa_graph(g));
  GraphDescriptors out;
  for (const device::GraphTensor& t : g.tensors) {
    auto d = make_tensor(t, g.key.dtype);
    if (!d.ok()) return d.error();
    out.tensors.emplace(t.uid, std::move(*d));
  }
  for (const device::GraphOp& op : g.ops) {
    auto d = make_op(op, out.tensors, out.inner);
    if (!d.ok()) return d.error();
    out.ops.push_back(std::move(*d));
  }
  return out;
}

Expected<std::shared_ptr<CudnnPlan>> build_plan(cudnnHandle_t h, const SdpaKey& key) {
  auto g = device::build_sdpa_graph(key);
  if (!g.ok()) return g.error();
  auto p = std::make_shared<CudnnPlan>();
  p->graph = std::move(*g);
  auto descs = make_descriptors(p->graph);
  if (!descs.ok()) return descs.error();
  auto& tensors = descs->tensors;
  auto& ops = descs->ops;
  for (BackendDesc& d : descs->inner)
    p->keep.push_back(std::move(d));
  auto graph = BackendDesc::make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  if (!graph.ok()) return graph.error();
  std::vector<cudnnBackendDescriptor_t> raw_ops;
  for (const BackendDesc& d : ops)
    raw_ops.push_back(d.get());
  TAWPIPE_TRY(graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  TAWPIPE_TRY(graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                         static_cast<std::int64_t>(raw_ops.size()), raw_ops.data()));
  TAWPIPE_TRY(graph->finalize());
  std::string tried;
  Status found = find_plan(h, *graph, CUDNN_HEUR_MODE_A, *p, tried);
  if (!found.ok()) found = find_plan(h, *graph, CUDNN_HEUR_MODE_FALLBACK, *p, tried);
  if (!found.ok()) return found.error();
  for (auto& [uid, d] : tensors)
    p->keep.push_back(std::move(d));
  for (BackendDesc& d : ops)
    p->keep.push_back(std::move(d));
  p->keep.push_back(std::move(*graph));
  p->needed_bytes = device::sdpa_workspace_bytes(p->graph, p->plan_workspace_bytes);
  return p;
}

/// Binds the launch's pointers to the graph's non-virtual tensors and executes the plan.
Status execute(cudnnHandle_t h, CudnnPlan& p, const KernelLaunch& k, cudaStream_t stream) {
  TAWPIPE_CUDNN_CHECK(cudnnSetStream(h, stream), "cudnnSetStream");
  const bool fwd = k.kernel == device::Kernel::attention_forward;
  const DevicePtr ws = lent_workspace(k);
  const std::uint64_t accum = (p.graph.dq_accum_bytes + 255) / 256 * 256;
  if (p.graph.dq_accum_bytes > 0)
    TAWPIPE_CUDA_CHECK(cudaMemsetAsync(raw(ws), 0, p.graph.dq_accum_bytes, stream));
  std::vector<std::int64_t> uids;
  std::vector<void*> ptrs;
  for (const device::GraphTensor& t : p.graph.tensors) {
    if (t.is_virtual) continue;
    void* where = nullptr;
    switch (t.binding) {
      case Binding::q:
        where = raw(k.p[0]);
        break;
      case Binding::k:
        where = raw(k.p[1]);
        break;
      case Binding::v:
        where = raw(k.p[2]);
        break;
      case Binding::o:
        where = raw(fwd ? k.p[4] : k.p[3]);
        break;
      case Binding::stats:
        where = raw(fwd ? k.p[3] : k.p[4]);
        break;
      case Binding::dout:
        where = raw(k.p[5]);
        break;
      case Binding::dq:
        where = raw(k.p[6]);
        break;
      case Binding::dk:
        where = raw(k.p[7]);
        break;
      case Binding::dv:
        where = raw(k.p[8]);
        break;
      case Binding::dq_accum:
        where = raw(ws);
        break;
      case Binding::scale:
        where = &p.graph.scale;
        break;
      case Binding::lowest:
        where = &p.lowest;
        break;
      case Binding::one:
        where = &p.one;
        break;
      case Binding::none:
        break;
    }
    uids.push_back(t.uid);
    ptrs.push_back(where);
  }
  void* plan_ws = raw(ws + accum);
  auto pack = BackendDesc::make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
  if (!pack.ok()) return pack.error();
  TAWPIPE_TRY(pack->set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                        static_cast<std::int64_t>(uids.size()), uids.data()));
  TAWPIPE_TRY(pack->set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                        static_cast<std::int64_t>(ptrs.size()), ptrs.data()));
  TAWPIPE_TRY(pack->set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &plan_ws));
  TAWPIPE_TRY(pack->finalize());
  TAWPIPE_CUDNN_CHECK(cudnnBackendExecute(h, p.plan.get(), pack->get()), "cudnnBackendExecute");
  return Status::success();
}

#endif  // TAWPIPE_HAVE_CUDNN

}  // namespace

Expected<std::size_t> finalize_graph_descriptors(const device::SdpaGraph& g) {
#ifdef TAWPIPE_HAVE_CUDNN
  auto d = make_descriptors(g);
  if (!d.ok()) return d.error();
  return d->tensors.size() + d->ops.size() + d->inner.size();
#else
  static_cast<void>(g);
  return make_error("built without cuDNN");
#endif
}

struct AttentionRunner::Impl {
  Impl(device::AttentionLog::Sink sink, bool cudnn) : log(std::move(sink)), use_cudnn(cudnn) {}
  device::AttentionLog log;
  bool use_cudnn;
#ifdef TAWPIPE_HAVE_CUDNN
  CudnnOwner handle;
  std::optional<Status> handle_status;  // set on first use
  std::map<SdpaKey, Status> refused;    // keys whose plan failed to execute
  device::PlanCache<std::shared_ptr<CudnnPlan>> cache{
      [this](const SdpaKey& key) -> Expected<std::shared_ptr<CudnnPlan>> {
        if (!handle.get()) return handle_status->error();
        return build_plan(handle.get(), key);
      }};
  Status ensure_handle() {
    if (!handle_status) {
      cudnnHandle_t h = nullptr;
      const cudnnStatus_t rc = cudnnCreate(&h);
      if (rc == CUDNN_STATUS_SUCCESS) {
        handle = CudnnOwner(h);
        handle_status = Status::success();
      } else {
        handle_status = Status(cudnn_error(rc, "cudnnCreate", __FILE__, __LINE__));
      }
    }
    return *handle_status;
  }
#endif
};

AttentionRunner::AttentionRunner(device::AttentionLog::Sink sink, bool use_cudnn)
    : impl_(std::make_unique<Impl>(std::move(sink), use_cudnn)) {}
AttentionRunner::~AttentionRunner() = default;

Status AttentionRunner::run(const KernelLaunch& k, cudaStream_t stream) {
  const SdpaKey key = sdpa_key(k);
  device::PlanFacts facts;
  facts.lent_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(k.s[5], 0));
#ifdef TAWPIPE_HAVE_CUDNN
  facts.cudnn_built = true;
  Status supported = device::sdpa_supported(key);
  const Expected<std::shared_ptr<CudnnPlan>>* plan = nullptr;
  if (!impl_->use_cudnn) {
    facts.plan = make_error("cuDNN turned off for this DeviceApi");
  } else if (!supported.ok()) {
    facts.plan = supported;
  } else if (Status h = impl_->ensure_handle(); !h.ok()) {
    facts.plan = h;
  } else if (auto refused = impl_->refused.find(key); refused != impl_->refused.end()) {
    facts.plan = refused->second;
  } else {
    plan = &impl_->cache.get(key);
    if (plan->ok())
      facts.needed_bytes = (**plan)->needed_bytes;
    else
      facts.plan = plan->error();
  }
#endif
  const device::PathChoice choice = device::choose_attention_path(key, facts);
  impl_->log.record(key, choice);
#ifdef TAWPIPE_HAVE_CUDNN
  if (choice.path == AttentionPath::cudnn) {
    Status ran = execute(impl_->handle.get(), ***plan, k, stream);
    if (ran.ok()) return ran;
    // A plan cuDNN finalised but refused to execute (a synchronous error, so nothing of it ran):
    // remembered for the key, said once, and the tiled kernel runs from now on.
    Status refused = make_error("cuDNN refused to execute its plan: " + ran.error().message);
    impl_->refused.emplace(key, refused);
    impl_->log.record(key, {AttentionPath::tiled, to_string(key) + ": " + refused.error().message});
  }
#endif
  TAWPIPE_CUDA_CHECK(launch_attention(k, stream));
  return Status::success();
}

std::string AttentionRunner::summary(bool reasons) const {
#ifdef TAWPIPE_HAVE_CUDNN
  const std::size_t v = cudnnGetVersion();
  const std::string version = "cuDNN " + std::to_string(v / 10000) + "." +
                              std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
#else
  const std::string version = "built without cuDNN";
#endif
  return version + "; " + impl_->log.summary(reasons);
}

}  // namespace tawpipe::exec::cuda
