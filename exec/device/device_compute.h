/// \file
/// The decoder block of exec/math (block.h) as a sequence of DeviceApi GEMMs and kernel
/// launches on one stream: the same operations in the same order, on device buffers. Weights,
/// activations and all gradients are of the activation type (`act`, f32 or bf16); weight
/// gradients are ADDED to, like the host kernels. GEMMs accumulate in fp32.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "exec/device/device_api.h"
#include "exec/math/dims.h"

namespace tawpipe::exec::device {

/// Device scratch for the compute ops of one stream, sized for `max_layers` layers per op.
/// Allocated once at prepare (persistent), freed with the backend.
struct Scratch {
  // One layer's forward cache ([T x H] or [T x F] of `act`; r* f32; lse f32 [batch x heads x
  // seq], the attention's only saved statistic: O(seq), never seq^2).
  DevicePtr h1 = 0, r1 = 0, q = 0, k = 0, v = 0, lse = 0, o = 0, x2 = 0, h2 = 0, r2 = 0, gate = 0,
            up = 0, m = 0;
  // Backward temporaries (delta: f32, shaped like lse).
  DevicePtr dm = 0, dgate = 0, dup = 0, dh = 0, dx2 = 0, dout = 0, dq = 0, dk = 0, dv = 0,
            delta = 0;
  // Layer inputs recomputed for the backward (max_layers x [T x H]), ping-pong and gradients.
  DevicePtr inputs = 0, out = 0, grad = 0, gin = 0;
  // Head: logits [T x V] of `act`; token ids (i32, inputs then targets).
  DevicePtr logits = 0, tokens = 0;
  std::uint64_t total_bytes = 0;
};

/// Where and how the block runs.
struct ComputeEnv {
  DeviceApi* api = nullptr;
  StreamHandle stream = 0;
  math::Dims dims;
  DType act = DType::f32;
  Scratch scratch;
};

/// Bytes of attention workspace per layer in flight, the IR's figure (common/model/memory.h
/// attention_workspace_bytes, kFused): `lse`, f32 [batch x heads x seq], then `delta`: D, f32
/// [batch x heads x seq], followed by room for the backward's f32 dQ accumulator [tokens x
/// hidden]. The whole delta piece is the workspace lent to cuDNN's fused attention
/// (exec/device/attention_path.h); the tiled kernel uses its first 4*b*h*s bytes.
std::uint64_t attention_workspace_bytes(const math::Dims& d);
/// The `lse` piece of it: 4*b*h*s bytes.
std::uint64_t attention_lse_bytes(const math::Dims& d);

/// Allocates the scratch of one stream (one mem_alloc; the pieces are offsets into it).
Expected<Scratch> allocate_scratch(DeviceApi& api, StreamHandle stream, const math::Dims& d,
                                   DType act, std::size_t max_layers);

/// y = layers [0, n) of `w` applied to x (block.h layers_forward).
Status layers_forward(const ComputeEnv& env, DevicePtr w, std::size_t n, DevicePtr x, DevicePtr y);

/// Recompute + back-propagate (block.h layers_backward): writes dx, ADDS into dw.
Status layers_backward(const ComputeEnv& env, DevicePtr w, std::size_t n, DevicePtr x, DevicePtr dy,
                       DevicePtr dx, DevicePtr dw);

/// x[t] = token_embedding[tokens[t]] (tokens already in scratch.tokens).
Status embedding_forward(const ComputeEnv& env, DevicePtr w_emb, DevicePtr x);

/// dw_emb += scatter of dx by token (tokens already in scratch.tokens).
Status embedding_backward(const ComputeEnv& env, DevicePtr dx, DevicePtr dw_emb);

/// Final norm + tied LM head + softmax cross-entropy forward and backward (targets already in
/// scratch.tokens + tokens): writes dx, ADDS into dw_emb, ADDS the summed loss to the f64
/// at `loss`.
Status head_forward_backward(const ComputeEnv& env, DevicePtr w_emb, DevicePtr x, float scale,
                             DevicePtr dx, DevicePtr dw_emb, DevicePtr loss);

}  // namespace tawpipe::exec::device
